//! The broker: runs in the parent (host network namespace), accepts on the sockets that
//! [`bind_inside`](super::bind_inside) made inside the sandbox, connects to the real host and
//! relays bytes both ways. It also answers the sandbox's DNS questions.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::dns::{answer, NameTable};
use super::event::{Decision, EgressEvent, EventKind};
use super::plan::{is_host_local, EgressPlan, ListenerKind, Route};
use super::pool::Pool;
use super::proxy::{read_connect, reply};
use super::pump::pump;
use crate::fdpass::recv_fds;

/// Where the broker sends audit events.
pub type EventSink = Arc<dyn Fn(EgressEvent) + Send + Sync>;

type ResolveFn = dyn Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync;

/// How the broker turns an allowed host name into addresses on the host.
///
/// The default asks the host's resolver at every connect. Tests use [`Resolver::map`] so that
/// nothing outside the machine is ever contacted.
#[derive(Clone)]
pub struct Resolver(Arc<ResolveFn>);

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver(..)")
    }
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver::system()
    }
}

impl Resolver {
    /// The host's resolver (`getaddrinfo`), asked again at every connect.
    pub fn system() -> Resolver {
        Resolver(Arc::new(|host: &str, port: u16| {
            Ok((host, port).to_socket_addrs()?.collect())
        }))
    }

    /// A fixed table: `name` goes to exactly that socket address, whatever port the tool dialled
    /// (the broker only accepts allowed ports anyway). Names missing from the table fail; the
    /// host's resolver is never asked.
    ///
    /// ```
    /// use sandbox::egress::Resolver;
    ///
    /// let r = Resolver::map([("api.test", "127.0.0.1:8080".parse().unwrap())]);
    /// assert_eq!(r.resolve("api.test", 443).unwrap(), vec!["127.0.0.1:8080".parse().unwrap()]);
    /// assert!(r.resolve("other.test", 443).is_err());
    /// ```
    pub fn map<'a>(entries: impl IntoIterator<Item = (&'a str, SocketAddr)>) -> Resolver {
        let table: HashMap<String, SocketAddr> = entries
            .into_iter()
            .map(|(n, a)| (n.to_string(), a))
            .collect();
        Resolver(Arc::new(move |host: &str, _port: u16| {
            table.get(host).map(|a| vec![*a]).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{host} is not in the resolver map"),
                )
            })
        }))
    }

    /// Any function from `(host, port)` to addresses.
    pub fn from_fn(
        f: impl Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static,
    ) -> Resolver {
        Resolver(Arc::new(f))
    }

    /// Resolves `host` for `port`.
    pub fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        (self.0)(host, port)
    }
}

/// Broker settings; [`Default`] is what [`start_broker`] uses.
#[derive(Clone, Debug)]
pub struct BrokerOptions {
    /// How allowed names become addresses on the host.
    pub resolver: Resolver,
    /// How long one upstream connect may take before the tool's connection is reset.
    pub connect_timeout: Duration,
    /// Connections (and DNS-over-TCP sessions) served at once; more are reset and reported.
    pub max_connections: usize,
    /// Let an allowed *name* resolve to a loopback, link-local or unspecified address of the
    /// host. Off by default, so a hostile DNS answer cannot point an allowed name at the host's
    /// own services or at cloud metadata (169.254.169.254). IP literals and `localhost` in the
    /// policy are always honoured.
    pub allow_host_local: bool,
    /// How long to wait for the sandbox to send its sockets.
    pub handshake_timeout: Duration,
}

impl Default for BrokerOptions {
    fn default() -> Self {
        BrokerOptions {
            resolver: Resolver::system(),
            connect_timeout: Duration::from_secs(10),
            max_connections: 256,
            allow_host_local: false,
            handshake_timeout: Duration::from_secs(30),
        }
    }
}

/// A running broker. Dropping it stops accepting, cuts every live connection and waits briefly
/// for their final events.
pub struct BrokerHandle {
    shared: Arc<Shared>,
    wake: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for BrokerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerHandle")
            .field("active", &self.shared.active.load(Ordering::Relaxed))
            .finish()
    }
}

struct Shared {
    table: NameTable,
    plan: EgressPlan,
    sink: EventSink,
    options: BrokerOptions,
    stopping: AtomicBool,
    active: AtomicUsize,
    idle: (Mutex<()>, Condvar),
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Vec<Arc<TcpStream>>>>,
    pool: Pool,
}

