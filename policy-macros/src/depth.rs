//! How deeply the item under `#[tool]` nests, measured before syn parses it.
//!
//! syn parses by recursion, a few stack frames per level of delimiters, and the compiler runs a
//! proc macro on its own thread (8 MiB of stack by default): a body nested a few thousand
//! levels deep (`{{{{…}}}}`, `((((x))))`) overflows that stack and aborts the whole compiler.
//! The token stream itself is built and dropped without recursion, so it is measured first
//! with an explicit stack, and an item nested deeper than [`MAX_DEPTH`] is refused with a
//! `compile_error!` instead of being parsed (fail closed: the lint cannot analyse it).

use policy_analysis::lint::nesting;
use proc_macro2::{Span, TokenStream, TokenTree};

/// The deepest nesting of delimiters the macro parses.
///
/// Measured with `measure_syn_depth` below (an unoptimised build of the macro, syn parsing an
/// `ItemFn` on a thread with an 8 MiB stack): nested blocks overflow between 371 and 391
/// levels, `unsafe` blocks between 391 and 410, brackets between 547 and 566, parentheses
/// between 605 and 625. The limit is about a third of the worst of them, which leaves the
/// stack the compiler has already used and the walkers that run after the parse (the
/// capability lint, code generation) room; `deepest_accepted_item_expands` checks the whole
/// expansion at this depth. Real code nests a few dozen levels.
pub const MAX_DEPTH: usize = 128;

/// The largest nesting estimate ([`policy_analysis::lint::nesting::estimate`], the one
/// tier 2 uses) the macro parses: it also counts what nests without delimiters (`!!!!x`,
/// `|| || x`, `Vec<Vec<u8>>`, `else if` chains), which syn parses by recursion too.
///
/// Measured with `measure_syn_depth` below (same conditions as [`MAX_DEPTH`]), as levels and
/// the weighted estimate where syn overflows: nested generic types (`Vec<Vec<…>>`) between 157
/// and 176 levels (estimate 167), `&` types between 254 and 274 (264), closures (`|| || …`)
/// between 488 and 508 (984), `!`, `-` and `*` chains between 2031 and 2050 (2039), `&`
/// expressions past 3046; `else if` and `+` chains parse 20,000 levels. The limit is about
/// 38% of the worst (generic types) so that 50 nested generics still pass;
/// `deepest_accepted_generics_expand` checks the whole expansion there.
pub const MAX_NESTING: usize = 64;

/// The deepest nesting of delimiters in `tokens`, and the span of the group that reaches it.
///
/// ```text
/// fn f() { ((x)) }   // depth 3: the braces, then two parentheses
/// ```
pub fn max_depth(tokens: TokenStream) -> (usize, Span) {
    let mut deepest = (0, Span::call_site());
    let mut pending = vec![(tokens, 0usize)];
    while let Some((stream, depth)) = pending.pop() {
        for tt in stream {
            if let TokenTree::Group(g) = tt {
                if depth + 1 > deepest.0 {
                    deepest = (depth + 1, g.span_open());
                }
                pending.push((g.stream(), depth + 1));
            }
        }
    }
    deepest
}

/// `Err` (spanned at `attr_span`, the attribute) when `item` nests deeper than [`MAX_DEPTH`].
pub fn check(item: &TokenStream, attr_span: Span, attribute: &str) -> syn::Result<()> {
    let (depth, _) = max_depth(item.clone());
    if depth > MAX_DEPTH {
        return Err(syn::Error::new(
            attr_span,
            format!(
                "the item under `{attribute}` is nested too deeply to analyse ({depth} levels of brackets, braces or parentheses; at most {MAX_DEPTH}): its capabilities cannot be checked, so it is refused. Move the deep part into a function or constant outside the tool"
            ),
        ));
    }
    let (depth, _) = nesting::estimate(
        item.clone(),
        policy_analysis::lint::walk::Limits::ATTRIBUTE.max_parsed_macro_depth,
    );
    if depth.weighted > MAX_NESTING {
        return Err(syn::Error::new(
            attr_span,
            format!(
                "the item under `{attribute}` is nested too deeply to analyse (an estimated {} levels of syntax, counting operator chains, closures and generic types; at most {MAX_NESTING}): its capabilities cannot be checked, so it is refused. Move the deep part into a function, constant or type alias outside the tool",
                depth.weighted
            ),
        ));
    }
    Ok(())
}

