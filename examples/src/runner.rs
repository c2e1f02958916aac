//! The tool runner: a process the agent forks before it confines itself, which starts the
//! subprocess tools in their strict sandboxes on the agent's behalf.
//!
//! A confined process cannot make a strict sandbox: Landlock refuses `mount` to it and its
//! seccomp filter refuses new namespaces (see `sandbox::confine`). So the agent forks this
//! runner first, while it is still one thread and unconfined, and then confines itself; the
//! runner keeps the rights to build namespaces and nothing else of the agent's work. Every
//! subprocess tool ([`crate::sandboxed::run`]) is then a request over a socket pair: the name
//! of a registered tool, its argv and working directory. The runner looks the tool up in the
//! specs it was given when it was forked and runs the argv under **that** spec's policy, so a
//! confined agent can ask for no more than its tools' declared policies; the reply carries the
//! tool's output and the run's audit report.
//!
//! The runner dies with the agent (`PR_SET_PDEATHSIG`) and leaves when the agent closes the
//! socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use policy_runtime::tool::{ToolError, ToolErrorKind, ToolOutput, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize, Deserialize)]
struct Request {
    tool: String,
    argv: Vec<String>,
    cwd: Option<PathBuf>,
}

#[derive(Serialize, Deserialize)]
struct Reply {
    /// The run's audit report, when it ran.
    audit: Option<Value>,
    /// The output, or `(kind, message)` of the error.
    result: Result<(String, Option<Value>), (String, String)>,
}

struct Channel {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

static CHANNEL: OnceLock<Mutex<Channel>> = OnceLock::new();

/// Forks the runner for `specs` (the agent's tools). `serve_also` runs in the runner before it
/// serves (the demo starts its stand-in servers there, outside the agent's confinement).
/// Call it while the process has one thread, before confining.
///
/// # Errors
///
/// The socket pair or the fork failed; nothing was started.
pub fn start(specs: Vec<ToolSpec>, serve_also: impl FnOnce()) -> std::io::Result<()> {
    let (agent, runner) = UnixStream::pair()?;
    // SAFETY: the caller has one thread (documented), so the child may allocate.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        drop(agent);
        // SAFETY: prctl with integers.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        serve_also();
        serve(&specs, runner);
        // SAFETY: leave without running the agent's exit handlers twice.
        unsafe { libc::_exit(0) };
    }
    drop(runner);
    let reader = BufReader::new(agent.try_clone()?);
    let _ = CHANNEL.set(Mutex::new(Channel {
        writer: agent,
        reader,
    }));
    Ok(())
}

/// Whether a runner was started in this process.
pub fn started() -> bool {
    CHANNEL.get().is_some()
}

fn serve(specs: &[ToolSpec], stream: UnixStream) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut writer = write_half;
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => run_one(specs, request),
            Err(e) => Reply {
                audit: None,
                result: Err(("refused".into(), format!("bad runner request: {e}"))),
            },
        };
        let Ok(text) = serde_json::to_string(&reply) else {
            return;
        };
        if writeln!(writer, "{text}").is_err() {
            return;
        }
    }
}

fn run_one(specs: &[ToolSpec], request: Request) -> Reply {
    let Some(spec) = specs.iter().find(|s| s.name == request.tool) else {
        return Reply {
            audit: None,
            result: Err((
                "refused".into(),
                format!("the runner knows no tool `{}`", request.tool),
            )),
        };
    };
    let argv = request.argv.into_iter().map(Into::into).collect();
    let (audit, result) = crate::sandboxed::run_here(spec, argv, request.cwd);
    Reply {
        audit,
        result: result
            .map(|out| (out.text, out.metadata))
            .map_err(|e| (e.kind().as_str().to_string(), e.to_string())),
    }
}

/// Sends one run to the runner; the audit report and the tool's result.
pub(crate) fn request(
    spec: &ToolSpec,
    argv: Vec<std::ffi::OsString>,
    cwd: Option<PathBuf>,
) -> (Option<Value>, Result<ToolOutput, ToolError>) {
    let refused = |why: String| (None, Err(ToolError::refused(why)));
    let Some(channel) = CHANNEL.get() else {
        return refused("no tool runner was started".into());
    };
    let argv: Result<Vec<String>, _> = argv.into_iter().map(|a| a.into_string()).collect();
    let Ok(argv) = argv else {
        return refused("the runner takes UTF-8 arguments only".into());
    };
    let request = Request {
        tool: spec.name.clone(),
        argv,
        cwd,
    };
    let mut channel = channel.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(text) = serde_json::to_string(&request) else {
        return refused("encoding the runner request".into());
    };
    if let Err(e) = writeln!(channel.writer, "{text}") {
        return refused(format!("the tool runner is gone: {e}"));
    }
    let mut line = String::new();
    match channel.reader.read_line(&mut line) {
        Ok(n) if n > 0 => {}
        _ => return refused("the tool runner is gone".into()),
    }
    let reply: Reply = match serde_json::from_str(&line) {
        Ok(r) => r,
        Err(e) => return refused(format!("bad runner reply: {e}")),
    };
    let result = match reply.result {
        Ok((text, metadata)) => Ok(ToolOutput { text, metadata }),
        Err((kind, message)) => Err(match kind.as_str() {
            k if k == ToolErrorKind::Refused.as_str() => ToolError::refused(message),
            k if k == ToolErrorKind::InvalidArguments.as_str() => {
                ToolError::invalid_arguments(message)
            }
            _ => ToolError::new(message),
        }),
    };
    (reply.audit, result)
}
