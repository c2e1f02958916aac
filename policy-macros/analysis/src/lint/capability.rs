//! The capability catalog shared by both lint tiers, and what a policy grants.
//!
//! The lint proves that a tool uses no more than it declares. It needs two facts: which calls
//! use which capability (the *catalog*, described here once as path strings so that this crate
//! stays free of `syn`), and which capabilities a policy grants ([`Grants::from_policy`]).
//!
//! The attribute macro (tier 1) and `toolpolicy-lint` (tier 2) turn syntax into fully qualified
//! path strings such as `std::fs::write` with their own name resolution, then ask
//! [`classify_path`], [`type_yielded_by`] and [`TypeMethods::effect_of`] what the call does.
//!
//! # Catalog format
//!
//! * [`CATALOG`]: `(path, match, effect)` rows. [`Match::Exact`] names one function;
//!   [`Match::Prefix`] names a type or module whose every associated function or item has the
//!   effect (`std::process::Command` covers `Command::new`, `std::os::unix::net` covers
//!   `UnixStream::connect`).
//! * [`NOT_FLAGGED`]: paths that are explicitly *not* capabilities (`std::env::args`,
//!   `std::process::exit`, `std::io::stdout`, ...). They win over a prefix row.
//! * [`TYPE_METHODS`]: types whose effect depends on the methods called on a value
//!   (`OpenOptions::new().write(true).open(p)` writes, `.read(true).open(p)` reads). A walker that
//!   can tell the type of a receiver (a constructor call, a chain of builder methods, a `let`
//!   bound to one) asks [`TypeMethods::effect_of`].
//! * [`DISTINCTIVE_METHODS`]: method names that mean one thing on any receiver
//!   (`.to_socket_addrs()`). Kept tiny on purpose: a user type's own `.write()` or `.get()` must
//!   never be flagged.
//! * [`UNANALYSABLE_MACROS`] and [`COMPILE_TIME_MACROS`]: `asm!` cannot be analysed; `env!`,
//!   `option_env!` and `include_str!` run at compile time and use nothing at run time.
//!
//! ```
//! use policy_analysis::lint::capability::{classify_path, Capability, Effect};
//!
//! assert_eq!(classify_path("std::fs::write"), Some(Effect::Uses(Capability::FsWrite)));
//! assert_eq!(classify_path("std::fs::File::open"), Some(Effect::Uses(Capability::FsRead)));
//! assert_eq!(classify_path("std::process::Command::new"), Some(Effect::Uses(Capability::Exec)));
//! assert_eq!(classify_path("libc::syscall"), Some(Effect::Unanalysable));
//! assert_eq!(classify_path("std::env::args"), None);
//! assert_eq!(classify_path("std::process::exit"), None);
//! ```
//!
//! # Grant rules
//!
//! [`Grants::from_policy`] follows the runtime meaning of [the policy model](policy_runtime::reference::policy):
//!
//! | capability | granted when |
//! |---|---|
//! | fs read | `fs.read` or `fs.write` is declared non-empty (write implies read) |
//! | fs write | `fs.write` is declared non-empty |
//! | net | `net = allow` or `net = [hosts...]`; unspecified is deny |
//! | exec | `exec = allow`, `exec = [programs...]`, or unspecified (unspecified exec is allow) |
//! | env | `env = [names...]` non-empty, or unspecified (inherit); `env = deny` or `[]` grant nothing |
//!
//! Unanalysable code (FFI, `asm!`, `libloading`) could use any capability, so it passes only a
//! policy that grants all five ([`Grants::grants_everything`]).
//!
//! A granted call whose first argument is a string literal is also judged on that literal
//! ([`literal_outside`]): `std::fs::write("/etc/passwd", ..)` under `fs.write = ["/out/**"]`,
//! `env::var("GITHUB_TOKEN")` under `env = ["HOME"]`, `Command::new("curl")` under
//! `exec = ["git"]`, `TcpStream::connect("other:443")` under `net = ["api:443"]`.
//!
//! ```
//! use policy_analysis::lint::capability::{Capability, Grants};
//! use policy_runtime::ToolPolicy;
//!
//! let policy: ToolPolicy = serde_json::from_str(r#"{"fs": {"write": ["/out/**"]}, "env": "deny"}"#)?;
//! let grants = Grants::from_policy(&policy);
//! assert!(grants.allows(Capability::FsRead));
//! assert!(grants.allows(Capability::FsWrite));
//! assert!(!grants.allows(Capability::Net)); // unspecified net is deny
//! assert!(grants.allows(Capability::Exec)); // unspecified exec is allow
//! assert!(!grants.allows(Capability::Env));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;

use policy_runtime::policy::{EnvPolicy, ExecPolicy, NetPolicy, Stance, ToolPolicy};

/// Something a tool can touch outside its own memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Reading files, directories or their metadata.
    FsRead,
    /// Creating, modifying, renaming or deleting files and directories.
    FsWrite,
    /// Outbound or inbound network, including name resolution.
    Net,
    /// Starting other programs.
    Exec,
    /// Reading or changing environment variables.
    Env,
}

impl Capability {
    /// All capabilities, in policy order.
    pub const ALL: [Capability; 5] = [
        Capability::FsRead,
        Capability::FsWrite,
        Capability::Net,
        Capability::Exec,
        Capability::Env,
    ];

    /// The policy key that grants it: `fs.read`, `fs.write`, `net`, `exec`, `env`.
    pub fn key(self) -> &'static str {
        match self {
            Capability::FsRead => "fs.read",
            Capability::FsWrite => "fs.write",
            Capability::Net => "net",
            Capability::Exec => "exec",
            Capability::Env => "env",
        }
    }

    /// What a call with this capability does, as a verb phrase: "writes files".
    pub fn verb(self) -> &'static str {
        match self {
            Capability::FsRead => "reads files",
            Capability::FsWrite => "writes files",
            Capability::Net => "uses the network",
            Capability::Exec => "starts programs",
            Capability::Env => "reads or changes environment variables",
        }
    }

    /// An example declaration that grants it, in the attribute DSL.
    pub fn example(self) -> &'static str {
        match self {
            Capability::FsRead => "fs.read = [\"/data/**\"]",
            Capability::FsWrite => "fs.write = [\"/out/**\"]",
            Capability::Net => "net = [\"api.example.com:443\"]",
            Capability::Exec => "exec = [\"program\"]",
            Capability::Env => "env = [\"NAME\"]",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// What a catalogued call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// It uses this capability.
    Uses(Capability),
    /// It may do anything and cannot be analysed (raw syscalls, FFI, dynamic loading, `asm!`).
    Unanalysable,
}

