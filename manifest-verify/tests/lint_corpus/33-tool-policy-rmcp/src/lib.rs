pub struct Server;

#[tool_router]
impl Server {
    #[tool(description = "search the web")]
    #[tool_policy(policy(net = deny, exec = deny))]
    async fn search(&self, q: String) -> String {
        reqwest::get(format!("https://example.com/?q={q}")).await.unwrap().text().await.unwrap()
    }
}
