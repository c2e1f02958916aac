//! `toolpolicy-lint` reads `commands(...)` with the attribute macro's own reader: the command
//! policy reaches the manifest it derives, and its mistakes are reported like the macro's.

use policy_runtime::command::Level;

#[test]
fn the_lint_reads_command_policies() {
    let f: syn::ItemFn = syn::parse_quote!(
        #[tool(policy(exec = ["/bin/sh", "git"]),
               commands(max_level = 2, deny_args(git = ["-c", "--upload-pack"]), chains = true, approve_from = 1))]
        fn run_shell(command: ShellCommand) -> String {
            String::new()
        }
    );
    let (name, policy) = manifest_verify::lint::tool_of_attributes("run_shell", &f.attrs)
        .unwrap()
        .unwrap();
    assert_eq!(name, "run_shell");
    let c = policy.commands.expect("the command policy is read");
    assert_eq!(c.max_level, Level::ProjectWrite);
    assert_eq!(c.denied_args("git"), ["-c", "--upload-pack"]);
    assert!(c.chains);
    assert_eq!(c.approve_from, Some(Level::Build));

    for (attr, needle) in [
        (
            quote_attr(r#"commands(max_lvl = 2)"#),
            "unknown key `max_lvl` in `commands(...)`",
        ),
        (quote_attr(r#"commands(max_level = 6)"#), "cannot be 6"),
        (
            quote_attr(r#"commands(max_level = 1, approve_from = 3)"#),
            "above `max_level`",
        ),
        (
            quote_attr(r#"commands(chains = true)"#),
            "needs `max_level`",
        ),
        (
            quote_attr(r#"constraints(max_level = 2)"#),
            "`max_level` belongs in `commands(...)`, not in `constraints(...)`",
        ),
    ] {
        let err = manifest_verify::lint::tool_of_attributes("t", &attr)
            .err()
            .unwrap_or_else(|| panic!("accepted: {needle}"));
        let text: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert!(
            text.iter().any(|t| t.contains(needle)),
            "{needle}: {text:?}"
        );
    }
}

fn quote_attr(inner: &str) -> Vec<syn::Attribute> {
    let src = format!("#[tool(policy(exec = [\"sh\"]), {inner})] fn t(command: ShellCommand) {{}}");
    let f: syn::ItemFn = syn::parse_str(&src).unwrap();
    f.attrs
}