/// Receives the sandbox's sockets over `channel` and serves them until the handle is dropped,
/// resolving names with the host's resolver. See [`start_broker_with`].
pub fn start_broker(
    plan: &EgressPlan,
    channel: OwnedFd,
    sink: Arc<dyn Fn(EgressEvent) + Send + Sync>,
) -> io::Result<BrokerHandle> {
    start_broker_with(plan, channel, sink, BrokerOptions::default())
}

/// Receives the sandbox's sockets over `channel` and serves them until the handle is dropped.
///
/// Blocks until [`bind_inside`](super::bind_inside) has sent every socket, or fails when the
/// channel closes first (the parent must have closed its copy of the sandbox's end) or after
/// [`BrokerOptions::handshake_timeout`]. Each socket is checked against the plan (type, bound
/// address, listening) before it is served; then the channel is closed, so nothing the tool does
/// later can hand the broker anything.
pub fn start_broker_with(
    plan: &EgressPlan,
    channel: OwnedFd,
    sink: Arc<dyn Fn(EgressEvent) + Send + Sync>,
    options: BrokerOptions,
) -> io::Result<BrokerHandle> {
    set_timeout(&channel, libc::SO_RCVTIMEO, options.handshake_timeout)?;
    let received = recv_fds(std::os::fd::AsFd::as_fd(&channel))?;
    drop(channel);
    let mut sockets: Vec<Option<OwnedFd>> = (0..plan.listeners().len()).map(|_| None).collect();
    for (index, fd) in received {
        let slot = sockets
            .get_mut(index as usize)
            .ok_or_else(|| invalid(format!("socket index {index} is not in the plan")))?;
        if slot.is_some() {
            return Err(invalid(format!("socket {index} sent twice")));
        }
        *slot = Some(fd);
    }
    let mut served = Vec::new();
    for (spec, fd) in plan.listeners().iter().zip(sockets) {
        let fd = fd.ok_or_else(|| invalid(format!("the socket for {} is missing", spec.addr)))?;
        check_socket(&fd, spec.addr, matches!(spec.kind, ListenerKind::DnsUdp))?;
        set_nonblocking(&fd)?;
        served.push((spec.kind, spec.addr, fd));
    }

    // SAFETY: plain eventfd creation; checked and owned below.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    let wake = unsafe { OwnedFd::from_raw_fd(raw) };
    let wake_raw = wake.as_raw_fd();
    let shared = Arc::new(Shared {
        table: NameTable::new(plan),
        plan: plan.clone(),
        sink,
        options,
        stopping: AtomicBool::new(false),
        active: AtomicUsize::new(0),
        idle: (Mutex::new(()), Condvar::new()),
        next_id: AtomicU64::new(0),
        live: Mutex::new(HashMap::new()),
        pool: Pool::of_this_thread(),
    });
    let loop_shared = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("egress-broker".into())
        .spawn(move || accept_loop(&loop_shared, served, wake_raw))?;
    Ok(BrokerHandle {
        shared,
        wake,
        thread: Some(thread),
    })
}

