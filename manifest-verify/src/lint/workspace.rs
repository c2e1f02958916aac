//! Which crates to analyse: a package, a workspace, and the path dependencies they reach.
//!
//! Only `Cargo.toml` is read (no `cargo metadata`, so the lint needs neither a build nor the
//! network). Crates from a registry are not analysed; calls into them are judged by the catalog.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::LintError;

/// One crate to analyse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrateSource {
    /// The name code uses for it (`my-tools` is `my_tools`).
    pub name: String,
    /// Its root source files (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`).
    pub roots: Vec<PathBuf>,
    /// Whether a member of the analysed package or workspace (tools are checked only there),
    /// rather than a path dependency followed for its code.
    pub member: bool,
    /// The names code uses for its dependencies (`serde-json` is `serde_json`): a path whose
    /// first segment is one of them is that crate's, not an item an item-level macro defines.
    pub deps: Vec<String>,
}

/// The crates under `path`: a directory holding `Cargo.toml` (a package, a workspace, or both),
/// or, for small cases, a directory with `src/lib.rs` or `lib.rs` and no manifest.
pub fn discover(path: &Path) -> Result<Vec<CrateSource>, LintError> {
    let mut found = BTreeMap::new();
    let manifest = path.join("Cargo.toml");
    if !manifest.exists() {
        let root = [
            path.join("src/lib.rs"),
            path.join("src/main.rs"),
            path.join("lib.rs"),
        ]
        .into_iter()
        .find(|p| p.exists())
        .ok_or_else(|| LintError::NoCrate(path.to_path_buf()))?;
        return Ok(vec![CrateSource {
            name: "crate_under_lint".into(),
            roots: vec![root],
            member: true,
            deps: Vec::new(),
        }]);
    }
    let table = read_toml(&manifest)?;
    let mut members = Vec::new();
    if table.get("package").is_some() {
        members.push(path.to_path_buf());
    }
    if let Some(ws) = table.get("workspace") {
        for m in ws
            .get("members")
            .and_then(|m| m.as_array())
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str())
        {
            members.extend(expand_member(path, m));
        }
    }
    let workspace_deps = table
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .cloned();
    let mut queue: Vec<(PathBuf, bool)> = members.into_iter().map(|m| (m, true)).collect();
    while let Some((dir, member)) = queue.pop() {
        let dir = dir.canonicalize().unwrap_or(dir);
        if let Some(existing) = found.get_mut(&dir) {
            let existing: &mut CrateSource = existing;
            existing.member |= member;
            continue;
        }
        let table = read_toml(&dir.join("Cargo.toml"))?;
        let Some(package) = table.get("package") else {
            continue;
        };
        let name = table
            .get("lib")
            .and_then(|l| l.get("name"))
            .or_else(|| package.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("unnamed")
            .replace('-', "_");
        let mut dep_names = Vec::new();
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = table.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for (key, spec) in deps {
                dep_names.push(key.replace('-', "_"));
                let from_workspace = spec.get("workspace").and_then(|w| w.as_bool()) == Some(true);
                let spec = if from_workspace {
                    match workspace_deps.as_ref().and_then(|w| w.get(key.as_str())) {
                        Some(s) => s,
                        None => continue,
                    }
                } else {
                    spec
                };
                if let Some(p) = spec.get("path").and_then(|p| p.as_str()) {
                    let base = if from_workspace { path } else { dir.as_path() };
                    queue.push((base.join(p), false));
                }
            }
        }
        found.insert(
            dir.clone(),
            CrateSource {
                name,
                roots: roots(&dir, &table),
                member,
                deps: dep_names,
            },
        );
    }
    Ok(found.into_values().collect())
}

fn read_toml(path: &Path) -> Result<toml::Table, LintError> {
    // Like a source file: a regular file of bounded size, never a FIFO that blocks.
    let text = super::load::read(path)?;
    text.parse::<toml::Table>()
        .map_err(|e| LintError::Manifest(path.to_path_buf(), e.to_string()))
}

/// `crates/*` style members; only a trailing `*` is supported, as in most workspaces.
fn expand_member(root: &Path, member: &str) -> Vec<PathBuf> {
    match member.strip_suffix("/*") {
        Some(dir) => std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("Cargo.toml").exists())
            .collect(),
        None => vec![root.join(member)],
    }
}

fn roots(dir: &Path, table: &toml::Table) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let lib = table
        .get("lib")
        .and_then(|l| l.get("path"))
        .and_then(|p| p.as_str())
        .map(|p| dir.join(p))
        .unwrap_or_else(|| dir.join("src/lib.rs"));
    roots.push(lib);
    roots.push(dir.join("src/main.rs"));
    for bin in table
        .get("bin")
        .and_then(|b| b.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(p) = bin.get("path").and_then(|p| p.as_str()) {
            roots.push(dir.join(p));
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) {
        let mut bins: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    roots.retain(|p| p.exists());
    roots.dedup();
    roots
}
