//! Host-pinned egress against the real kernel.
//!
//! Each test runs its "sandbox" in a thread that unshares a fresh network namespace (a thread's
//! namespace is its own), so only the sockets made there by `bind_inside` are reachable from
//! it. Upstream servers are started by the test on the host's 127.0.0.1, and the broker is given
//! a resolver map, so nothing outside this machine is ever contacted.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsFd;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "support/kernel.rs"]
mod kernel;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/ports.rs"]
mod ports;
use netns::{http_server, http_server_at, lo_up, socketpair};

use policy_runtime::HostPattern;
use sandbox::egress::{
    bind_inside, start_broker_with, BrokerOptions, Decision, EgressEvent, EgressPlan, EventKind,
    Resolver,
};

/// Everything that must fail has to fail within this.
const FAST: Duration = Duration::from_millis(1500);

fn plan(list: &[&str]) -> EgressPlan {
    let hosts: Vec<HostPattern> = list.iter().map(|s| s.parse().unwrap()).collect();
    EgressPlan::new(&hosts).unwrap()
}

/// Options for tests: upstreams live on the host's 127.0.0.1, so the rebinding guard is off.
fn options(resolver: Resolver) -> BrokerOptions {
    BrokerOptions {
        resolver,
        allow_host_local: true,
        connect_timeout: Duration::from_secs(2),
        ..BrokerOptions::default()
    }
}

/// Runs `client` in a fresh network namespace whose only exits are `plan`'s endpoints, served by
/// a broker with `options`. Returns what `client` returned and every event, or `None` when the
/// kernel cannot make a network namespace here.
fn sandboxed<T: Send + 'static>(
    plan: &EgressPlan,
    options: BrokerOptions,
    client: impl FnOnce(&EgressPlan) -> T + Send + 'static,
) -> Option<(T, Vec<EgressEvent>)> {
    let (outside, inside) = socketpair();
    let (setup_tx, setup_rx) = mpsc::channel::<io::Result<()>>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let inner_plan = plan.clone();
    let thread = std::thread::spawn(move || {
        // SAFETY: unshare affects only this thread.
        let setup = if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            Err(io::Error::last_os_error())
        } else {
            lo_up().and_then(|()| bind_inside(&inner_plan, inside.as_fd()))
        };
        drop(inside);
        let ok = setup.is_ok();
        setup_tx.send(setup).unwrap();
        if !ok {
            return None;
        }
        go_rx.recv().ok()?;
        Some(client(&inner_plan))
    });
    match setup_rx.recv().unwrap() {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            kernel::missing(&format!(
                "cannot create a network namespace here ({e}); run as root"
            ));
            return None;
        }
        Err(e) => panic!("sandbox setup failed: {e}"),
    }
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink_events = Arc::clone(&events);
    let broker = start_broker_with(
        plan,
        outside,
        Arc::new(move |e| sink_events.lock().unwrap().push(e)),
        options,
    )
    .expect("broker starts");
    go_tx.send(()).unwrap();
    let result = thread.join().expect("client thread").expect("client ran");
    drop(broker);
    let events = events.lock().unwrap().clone();
    Some((result, events))
}

fn http_get(addr: SocketAddr, host: &str, path: &str) -> io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, FAST)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// Sends one DNS question to the sandbox's resolver; returns the rcode and the A address.
fn dns_a(name: &str) -> io::Result<(u8, Option<Ipv4Addr>)> {
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut q = vec![0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in name.split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    sock.send_to(&q, "127.0.0.1:53")?;
    let mut buf = [0u8; 512];
    let n = sock.recv(&mut buf)?;
    assert_eq!(&buf[..2], &[0xab, 0xcd], "reply id");
    let rcode = buf[3] & 0x0f;
    let answers = u16::from_be_bytes([buf[6], buf[7]]);
    let addr = (answers > 0).then(|| Ipv4Addr::new(buf[n - 4], buf[n - 3], buf[n - 2], buf[n - 1]));
    Ok((rcode, addr))
}

/// Runs `f`, which must fail, and returns its error and how long it took.
fn must_fail<T: std::fmt::Debug>(what: &str, f: impl FnOnce() -> io::Result<T>) -> io::Error {
    let t = Instant::now();
    let r = f();
    let took = t.elapsed();
    let err = match r {
        Ok(v) => panic!("{what}: expected a failure, got {v:?}"),
        Err(e) => e,
    };
    assert!(took < FAST, "{what}: failed only after {took:?}: {err}");
    err
}

fn connects(events: &[EgressEvent]) -> Vec<&EgressEvent> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Connect)
        .collect()
}

