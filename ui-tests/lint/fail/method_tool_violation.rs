struct Store;

#[policy_macros::toolset]
impl Store {
    /// A method tool that writes without declaring it.
    #[tool(policy(fs.read = ["/srv/**"]))]
    fn put(&self, value: String) -> bool {
        std::fs::write("/srv/value", value).is_ok()
    }
}

fn main() {}