/// How a [`CATALOG`] row matches a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Only this exact path.
    Exact,
    /// This path and every path under it (`T` covers `T::new`, `m` covers `m::f`).
    Prefix,
}

/// One catalog row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Fully qualified path, without a leading `::`.
    pub path: &'static str,
    /// Exact function or prefix.
    pub matching: Match,
    /// What a call does.
    pub effect: Effect,
}

const fn row(path: &'static str, matching: Match, effect: Effect) -> Entry {
    Entry {
        path,
        matching,
        effect,
    }
}

use Capability::{Env, Exec, FsRead, FsWrite, Net};
use Match::{Exact, Prefix};

const R: Effect = Effect::Uses(FsRead);
const W: Effect = Effect::Uses(FsWrite);
const N: Effect = Effect::Uses(Net);
const X: Effect = Effect::Uses(Exec);
const E: Effect = Effect::Uses(Env);
const U: Effect = Effect::Unanalysable;

/// Every catalogued call. See the [module documentation](self) for the format.
pub static CATALOG: &[Entry] = &[
    // std::fs: reads
    row("std::fs::read", Exact, R),
    row("std::fs::read_to_string", Exact, R),
    row("std::fs::read_dir", Exact, R),
    row("std::fs::metadata", Exact, R),
    row("std::fs::symlink_metadata", Exact, R),
    row("std::fs::read_link", Exact, R),
    row("std::fs::canonicalize", Exact, R),
    row("std::fs::exists", Exact, R),
    row("std::fs::File::open", Exact, R),
    row("std::fs::File::open_buffered", Exact, R),
    row("std::fs::OpenOptions::open", Exact, R),
    row("std::path::Path::exists", Exact, R),
    row("std::path::Path::try_exists", Exact, R),
    row("std::path::Path::metadata", Exact, R),
    row("std::path::Path::symlink_metadata", Exact, R),
    row("std::path::Path::read_dir", Exact, R),
    row("std::path::Path::read_link", Exact, R),
    row("std::path::Path::canonicalize", Exact, R),
    row("std::path::Path::is_file", Exact, R),
    row("std::path::Path::is_dir", Exact, R),
    row("std::path::Path::is_symlink", Exact, R),
    // std::fs: writes
    row("std::fs::write", Exact, W),
    row("std::fs::create_dir", Exact, W),
    row("std::fs::create_dir_all", Exact, W),
    row("std::fs::remove_file", Exact, W),
    row("std::fs::remove_dir", Exact, W),
    row("std::fs::remove_dir_all", Exact, W),
    row("std::fs::rename", Exact, W),
    row("std::fs::copy", Exact, W),
    row("std::fs::hard_link", Exact, W),
    row("std::fs::soft_link", Exact, W),
    row("std::fs::set_permissions", Exact, W),
    row("std::fs::File::create", Exact, W),
    row("std::fs::File::create_new", Exact, W),
    row("std::fs::DirBuilder", Prefix, W),
    row("std::os::unix::fs::symlink", Exact, W),
    row("std::os::unix::fs::chown", Exact, W),
    row("std::os::unix::fs::fchown", Exact, W),
    row("std::os::unix::fs::lchown", Exact, W),
    row("std::os::unix::fs::chroot", Exact, W),
    row("std::os::windows::fs::symlink_file", Exact, W),
    row("std::os::windows::fs::symlink_dir", Exact, W),
    // tokio::fs
    row("tokio::fs::read", Exact, R),
    row("tokio::fs::read_to_string", Exact, R),
    row("tokio::fs::read_dir", Exact, R),
    row("tokio::fs::metadata", Exact, R),
    row("tokio::fs::symlink_metadata", Exact, R),
    row("tokio::fs::read_link", Exact, R),
    row("tokio::fs::canonicalize", Exact, R),
    row("tokio::fs::try_exists", Exact, R),
    row("tokio::fs::File::open", Exact, R),
    row("tokio::fs::OpenOptions::open", Exact, R),
    row("tokio::fs::write", Exact, W),
    row("tokio::fs::create_dir", Exact, W),
    row("tokio::fs::create_dir_all", Exact, W),
    row("tokio::fs::remove_file", Exact, W),
    row("tokio::fs::remove_dir", Exact, W),
    row("tokio::fs::remove_dir_all", Exact, W),
    row("tokio::fs::rename", Exact, W),
    row("tokio::fs::copy", Exact, W),
    row("tokio::fs::hard_link", Exact, W),
    row("tokio::fs::symlink", Exact, W),
    row("tokio::fs::set_permissions", Exact, W),
    row("tokio::fs::File::create", Exact, W),
    row("tokio::fs::File::create_new", Exact, W),
    row("tokio::fs::DirBuilder", Prefix, W),
    // network
    row("std::net::TcpStream", Prefix, N),
    row("std::net::TcpListener", Prefix, N),
    row("std::net::UdpSocket", Prefix, N),
    row("std::net::ToSocketAddrs::to_socket_addrs", Exact, N),
    row("std::os::unix::net", Prefix, N),
    row("tokio::net", Prefix, N),
    row("reqwest::get", Exact, N),
    row("reqwest::Client", Prefix, N),
    row("reqwest::ClientBuilder", Prefix, N),
    row("reqwest::blocking", Prefix, N),
    row("ureq::get", Exact, N),
    row("ureq::post", Exact, N),
    row("ureq::put", Exact, N),
    row("ureq::delete", Exact, N),
    row("ureq::head", Exact, N),
    row("ureq::patch", Exact, N),
    row("ureq::options", Exact, N),
    row("ureq::trace", Exact, N),
    row("ureq::request", Exact, N),
    row("ureq::request_url", Exact, N),
    row("ureq::agent", Exact, N),
    row("ureq::builder", Exact, N),
    row("ureq::run", Exact, N),
    row("ureq::Agent", Prefix, N),
    row("ureq::AgentBuilder", Prefix, N),
    row("hyper::Client", Prefix, N),
    row("hyper::Server", Prefix, N),
    row("hyper::client::conn", Prefix, N),
    row("hyper::server::conn", Prefix, N),
    row("hyper_util::client::legacy::Client", Prefix, N),
    row("libc::socket", Exact, N),
    row("libc::connect", Exact, N),
    row("libc::bind", Exact, N),
    row("libc::getaddrinfo", Exact, N),
    // exec
    row("std::process::Command", Prefix, X),
    row("std::os::unix::process::CommandExt::exec", Exact, X),
    row("tokio::process::Command", Prefix, X),
    row("libc::execv", Exact, X),
    row("libc::execve", Exact, X),
    row("libc::execvp", Exact, X),
    row("libc::execvpe", Exact, X),
    row("libc::execl", Exact, X),
    row("libc::execle", Exact, X),
    row("libc::execlp", Exact, X),
    row("libc::fexecve", Exact, X),
    row("libc::execveat", Exact, X),
    row("libc::posix_spawn", Exact, X),
    row("libc::posix_spawnp", Exact, X),
    row("libc::system", Exact, X),
    row("libc::popen", Exact, X),
    row("nix::unistd::execv", Exact, X),
    row("nix::unistd::execve", Exact, X),
    row("nix::unistd::execvp", Exact, X),
    row("nix::unistd::execvpe", Exact, X),
    row("nix::unistd::fexecve", Exact, X),
    row("nix::unistd::execveat", Exact, X),
    // environment
    row("std::env::var", Exact, E),
    row("std::env::var_os", Exact, E),
    row("std::env::vars", Exact, E),
    row("std::env::vars_os", Exact, E),
    row("std::env::set_var", Exact, E),
    row("std::env::remove_var", Exact, E),
    row("std::env::home_dir", Exact, E),
    row("libc::getenv", Exact, E),
    row("libc::secure_getenv", Exact, E),
    row("libc::setenv", Exact, E),
    row("libc::unsetenv", Exact, E),
    row("libc::putenv", Exact, E),
    row("libc::clearenv", Exact, E),
    // libc file calls whose direction is decided by the path alone
    row("libc::creat", Exact, W),
    row("libc::unlink", Exact, W),
    row("libc::unlinkat", Exact, W),
    row("libc::rename", Exact, W),
    row("libc::renameat", Exact, W),
    row("libc::mkdir", Exact, W),
    row("libc::mkdirat", Exact, W),
    row("libc::rmdir", Exact, W),
    row("libc::link", Exact, W),
    row("libc::symlink", Exact, W),
    row("libc::chmod", Exact, W),
    row("libc::chown", Exact, W),
    row("libc::truncate", Exact, W),
    row("libc::stat", Exact, R),
    row("libc::lstat", Exact, R),
    row("libc::opendir", Exact, R),
    row("libc::access", Exact, R),
    // unanalysable: the flags or the callee decide, at run time
    row("libc::open", Exact, U),
    row("libc::openat", Exact, U),
    row("libc::fopen", Exact, U),
    row("libc::syscall", Exact, U),
    row("libc::dlopen", Exact, U),
    row("libc::dlsym", Exact, U),
    row("libc::ptrace", Exact, U),
    row("libloading", Prefix, U),
    row("nix::unistd::syscall", Exact, U),
    // nix: sockets, exec, unistd and the other file calls
    row("nix::sys::socket::socket", Exact, N),
    row("nix::sys::socket::connect", Exact, N),
    row("nix::sys::socket::bind", Exact, N),
    row("nix::sys::socket::listen", Exact, N),
    row("nix::sys::socket::accept", Exact, N),
    row("nix::sys::socket::accept4", Exact, N),
    row("nix::sys::socket::send", Exact, N),
    row("nix::sys::socket::sendto", Exact, N),
    row("nix::sys::socket::sendmsg", Exact, N),
    row("nix::sys::socket::recv", Exact, N),
    row("nix::sys::socket::recvfrom", Exact, N),
    row("nix::sys::socket::recvmsg", Exact, N),
    row("nix::spawn::posix_spawn", Exact, X),
    row("nix::spawn::posix_spawnp", Exact, X),
    row("nix::unistd::unlink", Exact, W),
    row("nix::unistd::unlinkat", Exact, W),
    row("nix::unistd::mkdir", Exact, W),
    row("nix::unistd::mkfifo", Exact, W),
    row("nix::unistd::mkfifoat", Exact, W),
    row("nix::unistd::chown", Exact, W),
    row("nix::unistd::fchownat", Exact, W),
    row("nix::unistd::truncate", Exact, W),
    row("nix::unistd::symlinkat", Exact, W),
    row("nix::unistd::linkat", Exact, W),
    row("nix::unistd::chroot", Exact, W),
    row("nix::unistd::access", Exact, R),
    row("nix::unistd::faccessat", Exact, R),
    row("nix::fcntl::readlink", Exact, R),
    row("nix::fcntl::readlinkat", Exact, R),
    row("nix::fcntl::renameat", Exact, W),
    row("nix::fcntl::renameat2", Exact, W),
    row("nix::sys::stat::stat", Exact, R),
    row("nix::sys::stat::lstat", Exact, R),
    row("nix::sys::stat::fstatat", Exact, R),
    row("nix::sys::stat::mkdirat", Exact, W),
    row("nix::sys::stat::mknod", Exact, W),
    row("nix::sys::stat::mknodat", Exact, W),
    row("nix::sys::stat::fchmodat", Exact, W),
    row("nix::sys::stat::utimensat", Exact, W),
    row("nix::sys::stat::utimes", Exact, W),
    row("nix::dir::Dir::open", Exact, R),
    row("nix::dir::Dir::openat", Exact, R),
    row("nix::env::clearenv", Exact, E),
    // nix's `open` family: the flags decide read or write, at run time
    row("nix::fcntl::open", Exact, U),
    row("nix::fcntl::openat", Exact, U),
    row("nix::fcntl::openat2", Exact, U),
    // home and XDG directory lookups read `HOME` and `XDG_*`
    row("dirs", Prefix, E),
    row("dirs_next", Prefix, E),
    row("directories", Prefix, E),
    row("home::home_dir", Exact, E),
    // rusqlite: opening a database creates its file unless the flags say read-only, which the
    // lint does not evaluate (fail closed: a write)
    row("rusqlite::Connection::open", Exact, W),
    row("rusqlite::Connection::open_with_flags", Exact, W),
    row("rusqlite::Connection::open_with_flags_and_vfs", Exact, W),
    row("rusqlite::Connection::backup", Exact, W),
    row("rusqlite::Connection::restore", Exact, W),
];

