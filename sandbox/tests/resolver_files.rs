//! The strict view's egress resolver files (`/etc/hosts`, `/etc/resolv.conf`,
//! `/etc/nsswitch.conf`, placed for `net = ["host:port"]`) never change the host, even when a
//! declared root, read-only or writable, shows the host's `/etc` in the view.
//!
//! Each case runs in a process of its own (this binary has no libtest harness), which enters a
//! private mount namespace and binds a temporary directory over `/etc`, laid out as a hostile
//! host would be: `resolv.conf` a symlink to a file of another directory (as systemd-resolved
//! makes it), and in some cases no `nsswitch.conf`. The real `/etc` is never at risk. After the
//! run the fake `/etc` must be byte for byte as before (the link still a link, nothing
//! created), and the tool must have read the broker's files at the three paths; where a file
//! is missing under a host bind the run must be refused, naming the file and the root.
//!
//! Needs root (to make the mount namespace) and the strict profile; skipped with a printed
//! reason otherwise, unless `TOOLPOLICY_REQUIRE_KERNEL=1`.

#[path = "support/cases.rs"]
mod cases;
#[path = "support/kernel.rs"]
mod kernel;

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use policy_runtime::{HostPattern, ToolPolicy};
use sandbox::egress::EgressPlan;
use sandbox::runner::{run, RunError, RunOptions};
use sandbox::Profile;

const CASE_VAR: &str = "RESOLVER_FILES_CASE";
const DIR_VAR: &str = "RESOLVER_FILES_DIR";
const ENDPOINT: &str = "example.invalid:443";

use cases::Case;

const CASES: &[(&str, Case)] = &[
    (
        "read_root_over_a_linked_resolv_conf_shows_the_broker_files",
        |dir| shows_broker_files(dir, false),
    ),
    (
        "write_root_over_a_linked_resolv_conf_shows_the_broker_files",
        |dir| shows_broker_files(dir, true),
    ),
    (
        "read_root_missing_nsswitch_conf_is_refused_and_nothing_created",
        |dir| missing_file_is_refused(dir, false),
    ),
    (
        "write_root_missing_nsswitch_conf_is_refused_and_nothing_created",
        |dir| missing_file_is_refused(dir, true),
    ),
    (
        "dangling_resolv_conf_link_into_a_write_root_is_refused_and_nothing_created",
        dangling_link_into_a_write_root_is_refused,
    ),
];

fn main() -> ExitCode {
    if let Some(code) = cases::in_case_process(CASE_VAR, DIR_VAR, CASES, &[]) {
        return code;
    }
    let ready = || {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            kernel::missing(
                "these cases bind a directory over /etc in a mount namespace: root only",
            );
            return false;
        }
        kernel::supports(Profile::Strict)
    };
    cases::run_suite(CASES, ready, |name| {
        vec![(
            name.to_string(),
            cases::in_new_process(CASE_VAR, DIR_VAR, name),
        )]
    })
}

/// The fake host: `etc` (bound over `/etc`) and `elsewhere`, where `etc/resolv.conf` points
/// (outside `/tmp` and every root, so that in the view it leads where no rule grants anything).
struct FakeHost {
    etc: PathBuf,
    elsewhere: PathBuf,
    _elsewhere_dir: tempfile::TempDir,
}

