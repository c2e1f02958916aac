use policy_macros::tool;

struct Notes;

impl Notes {
    #[tool(policy(net = deny))]
    fn add(&self, text: String) -> String {
        text
    }
}

fn main() {}
