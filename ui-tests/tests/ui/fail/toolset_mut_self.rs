use policy_macros::{tool, toolset};

struct Notes(Vec<String>);

#[toolset]
impl Notes {
    #[tool(policy(net = deny))]
    fn add(&mut self, text: String) -> String {
        self.0.push(text);
        String::new()
    }
}

fn main() {}