/// Lays out the fake `/etc` in `dir` and binds it over `/etc` in a new private mount namespace
/// of this (single-threaded) process.
fn fake_host(dir: &Path, with_nsswitch: bool) -> Result<FakeHost, String> {
    let etc = dir.join("etc");
    let elsewhere_dir =
        tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).map_err(|e| e.to_string())?;
    let elsewhere = elsewhere_dir.path().join("run/resolve");
    std::fs::create_dir_all(&etc).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&elsewhere).map_err(|e| e.to_string())?;
    // What the tool's programs read from /etc (the loader's cache, users and groups).
    for name in ["ld.so.cache", "ld.so.conf", "passwd", "group"] {
        let real = Path::new("/etc").join(name);
        if real.is_file() {
            std::fs::copy(&real, etc.join(name)).map_err(|e| format!("copy {name}: {e}"))?;
        }
    }
    std::fs::write(etc.join("hosts"), "127.0.0.1 localhost host-hosts\n")
        .map_err(|e| e.to_string())?;
    let stub = elsewhere.join("stub-resolv.conf");
    std::fs::write(&stub, "nameserver 192.0.2.53\n").map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(&stub, etc.join("resolv.conf")).map_err(|e| e.to_string())?;
    if with_nsswitch {
        std::fs::write(etc.join("nsswitch.conf"), "hosts: host-nsswitch\n")
            .map_err(|e| e.to_string())?;
    }
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap();
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: this process has one thread (no libtest harness); valid C strings.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(format!(
                "unshare(CLONE_NEWNS): {}",
                std::io::Error::last_os_error()
            ));
        }
        let slash = c(Path::new("/"));
        if libc::mount(
            null,
            slash.as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            null.cast(),
        ) != 0
        {
            return Err(format!(
                "making / private: {}",
                std::io::Error::last_os_error()
            ));
        }
        let (source, target) = (c(&etc), c(Path::new("/etc")));
        if libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            null,
            libc::MS_BIND,
            null.cast(),
        ) != 0
        {
            return Err(format!(
                "binding the fake /etc: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    // The bind is in place: /etc is the fake one from here on.
    if std::fs::symlink_metadata("/etc/resolv.conf")
        .map_err(|e| e.to_string())?
        .file_type()
        .is_symlink()
    {
        Ok(FakeHost {
            etc,
            elsewhere,
            _elsewhere_dir: elsewhere_dir,
        })
    } else {
        Err("the fake /etc is not in place".into())
    }
}

/// Every entry below `dir`: its kind, mode and content (a link's target, a file's bytes).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode();
            let (kind, content) = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                ("link", target.as_os_str().as_bytes().to_vec())
            } else if meta.is_dir() {
                todo.push(path.clone());
                ("dir", Vec::new())
            } else {
                ("file", std::fs::read(&path).unwrap())
            };
            out.insert(path, (kind.to_string(), mode, content));
        }
    }
    out
}

/// `/etc/**` (and the `extra` roots) read-only, or writable when `write`.
fn policy(write: bool, extra: &[String]) -> ToolPolicy {
    let mut roots = vec!["/etc/**".to_string()];
    roots.extend(extra.iter().cloned());
    let fs = if write {
        serde_json::json!({"read": ["/usr/**"], "write": roots})
    } else {
        roots.push("/usr/**".into());
        serde_json::json!({ "read": roots })
    };
    serde_json::from_value(serde_json::json!({"fs": fs, "net": {"hosts": [ENDPOINT]}})).unwrap()
}

/// The broker's files, as the sandbox makes them for [`ENDPOINT`].
fn broker_files() -> Vec<(PathBuf, Vec<u8>)> {
    let hosts: Vec<HostPattern> = vec![ENDPOINT.parse().unwrap()];
    EgressPlan::new(&hosts).unwrap().files()
}

/// Runs `sh -c script` in the strict sandbox under `policy(write, extra)`.
fn run_in_sandbox(
    write: bool,
    extra: &[String],
    script: &str,
) -> Result<sandbox::RunOutput, RunError> {
    let argv: Vec<OsString> = ["/bin/sh", "-c", script].map(OsString::from).to_vec();
    let opts = RunOptions::default().helper(env!("CARGO_BIN_EXE_policy-sandbox"));
    run(&policy(write, extra), &argv, &opts)
}

fn unchanged(
    what: &str,
    before: &BTreeMap<PathBuf, (String, u32, Vec<u8>)>,
    dir: &Path,
) -> Result<(), String> {
    let after = snapshot(dir);
    let describe = |e: Option<&(String, u32, Vec<u8>)>| match e {
        None => "absent".to_string(),
        Some((kind, mode, content)) => format!("{kind} mode {mode:o}, {} bytes", content.len()),
    };
    let paths: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    let changed: Vec<String> = paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| {
            format!(
                "{}: {} before, {} after",
                p.display(),
                describe(before.get(p)),
                describe(after.get(p))
            )
        })
        .collect();
    if !changed.is_empty() {
        return Err(format!("the host's {what} changed: {}", changed.join("; ")));
    }
    Ok(())
}