#[test]
fn allowed_host_and_port_serve_a_real_http_request() {
    let (server, _) = http_server("hello from upstream, path");
    let plan = plan(&["api.test:80"]);
    let Some((body, events)) = sandboxed(
        &plan,
        options(Resolver::map([("api.test", server)])),
        |_| {
            let (rcode, addr) = dns_a("api.test").unwrap();
            assert_eq!(rcode, 0);
            let ip = addr.expect("an A record for the allowed name");
            http_get(SocketAddr::new(IpAddr::V4(ip), 80), "api.test", "/v1/ping").unwrap()
        },
    ) else {
        return;
    };
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(
        body.contains("hello from upstream, path /v1/ping"),
        "{body}"
    );
    let c = connects(&events);
    assert_eq!(c.len(), 1, "{events:#?}");
    assert_eq!(c[0].decision, Decision::Allowed);
    assert_eq!((c[0].host.as_str(), c[0].port), ("api.test", 80));
    assert_eq!(c[0].upstream.as_deref(), Some(server.to_string().as_str()));
    assert!(
        c[0].bytes_up > 40 && c[0].bytes_down as usize == body.len(),
        "{:?}",
        c[0]
    );
    assert_eq!(c[0].error, None);
    let dns: Vec<_> = events.iter().filter(|e| e.kind == EventKind::Dns).collect();
    assert_eq!(dns.len(), 1);
    assert_eq!(
        (dns[0].decision, dns[0].host.as_str()),
        (Decision::Allowed, "api.test")
    );
}

#[test]
fn everything_else_fails_fast() {
    let (server, _) = http_server("hello from upstream, path");
    let udp_host = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_addr = udp_host.local_addr().unwrap();
    let v6_host = TcpListener::bind("[::1]:0").ok();
    let v6_addr = v6_host.as_ref().map(|l| l.local_addr().unwrap());
    // Control: without the sandbox, the same actions succeed.
    assert!(TcpStream::connect(server).is_ok());
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(b"x", udp_addr)
        .unwrap();
    let mut b = [0u8; 8];
    udp_host
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    assert_eq!(
        udp_host.recv(&mut b).unwrap(),
        1,
        "control datagram arrives"
    );
    if let Some(a) = v6_addr {
        assert!(TcpStream::connect(a).is_ok());
    }

    let plan = plan(&["api.test:80"]);
    let Some(((), events)) = sandboxed(
        &plan,
        options(Resolver::map([
            ("api.test", server),
            ("other.test", server),
        ])),
        move |plan| {
            let api = plan.endpoints()[0].addr;
            // The same host on another port.
            let e = must_fail("api.test:81", || TcpStream::connect((api, 81)));
            assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
            // Another host: its name does not resolve, and no other address listens.
            let (rcode, addr) = dns_a("other.test").unwrap();
            assert_eq!((rcode, addr), (3, None), "NXDOMAIN for an unlisted name");
            let e = must_fail("127.0.0.3:80", || TcpStream::connect("127.0.0.3:80"));
            assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
            // A raw IP: the upstream server's own address, and a documentation address.
            let e = must_fail("raw upstream IP", || TcpStream::connect(server));
            assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
            let e = must_fail("192.0.2.1:80", || {
                TcpStream::connect_timeout(&"192.0.2.1:80".parse().unwrap(), FAST)
            });
            assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH), "{e}");
            // UDP: nothing routes out, and the host's loopback listener is not this loopback.
            let u = UdpSocket::bind("0.0.0.0:0").unwrap();
            let e = must_fail("UDP out", || u.send_to(b"x", "192.0.2.1:53"));
            assert_eq!(e.raw_os_error(), Some(libc::ENETUNREACH), "{e}");
            u.send_to(b"leak", udp_addr).unwrap(); // delivered to this namespace's lo only
                                                   // IPv6: loopback of the host is not reachable, and there is no route.
            if let Some(a) = v6_addr {
                let e = must_fail("[::1] host port", || TcpStream::connect(a));
                assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
            }
            let e = must_fail("IPv6 out", || {
                TcpStream::connect_timeout(&"[2001:db8::1]:80".parse().unwrap(), FAST)
            });
            assert!(
                matches!(
                    e.raw_os_error(),
                    Some(libc::ENETUNREACH) | Some(libc::EADDRNOTAVAIL)
                ),
                "{e}"
            );
            // A DNS lookup of an unlisted name is answered locally and fast.
            let t = Instant::now();
            let (rcode, _) = dns_a("secret-data.exfil.test").unwrap();
            assert_eq!(rcode, 3);
            assert!(t.elapsed() < FAST);
        },
    ) else {
        return;
    };
    udp_host
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        udp_host.recv(&mut b).is_err(),
        "a datagram left the sandbox"
    );
    assert!(
        connects(&events).is_empty(),
        "nothing reached the broker: {events:#?}"
    );
    let denied: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == EventKind::Dns && e.decision == Decision::Denied)
        .map(|e| e.host.as_str())
        .collect();
    assert_eq!(denied, ["other.test", "secret-data.exfil.test"]);
}

