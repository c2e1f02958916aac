//! How deeply the item under `#[tool]` nests, measured before syn parses it.
//!
//! syn parses by recursion, a few stack frames per level of delimiters, and the compiler runs a
//! proc macro on its own thread (8 MiB of stack by default): a body nested a few thousand
//! levels deep (`{{{{…}}}}`, `((((x))))`) overflows that stack and aborts the whole compiler.
//! The token stream itself is built and dropped without recursion, so it is measured first
//! with an explicit stack, and an item nested deeper than [`MAX_DEPTH`] is refused with a
//! `compile_error!` instead of being parsed (fail closed: the lint cannot analyse it).

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
    Ok(())
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
        let err = crate::parse::read_attr(attr, "#[tool]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("nested too deeply"), "{err}");
    }

    #[test]
    fn deepest_accepted_item_expands() {
        // The function's braces and `MAX_DEPTH - 1` blocks inside them.
        let item = nested("{", "", "}", MAX_DEPTH - 1);
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
            _ => panic!("MEASURE=blocks|parens|brackets|unsafe"),
        };
        println!("{shape} {depth}: {}", parses_within(src, 8 << 20));
    }
}