fn shows_broker_files(dir: &Path, write: bool) -> Result<(), String> {
    let host = fake_host(dir, true)?;
    let (etc_before, elsewhere_before) = (snapshot(&host.etc), snapshot(&host.elsewhere));
    let files = broker_files();
    // Each file, then a marker, so that the output says which content came from which path.
    let mut script: String = files
        .iter()
        .map(|(path, _)| format!("cat {}; echo '<<end>>'; ", path.display()))
        .collect();
    // A name lookup through the files (no network): the broker's nsswitch.conf and hosts.
    let getent = Path::new("/usr/bin/getent").exists();
    if getent {
        script.push_str("getent hosts example.invalid; echo \"getent=$?\"");
    } else {
        kernel::missing("getent is not installed: the name lookup is not checked");
    }
    let out = run_in_sandbox(write, &[], &script).map_err(|e| format!("run refused: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let seen: Vec<&str> = stdout.split("<<end>>\n").collect();
    for (i, (path, content)) in files.iter().enumerate() {
        let want = String::from_utf8_lossy(content);
        if seen.get(i).copied() != Some(&*want) {
            return Err(format!(
                "{} in the view is not the broker's file:\nstdout {stdout}\nstderr {stderr}",
                path.display()
            ));
        }
    }
    if getent {
        let lookup = seen.get(files.len()).copied().unwrap_or_default();
        if !(lookup.contains("example.invalid") && lookup.contains("getent=0")) {
            return Err(format!(
                "getent hosts example.invalid failed in the view:\nstdout {stdout}\nstderr {stderr}"
            ));
        }
    }
    unchanged("/etc", &etc_before, &host.etc)?;
    unchanged(
        "link target's directory",
        &elsewhere_before,
        &host.elsewhere,
    )?;
    if !std::fs::symlink_metadata(host.etc.join("resolv.conf"))
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err("resolv.conf is no longer a link".into());
    }
    Ok(())
}

fn missing_file_is_refused(dir: &Path, write: bool) -> Result<(), String> {
    let host = fake_host(dir, false)?;
    refused_and_unchanged(
        &host,
        write,
        &[],
        &[
            "/etc/nsswitch.conf",
            "under the root /etc bound from the host",
        ],
    )
}

/// `resolv.conf` leads into a writable root where its target is missing: creating the target
/// would create it on the host, so the run is refused.
fn dangling_link_into_a_write_root_is_refused(dir: &Path) -> Result<(), String> {
    let host = fake_host(dir, true)?;
    let stub = host.elsewhere.join("stub-resolv.conf");
    std::fs::remove_file(&stub).map_err(|e| e.to_string())?;
    let root = host.elsewhere.display().to_string();
    let leads = format!("/etc/resolv.conf leads to {}", stub.display());
    let under = format!("under the root {root} bound from the host");
    refused_and_unchanged(&host, true, &[format!("{root}/**")], &[&leads, &under])
}

/// Runs under `policy(write, extra)`: the run must be refused with a reason holding each of
/// `reason`, and the fake host must be unchanged.
fn refused_and_unchanged(
    host: &FakeHost,
    write: bool,
    extra: &[String],
    reason: &[&str],
) -> Result<(), String> {
    let (etc_before, elsewhere_before) = (snapshot(&host.etc), snapshot(&host.elsewhere));
    let outcome = run_in_sandbox(write, extra, "cat /etc/resolv.conf /etc/nsswitch.conf");
    // Checked first: a run that created the file on the host is the defect itself.
    unchanged("/etc", &etc_before, &host.etc)?;
    unchanged(
        "link target's directory",
        &elsewhere_before,
        &host.elsewhere,
    )?;
    match outcome {
        Err(RunError::Refused(why)) => {
            if !reason.iter().all(|r| why.contains(r)) {
                return Err(format!(
                    "the refusal must name the file and the root that covers it: {why}"
                ));
            }
            Ok(())
        }
        Err(e) => Err(format!("expected a refusal, got {e}")),
        Ok(out) => Err(format!(
            "expected a refusal, the run went ahead: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}
