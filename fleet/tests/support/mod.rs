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
        Self::start_for_port(|_| extra.to_vec())
    }

    /// A server whose extra options depend on its port (a cluster node's
    /// configuration file, say).
    pub fn start_for_port(extra: impl Fn(u16) -> Vec<String>) -> Self {
        // A cluster node also listens on its port + 10000: ports above
        // 55535 are not tried for one.
        let cluster = extra(0).iter().any(|a| a == "--cluster-enabled");
        for _ in 0..5 {
            let port = std::iter::repeat_with(free_port)
                .find(|&p| !cluster || p <= 55535)
                .unwrap();
            if let Some(server) = Self::try_start(port, &extra(port)) {
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

    /// Whether the process is running (not killed).
    pub fn running(&self) -> bool {
        self.child.is_some()
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

const INSTALL_CLI: &str = "`redis-cli` is not on PATH: the cluster tests create their cluster \
with `redis-cli --cluster create`. Install it with `apt-get update && apt-get install -y redis-tools`.";

/// A Redis Cluster on loopback: `masters` primaries with `replicas`
/// replicas each (`--cluster-node-timeout 1000`, so a failover takes a
/// few seconds), created by `redis-cli --cluster create`; every node is
/// killed on drop.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    dir: std::path::PathBuf,
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl RedisCluster {
    pub fn start(masters: usize, replicas: usize) -> Self {
        let cluster = Self::nodes(masters * (1 + replicas));
        cluster.create(replicas);
        cluster
    }

    /// `n` cluster-enabled servers that are not a cluster yet (no slots).
    pub fn nodes(n: usize) -> Self {
        static CLUSTERS: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "failfast-cluster-{}-{}",
            std::process::id(),
            CLUSTERS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let nodes: Vec<_> = (0..n)
            .map(|_| {
                RedisServer::start_for_port(|port| {
                    let conf = dir.join(format!("nodes-{port}.conf"));
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        &conf.to_string_lossy(),
                        "--cluster-node-timeout",
                        "1000",
                        // A replica takes over however long its primary was gone.
                        "--cluster-replica-validity-factor",
                        "0",
                        "--dir",
                        &dir.to_string_lossy(),
                    ]
                    .map(String::from)
                    .to_vec()
                })
            })
            .collect();
        RedisCluster { nodes, dir }
    }

    /// `redis-cli --cluster create` over every node, then waits for
    /// `cluster_state:ok`.
    pub fn create(&self, replicas: usize) {
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        let created = match created {
            Ok(out) => out,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_CLI}"),
            Err(e) => panic!("cannot run redis-cli: {e}"),
        };
        assert!(
            created.status.success(),
            "redis-cli --cluster create: {created:?}"
        );
        self.wait_ok(Duration::from_secs(30));
    }

    /// Waits until every running node reports `cluster_state:ok` with every
    /// slot served, and every replica is in sync with its primary.
    pub fn wait_ok(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let ok = self.nodes.iter().filter(|n| n.running()).all(|n| {
                let info = cluster_command(n.port, &["CLUSTER", "INFO"]);
                let replication = cluster_command(n.port, &["INFO", "replication"]);
                info.contains("cluster_state:ok")
                    && info.contains("cluster_slots_ok:16384")
                    && (replication.contains("role:master")
                        || replication.contains("master_link_status:up"))
            });
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster never reached cluster_state:ok"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis+cluster://` URL with node `i` as the only seed.
    pub fn url(&self, i: usize) -> String {
        format!("redis+cluster://127.0.0.1:{}/", self.nodes[i].port)
    }

    /// Index of the node that serves `key`'s slot now, asked of node `via`.
    pub fn owner(&self, key: &str, via: usize) -> usize {
        let port = self.nodes[via].port;
        let slot: u16 = cluster_command(port, &["CLUSTER", "KEYSLOT", key])
            .trim()
            .parse()
            .unwrap();
        let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let ranges: Vec<(u16, u16, u16)> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query::<Vec<redis::Value>>(&mut conn)
            .unwrap()
            .into_iter()
            .map(|range| {
                let redis::Value::Array(items) = range else {
                    panic!("CLUSTER SLOTS: {range:?}")
                };
                let int = |v: &redis::Value| match v {
                    redis::Value::Int(n) => *n as u16,
                    other => panic!("CLUSTER SLOTS: {other:?}"),
                };
                let redis::Value::Array(primary) = &items[2] else {
                    panic!("CLUSTER SLOTS: {items:?}")
                };
                (int(&items[0]), int(&items[1]), int(&primary[1]))
            })
            .collect();
        let (_, _, owner) = ranges
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            .expect("every slot served");
        self.nodes.iter().position(|n| n.port == *owner).unwrap()
    }

    /// A breaker name of `namespace` whose keys live on node `node`.
    pub fn breaker_on(&self, namespace: &str, node: usize) -> String {
        (0..)
            .map(|i| format!("dep{i}"))
            .find(|name| self.owner(&format!("failfast:{{{namespace}/{name}}}:open"), 0) == node)
            .unwrap()
    }

    /// The primaries' indexes.
    pub fn primaries(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                self.nodes[i].running()
                    && cluster_command(self.nodes[i].port, &["INFO", "replication"])
                        .contains("role:master")
            })
            .collect()
    }
}

/// A command to one node, answered as text (`INFO`, `CLUSTER INFO`, ...).
fn cluster_command(port: u16, args: &[&str]) -> String {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}/")) else {
        return String::new();
    };
    let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(1)) else {
        return String::new();
    };
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    match cmd.query::<redis::Value>(&mut conn) {
        Ok(redis::Value::Int(n)) => n.to_string(),
        Ok(redis::Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(redis::Value::VerbatimString { text, .. }) => text,
        Ok(other) => format!("{other:?}"),
        Err(e) => e.to_string(),
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
    /// Forward, but every script the client loads reaches the server
    /// changed (as a proxy spreading commands over several servers would
    /// load it on another): `EVALSHA` answers `NOSCRIPT` after every reload.
    LoseScripts,
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
                tokio::spawn(pump(cr, sw, m.clone(), r.subscribe(), true));
                tokio::spawn(pump(sr, cw, m.clone(), r.subscribe(), false));
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
    upstream: bool,
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
            Mode::LoseScripts if upstream => lose_scripts(&mut buf[..n]),
            Mode::Pass | Mode::LoseScripts => {}
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The fleet's `tracing` warnings, captured by a process-wide subscriber.
pub mod warnings {
    use std::fmt::Write;
    use std::sync::{Mutex, Once};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

    struct Capture;

    struct Fields(String);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, "{}={value:?};", field.name());
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            let _ = write!(self.0, "{}={value};", field.name());
        }
    }

    impl Subscriber for Capture {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            metadata.target() == "failfast_fleet"
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            if *event.metadata().level() == Level::WARN {
                let mut fields = Fields(String::new());
                event.record(&mut fields);
                LOG.lock().unwrap().push(fields.0);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// Starts capturing (once per process; before the fleets start).
    pub fn capture() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| tracing::subscriber::set_global_default(Capture).unwrap());
    }

    /// The warnings logged for `instance`, each as `field=value;` pairs.
    pub fn of(instance: &str) -> Vec<String> {
        let tag = format!("instance={instance};");
        LOG.lock()
            .unwrap()
            .iter()
            .filter(|w| w.contains(&tag))
            .cloned()
            .collect()
    }
}

/// Turns every `redis.call(` of a chunk into `redis.calL(` (still Lua, the
/// same length, so the RESP framing holds): a loaded script's SHA1 is not
/// the client's.
fn lose_scripts(chunk: &mut [u8]) {
    let word = b"redis.call(";
    let mut at = 0;
    while let Some(i) = chunk[at..].windows(word.len()).position(|w| w == word) {
        chunk[at + i + 9] = b'L';
        at += i + word.len();
    }
}
