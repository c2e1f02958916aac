// truth: unanalysable
// tier1: clean
// tier2: unanalysable
// why: an attribute macro on an impl block may rewrite its methods

pub struct Helper;

#[my_macros::rewrite_impl]
impl Helper {
    pub fn go(&self) {}
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    Helper.go();
    let _ = p;
    Ok(String::new())
}
