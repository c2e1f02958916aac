//! Tier 1 of the capability lint: the attribute walks the tool body and reports, at the span of
//! the offending call, every capability the policy does not grant.
//!
//! What a call does comes from the catalog shared with tier 2
//! ([`policy_runtime::capability`]); what the policy grants from
//! [`policy_runtime::capability::Grants::from_policy`]. The body is resolved on its own
//! ([`scope`]): `use` declarations inside the body, `::std::` and other absolute paths, and
//! method calls on values whose type is decidable from the body (`OpenOptions::new().write(true)`,
//! a `let` bound to one). Names imported at module level are not visible to an attribute; tier 2
//! (`toolpolicy-lint`) resolves them.
//!
//! A granted call with a string literal as its first argument is also judged on the literal
//! (a path against the globs, a program, variable or `host:port` against the allow-lists).
//!
//! A false positive here breaks a user's build, so an undecidable call is never flagged: a user
//! type's `.write()` or `.get()`, `stdout().write_all`, `process::exit`, `env!`, `env::args`.

mod path_args;
mod scope;
pub(crate) mod walk;

pub(crate) use path_args::std_fs_on_path_args;

use policy_runtime::capability::{beyond_declaration, violation_message, Grants};

/// Errors for capabilities the body uses that `policy` does not grant, naming the tool `name`
/// in each message.
pub(crate) fn check_tool(
    name: &str,
    block: &syn::Block,
    policy: &policy_runtime::ToolPolicy,
) -> Vec<syn::Error> {
    check(block, policy, Some(name))
}

