use std::path::PathBuf;

pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Checks the workspace root.
    #[tool(policy(net = deny), name = "workspace_ready")]
    fn ready(&self) -> bool {
        self.root.is_dir()
    }
}
