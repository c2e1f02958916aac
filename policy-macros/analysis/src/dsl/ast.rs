//! The attribute's syntax tree: `key = value` and `key(...)` entries with their spans, before
//! any meaning is given to them (that is `validate`'s job).
//!
//! ```text
//! policy(fs.read = ["/data/**"], net = deny), constraints(max_invocations = 3), name = "x"
//! ```

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Ident, LitBool, LitInt, LitStr, Token};

/// A possibly dotted key such as `net` or `fs.read`.
#[derive(Clone, Debug)]
pub struct Key {
    /// The identifiers between the dots.
    pub parts: Vec<Ident>,
}

impl Key {
    /// The key as written, dots included.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(".")
    }

    /// The span of the key's first part, for notes that point at a key (a `Span` cannot cover
    /// several tokens on stable Rust).
    pub fn span(&self) -> Span {
        self.parts[0].span()
    }

    /// An error underlining the whole key, `fs.raed` from `fs` to `raed`.
    pub fn error(&self, message: impl std::fmt::Display) -> syn::Error {
        syn::Error::new_spanned(self, message)
    }
}

impl quote::ToTokens for Key {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                Token![.](part.span()).to_tokens(tokens);
            }
            part.to_tokens(tokens);
        }
    }
}

impl Parse for Key {
    fn parse(input: ParseStream<'_>) -> syn::Result<Key> {
        let mut parts = vec![input.call(Ident::parse_any_ident)?];
        while input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            parts.push(input.call(Ident::parse_any_ident)?);
        }
        Ok(Key { parts })
    }
}

/// `Ident::parse_any` accepts keywords too (`type`, `fn`), so a misspelt key gets a
/// "did you mean" instead of a bare "expected identifier".
trait ParseAnyIdent {
    fn parse_any_ident(input: ParseStream<'_>) -> syn::Result<Ident>;
}

impl ParseAnyIdent for Ident {
    fn parse_any_ident(input: ParseStream<'_>) -> syn::Result<Ident> {
        use syn::ext::IdentExt;
        Ident::parse_any(input)
    }
}

/// A value on the right of `=`.
#[derive(Clone, Debug)]
pub enum Value {
    /// A bare word: `deny`, `allow`, `none`, `low`, a tool name in `only_after`.
    Word(Ident),
    /// `"..."`.
    Str(LitStr),
    /// `3`, `5000`.
    Int(LitInt),
    /// `true`, `false`.
    Bool(LitBool),
    /// `[a, "b", ...]`.
    List(Span, Vec<Value>),
    /// Anything else (a negative number, a float, a path, a call), kept for its span so the
    /// error can point at it.
    Other(Span, String),
}

impl Value {
    /// Where the value is written.
    pub fn span(&self) -> Span {
        match self {
            Value::Word(i) => i.span(),
            Value::Str(s) => s.span(),
            Value::Int(i) => i.span(),
            Value::Bool(b) => b.span,
            Value::List(span, _) => *span,
            Value::Other(span, _) => *span,
        }
    }

    /// A short description of what was written, for "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Word(i) => format!("`{i}`"),
            Value::Str(s) => format!("the string {:?}", s.value()),
            Value::Int(i) => format!("the number `{i}`"),
            Value::Bool(b) => format!("`{}`", b.value),
            Value::List(..) => "a list".to_string(),
            Value::Other(_, text) => format!("`{text}`"),
        }
    }
}

impl Parse for Value {
    fn parse(input: ParseStream<'_>) -> syn::Result<Value> {
        if input.peek(LitStr) {
            return Ok(Value::Str(input.parse()?));
        }
        if input.peek(LitInt) {
            return Ok(Value::Int(input.parse()?));
        }
        if input.peek(LitBool) {
            return Ok(Value::Bool(input.parse()?));
        }
        if input.peek(syn::token::Bracket) {
            let content;
            let bracket = syn::bracketed!(content in input);
            let items = Punctuated::<Value, Token![,]>::parse_terminated(&content)?;
            return Ok(Value::List(
                bracket.span.join(),
                items.into_iter().collect(),
            ));
        }
        if input.peek(Ident) && (input.peek2(Token![,]) || input.peek2(Token![|]) || is_last(input))
        {
            return Ok(Value::Word(input.parse()?));
        }
        // Anything else: swallow tokens up to the next top-level comma and remember the span.
        let mut tokens = TokenStream::new();
        while !input.is_empty() && !input.peek(Token![,]) {
            let tt: proc_macro2::TokenTree = input.parse()?;
            tokens.extend(std::iter::once(tt));
        }
        if tokens.is_empty() {
            return Err(input.error("expected a value after `=`"));
        }
        let span = tokens.span();
        Ok(Value::Other(span, tokens.to_string()))
    }
}

