use policy_macros::tool_policy;
use rmcp::handler::server::wrapper::Parameters;

#[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Args {
    path: String,
}

struct Server;

impl Server {
    #[tool_policy(policy(fs.read = "/data/**"))]
    #[rmcp::tool]
    fn read(&self, Parameters(args): Parameters<Args>) -> String {
        args.path
    }
}

fn main() {}
