// truth: clean
// tier1: clean
// tier2: clean
// why: `#[inline]`, `#[must_use]`, `#[allow]` and `#[doc]` do not hide code

/// Helps.
#[inline]
#[must_use]
#[allow(dead_code)]
fn helper(p: &str) -> usize {
    p.len()
}

#[tool(policy(fs.read = ["/data/**"], net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    helper(&p);
    Ok(String::new())
}