/// Paths that are explicitly **not** capabilities. They win over any [`CATALOG`] prefix row and
/// are never flagged by either tier.
pub static NOT_FLAGGED: &[&str] = &[
    "std::env::args",
    "std::env::args_os",
    "std::env::current_dir",
    "std::env::current_exe",
    "std::env::temp_dir",
    "std::env::consts",
    "std::process::exit",
    "std::process::abort",
    "std::process::id",
    "std::process::Stdio",
    "std::process::ExitCode",
    "std::io::stdout",
    "std::io::stderr",
    "std::io::stdin",
    "std::net::IpAddr",
    "std::net::Ipv4Addr",
    "std::net::Ipv6Addr",
    "std::net::SocketAddr",
    "std::net::SocketAddrV4",
    "std::net::SocketAddrV6",
    "std::path::Path::new",
    "std::path::PathBuf::from",
    "std::path::PathBuf::new",
    "rusqlite::Connection::open_in_memory",
    "rusqlite::Connection::open_in_memory_with_flags",
];

/// Macros that cannot be analysed: inline assembly may do anything.
pub static UNANALYSABLE_MACROS: &[&str] = &["asm", "global_asm", "naked_asm", "llvm_asm"];

/// Macros that run at compile time and use no capability at run time (`env!` reads the
/// *compiler's* environment).
pub static COMPILE_TIME_MACROS: &[&str] = &[
    "env",
    "option_env",
    "include_str",
    "include_bytes",
    "include",
    "concat",
    "stringify",
    "file",
    "line",
    "column",
    "module_path",
    "cfg",
    "compile_error",
];

