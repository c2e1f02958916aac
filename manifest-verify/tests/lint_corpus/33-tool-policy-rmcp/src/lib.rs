pub struct Server;

#[tool_router]
impl Server {
    #[tool(description = "search the web")]
    #[tool_policy(net = deny, exec = deny, name = "Server::search")]
    async fn search(&self, q: String) -> String {
        reqwest::get(format!("https://example.com/?q={q}")).await.unwrap().text().await.unwrap()
    }
}
