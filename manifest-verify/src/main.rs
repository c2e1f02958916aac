//! `manifest-verify OLD NEW [--format human|json|sarif|github]`; see [`manifest_verify::cli`].

/// Reading manifests and building the verifier's automata is bound by allocation (many small
/// objects per tool, DFA states built during searches); mimalloc makes both markedly faster
/// than the system allocator (see the `verify` benchmark, which uses it too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(manifest_verify::cli::main());
}
