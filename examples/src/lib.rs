//! # toolpolicy examples
//!
//! A small coding agent's tools, annotated with `#[tool(policy(...))]`:
//!
//! * [`tools::read_file`], [`tools::list_dir`], [`tools::write_report`] run in-process behind
//!   the path gate, and open files with `ReadPath`/`WritePath`'s own methods, which resolve
//!   them beneath the folder their glob names, so a symlink cannot lead them out either;
//! * [`tools::grep`], [`tools::run_tests`] and [`tools::fetch_url`] shell out through the
//!   sandbox, which confines the subprocess to exactly what the tool declared.
//!
//! The `agent-demo` binary confines itself under the union of its tools' policies
//! ([`confinement`]), with a [`runner`] forked first to start the subprocess tools in their
//! strict sandboxes, and replays a prompt-injected transcript against them ([`demo`]); the
//! `mcp-server` binary serves them over MCP.

pub mod confinement;
pub mod demo;
pub mod mcp;
pub mod runner;
pub mod sandboxed;
pub mod tools;
pub mod trace;
pub mod world;