#[test]
fn unreachable_upstream_is_a_clean_error() {
    let (_held, dead) = ports::bound_not_listening();
    let plan = plan(&["down.test:80"]);
    let Some((err, events)) = sandboxed(
        &plan,
        options(Resolver::map([("down.test", dead)])),
        |plan| {
            let addr = SocketAddr::new(plan.endpoints()[0].addr, 80);
            must_fail("GET through a dead upstream", || {
                http_get(addr, "down.test", "/")
            })
        },
    ) else {
        return;
    };
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    let c = connects(&events);
    assert_eq!(c.len(), 1, "{events:#?}");
    assert_eq!(c[0].decision, Decision::Allowed);
    let msg = c[0].error.as_deref().unwrap_or_default();
    assert!(
        msg.contains("cannot connect to down.test") && msg.contains("refused"),
        "{msg}"
    );
}

#[test]
fn unresolvable_upstream_is_a_clean_error() {
    let plan = plan(&["gone.test:80"]);
    let Some((err, events)) = sandboxed(&plan, options(Resolver::map([])), |plan| {
        let addr = SocketAddr::new(plan.endpoints()[0].addr, 80);
        must_fail("GET to a name the host cannot resolve", || {
            http_get(addr, "gone.test", "/")
        })
    }) else {
        return;
    };
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    let msg = connects(&events)[0].error.clone().unwrap_or_default();
    assert!(msg.contains("cannot resolve gone.test"), "{msg}");
}

#[test]
fn allowed_name_pointing_at_host_loopback_is_refused_by_default() {
    let (server, _) = http_server("hello from upstream, path");
    let plan = plan(&["api.test:80"]);
    let guarded = BrokerOptions {
        allow_host_local: false,
        ..options(Resolver::map([("api.test", server)]))
    };
    let Some((err, events)) = sandboxed(&plan, guarded, |plan| {
        let addr = SocketAddr::new(plan.endpoints()[0].addr, 80);
        must_fail("rebinding to host loopback", || {
            http_get(addr, "api.test", "/")
        })
    }) else {
        return;
    };
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    let msg = connects(&events)[0].error.clone().unwrap_or_default();
    assert!(msg.contains("host-local address 127.0.0.1"), "{msg}");
}

