// truth: fs.write
// tier1: clean
// tier2: fs.write
// why: a supertrait's default method called through `&dyn Sub`

pub trait Base {
    fn flush_all(&self) {
        std::fs::write("/out/log", "x").unwrap();
    }
}

pub trait Sub: Base {}

pub struct Disk;

impl Base for Disk {}
impl Sub for Disk {}

fn go(s: &dyn Sub) {
    s.flush_all();
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    go(&Disk);
    let _ = p;
    Ok(String::new())
}
