//! Throughput and connect latency through the egress broker, against a direct loopback
//! connection to the same server.
//!
//! The client runs in a fresh network namespace (the bench thread switches into it with
//! setns), exactly where a sandboxed tool would sit; the servers and the broker stay in the
//! host's namespace. Needs root (or CAP_SYS_ADMIN) to make the namespace; otherwise it says so
//! and exits.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
#[path = "../tests/support/netns.rs"]
mod netns;
use netns::{lo_up, socketpair};

use policy_runtime::HostPattern;
use sandbox::egress::{bind_inside, start_broker_with, BrokerOptions, EgressPlan, Resolver};

const BULK: usize = 64 << 20;

/// Sends 64 MiB to every client, then closes.
fn bulk_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let chunk = vec![0x5au8; 1 << 20];
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                for _ in 0..BULK / chunk.len() {
                    if s.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Echoes bytes until the client closes.
fn echo_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_nodelay(true);
            std::thread::spawn(move || {
                let mut b = [0u8; 64];
                while let Ok(n) = s.read(&mut b) {
                    if n == 0 || s.write_all(&b[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn download(addr: SocketAddr) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("download: {e}"),
        }
    }
    assert_eq!(total, BULK);
    total
}

fn connect_roundtrip(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(b"x").unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).unwrap();
}

/// User plus system CPU time of the whole process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a live struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn setns(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: setns on this thread with a namespace descriptor we own.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn main() {
    let bulk = bulk_server();
    let echo = echo_server();
    let hosts: Vec<HostPattern> = vec![
        "bulk.test:9000".parse().unwrap(),
        "echo.test:9001".parse().unwrap(),
    ];
    let plan = EgressPlan::new(&hosts).unwrap();
    let host_ns: OwnedFd = File::open("/proc/thread-self/ns/net").unwrap().into();
    let (outside, inside) = socketpair();

    // The sandbox side: a thread in a new namespace binds the endpoints and hands over its
    // namespace so the bench thread can join it.
    let inner = plan.clone();
    let sandbox_ns = std::thread::spawn(move || -> io::Result<OwnedFd> {
        // SAFETY: unshare affects only this thread.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        lo_up()?;
        bind_inside(&inner, inside.as_fd())?;
        Ok(File::open("/proc/thread-self/ns/net")?.into())
    })
    .join()
    .unwrap();
    let sandbox_ns = match sandbox_ns {
        Ok(ns) => ns,
        Err(e) => {
            eprintln!(
                "egress bench skipped: cannot make a network namespace here ({e}); run as root"
            );
            return;
        }
    };
    let options = BrokerOptions {
        resolver: Resolver::map([("bulk.test", bulk), ("echo.test", echo)]),
        allow_host_local: true,
        ..BrokerOptions::default()
    };
    let _broker = start_broker_with(&plan, outside, Arc::new(|_| {}), options).unwrap();
    let via = |port: u16| {
        SocketAddr::new(
            plan.endpoints()[if port == 9000 { 0 } else { 1 }].addr,
            port,
        )
    };
    let (bulk_in, echo_in) = (via(9000), via(9001));

    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(8));

    let mut g = c.benchmark_group("egress_throughput_64MiB");
    g.throughput(Throughput::Bytes(BULK as u64)).sample_size(20);
    setns(&host_ns).unwrap();
    g.bench_function("direct", |b| b.iter(|| download(bulk)));
    setns(&sandbox_ns).unwrap();
    g.bench_function("broker", |b| b.iter(|| download(bulk_in)));
    g.finish();

    let mut g = c.benchmark_group("egress_connect_roundtrip");
    setns(&host_ns).unwrap();
    g.bench_function("direct", |b| b.iter(|| connect_roundtrip(echo)));
    setns(&sandbox_ns).unwrap();
    g.bench_function("broker", |b| b.iter(|| connect_roundtrip(echo_in)));
    g.finish();

    setns(&host_ns).unwrap();
    c.final_summary();

    // Criterion measures one variant after the other; on a shared machine the load changes in
    // between. Interleave the two and compare each pair, so both sides of a ratio saw the same
    // load; also report CPU time per GiB (all threads: server, broker, client), which does not
    // depend on how busy the machine is.
    let rounds = 25;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let timed = |ns: &OwnedFd, f: &dyn Fn()| {
        setns(ns).unwrap();
        let (t, cpu) = (Instant::now(), cpu_seconds());
        f();
        (t.elapsed().as_secs_f64(), cpu_seconds() - cpu)
    };
    let (mut ratios, mut direct, mut brokered) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let d = timed(&host_ns, &|| {
            download(bulk);
        });
        let b = timed(&sandbox_ns, &|| {
            download(bulk_in);
        });
        ratios.push(d.0 / b.0);
        direct.push(d);
        brokered.push(b);
    }
    let gib = BULK as f64 / (1u64 << 30) as f64;
    let speed = |v: &[(f64, f64)]| gib / median(v.iter().map(|x| x.0).collect());
    let cpu = |v: &[(f64, f64)]| median(v.iter().map(|x| x.1).collect()) / gib;
    println!(
        "interleaved 64 MiB download ({rounds} pairs): direct {:.2} GiB/s, broker {:.2} GiB/s; \
         median pair ratio broker/direct = {:.0} %; CPU per GiB: direct {:.2} s, broker {:.2} s",
        speed(&direct),
        speed(&brokered),
        100.0 * median(ratios),
        cpu(&direct),
        cpu(&brokered),
    );
    let (mut ratios, mut direct, mut brokered) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let d = timed(&host_ns, &|| (0..100).for_each(|_| connect_roundtrip(echo))).0 / 100.0;
        let b = timed(&sandbox_ns, &|| {
            (0..100).for_each(|_| connect_roundtrip(echo_in))
        })
        .0 / 100.0;
        ratios.push(b / d);
        direct.push(d);
        brokered.push(b);
    }
    println!(
        "interleaved connect + 1-byte round trip: direct {:.0} us, broker {:.0} us; median pair \
         ratio broker/direct = {:.1}x",
        median(direct) * 1e6,
        median(brokered) * 1e6,
        median(ratios),
    );
    setns(&host_ns).unwrap();
}
