//! Egress end to end through the runner: real programs (`curl`, `getent`, `python3`) in the
//! strict sandbox with `net = {hosts = [...]}`, against servers this test starts on the host's
//! 127.0.0.1. Names used: IP literals, `localhost` (resolved by the host's own files) and
//! unlisted names, which the sandbox's DNS answers locally; nothing leaves the machine.

use std::ffi::OsString;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "support/kernel.rs"]
mod kernel;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/ports.rs"]
mod ports;
use netns::http_server;

use policy_runtime::ToolPolicy;
use sandbox::egress::{BrokerOptions, Decision, EgressEvent, EventKind, Resolver};
use sandbox::runner::{run, RunError, RunOptions};

fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

struct Ran {
    text: String,
    code: Option<i32>,
    events: Vec<EgressEvent>,
    took: Duration,
}

/// Runs `script` under `sh -c` with `hosts`; `None` when the host cannot run the strict
/// profile (skipped unless TOOLPOLICY_REQUIRE_KERNEL=1).
fn run_script(hosts: &[String], script: &str) -> Option<Ran> {
    run_script_with(hosts, script, None)
}

/// [`run_script`] with the broker's options (a resolver map for made-up names).
fn run_script_with(hosts: &[String], script: &str, broker: Option<BrokerOptions>) -> Option<Ran> {
    let policy = serde_json::json!({
        "fs": {"read": ["/usr/**", "/etc/**"]},
        "net": {"hosts": hosts},
    });
    let policy: ToolPolicy = serde_json::from_value(policy).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = Arc::clone(&events);
    let opts = RunOptions::default()
        .helper(env!("CARGO_BIN_EXE_policy-sandbox"))
        .egress_sink(Arc::new(move |e| sink_events.lock().unwrap().push(e)));
    let opts = match broker {
        Some(b) => opts.broker_options(b),
        None => opts,
    };
    let argv: Vec<OsString> = ["/bin/sh", "-c", script].map(OsString::from).to_vec();
    let t = Instant::now();
    let out = match run(&policy, &argv, &opts) {
        Ok(out) => out,
        Err(RunError::Refused(why)) => {
            kernel::missing(&format!("the strict sandbox is refused here: {why}"));
            return None;
        }
        Err(e) => panic!("run failed: {e}"),
    };
    let took = t.elapsed();
    let events = events.lock().unwrap().clone();
    // The run keeps the same events for its audit as the sink received live.
    let kept: Vec<String> = out.egress.iter().map(|e| format!("{e:?}")).collect();
    let live: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
    assert_eq!(kept, live, "RunOutput::egress must match the sink");
    assert_eq!(
        out.audit()["egress"].as_array().map(Vec::len),
        Some(events.len())
    );
    Some(Ran {
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        code: out.code,
        events,
        took,
    })
}

fn tools_present(tools: &[&str]) -> bool {
    let missing: Vec<&&str> = tools.iter().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    kernel::missing(&format!(
        "not installed: {missing:?} (scripts/setup.sh installs them)"
    ));
    false
}

#[test]
fn only_the_listed_endpoints_get_out() {
    if !tools_present(&["curl", "getent"]) {
        return;
    }
    let (allowed, allowed_hits) = http_server("upstream saw");
    let (other, other_hits) = http_server("upstream saw");
    let p = allowed.port();
    let hosts = vec![format!("127.0.0.1:{p}"), format!("localhost:{p}")];
    let by_name = if have("python3") {
        format!(
            "python3 -c \"import urllib.request as u; print(u.urlopen('http://localhost:{p}/by-name', timeout=5).read().decode())\"; echo \"name=$?\"\n"
        )
    } else {
        String::new()
    };
    let script = format!(
        "curl -sS -m 5 http://127.0.0.1:{p}/literal; echo \"literal=$?\"\n\
         curl -sS -m 5 http://127.0.0.1:{q}/; echo \"other_port=$?\"\n\
         getent ahosts localhost | head -n1\n\
         getent hosts exfil-data.example.com; echo \"dns=$?\"\n\
         {by_name}",
        q = other.port()
    );
    let Some(ran) = run_script(&hosts, &script) else {
        return;
    };
    let text = &ran.text;
    assert_eq!(ran.code, Some(0), "{text}");
    assert!(
        text.contains("upstream saw /literal") && text.contains("literal=0"),
        "{text}"
    );
    // Landlock refuses the unlisted port before the kernel even looks for a listener.
    assert!(text.contains("other_port=7"), "{text}");
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "the unlisted port was reached"
    );
    assert!(
        text.contains("127.0.0.2"),
        "localhost maps to its endpoint: {text}"
    );
    assert!(
        text.contains("dns=2"),
        "unlisted names do not resolve: {text}"
    );
    assert!(
        ran.took < Duration::from_secs(5),
        "took {:?}: {text}",
        ran.took
    );
    let connects: Vec<&EgressEvent> = ran
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Connect)
        .collect();
    assert!(connects
        .iter()
        .all(|e| e.decision == Decision::Allowed && e.error.is_none() && e.bytes_down > 0));
    assert!(ran.events.iter().any(|e| e.kind == EventKind::Dns
        && e.decision == Decision::Denied
        && e.host == "exfil-data.example.com"));
    let mut expected = 1;
    if !by_name.is_empty() {
        assert!(
            text.contains("upstream saw /by-name") && text.contains("name=0"),
            "{text}"
        );
        assert!(
            connects.iter().any(|e| e.host == "localhost"),
            "{connects:#?}"
        );
        expected += 1;
    }
    assert_eq!(connects.len(), expected, "{connects:#?}");
    assert_eq!(allowed_hits.load(Ordering::SeqCst), expected);
}