fn is_last(input: ParseStream<'_>) -> bool {
    let fork = input.fork();
    fork.parse::<Ident>().is_ok() && fork.is_empty()
}

/// One entry of a list of settings.
#[derive(Clone, Debug)]
pub enum Entry {
    /// `key = value`
    Assign {
        /// Left of `=`.
        key: Key,
        /// Right of `=`.
        value: Value,
    },
    /// `key(...)`
    Group {
        /// Before the parentheses.
        key: Key,
        /// Inside them.
        entries: Vec<Entry>,
    },
    /// A bare `key` with neither `=` nor `(...)`.
    Bare {
        /// The key.
        key: Key,
    },
}

impl Entry {
    /// The entry's key.
    pub fn key(&self) -> &Key {
        match self {
            Entry::Assign { key, .. } | Entry::Group { key, .. } | Entry::Bare { key } => key,
        }
    }
}

impl Parse for Entry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Entry> {
        let key: Key = input.parse()?;
        if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            let value = parse_alternatives(input)?;
            Ok(Entry::Assign { key, value })
        } else if input.peek(syn::token::Paren) {
            let content;
            syn::parenthesized!(content in input);
            let entries = Punctuated::<Entry, Token![,]>::parse_terminated(&content)?;
            Ok(Entry::Group {
                key,
                entries: entries.into_iter().collect(),
            })
        } else if input.is_empty() || input.peek(Token![,]) {
            Ok(Entry::Bare { key })
        } else {
            Err(input.error(format!("expected `=` or `(...)` after `{}`", key.text())))
        }
    }
}

/// `deny | allow` is how the issue writes the alternatives; someone copying it verbatim gets a
/// pointed error instead of a parse failure.
fn parse_alternatives(input: ParseStream<'_>) -> syn::Result<Value> {
    let first: Value = input.parse()?;
    if input.peek(Token![|]) {
        let bar: Token![|] = input.parse()?;
        let _rest: Value = input.parse()?;
        return Err(syn::Error::new(
            bar.span,
            "`|` separates the choices in the documentation; pick one of them, e.g. `net = deny`",
        ));
    }
    Ok(first)
}

/// The whole attribute: a comma-separated list of entries.
#[derive(Clone, Debug)]
pub struct Attr {
    /// The entries in the order written.
    pub entries: Vec<Entry>,
}

impl Parse for Attr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Attr> {
        let entries = Punctuated::<Entry, Token![,]>::parse_terminated(input)?;
        Ok(Attr {
            entries: entries.into_iter().collect(),
        })
    }
}

/// Parses the tokens between the attribute's parentheses. `close` is where an error at the end
/// of the input points (the closing parenthesis, or the call site in a proc macro), so that
/// every error has a place in the source.
pub fn parse(tokens: TokenStream, close: Span) -> syn::Result<Attr> {
    use syn::parse::Parser;
    let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, tokens);
    group.set_span(close);
    let inside = |input: ParseStream<'_>| {
        let content;
        syn::parenthesized!(content in input);
        content.parse::<Attr>()
    };
    inside.parse2(TokenStream::from(proc_macro2::TokenTree::Group(group)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let attr: Attr = syn::parse_str(
            r#"policy(fs.read = ["/a/**"], fs.write = "/o/**", net = deny, exec = ["rg"], env = none, risk = low),
               constraints(max_invocations = 3, only_after = [fetch], forbidden = false),
               limits(timeout_ms = 5000), name = "x""#,
        )
        .unwrap();
        assert_eq!(attr.entries.len(), 4);
        let Entry::Group { entries, .. } = &attr.entries[0] else {
            panic!("policy is a group")
        };
        assert_eq!(entries[0].key().text(), "fs.read");
        assert!(matches!(
            &entries[0],
            Entry::Assign {
                value: Value::List(_, items),
                ..
            } if items.len() == 1
        ));
        assert!(matches!(&entries[2], Entry::Assign { value: Value::Word(w), .. } if w == "deny"));
    }

    #[test]
    fn odd_values_are_kept_for_their_span() {
        let attr: Attr = syn::parse_str("max_invocations = -1, x = 1.5").unwrap();
        assert!(
            matches!(&attr.entries[0], Entry::Assign { value: Value::Int(i), .. } if i.base10_digits() == "-1")
        );
        assert!(matches!(
            &attr.entries[1],
            Entry::Assign {
                value: Value::Other(..),
                ..
            }
        ));
    }

    #[test]
    fn pipe_is_explained() {
        let err = syn::parse_str::<Attr>("net = deny | allow").unwrap_err();
        assert!(err.to_string().contains("pick one"), "{err}");
    }
}
