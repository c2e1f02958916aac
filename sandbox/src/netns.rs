//! The strict profile's empty network namespace, leased instead of created per run.
//!
//! With `net = deny` a strict run needs a network namespace with no way out: no interface but
//! a loopback that stays down. Creating one is the largest single cost of a strict spawn (the
//! kernel registers a loopback device and every protocol's per-namespace tables and sysctls,
//! about half a plain spawn), and its teardown adds more in the kernel's workers.
//! Yet an empty namespace that nobody can configure is the same for every run, so a root
//! runner keeps a small pool of them and *leases* one to each run:
//!
//! * **Made by the runner, owned by its user namespace.** A short-lived thread of the runner
//!   `unshare`s a network namespace and hands back a descriptor to it, so the namespace
//!   belongs to the runner's user namespace (`tests/netns_lease.rs` asks the kernel for a
//!   running tool's namespace's owner). The child, cloned into
//!   a user namespace of its own, holds no capability over a namespace its user namespace
//!   does not own: it cannot bring the loopback up or open a raw socket (no `CAP_NET_ADMIN`,
//!   no `CAP_NET_RAW` there), and its `/proc` is read-only, so it cannot change a sysctl
//!   (`tests/netns_lease.rs`). (A namespace created per run belongs to the child's user
//!   namespace, which holds every capability over it until the child drops them.)
//! * **One run at a time.** A namespace is lent to one run and comes back only when that run's
//!   pid 1 has been reaped: the kernel ends every process of a pid namespace before its init
//!   finishes exiting, so nothing of the run is left in the network namespace either. Two runs
//!   at the same moment never share one: they cannot see each other's sockets, bind names or
//!   ports.
//! * **Given back empty, or not at all.** Before a namespace is lent again its socket count
//!   (`/proc/net/sockstat`, read through a descriptor opened inside it) must be zero. A socket
//!   that outlived its run (one passed out over a unix socket, one in flight in a descriptor
//!   cycle not yet collected) would carry a bound name or port to the next run, so such a
//!   namespace is closed instead. Only a run whose pid 1 the caller reaped gives its namespace
//!   back; any other end (a spawn that failed after the lease, a panic) closes it.
//! * **Per process.** Like the view templates, the pool belongs to the process that made it
//!   (`crate::per_process`): a forked child makes its own.
//!
//! A run with a leased view joins its namespace in its child, with one `setns` made before
//! the child leaves the runner's user namespace. A child cloned straight into a user namespace
//! of its own could not join one of the runner's any more, so for it the calling thread joins
//! with two `setns` calls around the `clone` (opening its own namespace first, to come back
//! to: about 10 µs per run that the child's join saves).
//!
//! **Who gets it** ([`NetnsSource`], decided once per prepared policy): a strict plan that
//! needs a network namespace without a loopback, run by a caller with `CAP_SYS_ADMIN` (which
//! both `unshare` and `setns` of a network namespace require) over the user namespace that
//! owns its own network namespace too (without it, a thread that joined a leased namespace
//! could not come back: a runner that is root in a container of its own, whose network
//! namespace is the host's). Plans with an egress broker bring their loopback up inside the
//! namespace, so they keep one of their own per run.
//!
//! A runner without that capability whose plan's view template is held in a user namespace
//! of its own ([`NetnsSource::Held`], `crate::mounts::held`) leases in the same way from a pool
//! of that user namespace: a helper process in it makes each namespace, which it therefore
//! owns, and the run's child, cloned in it, joins the namespace before it makes its own user
//! namespace; the pool is the template's, and a namespace is given back with the same socket
//! count check (`tests/netns_lease.rs` runs its checks for both kinds of runner).
//!
//! ```
//! use sandbox::netns::{NetnsPerRunWhy, NetnsSource};
//!
//! // A plan with egress listeners owns its namespace: its child brings the loopback up.
//! assert_eq!(
//!     sandbox::netns::decide(true, true, false),
//!     Some(NetnsSource::PerRun(NetnsPerRunWhy::Loopback))
//! );
//! // `net = allow`: no network namespace at all.
//! assert_eq!(sandbox::netns::decide(false, false, false), None);
//! ```

