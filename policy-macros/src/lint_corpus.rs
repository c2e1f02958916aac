//! The shared capability-lint corpus, run through both tiers.
//!
//! The corpus is `manifest-verify/tests/lint_corpus/`. Each case is either
//!
//! * a single file `NAME.rs`: one small crate (`src/lib.rs`) whose first comment lines state
//!   the ground truth and what each tier must report, as capability keys (`fs.read`,
//!   `fs.write`, `net`, `exec`, `env`, `unanalysable`) or `clean`:
//!
//!   ```text
//!   // truth: fs.write
//!   // tier1: clean
//!   // tier2: fs.write
//!   ```
//!
//! * or a directory (a crate or a workspace) with an `expect.toml` holding `violations` (the
//!   ground truth, as `"tool capability"`), `tier1` and optionally `tier2` (defaulting to the
//!   ground truth), in the same form.
//!
//! Tier 1 is the `#[tool]`/`#[toolset]`/`#[tool_policy]` expansion itself ([`crate::expand`]),
//! run on every annotated item of the case; its findings are the `compile_error!`s it emits.
//! Tier 2 is `toolpolicy-lint`'s library ([`manifest_verify::lint::lint`]) on the case's crate.
//! A case whose tier does not report exactly what its header states fails the test; the test
//! prints each tier's precision and recall against the ground truth.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use policy_analysis::lint::capability::Capability;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

/// The corpus directory.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifest-verify/tests/lint_corpus")
}

/// One case: its name, where it is, and what each tier must report.
struct Case {
    name: String,
    /// The directory to lint (a temporary crate for a single-file case).
    dir: PathBuf,
    /// Whether findings are compared as `"tool capability"` (directory cases) or as the
    /// capability alone (single-file cases).
    with_tool: bool,
    truth: BTreeSet<String>,
    tier1: BTreeSet<String>,
    tier2: BTreeSet<String>,
    /// Keeps a single-file case's crate alive.
    _temp: Option<tempfile::TempDir>,
}

fn keys(line: &str) -> BTreeSet<String> {
    line.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty() && *k != "clean")
        .map(str::to_string)
        .collect()
}

fn list(table: &toml::Table, key: &str) -> Option<BTreeSet<String>> {
    Some(
        table
            .get(key)?
            .as_array()
            .unwrap_or_else(|| panic!("`{key}` is not a list"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
    )
}

fn single_file_case(path: &Path) -> Case {
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(path).unwrap();
    let header = |key: &str| {
        text.lines()
            .take_while(|l| l.starts_with("//"))
            .find_map(|l| l.strip_prefix(&format!("// {key}:")))
            .map(keys)
            .unwrap_or_else(|| panic!("{name}: no `// {key}:` line"))
    };
    let (truth, tier1, tier2) = (header("truth"), header("tier1"), header("tier2"));
    let temp = tempfile::tempdir().unwrap();
    std::fs::create_dir(temp.path().join("src")).unwrap();
    std::fs::write(
        temp.path().join("Cargo.toml"),
        format!(
            "[package]\nname = \"case_{}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            name.replace('-', "_")
        ),
    )
    .unwrap();
    std::fs::write(temp.path().join("src/lib.rs"), &text).unwrap();
    Case {
        name,
        dir: temp.path().to_path_buf(),
        with_tool: false,
        truth,
        tier1,
        tier2,
        _temp: Some(temp),
    }
}

fn directory_case(dir: &Path) -> Case {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let table: toml::Table = std::fs::read_to_string(dir.join("expect.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let truth = list(&table, "violations").unwrap();
    Case {
        tier1: list(&table, "tier1").unwrap_or_default(),
        tier2: list(&table, "tier2").unwrap_or_else(|| truth.clone()),
        truth,
        name,
        dir: dir.to_path_buf(),
        with_tool: true,
        _temp: None,
    }
}

fn cases() -> Vec<Case> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| {
            if p.extension().is_some_and(|e| e == "rs") {
                Some(single_file_case(p))
            } else if p.join("expect.toml").exists() {
                Some(directory_case(p))
            } else {
                None
            }
        })
        .collect()
}

/// The capability (or `unanalysable`) a tier-1 message is about; any other message (a policy
/// error) is returned whole, so that it shows up as an unexpected finding.
fn message_key(message: &str) -> Option<String> {
    if message.contains("cannot be analysed") {
        return Some("unanalysable".into());
    }
    if message.contains("follows symlinks out of the folder") {
        // The `ReadPath`/`WritePath` handed to `std::fs` rule: not a capability finding.
        return None;
    }
    Capability::ALL
        .into_iter()
        .find(|c| message.contains(&format!("` {}", c.verb())))
        .map(|c| c.key().to_string())
        .or_else(|| Some(format!("error: {message}")))
}

/// The messages of every `compile_error!` in `tokens`.
fn compile_errors(tokens: TokenStream, out: &mut Vec<String>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) if id == "compile_error" => {
                if let Some(TokenTree::Group(g)) = tts.get(i + 2) {
                    if let Ok(lit) = syn::parse2::<syn::LitStr>(g.stream()) {
                        out.push(lit.value());
                    }
                }
            }
            TokenTree::Group(g) => compile_errors(g.stream(), out),
            _ => {}
        }
    }
}

