// truth: fs.read
// tier1: fs.read
// tier2: fs.read
// why: `for line in BufReader::new(File::open(..)?).lines()`

use std::io::BufRead;

#[tool(policy(net = deny, exec = deny, env = deny))]
fn t(p: String) -> Result<String, ToolError> {
    for line in std::io::BufReader::new(std::fs::File::open(&p)?).lines() {
        let _ = line?;
    }
    Ok(String::new())
}