use std::fs::File;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;

use crate::per_process::PerProcess;

/// Where a strict run's network namespace comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetnsSource {
    /// Leased from the runner's pool of empty namespaces (see the module docs).
    Leased,
    /// Leased in the same way from a pool of the user namespace that holds the plan's view
    /// template, for a runner without `CAP_SYS_ADMIN` over its mounts
    /// ([`crate::mounts::template::ViewBuild::HeldTemplate`]): the run's child joins it in that
    /// user namespace, before it makes its own. A run that is lent no view namespace makes its
    /// own network namespace.
    Held,
    /// Created by the run's own `clone`, for the reason given.
    PerRun(NetnsPerRunWhy),
}

/// Why a strict plan creates its network namespace per run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetnsPerRunWhy {
    /// The runner lacks `CAP_SYS_ADMIN` (not root): it can neither create a namespace outside
    /// a run nor join one.
    NotPrivileged,
    /// The plan's egress listeners need the loopback up, which the child does in a namespace
    /// its own user namespace owns.
    Loopback,
    /// The runner's own network namespace belongs to a user namespace over which it holds no
    /// `CAP_SYS_ADMIN`: an ancestor of its own, as for a runner that is root in a container.
    /// Its calling thread could join a leased namespace for the `clone` but never come back.
    NotOwnHome,
    /// The run is its process's only one ([`crate::runner::RunOptions::one_shot`]): a
    /// namespace made outside it would serve no other, so none is made or asked about.
    OneShot,
}

/// Decides, once per prepared plan, where its runs' network namespace comes from; `None` when
/// the plan needs none (`netns` false: `net = allow`).
///
/// ```
/// // Every strict plan with a network namespace gets a source.
/// assert!(sandbox::netns::decide(true, false, false).is_some());
/// // A plan whose view template is held in a user namespace leases from that namespace's pool.
/// assert_eq!(
///     sandbox::netns::decide(true, false, true),
///     Some(sandbox::netns::NetnsSource::Held)
/// );
/// ```
///
/// `held_view`: the plan's view template is held in a user namespace of the runner's
/// ([`crate::mounts::template::ViewBuild::HeldTemplate`]).
pub fn decide(netns: bool, loopback: bool, held_view: bool) -> Option<NetnsSource> {
    if !netns {
        return None;
    }
    if loopback {
        return Some(NetnsSource::PerRun(NetnsPerRunWhy::Loopback));
    }
    // The child joins in the held user namespace: the runner needs no capability of its own,
    // and its calling thread never leaves its namespace.
    if held_view {
        return Some(NetnsSource::Held);
    }
    const CAP_SYS_ADMIN: u32 = 21;
    if !crate::child::has_effective_cap(CAP_SYS_ADMIN) {
        return Some(NetnsSource::PerRun(NetnsPerRunWhy::NotPrivileged));
    }
    if !may_come_home() {
        return Some(NetnsSource::PerRun(NetnsPerRunWhy::NotOwnHome));
    }
    Some(NetnsSource::Leased)
}

/// [`decide`] for a plan of one run ([`crate::runner::RunOptions::one_shot`]): the run makes
/// its own namespace, and the kernel is not asked (on a thread of its own, about a tenth of a
/// plain spawn) whether a leased one could have served it.
///
/// ```
/// use sandbox::netns::{decide_once, NetnsPerRunWhy, NetnsSource};
///
/// assert_eq!(decide_once(true, false), Some(NetnsSource::PerRun(NetnsPerRunWhy::OneShot)));
/// assert_eq!(decide_once(false, false), None);
/// ```
pub fn decide_once(netns: bool, loopback: bool) -> Option<NetnsSource> {
    match (netns, loopback) {
        (false, _) => None,
        (true, true) => Some(NetnsSource::PerRun(NetnsPerRunWhy::Loopback)),
        (true, false) => Some(NetnsSource::PerRun(NetnsPerRunWhy::OneShot)),
    }
}