/// The `#[name(...)]` attribute of `attrs` and the attributes without it.
fn take_attr(attrs: &[syn::Attribute], name: &str) -> Option<(TokenStream, Vec<syn::Attribute>)> {
    let at = attrs.iter().position(|a| {
        a.path().is_ident(name)
            && (name != "tool"
                || a.meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string().contains("policy")))
    })?;
    let args = match &attrs[at].meta {
        syn::Meta::List(l) => l.tokens.clone(),
        _ => TokenStream::new(),
    };
    let mut rest = attrs.to_vec();
    rest.remove(at);
    Some((args, rest))
}

/// Runs the attribute macros on every annotated item of `items`, collecting `(tool, message)`.
fn expand_items(items: &[syn::Item], out: &mut Vec<(String, String)>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => run_annotated(
                &f.attrs,
                "tool",
                &f.sig.ident,
                crate::expand::tool,
                out,
                |attrs| {
                    let mut f = f.clone();
                    f.attrs = attrs;
                    f.to_token_stream()
                },
            ),
            syn::Item::Impl(imp) => {
                if let Some((args, attrs)) = take_attr(&imp.attrs, "toolset") {
                    let mut imp = imp.clone();
                    imp.attrs = attrs;
                    let mut messages = Vec::new();
                    match crate::expand::toolset(args, imp.to_token_stream()) {
                        Ok(t) => compile_errors(t, &mut messages),
                        Err(e) => compile_errors(e.to_compile_error(), &mut messages),
                    }
                    out.extend(messages.into_iter().map(|m| (tool_in_message(&m), m)));
                }
                for member in &imp.items {
                    if let syn::ImplItem::Fn(f) = member {
                        let expand = crate::expand::tool_policy;
                        run_annotated(
                            &f.attrs,
                            "tool_policy",
                            &f.sig.ident,
                            expand,
                            out,
                            |attrs| {
                                let mut f = f.clone();
                                f.attrs = attrs;
                                f.to_token_stream()
                            },
                        )
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    expand_items(items, out);
                }
            }
            _ => {}
        }
    }
}

/// The tool a message names (`... but `name` declares ...`).
fn tool_in_message(message: &str) -> String {
    message
        .split(" but `")
        .nth(1)
        .or_else(|| message.split("declared by `").nth(1))
        .and_then(|rest| rest.split('`').next())
        .unwrap_or("?")
        .to_string()
}

/// Runs `expand` on a function carrying the attribute `attr`, rebuilt without it by `rebuild`
/// (a free function and a method are different syn types with the same two fields).
fn run_annotated(
    attrs: &[syn::Attribute],
    attr: &str,
    name: &syn::Ident,
    expand: fn(TokenStream, TokenStream) -> syn::Result<TokenStream>,
    out: &mut Vec<(String, String)>,
    rebuild: impl FnOnce(Vec<syn::Attribute>) -> TokenStream,
) {
    if let Some((args, rest)) = take_attr(attrs, attr) {
        let item = rebuild(rest.clone());
        run_tier1(&name.to_string(), &rest, &args, expand, item, out);
    }
}

