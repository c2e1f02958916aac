//! The reference of the whole system, from the Markdown pages in `policy-runtime/docs/`, so a
//! clone and docs.rs show the same contract.
#![doc = links!()]
#![doc = include_str!("../docs/README.md")]

/// The policy model.
pub mod policy {
    #![doc = links!()]
    #![doc = include_str!("../docs/policy.md")]
}

/// The glob dialect.
pub mod globs {
    #![doc = links!()]
    #![doc = include_str!("../docs/globs.md")]
}

/// Manifests and policy files.
pub mod manifest {
    #![doc = links!()]
    #![doc = include_str!("../docs/manifest.md")]
}

/// Finding codes of `manifest-verify`.
pub mod findings {
    #![doc = links!()]
    #![doc = include_str!("../docs/findings.md")]
}

/// Command lines and exit codes.
pub mod cli {
    #![doc = links!()]
    #![doc = include_str!("../docs/cli.md")]
}
