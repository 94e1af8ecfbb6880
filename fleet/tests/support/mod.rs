//! A real `redis-server` per test, a TCP proxy that misbehaves on demand, and a fake
//! breaker for the fleet to drive.
#![allow(dead_code)]

use failfast::State;
use failfast_fleet::{FleetConfig, FleetMember, Notifier, RecentOutcomes, RedisTransport};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const INSTALL: &str = "`redis-server` is not on PATH: the fleet tests start their own Redis. \
Install it with `apt-get update && apt-get install -y redis-server` (Debian/Ubuntu; `.ci/run` does this).";

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `redis-server` on a loopback port, killed on drop.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
}

impl RedisServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server with more command-line options (a TLS listener, say).
    pub fn start_with(extra: &[String]) -> Self {
        for _ in 0..5 {
            if let Some(server) = Self::try_start(free_port(), extra) {
                return server;
            }
        }
        panic!("redis-server did not answer PING on any of 5 ports");
    }

    fn try_start(port: u16, extra: &[String]) -> Option<Self> {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--dir", &std::env::temp_dir().to_string_lossy()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL}"),
            Err(e) => panic!("cannot run redis-server: {e}"),
        };
        let mut server = RedisServer {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if ping(port) {
                return Some(server);
            }
            if let Some(child) = server.child.as_mut()
                && child.try_wait().unwrap().is_some()
            {
                server.child = None;
                return None; // port taken meanwhile: try another
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("server running").id() as i32
    }

    /// `kill -9`, then wait for the process to be gone.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// Starts a fresh (empty) server on the same port.
    pub fn restart(&mut self) {
        self.kill9();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(server) = Self::try_start(self.port, &[]) {
                *self = server;
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("could not restart redis-server on port {}", self.port);
    }

    /// SIGSTOP: the socket accepts, the server never answers.
    pub fn freeze(&self) {
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGSTOP) }, 0);
    }

    /// SIGCONT.
    pub fn thaw(&self) {
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGCONT) }, 0);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_ref() {
            unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
        }
        self.kill9();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// A plain client for the test's own reads and hostile writes.
pub async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// A configuration with short, test-sized durations.
pub fn config(url: &str, instance: &str) -> FleetConfig {
    let mut cfg = FleetConfig::new(url, "test/env");
    cfg.instance = instance.into();
    cfg.open_base = Duration::from_millis(1500);
    cfg.probe_lease = Duration::from_secs(2);
    cfg.probe_lead = Duration::from_millis(300);
    cfg.close_jitter = Duration::from_millis(200);
    cfg.lease_jitter = Duration::from_millis(100);
    cfg.poll_interval = Duration::from_millis(500);
    cfg.reconnect_max = Duration::from_millis(500);
    cfg
}

/// A transport for `instance`, built inside the current runtime.
pub fn transport(url: &str, instance: &str) -> RedisTransport {
    RedisTransport::new(&config(url, instance)).unwrap()
}

/// Polls `cond` every 10 ms until it holds; panics with `what` after `limit`.
/// A fleet joined with `cfg` and one fake breaker `dep` attached, once it
/// reports itself connected (within `wait`).
pub async fn member_of(
    cfg: FleetConfig,
    wait: Duration,
) -> (failfast_fleet::Fleet, Arc<FakeMember>) {
    let fleet = failfast_fleet::join(cfg).unwrap();
    let member = FakeMember::new("dep");
    fleet.attach(member.clone()).unwrap();
    eventually(wait, "connected", || fleet.stats().connected).await;
    (fleet, member)
}

pub async fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A breaker that records what the fleet did to it.
pub struct FakeMember {
    pub name: String,
    pub fingerprint: u64,
    pub state: Mutex<State>,
    pub opens: Mutex<Vec<Instant>>,
    pub releases: Mutex<Vec<Instant>>,
    pub successes: AtomicU64,
    pub notifier: Mutex<Option<Notifier>>,
}

impl FakeMember {
    pub fn new(name: &str) -> Arc<Self> {
        Arc::new(FakeMember {
            name: name.into(),
            fingerprint: 7,
            state: Mutex::new(State::Closed),
            opens: Mutex::new(Vec::new()),
            releases: Mutex::new(Vec::new()),
            successes: AtomicU64::new(0),
            notifier: Mutex::new(None),
        })
    }

    pub fn last_open(&self) -> Option<Instant> {
        self.opens.lock().unwrap().last().copied()
    }

    pub fn open_count(&self) -> usize {
        self.opens.lock().unwrap().len()
    }

    pub fn release_count(&self) -> usize {
        self.releases.lock().unwrap().len()
    }

    /// Moves the fake breaker and tells the fleet, as a real transition hook would.
    pub fn transition(&self, to: State, cause: failfast::integration::Cause) {
        let from = std::mem::replace(&mut *self.state.lock().unwrap(), to);
        let notifier = self.notifier.lock().unwrap().clone().expect("attached");
        notifier.notify(failfast_fleet::LocalTransition { from, to, cause });
    }
}

impl FleetMember for FakeMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
    fn state(&self) -> State {
        *self.state.lock().unwrap()
    }
    fn apply_remote_open(&self, until: Instant) {
        self.opens.lock().unwrap().push(until);
    }
    fn release_remote_open(&self, at: Instant) {
        self.releases.lock().unwrap().push(at);
    }
    fn recent_outcomes(&self) -> RecentOutcomes {
        RecentOutcomes {
            successes: self.successes.load(Ordering::Relaxed) as u32,
            failures: 0,
        }
    }
    fn attached(&self, notifier: Notifier) {
        *self.notifier.lock().unwrap() = Some(notifier);
    }
}

/// What the proxy does to traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward as is.
    Pass,
    /// Forward every chunk after this delay.
    Delay(Duration),
    /// Accept and read, never forward (a partition that keeps sockets open).
    Blackhole,
}

/// A loopback TCP proxy in front of a server, for latency, blackholes and resets.
pub struct Proxy {
    pub port: u16,
    mode: Arc<Mutex<Mode>>,
    resets: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.reset_all();
    }
}

impl Proxy {
    pub async fn start(target: u16) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(Mode::Pass));
        let (resets, _) = tokio::sync::watch::channel(0u64);
        let (m, r) = (mode.clone(), resets.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                for s in [&client, &server] {
                    let _ = s.set_nodelay(true);
                    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
                }
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(pump(cr, sw, m.clone(), r.subscribe()));
                tokio::spawn(pump(sr, cw, m.clone(), r.subscribe()));
            }
        });
        Proxy {
            port,
            mode,
            resets,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// Resets (RST) every connection open through the proxy.
    pub fn reset_all(&self) {
        self.resets.send_modify(|n| *n += 1);
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: Arc<Mutex<Mode>>,
    mut reset: tokio::sync::watch::Receiver<u64>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = reset.changed() => return,
        };
        let current = *mode.lock().unwrap();
        match current {
            Mode::Blackhole => continue,
            Mode::Delay(d) => tokio::select! {
                _ = tokio::time::sleep(d) => {}
                _ = reset.changed() => return,
            },
            Mode::Pass => {}
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
