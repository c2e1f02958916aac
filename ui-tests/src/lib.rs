//! Placeholder; arrives with its own issue.
