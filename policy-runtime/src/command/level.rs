//! The seven levels of what a command does.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a command does, from read-only (0) to always denied (6). Ordered: a chain's level is
/// the highest of its commands'.
///
/// ```
/// use policy_runtime::command::Level;
/// assert!(Level::Network > Level::Build);
/// assert_eq!(Level::from_number(3), Some(Level::Destructive));
/// assert_eq!(Level::Destructive.to_string(), "level 3 (destructive)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// 0: reads only (`ls`, `cat`, `grep`, `find`, `wc`).
    ReadOnly,
    /// 1: builds or tests (`cargo test`, `make`, `pytest`).
    Build,
    /// 2: writes within the project (`mkdir`, `cp`, `mv`, `sed -i`, `git commit`, `>> file`).
    ProjectWrite,
    /// 3: destructive (`rm`, `chmod`, `git reset`, `> file`), and every program the table does
    /// not know.
    Destructive,
    /// 4: privileged (`sudo`, `su`, `doas`, `pkexec`).
    Privileged,
    /// 5: outbound network (`curl`, `ssh`, `git push`, `npm publish`).
    Network,
    /// 6: always denied, whatever the policy (`rm -rf /`, `mkfs`, fork bombs, arguments that
    /// run programs, network output piped into a shell).
    AlwaysDenied,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 7] = [
        Level::ReadOnly,
        Level::Build,
        Level::ProjectWrite,
        Level::Destructive,
        Level::Privileged,
        Level::Network,
        Level::AlwaysDenied,
    ];

    /// The level's number, 0 to 6.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The level of a number, if it is 0 to 6.
    pub fn from_number(n: u64) -> Option<Level> {
        Level::ALL.get(usize::try_from(n).ok()?).copied()
    }

    /// A few words on what commands of this level do.
    pub fn describe(self) -> &'static str {
        match self {
            Level::ReadOnly => "read-only",
            Level::Build => "build or test",
            Level::ProjectWrite => "writes within the project",
            Level::Destructive => "destructive",
            Level::Privileged => "privileged",
            Level::Network => "outbound network",
            Level::AlwaysDenied => "always denied",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "level {} ({})", self.number(), self.describe())
    }
}

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.number())
    }
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Level, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Level;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a command level, a whole number from 0 to 6")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Level, E> {
                Level::from_number(n).ok_or_else(|| {
                    E::custom(format!("command level {n} does not exist: levels go from 0 (read-only) to 6 (always denied)"))
                })
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Level, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::custom(format!(
                        "command level {n} does not exist: levels go from 0 (read-only) to 6 (always denied)"
                    ))),
                }
            }
        }
        d.deserialize_u64(V)
    }
}
