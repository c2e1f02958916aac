//! How deeply a token stream may make the parser and the walkers recurse, estimated before
//! anything recursive touches it: the estimator is
//! [`policy_analysis::lint::nesting`], shared with `#[tool]`'s pre-parse check; the
//! lint's limits live here. A file that exceeds [`MAX_NESTING`] is reported as unanalysable
//! instead of being parsed.

pub(crate) use policy_analysis::lint::nesting::{estimate, Depth};

/// The largest estimate the lint parses. The lint runs on a thread whose stack (see
/// `LINT_STACK_BYTES` in `lint/mod.rs`) holds this many levels four times over in an
/// unoptimised build, where the costliest construct (`&&&…T`) takes about 32 KiB of stack per
/// level; no file of the 318 crates `scripts/lint-registry-bench.sh` reads here reaches it.
pub(crate) const MAX_NESTING: usize = 4_000;

/// The deepest nesting of delimiters the lint reads inside macro invocations that it scans
/// token by token rather than parses (see `Limits::WORKSPACE` of the engine's walker): cheap levels, about
/// 2 KiB of stack each.
pub(crate) const MAX_GROUP_DEPTH: usize = 50_000;

/// Whether the lint can read tokens this deep.
pub(crate) fn within_limits(depth: Depth) -> bool {
    depth.within(MAX_NESTING, MAX_GROUP_DEPTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(src: &str) -> usize {
        estimate(src.parse().unwrap(), 4).0.parsed
    }

    #[test]
    fn ordinary_code_is_shallow() {
        let items =
            "fn a() -> u8 { let x = [1, 2, 3]; x[0] } impl S { fn b(&self) {} } ".repeat(500);
        assert!(depth(&items) < 20, "{}", depth(&items));
        let table = format!(
            "static T: [(u32, u32); 5000] = [{}];",
            "(1, 2), ".repeat(5000)
        );
        assert!(depth(&table) < 20, "{}", depth(&table));
        let arms = format!(
            "fn f(x: u8) -> u8 {{ match x {{ {} _ => 0 }} }}",
            (0..2000)
                .map(|i| format!("{i} | 9 => {{ {i} }}\n"))
                .collect::<String>()
        );
        assert!(depth(&arms) < 20, "{}", depth(&arms));
    }

    #[test]
    fn every_kind_of_nesting_counts() {
        let n = 2000;
        for src in [
            format!("fn f() {{ {}{} }}", "{".repeat(n), "}".repeat(n)),
            format!("type T = {}u8{};", "Vec<".repeat(n), ">".repeat(n)),
            format!("fn f() {{ {}x; }}", "!".repeat(n)),
            format!("fn f() {{ a{}; }}", " + a".repeat(n)),
            format!("fn f() {{ a{}; }}", ".b()".repeat(n)),
            format!("fn f() {{ if a {{}}{} }}", " else if a {}".repeat(n)),
            format!("fn f() {{ {} x; }}", "|a, b| ".repeat(n)),
            format!("type T = {}u8{};", "X<a, ".repeat(n), ">".repeat(n)),
            format!("fn f() {{ {}a; }}", "unsafe {a} + ".repeat(n)),
            format!("fn f() {{ if {}a{} {{}} }}", "!(".repeat(n), ")".repeat(n)),
            format!(
                "fn f() {{ x!({}a{}); }}",
                "&mut !(".repeat(n),
                ")".repeat(n)
            ),
        ] {
            assert!(depth(&src) >= n, "{}: {}", &src[..40], depth(&src));
        }
    }

    #[test]
    fn macro_arguments_past_the_parsed_depth_only_count_as_groups() {
        let n = 20_000;
        let src = format!("fn f() {{ {}x{}; }}", "m!(".repeat(n), ")".repeat(n));
        let (d, _) = estimate(src.parse().unwrap(), 4);
        assert!(d.parsed < 30, "{d:?}");
        assert_eq!(d.groups, n + 1);
        let rules = format!("macro_rules! m {{ () => {{ {} }} }}", "!x ".repeat(n));
        assert!(estimate(rules.parse().unwrap(), 0).0.parsed < 10);
    }
}