/// Method names that use a capability on whatever receiver they are called (trait methods of
/// std whose names user types do not reuse in practice).
pub static DISTINCTIVE_METHODS: &[(&str, Effect)] = &[("to_socket_addrs", N)];

/// A type whose effect depends on the methods called on its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeMethods {
    /// The type's fully qualified path.
    pub type_path: &'static str,
    /// Functions that return a value of this type (`OpenOptions::new`, `File::options`).
    pub constructors: &'static [&'static str],
    /// Whether methods return the same value again (a builder), so that the type carries
    /// through a method chain, up to one of the `terminals`.
    pub builder: bool,
    /// Builder methods that return something else (`open` returns the file, not the options).
    pub terminals: &'static [&'static str],
    /// Methods with an effect.
    pub methods: &'static [(&'static str, Effect)],
    /// Methods that only have their effect when their argument is not the literal `false`
    /// (`.write(false)` does not write).
    pub disarmed_by_false: &'static [&'static str],
}

impl TypeMethods {
    /// Whether calling `method` on a value of this type returns the same type again.
    pub fn chains_through(&self, method: &str) -> bool {
        (self.builder && !self.terminals.contains(&method))
            || TRANSPARENT_METHODS.contains(&method)
            || CARRYING_METHODS
                .iter()
                .any(|(ty, methods)| *ty == self.type_path && methods.contains(&method))
    }

    /// The effect of calling `method` on a value of this type; `literal_false` says whether the
    /// only argument is the literal `false`.
    ///
    /// ```
    /// use policy_analysis::lint::capability::{type_yielded_by, Capability, Effect};
    ///
    /// let options = type_yielded_by("std::fs::OpenOptions::new").unwrap();
    /// assert_eq!(options.effect_of("write", false), Some(Effect::Uses(Capability::FsWrite)));
    /// assert_eq!(options.effect_of("write", true), None);
    /// assert_eq!(options.effect_of("read", false), None);
    /// assert_eq!(options.effect_of("open", false), Some(Effect::Uses(Capability::FsRead)));
    /// ```
    pub fn effect_of(&self, method: &str, literal_false: bool) -> Option<Effect> {
        if literal_false && self.disarmed_by_false.contains(&method) {
            return None;
        }
        self.methods
            .iter()
            .find(|(name, _)| *name == method)
            .map(|(_, effect)| *effect)
    }
}

const OPEN_OPTIONS_METHODS: &[(&str, Effect)] = &[
    ("write", W),
    ("append", W),
    ("create", W),
    ("create_new", W),
    ("truncate", W),
    ("open", R),
];
const OPEN_OPTIONS_DISARM: &[&str] = &["write", "append", "create", "create_new", "truncate"];
const PATH_METHODS: &[(&str, Effect)] = &[
    ("exists", R),
    ("try_exists", R),
    ("metadata", R),
    ("symlink_metadata", R),
    ("read_dir", R),
    ("read_link", R),
    ("canonicalize", R),
    ("is_file", R),
    ("is_dir", R),
    ("is_symlink", R),
];

const HTTP_CLIENT_METHODS: &[(&str, Effect)] = &[
    ("get", N),
    ("post", N),
    ("put", N),
    ("patch", N),
    ("delete", N),
    ("head", N),
    ("request", N),
    ("execute", N),
];
const UREQ_AGENT_METHODS: &[(&str, Effect)] = &[
    ("get", N),
    ("post", N),
    ("put", N),
    ("patch", N),
    ("delete", N),
    ("head", N),
    ("options", N),
    ("trace", N),
    ("request", N),
    ("request_url", N),
    ("run", N),
];

/// Methods that hand back the value they are called on, or the `Option`/`Result` around it,
/// whatever its type: `.unwrap()` after `.parent()`, `.clone()` of a client.
pub static TRANSPARENT_METHODS: &[&str] = &["unwrap", "expect", "clone", "to_owned"];

