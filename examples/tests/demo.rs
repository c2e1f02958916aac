//! The demo binary end to end: every step of the injected transcript gets the verdict the
//! transcript expects, the audit log and manifests are written, and the verifier flags the
//! version-2 widenings. Also: the committed manifest of the example tools is fresh.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{strict_profile_available, world_lock};

#[test]
fn demo_meets_every_expectation() {
    if !strict_profile_available() {
        return;
    }
    let _lock = world_lock();
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agent-demo"))
        .arg("--out")
        .arg(out_dir.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run agent-demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stdout.contains("UNEXPECTED"), "{stdout}");
    assert!(
        !stdout.contains("REFUSED"),
        "the sandbox must run on this host:\n{stdout}"
    );
    // The agent confined itself under the union of its tools before the replay, and its own
    // files are protected paths the confinement holds exactly.
    let confined = stdout
        .find("The agent confines itself")
        .expect("the confinement report");
    assert!(confined < stdout.find("[ 1]").unwrap(), "{stdout}");
    for line in [
        "exact       every thread and child process inherits the confinement",
        "exact       protected audit_log: ",
        "exact       protected ssh: /tmp/toolpolicy-demo/home/.ssh/**",
        "widened     exec allow [",
    ] {
        assert!(stdout.contains(line), "missing `{line}`:\n{stdout}");
    }

    // The verdicts, as the audit log records them.
    let audit = std::fs::read_to_string(out_dir.path().join("audit.jsonl")).unwrap();
    let events: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["event"] != "proposed" && e["event"] != "approved")
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_string(),
                e["event"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected_ends = [
        ("list_dir", "executed"),
        ("read_file", "executed"),
        ("read_file", "denied"),
        ("read_file", "denied"),
        ("read_file", "failed"),
        ("grep", "failed"),
        ("grep", "executed"),
        ("write_report", "executed"),
        ("write_report", "denied"),
        ("run_tests", "executed"),
        ("run_tests", "failed"),
        ("fetch_url", "executed"),
        ("fetch_url", "denied"),
        ("write_report", "executed"),
        ("write_report", "denied"),
        ("run_shell", "executed"),
        ("run_shell", "denied"),
        ("run_shell", "denied"),
        ("run_shell", "denied"),
        ("bash", "denied"),
    ];
    let expected_ends: Vec<(String, String)> = expected_ends
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(ends, expected_ends);
    let hash = events[0]["manifest_hash"].as_str().unwrap();
    assert!(events.iter().all(|e| e["manifest_hash"] == hash));

    // What the kernel stopped inside the sandboxed runs.
    for needle in [
        "Could not resolve host: exfil.example",
        "/bin/bash: Permission denied",
        "home/.ssh/id_rsa: No such file or directory",
        "\"status\":\"ok\"",
        "building and testing the project",
        "level 5 (outbound network): `git push` reaches the network",
        "level 6 (always denied): network output or decoded data is piped into a shell",
        "`git -c core.sshCommand=...` makes git run another program",
    ] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
    let sandboxed_ok = events
        .iter()
        .find(|e| e["tool"] == "fetch_url" && e["event"] == "executed")
        .unwrap();
    assert_eq!(sandboxed_ok["metadata"]["sandbox"]["profile"], "strict");
    assert_eq!(sandboxed_ok["metadata"]["egress"][0]["decision"], "allowed");

    // Nothing escaped: the key was never written anywhere, the attacker's file does not exist.
    assert!(!Path::new("/tmp/toolpolicy-demo/out/pwned.txt").exists());
    assert!(!Path::new("/tmp/toolpolicy-demo/home/.bashrc").exists());

    // Artifacts and the verifier's findings on version 2.
    for f in ["tools.manifest.json", "tools.v2.manifest.json"] {
        policy_runtime::Manifest::from_path(out_dir.path().join(f)).unwrap();
    }
    for code in [
        "tool.net.widened",
        "tool.fs.write.widened",
        "tool.constraints.loosened",
        "tool.commands.level_raised",
    ] {
        assert!(stdout.contains(code), "missing {code}:\n{stdout}");
    }
}

#[test]
fn demo_rejects_a_broken_transcript_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("t.json");
    std::fs::write(
        &bad,
        "{\"steps\": [{\"call\": {\"name\": \"x\"}, \"expekt\": 1}]}",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agent-demo"))
        .arg("--transcript")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("t.json") && stderr.contains("expekt") && stderr.contains("line 1"),
        "{stderr}"
    );
}

#[test]
fn committed_manifest_is_fresh() {
    let registry =
        policy_runtime::macro_support::registry_of(toolpolicy_examples::tools::all()).unwrap();
    policy_runtime::testing::assert_manifest_fresh("tools.manifest.json", &registry.manifest());
}
