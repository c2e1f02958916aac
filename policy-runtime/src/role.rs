//! The role of a tool's argument, as recorded in its manifest entry (`"args"`).
//!
//! A path or URL argument's role says what the body may do through it, and so what the gate
//! admits there:
//!
//! | role | the argument | the gate admits |
//! | --- | --- | --- |
//! | `read` | a [`crate::args::ReadPath`] | paths under `fs.read ∪ fs.write`, to read |
//! | `write` | a [`crate::args::WritePath`] | paths under `fs.write`, to read or write |
//! | `any` | another path type (`PathBuf`, `&Path`) | paths under `fs.read ∪ fs.write`, any use |
//! | `url` | a URL type (`url::Url`) | URLs `net` admits |
//!
//! An argument with no recorded role (an old manifest has none) is *unknown*: the gate judges it
//! like any untyped argument, where a path is read or written and a URL is fetched, so unknown
//! admits everything the roles admit.
//!
//! [`Role::covers`] orders them for the verifier: `unknown` covers every role, `any` covers
//! `read` and `write`; `read` and `write` do not cover each other (`write → read` admits paths
//! that are only readable, `read → write` lets the body write through the argument), and
//! neither covers `url` nor `url` them.
//!
//! ```
//! use policy_runtime::role::Role;
//! assert!(Role::covers(Some(Role::Any), Some(Role::Write)));
//! assert!(!Role::covers(Some(Role::Write), Some(Role::Read)));
//! assert!(Role::covers(None, Some(Role::Url))); // unknown → a role narrows
//! assert!(!Role::covers(Some(Role::Read), None)); // a role → unknown widens
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::tool::Access;

/// What a tool may do through one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A path the tool reads.
    Read,
    /// A path the tool creates, modifies or deletes.
    Write,
    /// A path used in a way the type does not say.
    Any,
    /// A network URL.
    Url,
}

impl Role {
    /// The role of a path argument judged for `access`.
    pub fn of_access(access: Access) -> Role {
        match access {
            Access::Read => Role::Read,
            Access::Write => Role::Write,
            Access::Unknown => Role::Any,
        }
    }

    /// How the gate judges a path in an argument of this role (`None` for `url`, which is not a
    /// path).
    pub fn access(self) -> Option<Access> {
        match self {
            Role::Read => Some(Access::Read),
            Role::Write => Some(Access::Write),
            Role::Any => Some(Access::Unknown),
            Role::Url => None,
        }
    }

    /// The name in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Any => "any",
            Role::Url => "url",
        }
    }

    /// Whether an argument of role `old` admits everything one of role `new` admits (`None`
    /// is unknown). A change from `old` to `new` widens exactly when this is false.
    pub fn covers(old: Option<Role>, new: Option<Role>) -> bool {
        match (old, new) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(o), Some(n)) => {
                o == n || (o == Role::Any && matches!(n, Role::Read | Role::Write))
            }
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Option<Role>; 5] = [
        None,
        Some(Role::Read),
        Some(Role::Write),
        Some(Role::Any),
        Some(Role::Url),
    ];

    #[test]
    fn covers_is_a_partial_order() {
        for a in ALL {
            assert!(Role::covers(a, a));
            for b in ALL {
                if a != b && Role::covers(a, b) {
                    assert!(!Role::covers(b, a), "{a:?} {b:?}");
                }
                for c in ALL {
                    if Role::covers(a, b) && Role::covers(b, c) {
                        assert!(Role::covers(a, c), "{a:?} {b:?} {c:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn access_round_trips() {
        for access in [Access::Read, Access::Write, Access::Unknown] {
            assert_eq!(Role::of_access(access).access(), Some(access));
        }
        assert_eq!(Role::Url.access(), None);
    }
}
