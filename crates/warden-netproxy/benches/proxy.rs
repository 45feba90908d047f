//! The egress proxy on loopback, against baselines from the same run: one CONNECT stream's
//! throughput (target ≥ 1 Gbit/s) against the same stream sent directly; the latency a new
//! connection gains (target ≤ 1 ms) against connecting directly; 1,000 tunnels open at once
//! (target: no errors); and the proxy's memory meanwhile (target ≤ 20 MB). The proxy runs in a
//! process of its own (this binary with `--serve`), so its memory is its own.
//!
//! `cargo bench -p warden-netproxy --bench proxy`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use warden_netproxy::{Config, NetPolicy, Proxy, Resolver};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--serve") {
        serve(&args[at + 1..]);
    }
    let sink = sink_server();
    let echo = echo_server();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--serve", &sink.to_string(), &echo.to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let proxy: u16 = line.trim().parse().unwrap();
    let pid = child.id();
    let idle = rss_kb(pid);

    // Throughput of one stream.
    let bytes: u64 = 2 << 30;
    let rounds = 5;
    let (mut direct, mut tunnelled) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        direct.push(stream_gbits(
            TcpStream::connect(("127.0.0.1", sink)).unwrap(),
            bytes,
        ));
        tunnelled.push(stream_gbits(tunnel(proxy, sink), bytes));
    }
    let (direct, tunnelled) = (median(direct), median(tunnelled));
    println!("one stream of {} GiB, median of {rounds}:", bytes >> 30);
    println!("  direct (baseline)        {direct:6.2} Gbit/s");
    println!(
        "  through CONNECT          {tunnelled:6.2} Gbit/s   ratio {:.2}   (target 1 Gbit/s)",
        tunnelled / direct
    );

    // The latency a new connection gains: connect, one byte there and back.
    let n = 300;
    let (mut direct, mut tunnelled) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let started = Instant::now();
        round_trip(TcpStream::connect(("127.0.0.1", echo)).unwrap());
        direct.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        round_trip(tunnel(proxy, echo));
        tunnelled.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let (direct, tunnelled) = (median(direct), median(tunnelled));
    println!("a new connection and one byte there and back, median of {n}:");
    println!("  direct (baseline)        {direct:6.3} ms");
    println!(
        "  through CONNECT          {tunnelled:6.3} ms   added {:.3} ms   (target 1 ms)",
        tunnelled - direct
    );

    // 1,000 tunnels open at once.
    let open = 1000;
    let barrier = Arc::new(Barrier::new(open + 1));
    let release = Arc::new(Barrier::new(open + 1));
    let threads: Vec<_> = (0..open)
        .map(|_| {
            let (barrier, release) = (Arc::clone(&barrier), Arc::clone(&release));
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let result = std::panic::catch_unwind(|| {
                        let mut s = tunnel(proxy, echo);
                        s.write_all(&[7u8; 1024]).unwrap();
                        let mut back = [0u8; 1024];
                        s.read_exact(&mut back).unwrap();
                        s
                    });
                    barrier.wait();
                    release.wait();
                    result.is_ok()
                })
                .unwrap()
        })
        .collect();
    barrier.wait();
    let peak = rss_kb(pid);
    release.wait();
    let ok = threads
        .into_iter()
        .filter_map(|t| t.join().ok())
        .filter(|fine| *fine)
        .count();
    println!("{open} tunnels open at once, 1 KiB echoed through each:");
    println!("  errors: {}   (target 0)", open - ok);
    println!(
        "  proxy memory: {:.1} MB idle, {:.1} MB with all open   (target 20 MB)",
        idle as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// The proxy process: allows `bench.test` on the two ports, loopback reachable.
fn serve(ports: &[String]) -> ! {
    let allow: Vec<String> = ports.iter().map(|p| format!("bench.test:{p}")).collect();
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let proxy = Proxy::start(Config {
        policy: NetPolicy::new(&allow, &[], false).unwrap(),
        resolver: Resolver::Fixed(vec![("bench.test".into(), vec![loopback])]),
        ask: None,
        sink: Arc::new(|_| {}),
        inject: Vec::new(),
        upstream_roots: None,
        gate: None,
        budget: None,
    })
    .unwrap();
    // As the sandbox's bridge makes it: room for a thousand connections not yet accepted.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let listener = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        socket.listen(4096).unwrap().into_std().unwrap()
    });
    println!("{}", listener.local_addr().unwrap().port());
    proxy.serve(listener).unwrap();
    loop {
        std::thread::park();
    }
}

/// A tunnel to `bench.test:port` through the proxy.
fn tunnel(proxy: u16, port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", proxy)).unwrap();
    s.set_nodelay(true).unwrap();
    write!(
        s,
        "CONNECT bench.test:{port} HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "the proxy closed the tunnel");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    s
}

fn stream_gbits(mut s: TcpStream, bytes: u64) -> f64 {
    let chunk = vec![0x42u8; 256 * 1024];
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < bytes {
        s.write_all(&chunk).unwrap();
        sent += chunk.len() as u64;
    }
    s.shutdown(std::net::Shutdown::Write).unwrap();
    // The sink answers with one byte once it has read everything.
    let mut done = [0u8; 1];
    s.read_exact(&mut done).unwrap();
    (sent * 8) as f64 / started.elapsed().as_secs_f64() / 1e9
}

fn round_trip(mut s: TcpStream) {
    s.set_nodelay(true).unwrap();
    s.write_all(b"x").unwrap();
    let mut back = [0u8; 1];
    s.read_exact(&mut back).unwrap();
}

/// Reads everything, then answers one byte.
fn sink_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 256 * 1024];
                while stream.read(&mut buf).unwrap_or(0) > 0 {}
                let _ = stream.write_all(b"!");
            });
        }
    });
    port
}

fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let _ = stream.set_nodelay(true);
                    let mut reader = stream.try_clone().unwrap();
                    let mut writer = stream;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = reader.read(&mut buf) {
                        if n == 0 || writer.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                })
                .unwrap();
        }
    });
    port
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}