/// Reads the attribute's tokens with [`policy_analysis::dsl`], refusing first (without
/// recursion) tokens nested deeper than syn can parse on the compiler's stack.
pub fn read_attr(tokens: TokenStream, attribute: &str) -> syn::Result<policy_analysis::dsl::Attr> {
    check(&tokens, Span::call_site(), attribute)?;
    policy_analysis::dsl::ast::parse(tokens, Span::call_site())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, inner: &str, close: &str, n: usize) -> String {
        format!(
            "fn f() {{ let _ = {}{inner}{}; }}",
            open.repeat(n),
            close.repeat(n)
        )
    }

    /// Whether syn parses `src` as a function on a thread with `stack` bytes (`false` when the
    /// thread overflowed: the test runs it in a child process for that reason).
    fn parses_within(src: String, stack: usize) -> bool {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || {
                let tokens: TokenStream = src.parse().unwrap();
                syn::parse2::<syn::ItemFn>(tokens).is_ok()
            })
            .unwrap()
            .join()
            .unwrap_or(false)
    }

    #[test]
    fn depth_counts_every_delimiter() {
        let depth = |src: &str| max_depth(src.parse().unwrap()).0;
        assert_eq!(depth("x y"), 0);
        assert_eq!(depth("fn f() { ((x)) }"), 3);
        assert_eq!(depth("[a] {b} ((c), [[d]])"), 3);
        let n = 100_000;
        assert_eq!(depth(&format!("{}{}", "{".repeat(n), "}".repeat(n))), n);
    }

    /// The compiler's proc-macro thread: 8 MiB.
    fn on_compiler_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn a_body_nested_too_deeply_is_refused_before_parsing() {
        // 5,000 nested blocks or parentheses overflow syn on the compiler's stack
        // (`measure_syn_depth`); the check refuses them without recursing.
        let item: TokenStream = nested("{", "", "}", 5_000).parse().unwrap();
        let err = check(&item, Span::call_site(), "#[tool]").unwrap_err();
        assert!(err.to_string().contains("nested too deeply to analyse"));
        let item: TokenStream = nested("(", "1", ")", 5_000).parse().unwrap();
        let err = check(&item, Span::call_site(), "#[tool]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("nested too deeply to analyse"), "{err}");
        assert!(err.contains("5001 levels"), "{err}");
        let attr: TokenStream = format!(
            "policy(fs.read = {}\"/a/**\"{})",
            "[".repeat(5_000),
            "]".repeat(5_000)
        )
        .parse()
        .unwrap();
        let err = crate::depth::read_attr(attr, "#[tool]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("nested too deeply"), "{err}");
    }

    #[test]
    fn deepest_accepted_item_expands() {
        // The function's braces and `MAX_DEPTH - 1` blocks inside them.
        let item = nested("{", "", "}", MAX_DEPTH - 1);
        assert_expands(item);
    }

    /// Checks `item` and expands it as `#[tool(policy(net = deny))]` on the compiler's stack.
    fn assert_expands(item: String) {
        let expanded = on_compiler_stack(move || {
            let item: TokenStream = item.parse().unwrap();
            check(&item, Span::call_site(), "#[tool]").map_err(|e| e.to_string())?;
            let attr: TokenStream = "policy(net = deny)".parse().unwrap();
            crate::expand::tool(attr, item)
                .map(|t| t.to_string())
                .map_err(|e| e.to_string())
        });
        assert!(expanded.unwrap().contains("tool_spec"));
    }

    fn refused(src: String) -> String {
        on_compiler_stack(move || {
            let item: TokenStream = src.parse().unwrap();
            check(&item, Span::call_site(), "#[tool]")
                .unwrap_err()
                .to_string()
        })
    }

    fn accepted(src: String) {
        on_compiler_stack(move || {
            let item: TokenStream = src.parse().unwrap();
            check(&item, Span::call_site(), "#[tool]").unwrap();
            syn::parse2::<syn::ItemFn>(item).unwrap();
        })
    }

    #[test]
    fn nesting_without_delimiters_is_refused_before_parsing() {
        let n = 5_000;
        for src in [
            format!("fn f() {{ let _ = {}x; }}", "!".repeat(n)),
            format!("fn f() {{ let _ = {}x; }}", "|| ".repeat(n)),
            format!(
                "fn f() {{ let _: {}u8{} = 0; }}",
                "Vec<".repeat(n),
                ">".repeat(n)
            ),
            format!("fn f() {{ let _: {}u8 = 0; }}", "&".repeat(n)),
        ] {
            let err = refused(src);
            assert!(err.contains("nested too deeply to analyse"), "{err}");
            assert!(err.contains("at most 64"), "{err}");
        }
    }

    #[test]
    fn ordinary_nesting_is_accepted() {
        accepted(format!(
            "fn f() {{ let _: {}u8{} = Default::default(); }}",
            "Vec<".repeat(50),
            ">".repeat(50)
        ));
        accepted(format!("fn f(a: u32) -> u32 {{ a{} }}", " + a".repeat(100)));
        accepted(format!(
            "fn f(a: u32) -> u32 {{ let x = a.min(1){}; x }}",
            ".max(a).min(a * 2 + 1)".repeat(100)
        ));
        accepted(
            "fn f(v: &[Option<Vec<u8>>]) -> usize { v.iter().map(|x| x.as_ref().map_or(0, |y| y.len())).sum::<usize>() }"
                .into(),
        );
    }

    #[test]
    fn deepest_accepted_generics_expand() {
        // The costliest construct per level, as deep as the limit lets it, inside blocks as
        // deep as `MAX_DEPTH` lets them: the two limits add up.
        let item = |levels: usize| {
            let inner = format!(
                "{{ let _: {}u8{} = Default::default(); }}",
                "Vec<".repeat(levels),
                ">".repeat(levels)
            );
            nested("{", &inner, "}", MAX_DEPTH - 3)
        };
        let levels = (0..MAX_NESTING)
            .rev()
            .find(|&l| check(&item(l).parse().unwrap(), Span::call_site(), "#[tool]").is_ok())
            .unwrap();
        assert!(levels >= MAX_NESTING - 20, "{levels}");
        let item = item(levels);
        assert_expands(item);
    }

    /// Whether syn parses `DEPTH` levels of the shape `MEASURE` (blocks, parens, brackets,
    /// unsafe) within 8 MiB. One depth per process, since an overflow aborts it; bisect with
    /// `MEASURE=blocks DEPTH=380 cargo test -p policy-macros --lib measure_syn_depth -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check: overflows the stack by design"]
    fn measure_syn_depth() {
        let shape = std::env::var("MEASURE").unwrap_or_else(|_| "blocks".into());
        let depth: usize = std::env::var("DEPTH").unwrap().parse().unwrap();
        let src = match shape.as_str() {
            "blocks" => nested("{", "", "}", depth),
            "parens" => nested("(", "1", ")", depth),
            "brackets" => nested("[", "1", "]", depth),
            "unsafe" => nested("unsafe {", "1", "}", depth),
            "not" => nested("", &format!("{}x", "!".repeat(depth)), "", 0),
            "neg" => nested("", &format!("{}x", "- ".repeat(depth)), "", 0),
            "ref" => nested("", &format!("{}x", "& ".repeat(depth)), "", 0),
            "deref" => nested("", &format!("{}x", "* ".repeat(depth)), "", 0),
            "closures" => nested("", &format!("{}x", "|| ".repeat(depth)), "", 0),
            "generics" => format!(
                "fn f() {{ let _: {}u8{} = 0; }}",
                "Vec<".repeat(depth),
                "> ".repeat(depth)
            ),
            "reftype" => format!(
                "fn f() {{ let _: {}u8 = 0; }}",
                "& ".repeat(depth)
            ),
            "elseif" => nested("", &format!("if a {{}}{}", " else if a {}".repeat(depth)), "", 0),
            "plus" => nested("", &format!("a{}", " + a".repeat(depth)), "", 0),
            _ => panic!("MEASURE=blocks|parens|brackets|unsafe|not|neg|ref|deref|closures|generics|elseif|plus"),
        };
        let estimate = nesting::estimate(
            src.parse().unwrap(),
            policy_analysis::lint::walk::Limits::ATTRIBUTE.max_parsed_macro_depth,
        )
        .0;
        println!(
            "{shape} {depth} (estimate {}, weighted {}): {}",
            estimate.parsed,
            estimate.weighted,
            parses_within(src, 8 << 20)
        );
    }
}
