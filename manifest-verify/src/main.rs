//! `manifest-verify OLD NEW [--format human|json|sarif|github]`; see [`manifest_verify::cli`].

fn main() {
    std::process::exit(manifest_verify::cli::main());
}
