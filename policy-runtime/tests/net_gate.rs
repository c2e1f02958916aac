//! URL arguments judged against `net` before the body runs (issue 14, items 2 and 4): every
//! trick of the issue is a case, through the registry as a model's call would go.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use policy_runtime::denial::{DenialCode, Layer};
use policy_runtime::gate::check_args;
use policy_runtime::policy::ToolPolicy;
use policy_runtime::registry::{Registry, ToolCall};
use policy_runtime::tool::{fn_tool, ToolSpec};
use serde_json::{json, Value};

fn policy(json: &str) -> ToolPolicy {
    ToolPolicy::from_json_str("p", json).unwrap()
}

const API: &str = r#"{"net": {"hosts": ["api.example.com:443", "api.example.com:80", "10.0.0.7:8080", "*.cdn.example.net:443"]}}"#;

/// Runs `args` through a registered tool with `policy`: whether the body ran, and the denial.
fn call(policy_json: &str, args: Value) -> (bool, Option<policy_runtime::Denial>) {
    let ran = Arc::new(AtomicUsize::new(0));
    let seen = ran.clone();
    let mut registry = Registry::new();
    registry
        .register(fn_tool(
            ToolSpec::new("fetch", policy(policy_json)),
            move |_, _| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok("fetched".into())
            },
        ))
        .unwrap();
    let result = registry
        .start_invocation()
        .call_blocking(ToolCall::new("fetch", args));
    (ran.load(Ordering::SeqCst) == 1, result.denial().cloned())
}

fn denied(policy_json: &str, url: &str) -> policy_runtime::Denial {
    let (ran, denial) = call(policy_json, json!({ "url": url }));
    assert!(!ran, "the body ran for {url:?}");
    denial.unwrap_or_else(|| panic!("{url:?} was not denied"))
}

fn allowed(policy_json: &str, url: &str) {
    let (ran, denial) = call(policy_json, json!({ "url": url }));
    assert!(ran, "{url:?} was denied: {denial:?}");
}

#[test]
fn declared_hosts_pass_with_case_trailing_dot_and_default_ports() {
    for url in [
        "https://api.example.com/v1/items",
        "https://API.Example.COM./v1",
        "http://api.example.com",
        "https://api.example.com:443/",
        "wss://a.b.cdn.example.net/socket",
        "http://10.0.0.7:8080/metrics",
        "  https://api.example.com/ ",
    ] {
        allowed(API, url);
    }
}

