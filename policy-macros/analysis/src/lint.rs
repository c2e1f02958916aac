//! The capability lint engine (being moved here from `policy-macros` and `manifest-verify`).