fn run_tier1(
    fn_name: &str,
    attrs: &[syn::Attribute],
    args: &TokenStream,
    expand: fn(TokenStream, TokenStream) -> syn::Result<TokenStream>,
    item: TokenStream,
    out: &mut Vec<(String, String)>,
) {
    let mut messages = Vec::new();
    match expand(args.clone(), item) {
        Ok(t) => compile_errors(t, &mut messages),
        Err(e) => compile_errors(e.to_compile_error(), &mut messages),
    }
    // The tool's name as the lint reads it (a `name = ".."` override included).
    let mut all = attrs.to_vec();
    all.push(syn::parse_quote!(#[tool_policy(#args)]));
    let name = manifest_verify::lint::tool_of_attributes(fn_name, &all)
        .ok()
        .flatten()
        .map_or_else(|| fn_name.to_string(), |(n, _)| n);
    out.extend(messages.into_iter().map(|m| (name.clone(), m)));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn tier1(case: &Case) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&case.dir, &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: {}: {e}", case.name, file.display()));
        expand_items(&parsed.items, &mut found);
    }
    found
        .into_iter()
        .filter_map(|(tool, m)| {
            let key = message_key(&m)?;
            Some(if case.with_tool {
                format!("{tool} {key}")
            } else {
                key
            })
        })
        .collect()
}

fn tier2(case: &Case) -> BTreeSet<String> {
    let report = manifest_verify::lint::lint(&case.dir, &Default::default())
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    assert!(report.tools > 0, "{}: no tool found", case.name);
    let mut found: BTreeSet<String> = report
        .findings
        .iter()
        .map(|f| {
            let key = f.capability.map_or("unanalysable", |c| c.key());
            if case.with_tool {
                format!("{} {key}", f.tool)
            } else {
                key.to_string()
            }
        })
        .collect();
    // Code the lint could not read makes the verdict incomplete: unanalysable.
    for problem in &report.problems {
        found.insert(if case.with_tool {
            format!("* unanalysable ({problem})")
        } else {
            "unanalysable".to_string()
        });
    }
    found
}

/// True positives, false positives and false negatives of one tier.
#[derive(Default)]
struct Score {
    tp: usize,
    fp: usize,
    fn_: usize,
}

impl Score {
    fn add(&mut self, found: &BTreeSet<String>, truth: &BTreeSet<String>) {
        self.tp += found.intersection(truth).count();
        self.fp += found.difference(truth).count();
        self.fn_ += truth.difference(found).count();
    }

    fn line(&self, tier: &str) -> String {
        let precision = self.tp as f64 / (self.tp + self.fp).max(1) as f64;
        let recall = self.tp as f64 / (self.tp + self.fn_).max(1) as f64;
        format!(
            "{tier}: {} true positives, {} false positives, {} false negatives; precision {precision:.3}, recall {recall:.3}",
            self.tp, self.fp, self.fn_
        )
    }
}

/// Runs `f` with the compiler's 8 MiB stack, as the attribute runs.
fn on_compiler_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn_scoped(s, f)
            .unwrap()
            .join()
            .unwrap()
    })
}

#[test]
fn every_case_meets_its_stated_expectation_in_both_tiers() {
    let cases = cases();
    assert!(
        cases.len() >= 120,
        "the corpus has {} cases, wants at least 120",
        cases.len()
    );
    let (mut one, mut two) = (Score::default(), Score::default());
    let mut failures = Vec::new();
    for case in &cases {
        let first = on_compiler_stack(|| tier1(case));
        let second = tier2(case);
        one.add(&first, &case.truth);
        two.add(&second, &case.truth);
        if first != case.tier1 {
            failures.push(format!(
                "{}: tier 1 must report {:?}, reported {first:?}",
                case.name, case.tier1
            ));
        }
        if second != case.tier2 {
            failures.push(format!(
                "{}: tier 2 must report {:?}, reported {second:?}",
                case.name, case.tier2
            ));
        }
    }
    println!("shared lint corpus: {} cases", cases.len());
    println!("{}", one.line("tier 1 (#[tool])"));
    println!("{}", two.line("tier 2 (toolpolicy-lint)"));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