impl Drop for BrokerHandle {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for streams in lock(&self.shared.live).values() {
            for s in streams {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let (m, cv) = &self.shared.idle;
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut guard = lock(m);
        while self.shared.active.load(Ordering::SeqCst) > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            guard = cv
                .wait_timeout(guard, left.min(Duration::from_millis(50)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("egress channel: {msg}"))
}

fn set_timeout(fd: &OwnedFd, opt: libc::c_int, d: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: setsockopt with a timeval of the right size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl flag manipulation on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn getsockopt_int(fd: RawFd, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into an int of the given size.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

/// The received descriptor must be the socket the plan describes, not something else the
/// sandbox side slipped in.
fn check_socket(fd: &OwnedFd, expected: SocketAddr, udp: bool) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    let ty = getsockopt_int(raw, libc::SO_TYPE)
        .map_err(|e| invalid(format!("descriptor for {expected} is not a socket: {e}")))?;
    let want = if udp {
        libc::SOCK_DGRAM
    } else {
        libc::SOCK_STREAM
    };
    if ty != want || (!udp && getsockopt_int(raw, libc::SO_ACCEPTCONN)? != 1) {
        return Err(invalid(format!(
            "descriptor for {expected} is not a {} socket",
            if udp { "UDP" } else { "listening TCP" }
        )));
    }
    let bound = local_addr(raw)?;
    if bound != expected {
        return Err(invalid(format!(
            "socket bound to {bound}, expected {expected}"
        )));
    }
    Ok(())
}

fn local_addr(fd: RawFd) -> io::Result<SocketAddr> {
    // SAFETY: the descriptor is borrowed only for this call; ManuallyDrop keeps it open.
    let sock = std::mem::ManuallyDrop::new(unsafe { UdpSocket::from_raw_fd(fd) });
    sock.local_addr()
}

fn accept_loop(
    shared: &Arc<Shared>,
    served: Vec<(ListenerKind, SocketAddr, OwnedFd)>,
    wake: RawFd,
) {
    let mut polls: Vec<libc::pollfd> = std::iter::once(wake)
        .chain(served.iter().map(|(_, _, fd)| fd.as_raw_fd()))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut buf = vec![0u8; 4096];
    while !shared.stopping.load(Ordering::SeqCst) {
        // SAFETY: polls is a live array of pollfd.
        let rc = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if polls[0].revents != 0 {
            return;
        }
        for (i, (kind, addr, fd)) in served.iter().enumerate() {
            if polls[i + 1].revents == 0 {
                continue;
            }
            match kind {
                ListenerKind::DnsUdp => serve_dns_udp(shared, fd, &mut buf),
                ListenerKind::DnsTcp => accept_all(fd, |s| spawn_dns_tcp(shared, s)),
                ListenerKind::Proxy => accept_all(fd, |s| spawn_proxy(shared, s)),
                ListenerKind::Tcp { endpoint } => {
                    accept_all(fd, |s| spawn_connection(shared, *endpoint, *addr, s))
                }
            }
        }
    }
}

fn accept_all(listener: &OwnedFd, mut each: impl FnMut(TcpStream)) {
    loop {
        // SAFETY: accept4 on a listening socket we own; the result is owned on success.
        let raw = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        if raw < 0 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ECONNABORTED) => {}
                // Out of descriptors or memory in the parent: the listener stays readable, so
                // back off instead of spinning; the tool's connection waits in the backlog.
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
            return;
        }
        // SAFETY: fresh descriptor from accept4 (blocking: accept4 does not inherit O_NONBLOCK).
        each(unsafe { TcpStream::from_raw_fd(raw) });
    }
}

fn serve_dns_udp(shared: &Shared, fd: &OwnedFd, buf: &mut [u8]) {
    // SAFETY: the descriptor stays owned by `fd`; ManuallyDrop keeps it open.
    let sock = std::mem::ManuallyDrop::new(unsafe { UdpSocket::from_raw_fd(fd.as_raw_fd()) });
    while let Ok((n, from)) = sock.recv_from(buf) {
        if let Some((reply, answered)) = answer(&shared.table, &buf[..n]) {
            let _ = sock.send_to(&reply, from);
            emit_dns(shared, answered);
        }
    }
}

fn emit_dns(shared: &Shared, answered: super::dns::Answered) {
    (shared.sink)(EgressEvent {
        decision: if answered.allowed {
            Decision::Allowed
        } else {
            Decision::Denied
        },
        kind: EventKind::Dns,
        host: answered.name,
        port: 53,
        upstream: None,
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: 0,
        error: answered.note,
    });
}

/// Reserves a slot for one more served connection, or reports why not.
fn admit(shared: &Arc<Shared>) -> bool {
    let n = shared.active.fetch_add(1, Ordering::SeqCst);
    if n >= shared.options.max_connections {
        release(shared);
        return false;
    }
    true
}

fn release(shared: &Shared) {
    let (m, cv) = &shared.idle;
    let _guard = lock(m);
    shared.active.fetch_sub(1, Ordering::SeqCst);
    cv.notify_all();
}

/// Closes with a reset, so the tool sees ECONNRESET at once instead of a clean end of file.
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt with a linger struct of the right size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    drop(stream);
}

fn spawn_dns_tcp(shared: &Arc<Shared>, stream: TcpStream) {
    if !admit(shared) {
        reset(stream);
        return;
    }
    let s = Arc::clone(shared);
    let spawned = shared.pool.run("egress-dns", move || {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let stream = Arc::new(stream);
        let id = register(&s, &[&stream]);
        let mut reader: &TcpStream = &stream;
        loop {
            let mut len = [0u8; 2];
            if reader.read_exact(&mut len).is_err() {
                break;
            }
            let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
            if reader.read_exact(&mut msg).is_err() {
                break;
            }
            let Some((reply, answered)) = answer(&s.table, &msg) else {
                break;
            };
            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            emit_dns(&s, answered);
            if (&*stream).write_all(&framed).is_err() {
                break;
            }
        }
        unregister(&s, id);
        release(&s);
    });
    if spawned.is_err() {
        release(shared);
    }
}

fn register(shared: &Shared, streams: &[&Arc<TcpStream>]) -> u64 {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    lock(&shared.live).insert(id, streams.iter().map(|s| Arc::clone(s)).collect());
    if shared.stopping.load(Ordering::SeqCst) {
        for s in streams {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
    id
}

fn unregister(shared: &Shared, id: u64) {
    lock(&shared.live).remove(&id);
}

fn spawn_connection(shared: &Arc<Shared>, endpoint: usize, dialled: SocketAddr, stream: TcpStream) {
    let host = shared
        .table
        .host_of(endpoint)
        .unwrap_or_else(|| dialled.ip().to_string());
    if !admit(shared) {
        reset(stream);
        (shared.sink)(connect_event(
            Decision::Denied,
            host,
            dialled.port(),
            Some(format!(
                "too many connections at once (limit {})",
                shared.options.max_connections
            )),
        ));
        return;
    }
    let s = Arc::clone(shared);
    let spawned = shared.pool.run("egress-conn", move || {
        let event = serve_connection(&s, endpoint, dialled, stream);
        (s.sink)(event);
        release(&s);
    });
    if spawned.is_err() {
        release(shared);
    }
}

fn connect_event(
    decision: Decision,
    host: String,
    port: u16,
    error: Option<String>,
) -> EgressEvent {
    EgressEvent {
        decision,
        kind: EventKind::Connect,
        host,
        port,
        upstream: None,
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: 0,
        error,
    }
}

fn serve_connection(
    shared: &Arc<Shared>,
    endpoint: usize,
    dialled: SocketAddr,
    client: TcpStream,
) -> EgressEvent {
    let started = Instant::now();
    let port = dialled.port();
    let route = shared.plan.endpoints()[endpoint].route.clone();
    let Some(host) = shared.table.host_of(endpoint) else {
        reset(client);
        return connect_event(
            Decision::Denied,
            dialled.ip().to_string(),
            port,
            Some(format!(
                "{} was never handed out by the sandbox's DNS; look the name up first",
                dialled.ip()
            )),
        );
    };
    let mut event = connect_event(Decision::Allowed, host.clone(), port, None);
    let upstream = match connect_upstream(shared, &route, &host, port) {
        Ok(u) => u,
        Err(e) => {
            reset(client);
            event.error = Some(e);
            event.duration_ms = started.elapsed().as_millis() as u64;
            return event;
        }
    };
    carry(shared, client, upstream, event, started)
}

/// Splices `client` ⇄ `upstream` until both ends close, then completes `event`.
fn carry(
    shared: &Arc<Shared>,
    client: TcpStream,
    upstream: TcpStream,
    mut event: EgressEvent,
    started: Instant,
) -> EgressEvent {
    event.upstream = upstream.peer_addr().ok().map(|a| a.to_string());
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let client = Arc::new(client);
    let upstream = Arc::new(upstream);
    let id = register(shared, &[&client, &upstream]);
    let up = Arc::new(AtomicU64::new(0));
    let down = Arc::new(AtomicU64::new(0));
    let (c2, u2, d2) = (
        Arc::clone(&client),
        Arc::clone(&upstream),
        Arc::clone(&down),
    );
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let back = shared.pool.run("egress-conn", move || {
        let _ = done_tx.send(pump(&u2, &c2, &d2));
    });
    let up_result = pump(&client, &upstream, &up);
    let down_result = match back {
        Ok(()) => done_rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("pump thread ended early"))),
        Err(e) => {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
            Err(e)
        }
    };
    unregister(shared, id);
    event.bytes_up += up.load(Ordering::Relaxed);
    event.bytes_down += down.load(Ordering::Relaxed);
    event.duration_ms = started.elapsed().as_millis() as u64;
    let errors: Vec<String> = [("to server", up_result), ("to tool", down_result)]
        .into_iter()
        .filter_map(|(dir, r)| r.err().map(|e| format!("{dir}: {e}")))
        .collect();
    if !errors.is_empty() && !shared.stopping.load(Ordering::SeqCst) {
        event.error = Some(errors.join("; "));
    }
    event
}

fn connect_upstream(
    shared: &Shared,
    route: &Route,
    host: &str,
    port: u16,
) -> Result<TcpStream, String> {
    let options = &shared.options;
    let candidates: Vec<SocketAddr> = match route {
        Route::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Route::Name(_) | Route::Wildcard(_) => {
            let resolved = options
                .resolver
                .resolve(host, port)
                .map_err(|e| format!("cannot resolve {host} on the host: {e}"))?;
            let named_local = host == "localhost" || host.ends_with(".localhost");
            let (local, remote): (Vec<SocketAddr>, Vec<SocketAddr>) =
                resolved.into_iter().partition(|a| is_host_local(a.ip()));
            if options.allow_host_local || named_local {
                remote.into_iter().chain(local).collect()
            } else if remote.is_empty() && !local.is_empty() {
                let shown: Vec<String> = local.iter().map(|a| a.ip().to_string()).collect();
                return Err(format!(
                    "{host} resolves to host-local address {}; refused so that DNS cannot point \
                     an allowed name at the host's own services (name the address literally in \
                     the policy if this is intended)",
                    shown.join(", ")
                ));
            } else {
                remote
            }
        }
    };
    if candidates.is_empty() {
        return Err(format!("{host} has no address on the host"));
    }
    let mut last = String::new();
    for addr in candidates {
        match TcpStream::connect_timeout(&addr, options.connect_timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = format!("cannot connect to {host} ({addr}): {e}"),
        }
    }
    Err(last)
}

/// Whether `ip` is one the broker would refuse for a name by default (see
/// [`BrokerOptions::allow_host_local`]).
pub fn refuses_for_names(ip: IpAddr) -> bool {
    is_host_local(ip)
}

fn spawn_proxy(shared: &Arc<Shared>, stream: TcpStream) {
    if !admit(shared) {
        reset(stream);
        return;
    }
    let s = Arc::clone(shared);
    let spawned = shared.pool.run("egress-proxy", move || {
        if let Some(event) = serve_proxy(&s, stream) {
            (s.sink)(event);
        }
        release(&s);
    });
    if spawned.is_err() {
        release(shared);
    }
}

/// One CONNECT request: checked against the patterns, then carried like a pinned endpoint.
/// `None` when the client sent something that is not a CONNECT request at all.
fn serve_proxy(shared: &Arc<Shared>, mut client: TcpStream) -> Option<EgressEvent> {
    let started = Instant::now();
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let request = match read_connect(&mut client) {
        Ok(r) => r,
        Err(why) => {
            reply(&mut client, 400, &why);
            return None;
        }
    };
    let _ = client.set_read_timeout(None);
    let (host, port) = (request.host, request.port);
    if !shared.plan.admits(&host, port) {
        let why = format!("{host}:{port} is not allowed by the policy");
        reply(&mut client, 403, &why);
        return Some(connect_event(Decision::Denied, host, port, Some(why)));
    }
    let route = match host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        Ok(ip) => Route::Ip(ip),
        Err(_) => Route::Name(host.clone()),
    };
    let mut event = connect_event(Decision::Allowed, host.clone(), port, None);
    let mut upstream = match connect_upstream(shared, &route, &host, port) {
        Ok(u) => u,
        Err(e) => {
            reply(&mut client, 502, &e);
            event.error = Some(e);
            event.duration_ms = started.elapsed().as_millis() as u64;
            return Some(event);
        }
    };
    reply(&mut client, 200, "Connection established");
    // Bytes the client sent right behind its request (a TLS hello) belong to the tunnel.
    if !request.early.is_empty() {
        if let Err(e) = upstream.write_all(&request.early) {
            event.error = Some(format!("to server: {e}"));
            reset(client);
            return Some(event);
        }
        event.bytes_up = request.early.len() as u64;
    }
    Some(carry(shared, client, upstream, event, started))
}