/// Whether a thread of the runner may join its own network namespace again, which the kernel
/// allows only with `CAP_SYS_ADMIN` over the user namespace that owns it: the same check as
/// coming back after a leased one. Asked of the kernel, on a thread of its own, by joining the
/// namespace it is already in (which changes nothing).
fn may_come_home() -> bool {
    std::thread::scope(|s| {
        s.spawn(|| Home::here().is_ok_and(|home| home.back()))
            .join()
            .unwrap_or(false)
    })
}

/// How many idle namespaces the pool keeps; more concurrent runs make more, closed on return.
const IDLE_KEPT: usize = 16;

/// An empty network namespace and its socket count.
pub(crate) struct Empty {
    ns: OwnedFd,
    /// `/proc/thread-self/net/sockstat`, opened inside the namespace: reads show its sockets.
    sockstat: File,
}

static POOL: PerProcess<Vec<Empty>> = PerProcess::new();

/// One run's network namespace; closed when dropped, pooled again by [`Lease::give_back`].
pub(crate) struct Lease {
    empty: Empty,
}

/// The inode number of a namespace, from the text of its `/proc` link (`net:[4026531840]`):
/// `link` is the link's path, relative to the directory `at` when given. `readlink`, because
/// it costs about 1.9 µs against 4.7 for a `stat` through the link (which makes the
/// namespace's file). The error is the call's (`ENOENT` for `pid_for_children` before its
/// namespace's first process exists).
pub(crate) fn namespace_inode(
    link: &std::ffi::CStr,
    at: Option<std::os::fd::RawFd>,
) -> std::io::Result<u64> {
    let mut text = [0u8; 64];
    // SAFETY: a valid C string, a descriptor of the caller's or AT_FDCWD, and a buffer of the
    // length given.
    let n = unsafe {
        libc::readlinkat(
            at.unwrap_or(libc::AT_FDCWD),
            link.as_ptr(),
            text.as_mut_ptr().cast(),
            text.len(),
        )
    };
    let n = usize::try_from(n).map_err(|_| std::io::Error::last_os_error())?;
    std::str::from_utf8(&text[..n])
        .ok()
        .and_then(|t| t.trim_end_matches(']').split_once(":[")?.1.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not a namespace link: {:?}", &text[..n])))
}

/// Takes an idle namespace or makes one.
///
/// Errors: the namespace could not be made (out of memory, the `user.max_net_namespaces`
/// limit reached, no `CAP_SYS_ADMIN`).
pub(crate) fn lease() -> Result<Lease, String> {
    if let Some(empty) = POOL.lock(|| {}).pop() {
        return Ok(Lease { empty });
    }
    make().map(|empty| Lease { empty })
}

/// Makes a namespace on a thread of its own: `unshare(CLONE_NEWNET)` changes only the calling
/// thread's namespace, and this one ends right after.
fn make() -> Result<Empty, String> {
    std::thread::spawn(Empty::unshare_here)
        .join()
        .unwrap_or_else(|_| Err("the network namespace's thread panicked".into()))
}

/// Moves the calling thread (or helper process), which must end soon after, into a new
/// namespace of `flag` (`CLONE_NEWNET`, `CLONE_NEWIPC`) and opens it: `kind` names its link
/// under `/proc/thread-self/ns`.
pub(crate) fn unshare_own(flag: libc::c_int, kind: &str) -> Result<OwnedFd, String> {
    // SAFETY: a flag-only system call on this thread (or process) alone.
    if unsafe { libc::unshare(flag) } != 0 {
        return Err(format!(
            "unshare a {kind} namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    File::open(format!("/proc/thread-self/ns/{kind}"))
        .map(OwnedFd::from)
        .map_err(|e| format!("open the new {kind} namespace: {e}"))
}

impl Empty {
    /// [`unshare_own`] of a network namespace, with its socket count.
    fn unshare_here() -> Result<Empty, String> {
        let ns = unshare_own(libc::CLONE_NEWNET, "net")?;
        let sockstat = File::open("/proc/thread-self/net/sockstat")
            .map_err(|e| format!("open the new network namespace's sockstat: {e}"))?;
        Ok(Empty { ns, sockstat })
    }

    /// Makes a namespace in the held user namespace `user`, which owns it
    /// ([`NetnsSource::Held`]).
    pub(crate) fn make_held(user: &crate::mounts::held::HeldUserNs) -> Result<Empty, String> {
        let enter = crate::mounts::held::Enter::Join {
            user: user.raw_fd(),
            mnt: None,
        };
        crate::mounts::held::in_helper(enter, || {
            Empty::unshare_here().map_err(|e| format!("{e} (in a held user namespace)"))
        })
    }

    /// The namespace's descriptor.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.ns.as_fd()
    }

    /// Whether no socket lives in the namespace (the first line of `sockstat` is
    /// `sockets: used N`, counted per namespace).
    pub(crate) fn is_empty(&self) -> bool {
        let mut buf = [0u8; 64];
        let Ok(n) = self.sockstat.read_at(&mut buf, 0) else {
            return false;
        };
        let first = buf[..n].split(|b| *b == b'\n').next().unwrap_or_default();
        first == b"sockets: used 0"
    }
}

impl Lease {
    /// The namespace's descriptor.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.empty.fd()
    }

    /// Returns the namespace to the pool if it holds no socket; closes it otherwise. Call
    /// only once the run's pid 1 has been reaped (see the module docs).
    pub(crate) fn give_back(self) {
        if !self.empty.is_empty() {
            return;
        }
        let mut pool = POOL.lock(|| {});
        if pool.len() < IDLE_KEPT {
            pool.push(self.empty);
        }
    }
}

/// Moves the calling thread into the network namespace `ns`. No allocation, no lock: usable
/// inside the strict spawn's hand-off.
pub(crate) fn join(ns: BorrowedFd<'_>) -> bool {
    // SAFETY: setns on a descriptor we hold; affects the calling thread only.
    unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) == 0 }
}