const PATH_CARRIERS: &[&str] = &[
    "join",
    "with_extension",
    "with_file_name",
    "with_added_extension",
    "parent",
    "to_path_buf",
    "into_path_buf",
    "as_path",
    "canonicalize",
    "read_link",
];

/// Methods of a [`TYPE_METHODS`] type that are not builder methods but return a value of the
/// same type again (or one whose methods are the same): `Path::join` returns a `PathBuf`, so
/// `Path::new(a).join(b).exists()` reads.
pub static CARRYING_METHODS: &[(&str, &[&str])] = &[
    ("std::path::Path", PATH_CARRIERS),
    ("std::path::PathBuf", PATH_CARRIERS),
];

/// Calls that read every environment variable at once: an `env` allow-list cannot admit them.
pub static READS_EVERY_VARIABLE: &[&str] = &["std::env::vars", "std::env::vars_os"];

/// Types whose methods decide the effect. See [`TypeMethods`].
pub static TYPE_METHODS: &[TypeMethods] = &[
    TypeMethods {
        type_path: "std::fs::OpenOptions",
        constructors: &["std::fs::OpenOptions::new", "std::fs::File::options"],
        builder: true,
        terminals: &["open"],
        methods: OPEN_OPTIONS_METHODS,
        disarmed_by_false: OPEN_OPTIONS_DISARM,
    },
    TypeMethods {
        type_path: "tokio::fs::OpenOptions",
        constructors: &["tokio::fs::OpenOptions::new", "tokio::fs::File::options"],
        builder: true,
        terminals: &["open"],
        methods: OPEN_OPTIONS_METHODS,
        disarmed_by_false: OPEN_OPTIONS_DISARM,
    },
    TypeMethods {
        type_path: "std::path::Path",
        constructors: &[
            "std::path::Path::new",
            "std::path::PathBuf::from",
            "std::path::PathBuf::new",
        ],
        builder: false,
        terminals: &[],
        methods: PATH_METHODS,
        disarmed_by_false: &[],
    },
    TypeMethods {
        type_path: "std::path::PathBuf",
        constructors: &[],
        builder: false,
        terminals: &[],
        methods: PATH_METHODS,
        disarmed_by_false: &[],
    },
    // Clients: a value of the type, however obtained (a field, a parameter, a helper's
    // result), uses the network through these methods.
    TypeMethods {
        type_path: "reqwest::Client",
        constructors: &["reqwest::Client::new", "reqwest::ClientBuilder::build"],
        builder: false,
        terminals: &[],
        methods: HTTP_CLIENT_METHODS,
        disarmed_by_false: &[],
    },
    TypeMethods {
        type_path: "reqwest::blocking::Client",
        constructors: &[
            "reqwest::blocking::Client::new",
            "reqwest::blocking::ClientBuilder::build",
        ],
        builder: false,
        terminals: &[],
        methods: HTTP_CLIENT_METHODS,
        disarmed_by_false: &[],
    },
    TypeMethods {
        type_path: "ureq::Agent",
        constructors: &[
            "ureq::Agent::new",
            "ureq::agent",
            "ureq::AgentBuilder::build",
        ],
        builder: false,
        terminals: &[],
        methods: UREQ_AGENT_METHODS,
        disarmed_by_false: &[],
    },
];

/// The effect of calling or naming the fully qualified `path` (no leading `::`), or `None`
/// when it is not a capability. `core::` and `alloc::` spellings are treated as `std::`.
pub fn classify_path(path: &str) -> Option<Effect> {
    let path = canonical(path);
    if NOT_FLAGGED.iter().any(|p| path == *p || is_under(&path, p)) {
        return None;
    }
    CATALOG
        .iter()
        .find(|e| match e.matching {
            Exact => path == e.path,
            Prefix => path == e.path || is_under(&path, e.path),
        })
        .map(|e| e.effect)
}

/// The method table of the type that `constructor` (a fully qualified function path) returns,
/// if the catalog knows one.
pub fn type_yielded_by(constructor: &str) -> Option<&'static TypeMethods> {
    let constructor = canonical(constructor);
    TYPE_METHODS
        .iter()
        .find(|t| t.constructors.contains(&constructor.as_str()))
}

/// The method table of the type at `type_path`, if the catalog knows one.
pub fn type_methods(type_path: &str) -> Option<&'static TypeMethods> {
    let type_path = canonical(type_path);
    TYPE_METHODS.iter().find(|t| t.type_path == type_path)
}

/// The effect of a method whose name alone decides it, on any receiver.
pub fn distinctive_method(name: &str) -> Option<Effect> {
    DISTINCTIVE_METHODS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, e)| *e)
}

/// Whether `name!` is inline assembly (unanalysable).
pub fn is_unanalysable_macro(name: &str) -> bool {
    UNANALYSABLE_MACROS.contains(&name)
}

fn canonical(path: &str) -> String {
    let path = path.trim_start_matches("::");
    for alias in ["core::", "alloc::"] {
        if let Some(rest) = path.strip_prefix(alias) {
            return format!("std::{rest}");
        }
    }
    path.to_string()
}

fn is_under(path: &str, prefix: &str) -> bool {
    path.len() > prefix.len() + 2
        && path.starts_with(prefix)
        && path[prefix.len()..].starts_with("::")
}

/// What a policy grants, one flag per [`Capability`]. See the grant rules in the
/// [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// Reading files.
    pub fs_read: bool,
    /// Writing files.
    pub fs_write: bool,
    /// Network.
    pub net: bool,
    /// Starting programs.
    pub exec: bool,
    /// Environment variables.
    pub env: bool,
}

impl Grants {
    /// What `policy` grants, by the runtime meaning of [the policy model](policy_runtime::reference::policy).
    pub fn from_policy(policy: &ToolPolicy) -> Grants {
        let non_empty =
            |list: &Option<policy_runtime::GlobList>| list.as_ref().is_some_and(|l| !l.is_empty());
        let fs_write = non_empty(&policy.fs.write);
        Grants {
            fs_read: fs_write || non_empty(&policy.fs.read),
            fs_write,
            // The effective stances decide; `net = none`, `exec = none` and `env = none` are
            // `Nothing` there.
            net: policy.net_stance().allows_some(),
            exec: policy.exec_stance().allows_some(),
            env: policy.env_stance().allows_some(),
        }
    }