fn check(
    block: &syn::Block,
    policy: &policy_runtime::ToolPolicy,
    name: Option<&str>,
) -> Vec<syn::Error> {
    let grants = Grants::from_policy(policy);
    walk::uses(block)
        .into_iter()
        .filter_map(|u| {
            let message = if !grants.allows_effect(u.effect) {
                violation_message(&u.call, u.effect, name, policy)
            } else {
                beyond_declaration(&u.call, u.effect, u.literal.as_deref(), name, policy)?
            };
            Some(syn::Error::new_spanned(&u.tokens, message))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_runtime::ToolPolicy;

    fn policy(json: &str) -> ToolPolicy {
        serde_json::from_str(json).unwrap()
    }

    /// The messages for `body` under `json`.
    fn lint(json: &str, body: &str) -> Vec<String> {
        let block: syn::Block = syn::parse_str(&format!("{{ {body} }}")).unwrap();
        check_tool("t", &block, &policy(json))
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    fn flagged(json: &str, body: &str) -> Vec<String> {
        lint(json, body)
            .into_iter()
            .map(|m| m.split('`').nth(1).unwrap().to_string())
            .collect()
    }

    const NOTHING: &str =
        r#"{"fs": {"read": [], "write": []}, "net": "deny", "exec": "deny", "env": "deny"}"#;

    #[test]
    fn each_capability_is_flagged_when_not_granted() {
        for (body, call) in [
            ("std::fs::write(p, b)", "std::fs::write"),
            ("::std::fs::read_to_string(p)", "std::fs::read_to_string"),
            ("std::fs::File::open(p)", "std::fs::File::open"),
            ("tokio::fs::remove_file(p).await", "tokio::fs::remove_file"),
            (
                "std::net::TcpStream::connect(a)",
                "std::net::TcpStream::connect",
            ),
            ("reqwest::get(u).await", "reqwest::get"),
            (
                "std::process::Command::new(\"ls\").spawn()",
                "std::process::Command::new",
            ),
            ("std::env::var(\"HOME\")", "std::env::var"),
            ("std::env::set_var(\"A\", \"b\")", "std::env::set_var"),
            ("unsafe { libc::execv(a, b) }", "libc::execv"),
            ("unsafe { libc::syscall(1) }", "libc::syscall"),
            ("\"h:80\".to_socket_addrs()", "to_socket_addrs"),
        ] {
            assert_eq!(flagged(NOTHING, body), vec![call], "{body}");
        }
    }

    #[test]
    fn read_and_write_are_told_apart() {
        let read_only = r#"{"fs": {"read": ["/d/**"]}}"#;
        assert!(lint(
            read_only,
            "std::fs::read(p); std::fs::metadata(p); std::fs::read_dir(p);"
        )
        .is_empty());
        assert_eq!(
            flagged(read_only, "std::fs::rename(a, b)"),
            vec!["std::fs::rename"]
        );
        assert_eq!(
            flagged(
                read_only,
                "std::fs::OpenOptions::new().append(true).open(p)"
            ),
            vec!["std::fs::OpenOptions::append"]
        );
        assert!(lint(
            read_only,
            "std::fs::OpenOptions::new().read(true).write(false).open(p)"
        )
        .is_empty());
        assert_eq!(
            flagged(NOTHING, "std::fs::OpenOptions::new().read(true).open(p)"),
            vec!["std::fs::OpenOptions::open"]
        );
        // One finding for a write chain: the write implies the read.
        assert_eq!(
            flagged(NOTHING, "std::fs::File::options().write(true).open(p)"),
            vec!["std::fs::OpenOptions::write"]
        );
        assert_eq!(
            flagged(
                read_only,
                "std::fs::OpenOptions::new().create(true).write(true).open(p)"
            ),
            vec!["std::fs::OpenOptions::create"]
        );
        assert_eq!(
            flagged(
                read_only,
                "let mut o = std::fs::OpenOptions::new(); o.create(true); o.open(p)"
            ),
            vec!["std::fs::OpenOptions::create"]
        );
        assert_eq!(
            flagged(NOTHING, "std::path::Path::new(p).exists()"),
            vec!["std::path::Path::exists"]
        );
        let write = r#"{"fs": {"write": ["/o/**"]}}"#;
        assert!(lint(write, "std::fs::read(p); std::fs::write(p, b);").is_empty());
    }

    #[test]
    fn aliases_in_the_body_count() {
        for body in [
            "use std::fs; fs::write(p, b)",
            "use std::fs::write as put; put(p, b)",
            "use ::std::fs::{self as f}; f::write(p, b)",
            "use std::{fs::{write}}; write(p, b)",
            "use std::fs::*; write(p, b)",
            "let f = std::fs::write; f(p, b)",
        ] {
            assert_eq!(flagged(NOTHING, body), vec!["std::fs::write"], "{body}");
        }
        assert_eq!(
            flagged(
                NOTHING,
                "use std::process::Command as C; C::new(\"x\").output()"
            ),
            vec!["std::process::Command::new"]
        );
    }

    #[test]
    fn the_not_flagged_list_passes_under_the_strictest_policy() {
        for body in [
            "self.write(b); store.get(k); db.write().unwrap();",
            "use std::io::Write; std::io::stdout().write_all(b).unwrap();",
            "std::process::exit(1)",
            "let a = env!(\"CARGO_PKG_NAME\"); let b = option_env!(\"X\"); let c = include_str!(\"lib.rs\");",
            "let args: Vec<String> = std::env::args().collect();",
            "use std::env; env::args_os(); env::current_dir();",
            "let write = |x| x; write(1);",
            "use std::fs::*; let write = |x| x; write(1);",
            "fs::write(p, b)", // module-level import: tier 2's job, never a guess
            "crate::fs::write(p, b)",
            "let o = MyOptions::new(); o.write(true).open(p);",
            "println!(\"{}\", x); format!(\"{x}\");",
            "std::path::Path::new(p).join(\"a\");",
        ] {
            assert!(lint(NOTHING, body).is_empty(), "{body}: {:?}", lint(NOTHING, body));
        }
    }

    #[test]
    fn calls_inside_macros_and_asm_are_seen() {
        assert_eq!(
            flagged(NOTHING, "println!(\"{:?}\", std::env::var(\"X\"))"),
            vec!["std::env::var"]
        );
        assert_eq!(
            flagged(NOTHING, "unsafe { std::arch::asm!(\"nop\") }"),
            vec!["asm!"]
        );
        assert_eq!(
            flagged(NOTHING, "extern \"C\" { fn ext(); } unsafe { ext() }"),
            vec!["ext"]
        );
    }

    #[test]
    fn literal_arguments_must_be_declared() {
        let p = r#"{"fs": {"read": ["/data/**"]}, "env": ["HOME"], "exec": {"allow": ["git"]}}"#
            .replace(r#""env": ["HOME"]"#, r#""env": {"allow": ["HOME"]}"#);
        assert!(lint(&p, r#"std::fs::read("/data/a"); std::env::var("HOME");"#).is_empty());
        assert_eq!(
            flagged(&p, r#"std::fs::read_to_string("/etc/shadow")"#),
            vec!["std::fs::read_to_string"]
        );
        assert_eq!(
            flagged(&p, r#"std::env::var("AWS_SECRET_ACCESS_KEY")"#),
            vec!["std::env::var"]
        );
        assert_eq!(
            flagged(&p, r#"std::process::Command::new("curl")"#),
            vec!["std::process::Command::new"]
        );
        assert!(lint(
            &p,
            r#"std::process::Command::new("git"); std::fs::read(path);"#
        )
        .is_empty());
    }

    /// Runs `f` on a thread with a large stack: parsing deeply nested test input needs more
    /// than a test thread's.
    fn on_a_large_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn bodies_nested_past_the_walk_depth_are_unanalysable_not_a_crash() {
        on_a_large_stack(|| {
            for body in [
                format!(
                    "{}std::fs::write(p, b){}",
                    "(".repeat(1_000),
                    ")".repeat(1_000)
                ),
                format!(
                    "{}std::fs::write(p, b){}",
                    "{".repeat(1_000),
                    "}".repeat(1_000)
                ),
                format!("a{}", ".b()".repeat(20_000)),
                format!("let x: {}u8{} = 1;", "Vec<".repeat(600), ">".repeat(600)),
            ] {
                let found = flagged(NOTHING, &body);
                assert_eq!(
                    found,
                    vec![format!(
                        "code nested more than {} levels deep",
                        walk::MAX_DEPTH
                    )],
                    "{}",
                    &body[..20]
                );
            }
            // Within the depth, a nested call is still found.
            let body = format!("{}std::fs::write(p, b){}", "(".repeat(100), ")".repeat(100));
            assert_eq!(flagged(NOTHING, &body), vec!["std::fs::write"]);
        });
    }

    #[test]
    fn nested_macro_calls_are_walked_in_linear_time() {
        on_a_large_stack(|| {
            let n = 20_000;
            let body = format!("{}std::env::var(\"X\"){};", "m!(".repeat(n), ")".repeat(n));
            let start = std::time::Instant::now();
            let found = lint(NOTHING, &body);
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "{:?}",
                start.elapsed()
            );
            // Past the parsed depth the arguments are left to `toolpolicy-lint`.
            assert!(found.is_empty(), "{found:?}");
            let shallow = format!(
                "{}std::env::var(\"X\"){};",
                "m!(".repeat(walk::MAX_PARSED_MACRO_DEPTH),
                ")".repeat(walk::MAX_PARSED_MACRO_DEPTH)
            );
            assert_eq!(flagged(NOTHING, &shallow), vec!["std::env::var"]);
        });
    }

    #[test]
    fn granted_capabilities_pass_and_messages_say_what_to_write() {
        assert!(lint(r#"{"net": "allow"}"#, "std::net::TcpStream::connect(a)").is_empty());
        assert!(lint("{}", "std::process::Command::new(\"ls\")").is_empty());
        assert!(lint("{}", "std::env::var(\"HOME\")").is_empty());
        let msgs = lint(r#"{"exec": "deny"}"#, "std::process::Command::new(\"ls\")");
        assert_eq!(
            msgs,
            vec![
                "`std::process::Command::new` starts programs but `t` declares `exec = deny`; \
                  add `exec = [\"program\"]` to the policy or remove the call"
            ]
        );
    }
}