#[test]
fn deny_refuses_every_url_and_unspecified_net_judges_none() {
    for url in ["https://api.example.com/", "ws://127.0.0.1:1/", "HTTP://x"] {
        let d = denied(r#"{"net": "deny"}"#, url);
        assert_eq!(d.code, DenialCode::UrlNotAllowed);
        assert!(d.reason.contains("may not use the network"), "{}", d.reason);
    }
    allowed("{}", "https://evil.example/");
    allowed(r#"{"net": "allow"}"#, "https://evil.example/");
    // Strings that are not URLs of these schemes are not judged.
    let (ran, _) = call(
        r#"{"net": "deny"}"#,
        json!({"a": "ftp://x", "b": "see https://x", "c": "https", "n": 3}),
    );
    assert!(ran);
}

#[test]
fn userinfo_is_not_the_host() {
    let d = denied(API, "http://api.example.com@evil.example/");
    assert_eq!(d.code, DenialCode::UrlNotAllowed);
    assert!(d.reason.contains("evil.example:80"), "{}", d.reason);
    assert!(d.reason.contains("api.example.com:443"), "{}", d.reason);
    denied(API, "https://api.example.com:443@evil.example/");
    denied(API, "https://user:api.example.com@evil.example/");
    // Credentials for a declared host are fine.
    allowed(API, "https://user:secret@api.example.com/");
}

#[test]
fn fragment_and_query_are_not_the_host() {
    denied(API, "http://evil.example#api.example.com");
    denied(API, "http://evil.example?api.example.com");
    denied(API, "http://evil.example/api.example.com");
}

#[test]
fn readers_that_disagree_must_both_be_allowed() {
    // A browser reads `api.example.com`; an RFC 3986 reader reads the userinfo `api.example.com\`
    // and the host `evil.example`.
    let d = denied(API, "http://api.example.com\\@evil.example/");
    assert!(d.reason.contains("ambiguous"), "{}", d.reason);
    assert!(d.reason.contains("evil.example:80"), "{}", d.reason);
    // A tab or newline that WHATWG drops but other readers keep.
    let d = denied(API, "https://api.exa\tmple.com/");
    assert!(d.reason.contains("ambiguous"), "{}", d.reason);
}

#[test]
fn ip_literals_in_every_spelling_are_addresses() {
    let loopback = r#"{"net": {"hosts": ["localhost:80"]}}"#;
    for url in [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0x7f.0.0.1/",
        "http://0x7f000001/",
        "http://127.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
    ] {
        let d = denied(loopback, url);
        assert_eq!(d.code, DenialCode::UrlNotAllowed, "{url}");
    }
    // Declared as the address, every spelling of it is that address.
    let declared = r#"{"net": {"hosts": ["127.0.0.1:80"]}}"#;
    for url in [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0x7f.1/",
    ] {
        allowed(declared, url);
    }
    denied(declared, "http://127.0.0.2/");
    denied(declared, "http://0177.0.0.2/");
    denied(declared, "http://localhost/");
}

#[test]
fn look_alike_names_are_other_hosts() {
    // Cyrillic `а` (U+0430) and Greek omicron in place of Latin letters.
    for url in [
        "https://\u{430}pi.example.com/",
        "https://api.ex\u{3bf}mple.com/",
        "https://api.example.com.evil.example/",
        "https://apiexample.com/",
        "https://cdn.example.net/",
    ] {
        let d = denied(API, url);
        assert_eq!(d.code, DenialCode::UrlNotAllowed, "{url}");
    }
    // Full-width letters map to ASCII (IDNA), so this *is* api.example.com.
    allowed(API, "https://\u{ff41}pi.example.com/");
    let idn = r#"{"net": {"hosts": ["xn--bcher-kva.example:443"]}}"#;
    allowed(idn, "https://b\u{fc}cher.example/");
    allowed(idn, "https://B\u{dc}CHER.example./");
}

#[test]
fn urls_nested_in_json_and_keys_are_judged() {
    for args in [
        json!({"request": {"targets": [{"u": "https://api.example.com/"}, {"u": "https://evil.example/"}]}}),
        json!({"headers": {"https://evil.example/": "x"}}),
    ] {
        let (ran, d) = call(API, args.clone());
        assert!(!ran, "{args}");
        assert_eq!(d.unwrap().code, DenialCode::UrlNotAllowed, "{args}");
    }
    let p = policy(API);
    let mut args = json!({"opts": {"list": ["x", "https://evil.example/"]}});
    let d = check_args(&p, &[], &mut args, None).unwrap_err();
    assert_eq!(d.argument.as_deref(), Some("/opts/list/1"));
    let mut args = json!(["https://evil.example/"]);
    assert!(check_args(&p, &[], &mut args, None).is_err());
    assert_eq!(d.path.as_deref(), Some("https://evil.example/"));
    assert_eq!(d.code.layer(), Layer::NetGate);
}

#[test]
fn unparsable_urls_are_refused() {
    for url in [
        "http://[::1/",
        "https://exa mple.com/",
        "http://",
        "wss://a:99999/",
    ] {
        let d = denied(API, url);
        assert_eq!(d.code, DenialCode::InvalidUrl, "{url}: {}", d.reason);
    }
}

#[test]
fn wrong_port_and_scheme_default_port() {
    denied(API, "https://api.example.com:8443/");
    // ws has port 80 by default, wss 443.
    allowed(API, "ws://api.example.com/");
    denied(
        r#"{"net": {"hosts": ["api.example.com:443"]}}"#,
        "ws://api.example.com/",
    );
}
