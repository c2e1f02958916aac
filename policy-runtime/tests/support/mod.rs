//! What the integration tests of policy-runtime share.

pub mod otlp;
