use policy_macros::tool_policy;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct Server {
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Server {
    /// Search the web.
    #[tool]
    #[tool_policy(policy(net = deny, exec = deny))]
    async fn search(&self) -> String {
        String::new()
    }
}

fn main() {}