    /// Whether `capability` is granted.
    pub fn allows(&self, capability: Capability) -> bool {
        match capability {
            FsRead => self.fs_read,
            FsWrite => self.fs_write,
            Net => self.net,
            Exec => self.exec,
            Env => self.env,
        }
    }

    /// Whether an effect is granted; [`Effect::Unanalysable`] needs every capability.
    pub fn allows_effect(&self, effect: Effect) -> bool {
        match effect {
            Effect::Uses(c) => self.allows(c),
            Effect::Unanalysable => self.grants_everything(),
        }
    }

    /// Whether all five capabilities are granted.
    pub fn grants_everything(&self) -> bool {
        Capability::ALL.iter().all(|c| self.allows(*c))
    }

    /// The capabilities not granted, in policy order.
    pub fn missing(&self) -> Vec<Capability> {
        Capability::ALL
            .into_iter()
            .filter(|c| !self.allows(*c))
            .collect()
    }
}

/// How `policy` comes to deny `capability`, for messages: "declares no `fs.write`",
/// "declares `net = deny`", "declares `env = none`" (an empty list is quoted as the
/// attribute writes it).
pub fn denial_phrase(policy: &ToolPolicy, capability: Capability) -> String {
    let declared = match capability {
        FsRead => policy
            .fs
            .read
            .as_ref()
            .map(|_| "`fs.read = []`".to_string()),
        FsWrite => policy
            .fs
            .write
            .as_ref()
            .map(|_| "`fs.write = []`".to_string()),
        // Quotes the declaration in the attribute's words: an empty list is written `none`.
        Net => match (&policy.net, policy.net_stance()) {
            (Some(NetPolicy::Deny), _) => Some("`net = deny`".to_string()),
            (Some(_), Stance::Nothing) => Some("`net = none`".to_string()),
            _ => None,
        },
        Exec => match (&policy.exec, policy.exec_stance()) {
            (Some(ExecPolicy::Deny), _) => Some("`exec = deny`".to_string()),
            (Some(_), Stance::Nothing) => Some("`exec = none`".to_string()),
            _ => None,
        },
        Env => match (&policy.env, policy.env_stance()) {
            (Some(EnvPolicy::Deny), _) => Some("`env = deny`".to_string()),
            (Some(_), Stance::Nothing) => Some("`env = none`".to_string()),
            (_, Stance::Only(names)) => Some(format!(
                "`env = [{}]`",
                names
                    .iter()
                    .map(|n| format!("{:?}", n.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        },
    };
    match declared {
        Some(d) => format!("declares {d}"),
        None => format!("declares no `{}`", capability.key()),
    }
}

/// The widen-or-remove message for a call that uses more than a tool declares. `tool` is the
/// tool's name when known.
///
/// ```
/// use policy_analysis::lint::capability::{violation_message, Effect, Capability};
/// use policy_runtime::ToolPolicy;
///
/// let msg = violation_message("std::fs::write", Effect::Uses(Capability::FsWrite),
///                             Some("write_report"), &ToolPolicy::default());
/// assert_eq!(msg, "`std::fs::write` writes files but `write_report` declares no `fs.write`; \
///                  add `fs.write = [\"/out/**\"]` to the policy or remove the call");
/// ```
pub fn violation_message(
    call: &str,
    effect: Effect,
    tool: Option<&str>,
    policy: &ToolPolicy,
) -> String {
    let tool = match tool {
        Some(name) => format!("`{name}`"),
        None => "the tool".to_string(),
    };
    match effect {
        Effect::Uses(c) => format!(
            "`{call}` {} but {tool} {}; add `{}` to the policy or remove the call",
            c.verb(),
            denial_phrase(policy, c),
            c.example()
        ),
        Effect::Unanalysable => {
            let missing: Vec<&str> = Grants::from_policy(policy)
                .missing()
                .iter()
                .map(|c| c.key())
                .collect();
            format!(
                "`{call}` cannot be analysed and may use any capability, but {tool} does not grant {}; \
                 move the call out of the tool or grant every capability",
                missing.join(", ")
            )
        }
    }
}

/// Whether a call whose effect `policy` grants still goes beyond what it declares: a literal
/// first argument outside the declared globs, programs, variables or hosts
/// ([`literal_outside`]), or a call that reads every environment variable
/// ([`READS_EVERY_VARIABLE`]) under an `env` allow-list. Returns the message.
///
/// ```
/// use policy_analysis::lint::capability::{beyond_declaration, Capability, Effect};
/// use policy_runtime::ToolPolicy;
///
/// let policy: ToolPolicy = serde_json::from_str(r#"{"env": {"allow": ["HOME"]}}"#)?;
/// let env = Effect::Uses(Capability::Env);
/// assert!(beyond_declaration("std::env::var", env, Some("HOME"), Some("t"), &policy).is_none());
/// let msg = beyond_declaration("std::env::vars", env, None, Some("t"), &policy).unwrap();
/// assert!(msg.contains("every environment variable"), "{msg}");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn beyond_declaration(
    call: &str,
    effect: Effect,
    literal: Option<&str>,
    tool: Option<&str>,
    policy: &ToolPolicy,
) -> Option<String> {
    let reads_all = READS_EVERY_VARIABLE.contains(&canonical(call).as_str());
    if reads_all && matches!(policy.env, Some(EnvPolicy::Allow(_))) {
        let tool = match tool {
            Some(name) => format!("`{name}`"),
            None => "the tool".to_string(),
        };
        return Some(format!(
            "`{call}` {}: it reads every environment variable, but {tool} declares an `env` \
             allow-list; read the declared variables with `std::env::var` or remove the call",
            Env.verb()
        ));
    }
    literal_outside(call, effect, literal?, tool, policy)
}

/// Calls whose first argument is the one path, program, variable or address they touch;
/// two-path calls (`copy`, `rename`, links) are left out because their first argument is not
/// the one the capability is about.
fn literal_subject(call: &str) -> bool {
    const TWO_PATHS: &[&str] = &["copy", "rename", "hard_link", "soft_link", "symlink"];
    let last = call.rsplit("::").next().unwrap_or(call);
    if call.starts_with("std::fs::") || call.starts_with("tokio::fs::") {
        return !TWO_PATHS.contains(&last);
    }
    matches!(
        call,
        "std::process::Command::new"
            | "tokio::process::Command::new"
            | "std::env::var"
            | "std::env::var_os"
            | "std::env::set_var"
            | "std::env::remove_var"
            | "std::net::TcpStream::connect"
            | "tokio::net::TcpStream::connect"
    )
}

/// When a granted call's first argument is a string literal, whether the literal is inside
/// what the policy declares: an absolute path against the `fs` globs (reads against
/// `fs.read ∪ fs.write`), a program against an `exec` allow-list, a variable name against an
/// `env` allow-list, a `host:port` against `net` hosts. Returns the message for a literal
/// outside the declaration, `None` when it is inside or cannot be judged (relative paths,
/// `net = allow`).
///
/// ```
/// use policy_analysis::lint::capability::{literal_outside, Capability, Effect};
/// use policy_runtime::ToolPolicy;
///
/// let policy: ToolPolicy = serde_json::from_str(r#"{"fs": {"write": ["/out/**"]}, "env": {"allow": ["HOME"]}}"#)?;
/// let w = Effect::Uses(Capability::FsWrite);
/// assert!(literal_outside("std::fs::write", w, "/out/report.txt", Some("t"), &policy).is_none());
/// let msg = literal_outside("std::fs::write", w, "/etc/passwd", Some("t"), &policy).unwrap();
/// assert!(msg.contains("`/etc/passwd`"), "{msg}");
/// let env = Effect::Uses(Capability::Env);
/// assert!(literal_outside("std::env::var", env, "AWS_SECRET_ACCESS_KEY", Some("t"), &policy).is_some());
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn literal_outside(
    call: &str,
    effect: Effect,
    literal: &str,
    tool: Option<&str>,
    policy: &ToolPolicy,
) -> Option<String> {
    let Effect::Uses(capability) = effect else {
        return None;
    };
    if !literal_subject(&canonical(call)) {
        return None;
    }
    let tool = match tool {
        Some(name) => format!("`{name}`"),
        None => "the tool".to_string(),
    };
    let inside = match capability {
        FsRead | FsWrite => {
            if !literal.starts_with('/') {
                return None;
            }
            let path = policy_runtime::path::normalize(literal);
            let in_list = |l: &Option<policy_runtime::GlobList>| {
                l.as_ref().is_some_and(|l| l.is_match(&path))
            };
            match capability {
                FsWrite => in_list(&policy.fs.write),
                _ => in_list(&policy.fs.read) || in_list(&policy.fs.write),
            }
        }
        Exec => match policy.exec_stance() {
            Stance::Only(programs) => {
                let base = literal.rsplit('/').next().unwrap_or(literal);
                programs.iter().any(|p| {
                    p.as_str() == literal || (!p.is_path() && p.as_str() == base) || {
                        let pbase = p.as_str().rsplit('/').next().unwrap_or("");
                        !literal.contains('/') && pbase == literal
                    }
                })
            }
            _ => true,
        },
        Env => match policy.env_stance() {
            Stance::Only(names) => names.iter().any(|n| n.matches(literal)),
            _ => true,
        },
        Net => match policy.net_stance() {
            Stance::Only(hosts) => {
                let (host, port) = literal.rsplit_once(':')?;
                let port = port.parse::<u16>().ok()?;
                let host = host.trim_start_matches('[').trim_end_matches(']');
                match host.parse::<std::net::IpAddr>() {
                    Ok(ip) => hosts.iter().any(|h| h.matches_ip(ip, port)),
                    Err(_) => hosts.iter().any(|h| h.matches_name(host, port)),
                }
            }
            _ => true,
        },
    };
    if inside {
        return None;
    }
    let declared = match capability {
        FsRead => "its `fs.read`/`fs.write` globs do not admit it",
        FsWrite => "its `fs.write` globs do not admit it",
        Net => "its `net` hosts do not admit it",
        Exec => "its `exec` allow-list does not admit it",
        Env => "its `env` allow-list does not admit it",
    };
    Some(format!(
        "`{call}` {}: `{literal}` is not declared by {tool} ({declared}); \
         add it to `{}` or remove the call",
        capability.verb(),
        capability.key()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> ToolPolicy {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn not_flagged_list_never_classifies() {
        for path in NOT_FLAGGED {
            assert_eq!(classify_path(path), None, "{path}");
            assert_eq!(classify_path(&format!("::{path}")), None, "::{path}");
        }
        assert_eq!(classify_path("std::env::args_os"), None);
        assert_eq!(classify_path("std::io::Write::write"), None);
    }

    #[test]
    fn prefix_rows_cover_members_but_not_neighbours() {
        assert_eq!(classify_path("std::process::Command::new"), Some(X));
        assert_eq!(classify_path("::std::process::Command"), Some(X));
        assert_eq!(classify_path("std::process::CommandLine"), None);
        assert_eq!(classify_path("tokio::net::TcpStream::connect"), Some(N));
        assert_eq!(classify_path("core::net::TcpStream::connect"), Some(N));
        assert_eq!(classify_path("libloading::Library::new"), Some(U));
        assert_eq!(classify_path("std::fs::writer"), None);
    }

    #[test]
    fn every_row_is_well_formed_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for e in CATALOG {
            assert!(
                !e.path.starts_with("::") && !e.path.ends_with("::"),
                "{}",
                e.path
            );
            assert!(seen.insert(e.path), "duplicate row {}", e.path);
            assert_eq!(classify_path(e.path), Some(e.effect), "{}", e.path);
        }
    }

    #[test]
    fn client_types_and_path_builders_carry_their_methods() {
        let client = type_yielded_by("reqwest::Client::new").unwrap();
        assert_eq!(client.effect_of("get", false), Some(N));
        assert!(!client.chains_through("get"));
        assert!(client.chains_through("clone"));
        let path = type_yielded_by("std::path::Path::new").unwrap();
        for carried in ["join", "with_extension", "parent", "unwrap"] {
            assert!(path.chains_through(carried), "{carried}");
        }
        assert!(!path.chains_through("display"));
        let path_buf = type_methods("std::path::PathBuf").unwrap();
        assert_eq!(path_buf.effect_of("exists", false), Some(R));
        assert_eq!(classify_path("dirs::home_dir"), Some(E));
        assert_eq!(classify_path("nix::sys::socket::connect"), Some(N));
        assert_eq!(classify_path("rusqlite::Connection::open"), Some(W));
        assert_eq!(classify_path("rusqlite::Connection::open_in_memory"), None);
    }

    #[test]
    fn reading_every_variable_exceeds_an_allow_list() {
        let allow = policy(r#"{"env": {"allow": ["HOME"]}}"#);
        assert!(beyond_declaration("std::env::vars_os", E, None, None, &allow).is_some());
        assert!(beyond_declaration("std::env::var", E, None, None, &allow).is_none());
        // Inherited or denied environments are judged by the grant alone.
        assert!(
            beyond_declaration("std::env::vars", E, None, None, &ToolPolicy::default()).is_none()
        );
    }

    #[test]
    fn grant_rules_follow_the_runtime_meaning() {
        let g = Grants::from_policy(&ToolPolicy::default());
        assert_eq!(
            g,
            Grants {
                fs_read: false,
                fs_write: false,
                net: false,
                exec: true,
                env: true
            }
        );
        let g = Grants::from_policy(&policy(r#"{"fs": {"read": ["/d/**"], "write": []}}"#));
        assert!(g.fs_read && !g.fs_write);
        let g = Grants::from_policy(&policy(r#"{"fs": {"read": []}}"#));
        assert!(!g.fs_read);
        let g = Grants::from_policy(&policy(r#"{"net": {"hosts": ["a.example:443"]}}"#));
        assert!(g.net);
        assert!(!Grants::from_policy(&policy(r#"{"net": "deny"}"#)).net);
        let empty_hosts = policy(r#"{"net": {"hosts": []}}"#);
        assert!(!Grants::from_policy(&empty_hosts).net);
        assert!(denial_phrase(&empty_hosts, Net).contains("`net = none`"));
        let no_programs = policy(r#"{"exec": {"allow": []}}"#);
        assert!(!Grants::from_policy(&no_programs).exec);
        assert!(denial_phrase(&no_programs, Exec).contains("`exec = none`"));
        let home = policy(r#"{"env": {"allow": ["HOME"]}}"#);
        assert_eq!(denial_phrase(&home, Env), r#"declares `env = ["HOME"]`"#);
        assert!(Grants::from_policy(&policy(r#"{"net": "allow"}"#)).net);
        assert!(!Grants::from_policy(&policy(r#"{"exec": "deny"}"#)).exec);
        assert!(Grants::from_policy(&policy(r#"{"exec": {"allow": ["rg"]}}"#)).exec);
        assert!(!Grants::from_policy(&policy(r#"{"env": "deny"}"#)).env);
        assert!(!Grants::from_policy(&policy(r#"{"env": {"allow": []}}"#)).env);
        assert!(Grants::from_policy(&policy(r#"{"env": {"allow": ["HOME"]}}"#)).env);
    }

    #[test]
    fn unanalysable_needs_everything() {
        let all = policy(
            r#"{"fs": {"write": ["/**"]}, "net": "allow", "exec": "allow", "env": {"allow": ["*"]}}"#,
        );
        assert!(Grants::from_policy(&all).allows_effect(U));
        assert!(!Grants::from_policy(&ToolPolicy::default()).allows_effect(U));
        let msg = violation_message("libc::syscall", U, Some("t"), &ToolPolicy::default());
        assert!(msg.contains("fs.read, fs.write, net"), "{msg}");
    }

    #[test]
    fn literals_are_judged_against_the_declaration() {
        let p = policy(
            r#"{"fs": {"read": ["/data/**"], "write": ["/out/**"]}, "exec": {"allow": ["git", "/usr/bin/rg"]},
                "env": {"allow": ["HOME", "AWS_*"]}, "net": {"hosts": ["api.example.com:443", "127.0.0.1:8080"]}}"#,
        );
        let out = |call: &str, c: Capability, lit: &str| {
            literal_outside(call, Effect::Uses(c), lit, None, &p).is_some()
        };
        assert!(!out("std::fs::read_to_string", FsRead, "/data/a.csv"));
        assert!(!out("std::fs::read", FsRead, "/out/x")); // write implies read
        assert!(out("std::fs::read", FsRead, "/etc/shadow"));
        assert!(out("std::fs::write", FsWrite, "/data/a.csv"));
        assert!(out("std::fs::write", FsWrite, "/out/../etc/passwd")); // normalized first
        assert!(!out("std::fs::write", FsWrite, "relative.txt")); // cannot be judged
        assert!(!out("std::fs::copy", FsWrite, "/data/a")); // two-path call: not judged
        assert!(!out("std::process::Command::new", Exec, "git"));
        assert!(!out("std::process::Command::new", Exec, "/usr/bin/git"));
        assert!(!out("std::process::Command::new", Exec, "rg"));
        assert!(out("std::process::Command::new", Exec, "curl"));
        assert!(!out("std::env::var", Env, "AWS_REGION"));
        assert!(out("std::env::var", Env, "GITHUB_TOKEN"));
        assert!(!out(
            "std::net::TcpStream::connect",
            Net,
            "api.example.com:443"
        ));
        assert!(!out("std::net::TcpStream::connect", Net, "127.0.0.1:8080"));
        assert!(out(
            "std::net::TcpStream::connect",
            Net,
            "evil.example.net:443"
        ));
        assert!(!out("std::net::TcpStream::connect", Net, "no-port"));
    }

    #[test]
    fn phrases_name_the_declared_stance() {
        let p = policy(r#"{"net": "deny", "env": "deny", "fs": {"write": []}}"#);
        assert_eq!(denial_phrase(&p, Net), "declares `net = deny`");
        assert_eq!(denial_phrase(&p, Env), "declares `env = deny`");
        assert_eq!(denial_phrase(&p, FsWrite), "declares `fs.write = []`");
        assert_eq!(denial_phrase(&p, FsRead), "declares no `fs.read`");
        assert_eq!(
            denial_phrase(&ToolPolicy::default(), Exec),
            "declares no `exec`"
        );
    }
}