#[test]
fn ip_literal_endpoint_is_reachable_at_its_own_address() {
    let (server, _) = http_server("hello from upstream, path");
    let pattern = format!("127.0.0.1:{}", server.port());
    let plan = plan(&[pattern.as_str()]);
    let guarded = BrokerOptions {
        allow_host_local: false, // literals are honoured even with the guard on
        ..options(Resolver::map([]))
    };
    let Some((body, events)) = sandboxed(&plan, guarded, move |_| {
        http_get(server, "localhost", "/literal").unwrap()
    }) else {
        return;
    };
    assert!(body.contains("path /literal"), "{body}");
    assert_eq!(connects(&events)[0].host, "127.0.0.1");
}

#[test]
fn wildcard_names_get_addresses_on_demand() {
    let (server, _) = http_server("hello from upstream, path");
    let plan = plan(&["*.svc.test:80"]);
    let Some(((body, unused), events)) = sandboxed(
        &plan,
        options(Resolver::map([("a.svc.test", server)])),
        |plan| {
            let (rcode, ip) = dns_a("a.svc.test").unwrap();
            assert_eq!(rcode, 0);
            let ip = ip.unwrap();
            assert_eq!(
                dns_a("A.svc.test").unwrap().1,
                Some(ip),
                "same name, same address"
            );
            assert_eq!(
                dns_a("svc.test").unwrap().0,
                3,
                "the bare suffix is not covered"
            );
            let body = http_get(SocketAddr::new(IpAddr::V4(ip), 80), "a.svc.test", "/w").unwrap();
            // A pool address that no name was handed: accepted by the kernel, reset by the broker.
            let spare = plan
                .endpoints()
                .iter()
                .map(|e| e.addr)
                .find(|a| *a != IpAddr::V4(ip))
                .unwrap();
            let unused = must_fail("unassigned pool address", || {
                http_get(SocketAddr::new(spare, 80), "x", "/")
            });
            (body, unused)
        },
    ) else {
        return;
    };
    assert!(body.contains("path /w"), "{body}");
    assert_eq!(unused.kind(), io::ErrorKind::ConnectionReset);
    let c = connects(&events);
    assert_eq!(c.len(), 2, "{events:#?}");
    assert!(c
        .iter()
        .any(|e| e.decision == Decision::Allowed && e.host == "a.svc.test"));
    assert!(c.iter().any(|e| e.decision == Decision::Denied
        && e.error
            .as_deref()
            .unwrap_or("")
            .contains("never handed out")));
}

