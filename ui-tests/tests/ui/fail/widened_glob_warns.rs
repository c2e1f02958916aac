// The widening warning is a real rustc warning: it is printed (and the build would succeed)
// without the error at the end, which is here only so trybuild records the output.
use policy_macros::tool;

#[tool(policy(fs.read = ["/data/**/*.csv", "/etc/hosts", "/logs/**"], fs.write = "/out/*.md"))]
fn probe() -> String {
    String::new()
}

fn main() {
    compile_error!("stop here so the warnings above are recorded");
}