#[test]
fn unreachable_upstream_fails_cleanly() {
    if !tools_present(&["curl"]) {
        return;
    }
    // A port bound and held, but never listened on: connecting is refused, and no parallel
    // test can take the port while this one runs (a released port could be reused).
    let (_held, dead) = ports::bound_not_listening();
    let hosts = vec![format!("127.0.0.1:{}", dead.port())];
    let script = format!(
        "curl -sS -m 5 http://127.0.0.1:{}/; echo \"rc=$?\"",
        dead.port()
    );
    let Some(ran) = run_script(&hosts, &script) else {
        return;
    };
    // The broker resets the connection: curl reports 56 (reset while receiving), 55 (reset
    // while sending the request) or, when the reset lands before curl's non-blocking connect
    // is checked, 7 (could not connect). Which one is a race; each means the connection died.
    assert!(
        ["rc=56", "rc=55", "rc=7"]
            .iter()
            .any(|rc| ran.text.contains(rc)),
        "{}",
        ran.text
    );
    assert!(ran.took < Duration::from_secs(5), "took {:?}", ran.took);
    let e = &ran.events[0];
    assert_eq!(
        (e.kind, e.decision),
        (EventKind::Connect, Decision::Allowed)
    );
    let why = e.error.as_deref().unwrap_or_default();
    assert!(
        why.contains("cannot connect") && why.contains("refused"),
        "{why}"
    );
}

#[test]
fn reserved_addresses_are_refused_before_anything_runs() {
    let policy: ToolPolicy =
        serde_json::from_str(r#"{"net": {"hosts": ["127.0.0.1:53"]}}"#).unwrap();
    let argv: Vec<OsString> = vec!["/bin/true".into()];
    let opts = RunOptions::default().helper(env!("CARGO_BIN_EXE_policy-sandbox"));
    match run(&policy, &argv, &opts) {
        Err(RunError::Refused(why)) => {
            assert!(why.contains("127.0.0.1:53") && why.contains("DNS"), "{why}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn made_up_names_through_the_broker_resolver() {
    if !tools_present(&["curl"]) {
        return;
    }
    let (server, hits) = http_server("upstream saw");
    let hosts = vec![
        "api.test:80".to_string(),
        "*.svc.test:80".to_string(),
        "any.test:*".to_string(),
    ];
    let broker = BrokerOptions {
        resolver: Resolver::map([
            ("api.test", server),
            ("blue.svc.test", server),
            ("any.test", server),
        ]),
        allow_host_local: true,
        ..BrokerOptions::default()
    };
    let script = "curl -sS -m 5 http://api.test/exact; echo \"exact=$?\"\n\
                  curl -sS -m 5 -p -x http://127.0.0.1:3128 http://any.test:9/via-proxy; echo \"proxy=$?\"\n\
                  curl -sS -m 5 http://blue.svc.test/wild; echo \"wild=$?\"\n\
                  curl -sS -m 5 http://api.test:8080/; echo \"port=$?\"\n\
                  curl -sS -m 5 http://svc.test/; echo \"bare=$?\"\n";
    let Some(ran) = run_script_with(&hosts, script, Some(broker)) else {
        return;
    };
    let text = &ran.text;
    assert!(
        text.contains("upstream saw /exact") && text.contains("exact=0"),
        "{text}"
    );
    assert!(
        text.contains("upstream saw /wild") && text.contains("wild=0"),
        "{text}"
    );
    assert!(text.contains("port=7"), "{text}");
    assert!(text.contains("bare=6"), "{text}");
    assert!(
        text.contains("upstream saw /via-proxy") && text.contains("proxy=0"),
        "{text}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let hosts_seen: Vec<&str> = ran
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Connect)
        .map(|e| e.host.as_str())
        .collect();
    assert_eq!(hosts_seen, ["api.test", "any.test", "blue.svc.test"]);
}