#[test]
fn dns_over_tcp_answers_like_udp() {
    let plan = plan(&["api.test:443"]);
    let Some((rcodes, _)) = sandboxed(&plan, options(Resolver::map([])), |_| {
        let mut s = TcpStream::connect("127.0.0.1:53").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut rcodes = Vec::new();
        for name in ["api.test", "nope.test"] {
            let mut q = vec![0, 7, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
            for label in name.split('.') {
                q.push(label.len() as u8);
                q.extend_from_slice(label.as_bytes());
            }
            q.extend_from_slice(&[0, 0, 1, 0, 1]);
            let mut framed = (q.len() as u16).to_be_bytes().to_vec();
            framed.extend(q);
            s.write_all(&framed).unwrap();
            let mut len = [0u8; 2];
            s.read_exact(&mut len).unwrap();
            let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
            s.read_exact(&mut reply).unwrap();
            rcodes.push(reply[3] & 0x0f);
        }
        rcodes
    }) else {
        return;
    };
    assert_eq!(rcodes, [0, 3]);
}

/// Real programs, real name resolution: curl and getent in a mount namespace that shows the
/// plan's /etc files.
#[test]
fn curl_and_getent_by_name() {
    let have = |tool: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !(have("curl") && have("getent") && have("unshare") && have("mount")) {
        kernel::missing(
            "curl, getent, unshare or mount is not installed (scripts/setup.sh installs them)",
        );
        return;
    }
    let (server, _) = http_server("hello from upstream, path");
    let plan = plan(&["api.test:80"]);
    let dir = tempfile::tempdir().unwrap();
    let mut script = String::from("set -u\n");
    for (path, bytes) in plan.files() {
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::write(&copy, bytes).unwrap();
        script.push_str(&format!(
            "mount --bind -o ro {} {} || exit 90\n",
            copy.display(),
            path.display()
        ));
    }
    script.push_str(
        "curl -sS --max-time 5 http://api.test/by-name; echo \"ok=$?\"\n\
         curl -sS --max-time 5 http://api.test:81/; echo \"port=$?\"\n\
         curl -sS --max-time 5 http://other.test/; echo \"other=$?\"\n\
         getent hosts api.test; getent hosts exfil.test; echo \"getent=$?\"\n",
    );
    let Some((out, events)) = sandboxed(
        &plan,
        options(Resolver::map([("api.test", server)])),
        move |_| {
            let t = Instant::now();
            let out = std::process::Command::new("unshare")
                .args(["--mount", "--propagation", "private", "sh", "-c", &script])
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (text, t.elapsed())
        },
    ) else {
        return;
    };
    let (text, took) = out;
    assert!(
        text.contains("hello from upstream, path /by-name"),
        "{text}"
    );
    assert!(text.contains("ok=0"), "{text}");
    assert!(
        text.contains("port=7"),
        "connection refused expected: {text}"
    );
    assert!(
        text.contains("other=6"),
        "could not resolve expected: {text}"
    );
    assert!(text.contains("127.0.0.2"), "{text}");
    assert!(text.contains("getent=2"), "{text}");
    assert!(took < Duration::from_secs(5), "took {took:?}: {text}");
    assert!(events.iter().any(|e| e.kind == EventKind::Dns
        && e.decision == Decision::Denied
        && e.host == "exfil.test"));
    assert_eq!(connects(&events).len(), 1, "{events:#?}");
}

#[test]
fn ipv6_loopback_literal_endpoint() {
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        kernel::missing("IPv6 loopback (::1) is not available");
        return;
    };
    let server = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.write_all(b"v6 upstream\n");
        }
    });
    let pattern = format!("[::1]:{}", server.port());
    let plan = plan(&[pattern.as_str()]);
    let Some((got, events)) = sandboxed(&plan, options(Resolver::map([])), move |_| {
        let mut s = TcpStream::connect(server).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }) else {
        return;
    };
    assert_eq!(got, "v6 upstream\n");
    assert_eq!(connects(&events)[0].host, "::1");
}

/// A non-loopback literal is added to the sandbox's `lo` so the tool can dial it. The broker is
/// deliberately not started: the connection completes inside the namespace (into the
/// listener's backlog) and no packet can reach the real address.
#[test]
fn non_loopback_literal_is_added_inside_only() {
    let plan = plan(&["192.0.2.7:8443"]);
    let (outside, inside) = socketpair();
    let result = std::thread::spawn(
        move || -> io::Result<Option<(io::Result<TcpStream>, io::Error)>> {
            // SAFETY: unshare affects only this thread.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Ok(None);
            }
            lo_up()?;
            bind_inside(&plan, inside.as_fd())?;
            let listed = TcpStream::connect_timeout(&"192.0.2.7:8443".parse().unwrap(), FAST);
            let other = TcpStream::connect_timeout(&"192.0.2.8:8443".parse().unwrap(), FAST)
                .expect_err("an unlisted address has no route");
            Ok(Some((listed, other)))
        },
    )
    .join()
    .unwrap()
    .expect("setup");
    drop(outside);
    let Some((listed, other)) = result else {
        kernel::missing("cannot create a network namespace here; run as root");
        return;
    };
    listed.expect("the listed literal accepts inside the sandbox");
    assert_eq!(other.raw_os_error(), Some(libc::ENETUNREACH), "{other}");
    // And the host never got that address.
    let host_addrs = std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default();
    assert!(
        !host_addrs.contains("192.0.2.7"),
        "the address leaked into the host namespace"
    );
}

