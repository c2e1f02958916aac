pub trait Sink {
    fn emit(&self, line: &str) -> bool;
}

struct FileSink;

impl Sink for FileSink {
    fn emit(&self, line: &str) -> bool {
        std::fs::write("/var/log/sink", line).is_ok()
    }
}

fn sink() -> Box<dyn Sink> {
    Box::new(FileSink)
}

/// Emits.
#[tool(policy(fs.read = ["/var/log/**"]))]
fn emit(line: String) -> bool {
    sink().emit(&line)
}
