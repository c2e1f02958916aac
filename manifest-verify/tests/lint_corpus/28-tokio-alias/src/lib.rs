use tokio::fs as tfs;

/// Saves asynchronously.
#[tool(policy(fs.read = ["/data/**"]))]
async fn save_async(body: String) -> std::io::Result<()> {
    tfs::write("/data/a", body).await
}