/// Sends `CONNECT target` to the sandbox's proxy; returns the status code and the stream.
fn proxy_connect(target: &str) -> io::Result<(u16, TcpStream, String)> {
    let mut s = TcpStream::connect("127.0.0.1:3128")?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, s, head))
}

#[test]
fn connect_proxy_checks_every_request() {
    let (server, _) = http_server("hello from upstream, path");
    let (_held, dead) = ports::bound_not_listening();
    let plan = plan(&["api.test:80", "any.test:*", "down.test:80"]);
    let resolver = Resolver::map([
        ("api.test", server),
        ("any.test", server),
        ("other.test", server),
        ("down.test", dead),
    ]);
    let Some((results, events)) = sandboxed(&plan, options(resolver), |_| {
        let mut out = Vec::new();
        for target in [
            "api.test:80",
            "any.test:31337",
            "other.test:80",
            "down.test:80",
        ] {
            let (status, mut s, _) = proxy_connect(target).unwrap();
            let body = if status == 200 {
                write!(
                    s,
                    "GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
                let mut b = String::new();
                s.read_to_string(&mut b).unwrap();
                b
            } else {
                String::new()
            };
            out.push((target, status, body));
        }
        // Not a tunnel request.
        let mut s = TcpStream::connect("127.0.0.1:3128").unwrap();
        write!(s, "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n").unwrap();
        let mut b = String::new();
        s.read_to_string(&mut b).unwrap();
        out.push(("GET", b[9..12].parse().unwrap(), String::new()));
        // any.test has no pinned listener: only the proxy reaches it.
        assert_eq!(dns_a("any.test").unwrap().0, 3);
        out
    }) else {
        return;
    };
    let status: Vec<(&str, u16)> = results.iter().map(|(t, s, _)| (*t, *s)).collect();
    assert_eq!(
        status,
        [
            ("api.test:80", 200),
            ("any.test:31337", 200),
            ("other.test:80", 403),
            ("down.test:80", 502),
            ("GET", 400)
        ]
    );
    assert!(
        results[0].2.contains("upstream, path /tunnel"),
        "{}",
        results[0].2
    );
    assert!(
        results[1].2.contains("upstream, path /tunnel"),
        "{}",
        results[1].2
    );
    let c = connects(&events);
    let seen: Vec<(&str, Decision, bool)> = c
        .iter()
        .map(|e| (e.host.as_str(), e.decision, e.error.is_some()))
        .collect();
    for expected in [
        ("api.test", Decision::Allowed, false),
        ("any.test", Decision::Allowed, false),
        ("other.test", Decision::Denied, true),
        ("down.test", Decision::Allowed, true),
    ] {
        assert!(
            seen.contains(&expected),
            "{expected:?} missing from {seen:?}"
        );
    }
}

/// A broker started by a thread that moved to an isolated network namespace (an agent that
/// cut itself off from the network) connects from there, as that thread's own connections
/// do: never through a pooled thread left in the host's namespace by an earlier run, which
/// would reach the host's server.
#[test]
fn a_broker_connects_from_the_network_namespace_of_the_thread_that_started_it() {
    let (server, _) = http_server("hello from the host's namespace, path");
    let pattern = format!("127.0.0.1:{}", server.port());
    let plan = plan(&[pattern.as_str()]);
    // A run from the host's namespace, which leaves pooled threads there, idle.
    let Some((warm, _)) = sandboxed(&plan, options(Resolver::map([])), move |_| {
        http_get(server, "localhost", "/warm")
    }) else {
        return;
    };
    assert!(
        warm.as_ref().is_ok_and(|b| b.contains("path /warm")),
        "{warm:?}"
    );
    let isolated = std::thread::spawn(move || {
        // SAFETY: unshare affects only this thread.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return None;
        }
        lo_up().expect("loopback up");
        // The control: this thread's own connection finds no server in its namespace.
        let control = TcpStream::connect_timeout(&server, FAST);
        let ran = sandboxed(&plan, options(Resolver::map([])), move |_| {
            http_get(server, "localhost", "/isolated")
        });
        Some((control, ran))
    })
    .join()
    .expect("isolated thread");
    let Some((control, ran)) = isolated else {
        kernel::missing("cannot create a network namespace here; run as root");
        return;
    };
    assert!(
        control.is_err(),
        "the control reached the host: {control:?}"
    );
    let (body, events) = ran.expect("the isolated run");
    assert!(
        body.is_err(),
        "the broker of the isolated thread reached the host's server: {body:?}"
    );
    let c = connects(&events);
    assert!(
        c.len() == 1 && c[0].error.as_deref().is_some_and(|e| e.contains("refused")),
        "{events:#?}"
    );
}