/// The calling thread's network namespace, to come back to after a `clone` made in another.
pub(crate) struct Home(OwnedFd);

impl Home {
    /// Opens the calling thread's namespace.
    pub(crate) fn here() -> std::io::Result<Home> {
        Ok(Home(File::open("/proc/thread-self/ns/net")?.into()))
    }

    /// Moves the calling thread back home.
    pub(crate) fn back(&self) -> bool {
        use std::os::fd::AsFd;
        join(self.0.as_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn inode(fd: BorrowedFd<'_>) -> u64 {
        use std::os::unix::fs::MetadataExt;
        File::from(fd.try_clone_to_owned().expect("dup"))
            .metadata()
            .expect("fstat")
            .ino()
    }

    /// Whether this process may lease (a root runner); says why not.
    fn leasing() -> bool {
        let leased = decide(true, false, false) == Some(NetnsSource::Leased);
        if !leased {
            eprintln!("skipped: leasing needs CAP_SYS_ADMIN (a root runner)");
        }
        leased
    }

    #[test]
    fn a_namespace_a_socket_outlived_its_run_in_is_never_lent_again() {
        if !leasing() {
            return;
        }
        let lease = lease().expect("lease");
        let id = inode(lease.fd());
        // A socket made inside it and held outside the run, as one passed out would be.
        let ns = lease.fd().try_clone_to_owned().expect("dup");
        let held = std::thread::spawn(move || {
            assert!(join(ns.as_fd()), "join the leased namespace");
            std::os::unix::net::UnixDatagram::unbound().expect("socket inside")
        })
        .join()
        .expect("thread");
        assert!(!lease.empty.is_empty(), "sockstat counts the socket");
        lease.give_back();
        let pooled: Vec<u64> = POOL
            .lock(|| {})
            .iter()
            .map(|e| inode(e.ns.as_fd()))
            .collect();
        assert!(
            !pooled.contains(&id),
            "a namespace with a socket in it went back to the pool"
        );
        drop(held);
    }

    #[test]
    fn a_namespace_is_made_empty_and_owned_outside_any_run() {
        if !leasing() {
            return;
        }
        let lease = lease().expect("lease");
        assert!(lease.empty.is_empty());
        let own = std::fs::metadata("/proc/self/ns/net").expect("own namespace");
        use std::os::unix::fs::MetadataExt;
        assert_ne!(
            inode(lease.fd()),
            own.ino(),
            "the pool lends a namespace of its own"
        );
    }
}