/// A broker started by a thread with a mount namespace of its own, whose `/etc/hosts` maps
/// `localhost` to 127.0.0.2 (as an agent may pin, or block, a name for itself), resolves names
/// with that file, as the thread's own lookups do: never on a pooled thread left in the
/// host's mount namespace by an earlier run, whose file says 127.0.0.1. Root only.
#[test]
fn a_broker_resolves_names_as_the_thread_that_started_it_does() {
    let (server, _) = http_server_at("127.0.0.2:0", "hello from 127.0.0.2, path");
    let pattern = format!("localhost:{}", server.port());
    let plan = plan(&[pattern.as_str()]);
    let system = || BrokerOptions {
        resolver: Resolver::system(),
        ..options(Resolver::map([]))
    };
    // A run from the host's mount namespace, which resolves `localhost` to 127.0.0.1 (no
    // server there) and leaves pooled threads, idle.
    let Some((before, _)) = sandboxed(&plan, system(), move |plan| {
        let addr = SocketAddr::new(plan.endpoints()[0].addr, server.port());
        http_get(addr, "localhost", "/host")
    }) else {
        return;
    };
    // (Another test's server may hold the same port on 127.0.0.1: only this one must not
    // answer.)
    assert!(
        !before
            .as_ref()
            .is_ok_and(|b| b.contains("hello from 127.0.0.2")),
        "the host's localhost is 127.0.0.1: {before:?}"
    );
    let own = std::thread::spawn(move || -> Option<io::Result<String>> {
        let hosts = std::env::temp_dir().join(format!("egress-hosts-{}", std::process::id()));
        std::fs::write(&hosts, "127.0.0.2 localhost\n").unwrap();
        let c = |s: &str| std::ffi::CString::new(s).unwrap();
        let (none, hosts_c) = (
            std::ptr::null::<libc::c_char>(),
            c(&hosts.to_string_lossy()),
        );
        // SAFETY: valid C strings; the mounts stay in this thread's own namespace.
        let entered = unsafe {
            libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(
                    none,
                    c"/".as_ptr(),
                    none,
                    libc::MS_REC | libc::MS_PRIVATE,
                    none.cast(),
                ) == 0
                && libc::mount(
                    hosts_c.as_ptr(),
                    c"/etc/hosts".as_ptr(),
                    none,
                    libc::MS_BIND,
                    none.cast(),
                ) == 0
        };
        let _ = std::fs::remove_file(&hosts);
        if !entered {
            return None;
        }
        // The control: this thread's own lookup reads its file.
        let own: Vec<SocketAddr> = ("localhost", 80).to_socket_addrs().unwrap().collect();
        assert!(
            own.iter().any(|a| a.ip() == Ipv4Addr::new(127, 0, 0, 2)),
            "{own:?}"
        );
        let (got, _) = sandboxed(&plan, system(), move |plan| {
            let addr = SocketAddr::new(plan.endpoints()[0].addr, server.port());
            http_get(addr, "localhost", "/own")
        })?;
        Some(got)
    })
    .join()
    .expect("thread");
    let Some(got) = own else {
        kernel::missing("cannot make a mount namespace here; run as root");
        return;
    };
    assert!(
        got.as_ref()
            .is_ok_and(|b| b.contains("hello from 127.0.0.2, path /own")),
        "the broker resolved localhost as the host's mount namespace does: {got:?}"
    );
}
