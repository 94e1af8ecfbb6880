//! Twenty instances of a service calling one dependency that goes healthy →
//! sick → healthy, without sharing and then sharing through Redis with
//! quorums 1, 2 and 3: what each instance's breaker sends to the sick
//! dependency, and how fast the fleet comes back.
//!
//! Run it (about a minute per run; it starts its own `redis-server` on a free
//! loopback port, so the binary must be on PATH: `apt-get install
//! redis-server`):
//!
//! ```text
//! cargo run --release -p failfast-fleet --example fleet
//! cargo run --release -p failfast-fleet --example fleet -- --runs 3
//! cargo run --release -p failfast-fleet --example fleet -- --processes --runs 3
//! cargo run --release -p failfast-fleet --example fleet -- --cluster --runs 3
//! ```
//!
//! By default all instances live in this one process, but share nothing but
//! the dependency and Redis: each has its own breaker (`threshold = 5`,
//! `recovery = 2s`), its own fleet task, store connection and identity, and
//! its own connection to the dependency, a loopback TCP server answering each
//! one-byte request with `+` (healthy) or `-` (sick). Each instance calls it at
//! 50 calls/s with Poisson arrivals. Per scenario: 1 s healthy, 7 s sick,
//! 5 s healthy again; a 21st instance (the late pod) starts 3 s into the
//! outage, once its fleet is connected.
//!
//! `--processes` runs each instance as a process of its own instead: this
//! binary starts copies of itself (`std::env::current_exe`), each with its own
//! runtime, fleet, connections and identity; they report their breaker's
//! state changes and their counts to this one on their standard output.
//! `--cluster` shares through a Redis Cluster of three primaries instead of
//! one server (started here with `redis-server --cluster-enabled yes` and
//! `redis-cli --cluster create`, so `redis-cli` must be on PATH too:
//! `apt-get install redis-tools`): instance `i` is given
//! `redis+cluster://` and node `i % 3` only, so most instances reach the
//! breaker's slot through a node that does not hold it.
//! `--hang` replaces the sick dependency by one that hangs: each call has a
//! 1 s time limit (`timeout`) and, while the outage lasts, fails only
//! at it; the fleets vote from calls in flight (`hung_after` 200 ms,
//! `hung_calls` 3). It counts the calls that timed out, and the seconds
//! callers spent waiting in them (in one process only).
//! `--runs N` runs each scenario N times and prints the median and the range
//! of each figure; `--quorums 0,2` runs only those scenarios (0: no
//! sharing). Recovery is the time from the dependency's recovery until
//! every breaker has closed at least once (a breaker ramping up after a
//! fleet close is held open for part of each slot); "traffic back" the time
//! the calls the dependency answers, over 100 ms, took to rise from 10 % to
//! 90 % of the whole fleet's rate.

#[path = "../tests/support/mod.rs"]
mod support;

use failfast_fleet::{Breakers, Fleet, FleetConfig};
use failfast_runtime::{Breaker, State};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{ChildStdin, Command};

const INSTANCES: usize = 20;
const RATE: f64 = 50.0;
const RECOVERY: Duration = Duration::from_secs(2);
const HEALTHY: Duration = Duration::from_secs(1);
const SICK: Duration = Duration::from_secs(7);
const LATE_AFTER: Duration = Duration::from_secs(3);
const TAIL: Duration = Duration::from_secs(5);
/// The calls per second of every instance, the late pod's included.
const FULL: f64 = RATE * (INSTANCES + 1) as f64;

/// The dependency: answers `+` or `-` depending on its health, and counts
/// the calls it answers per [`BUCKET`] since it started.
struct Dependency {
    port: u16,
    sick: Arc<AtomicBool>,
    started: Instant,
    served: Arc<Vec<AtomicU64>>,
}

/// Width of the dependency's counts of calls answered.
const BUCKET: Duration = Duration::from_millis(50);

impl Dependency {
    async fn start() -> Dependency {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sick = Arc::new(AtomicBool::new(false));
        let health = sick.clone();
        let started = Instant::now();
        // An hour of buckets.
        let served: Arc<Vec<AtomicU64>> =
            Arc::new((0..72_000).map(|_| AtomicU64::new(0)).collect());
        let counts = served.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let _ = conn.set_nodelay(true);
                let health = health.clone();
                let counts = counts.clone();
                tokio::spawn(async move {
                    let mut byte = [0u8; 1];
                    while conn.read_exact(&mut byte).await.is_ok() {
                        let at = started.elapsed().as_nanos() / BUCKET.as_nanos();
                        if let Some(n) = counts.get(at as usize) {
                            n.fetch_add(1, Ordering::Relaxed);
                        }
                        let answer = if health.load(Ordering::Relaxed) {
                            b"-"
                        } else {
                            b"+"
                        };
                        if conn.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Dependency {
            port,
            sick,
            started,
            served,
        }
    }

    /// From `from` on, how long until the calls answered over 100 ms first
    /// reach 10 % and then 90 % of `full` calls/s: the time the fleet's
    /// traffic took to come back, from a tenth to nine tenths.
    fn traffic_rise(&self, from: Instant, full: f64) -> Option<Duration> {
        let first = (from - self.started).as_nanos() / BUCKET.as_nanos();
        let per_window = full * 2.0 * BUCKET.as_secs_f64();
        let window = |b: usize| {
            let n = |i: usize| self.served.get(i).map_or(0, |c| c.load(Ordering::Relaxed));
            (n(b) + n(b + 1)) as f64
        };
        let buckets = (TAIL.as_nanos() / BUCKET.as_nanos()) as usize;
        let start = first as usize;
        let low = (start..start + buckets).find(|&b| window(b) >= 0.1 * per_window)?;
        let high = (low..start + buckets).find(|&b| window(b) >= 0.9 * per_window)?;
        Some(BUCKET * u32::try_from(high - low).ok()?)
    }
}

/// What the instances of one scenario counted.
#[derive(Default)]
struct Counts {
    /// Failed calls each instance made before its breaker first refused one.
    failing_until_stopped: AtomicU64,
    /// Half-open trials that reached the sick dependency.
    probes: AtomicU64,
    /// Failed calls of the late pod.
    late_failures: AtomicU64,
    /// Hang outage: nanoseconds callers waited in the calls of
    /// `failing_until_stopped`.
    waited_nanos: AtomicU64,
}

/// Hang outage: each call's time limit.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Hang outage: calls running this long vote (`hung_after`) …
const HUNG_AFTER: Duration = Duration::from_millis(200);
/// … once there are this many (`hung_calls`).
const HUNG_CALLS: u32 = 3;

struct Instance {
    breaker: Arc<Breaker>,
    fleet: Option<Fleet>,
}

async fn instance(
    url: &str,
    namespace: &str,
    quorum: Option<u32>,
    name: String,
    hang: bool,
) -> Instance {
    let breaker = Arc::new(
        Breaker::builder()
            .name("inventory")
            .threshold(5)
            .recovery(RECOVERY)
            .timeout(TIMEOUT)
            .build()
            .unwrap(),
    );
    let fleet = quorum.map(|quorum| {
        let mut cfg = FleetConfig::new(url, namespace);
        cfg.instance = name;
        cfg.quorum = quorum;
        cfg.open_base = RECOVERY;
        cfg.open_cap = RECOVERY;
        cfg.breakers = Breakers::Explicit;
        if hang {
            cfg.call_timeout = Some(TIMEOUT);
            cfg.hung_after = Some(HUNG_AFTER);
            cfg.hung_calls = HUNG_CALLS;
        }
        let fleet = failfast_fleet::join(cfg).unwrap();
        fleet.attach_breaker(breaker.clone()).unwrap();
        fleet
    });
    if let Some(fleet) = &fleet {
        support::eventually(Duration::from_secs(10), "fleet connected", || {
            fleet.stats().connected
        })
        .await;
    }
    Instance { breaker, fleet }
}

/// Poisson calls at `RATE` until `end`. A refused call after a failed one
/// means the instance stopped calling the sick dependency.
async fn calls(breaker: Arc<Breaker>, port: u16, counts: Arc<Counts>, late: bool, end: Instant) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    conn.set_nodelay(true).unwrap();
    let (mut failed, mut stopped) = (false, false);
    while Instant::now() < end {
        let gap = -(1.0 - fastrand::f64()).ln() / RATE;
        tokio::time::sleep(Duration::from_secs_f64(gap)).await;
        let Ok(permit) = breaker.acquire() else {
            stopped |= failed;
            continue;
        };
        let trial = permit.is_trial();
        let mut answer = [0u8; 1];
        conn.write_all(b"?").await.unwrap();
        conn.read_exact(&mut answer).await.unwrap();
        if &answer == b"+" {
            permit.record(failfast_runtime::Outcome::Success);
            continue;
        }
        permit.record(failfast_runtime::Outcome::Failure);
        failed = true;
        if trial {
            counts.probes.fetch_add(1, Ordering::Relaxed);
        } else if late {
            counts.late_failures.fetch_add(1, Ordering::Relaxed);
        } else if !stopped {
            counts.failing_until_stopped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Poisson calls at `RATE` until `end` to a dependency that answers at
/// once, or never while `hung`: each call its own task, cut off at
/// `TIMEOUT`. A call that timed out is a probe if the breaker was not
/// closed when it started.
async fn calls_hang(
    breaker: Arc<Breaker>,
    hung: Arc<AtomicBool>,
    counts: Arc<Counts>,
    late: bool,
    end: Instant,
) {
    let mut running = Vec::new();
    while Instant::now() < end {
        let gap = -(1.0 - fastrand::f64()).ln() / RATE;
        tokio::time::sleep(Duration::from_secs_f64(gap)).await;
        let (breaker, hung, counts) = (breaker.clone(), hung.clone(), counts.clone());
        running.push(tokio::spawn(async move {
            let trial = breaker.state() != State::Closed;
            let started = Instant::now();
            let answer = async {
                if hung.load(Ordering::Relaxed) {
                    std::future::pending::<()>().await;
                }
                Ok::<(), ()>(())
            };
            let result = breaker.call_async(answer).await;
            if !matches!(result, Err(failfast_runtime::Error::Timeout(_))) {
                return;
            }
            if trial {
                counts.probes.fetch_add(1, Ordering::Relaxed);
            } else if late {
                counts.late_failures.fetch_add(1, Ordering::Relaxed);
            } else {
                counts.failing_until_stopped.fetch_add(1, Ordering::Relaxed);
                let waited = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                counts.waited_nanos.fetch_add(waited, Ordering::Relaxed);
            }
        }));
        running.retain(|t| !t.is_finished());
    }
    for t in running {
        let _ = t.await;
    }
}

struct Row {
    failing_until_stopped: u64,
    customer_seconds: f64,
    spread: Option<Duration>,
    probes: u64,
    recovered_in: Option<Duration>,
    traffic_rise: Option<Duration>,
    late_failures: u64,
    store_ops_per_s: f64,
    store_ops_failed: u64,
}

fn label(quorum: Option<u32>) -> String {
    quorum.map_or("no sharing".to_owned(), |k| format!("fleet, quorum {k}"))
}

/// Where the instances of one scenario stand, as the scenario follows them.
trait Fleetwide {
    /// Whether each instance (the late pod included once it runs) is Closed.
    fn closed(&self) -> Vec<bool>;

    /// How many instances are not Closed.
    fn not_closed(&self) -> usize {
        self.closed().iter().filter(|c| !**c).count()
    }
}

/// From the first breaker open to every breaker open, within `LATE_AFTER` of
/// the dependency falling sick at `sick_at`.
async fn spread(sick_at: Instant, fleet: &impl Fleetwide) -> Option<Duration> {
    let mut first = None;
    while Instant::now() < sick_at + LATE_AFTER {
        let open = fleet.not_closed();
        if open > 0 && first.is_none() {
            first = Some(Instant::now());
        }
        if open == INSTANCES {
            return first.map(|f| f.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

/// From the dependency's recovery at `healed` to every breaker closed
/// again, each at least once (during a ramp a breaker is held open for part
/// of each slot; it admits calls again from its first close).
async fn recovery(healed: Instant, end: Instant, fleet: &impl Fleetwide) -> Option<Duration> {
    let mut seen = Vec::new();
    while Instant::now() < end {
        let closed = fleet.closed();
        seen.resize(closed.len(), false);
        for (s, c) in seen.iter_mut().zip(closed) {
            *s |= c;
        }
        if seen.iter().all(|s| *s) {
            return Some(healed.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}

impl Fleetwide for Vec<Instance> {
    fn closed(&self) -> Vec<bool> {
        self.iter()
            .map(|i| i.breaker.state() == State::Closed)
            .collect()
    }
}

async fn scenario(
    urls: &[String],
    dep: &Dependency,
    quorum: Option<u32>,
    run: usize,
    hang: bool,
) -> Row {
    let namespace = format!(
        "fleet-example/{}k{}/r{run}",
        if hang { "hang/" } else { "" },
        quorum.unwrap_or(0)
    );
    let mut instances = Vec::new();
    for i in 0..INSTANCES {
        let url = &urls[i % urls.len()];
        instances.push(instance(url, &namespace, quorum, format!("pod{i}"), hang).await);
    }
    let hung = Arc::new(AtomicBool::new(false));
    let caller = |b: Arc<Breaker>, c: Arc<Counts>, late: bool, end: Instant| {
        if hang {
            tokio::spawn(calls_hang(b, hung.clone(), c, late, end))
        } else {
            tokio::spawn(calls(b, dep.port, c, late, end))
        }
    };
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    let end = start + HEALTHY + SICK + TAIL;
    dep.sick.store(false, Ordering::Relaxed);
    let mut tasks: Vec<_> = instances
        .iter()
        .map(|i| {
            let (b, c) = (i.breaker.clone(), counts.clone());
            caller(b, c, false, end)
        })
        .collect();

    tokio::time::sleep_until((start + HEALTHY).into()).await;
    let outage = if hang { &hung } else { &dep.sick };
    outage.store(true, Ordering::Relaxed);
    let spread = spread(start + HEALTHY, &instances).await;
    tokio::time::sleep_until((start + HEALTHY + LATE_AFTER).into()).await;
    let late = instance(
        &urls[INSTANCES % urls.len()],
        &namespace,
        quorum,
        "late".into(),
        hang,
    )
    .await;
    tasks.push(caller(late.breaker.clone(), counts.clone(), true, end));
    instances.push(late);

    let healed = start + HEALTHY + SICK;
    tokio::time::sleep_until(healed.into()).await;
    let probes = counts.probes.load(Ordering::Relaxed);
    outage.store(false, Ordering::Relaxed);
    let recovered_in = recovery(healed, end, &instances).await;
    for t in tasks {
        t.await.unwrap();
    }
    let ops: u64 = instances
        .iter()
        .filter_map(|i| i.fleet.as_ref())
        .map(|f| f.stats().ops_ok + f.stats().ops_failed)
        .sum();
    let failed: u64 = instances
        .iter()
        .filter_map(|i| i.fleet.as_ref())
        .map(|f| f.stats().ops_failed)
        .sum();
    Row {
        failing_until_stopped: counts.failing_until_stopped.load(Ordering::Relaxed),
        customer_seconds: counts.waited_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        spread,
        probes,
        recovered_in,
        traffic_rise: dep.traffic_rise(healed, FULL),
        late_failures: counts.late_failures.load(Ordering::Relaxed),
        store_ops_per_s: ops as f64 / start.elapsed().as_secs_f64(),
        store_ops_failed: failed,
    }
}

/// A copy of this program running one instance (`--child`): the
/// arguments say where the dependency and the store are, who it is and how
/// long to call; it prints `ready` once its fleet is connected, starts calling
/// on a line from its standard input, prints `state open|closed|half_open`
/// on every change of its breaker's state and, at the end,
/// `done <failing until stopped> <probes> <late failures> <store ops> <failed store ops>`.
async fn child(args: &[String]) {
    let arg = |name: &str| {
        let at = args.iter().position(|a| a == name).expect(name);
        args[at + 1].clone()
    };
    let quorum: u32 = arg("--quorum").parse().unwrap();
    let late = args.iter().any(|a| a == "--late");
    let me = instance(
        &arg("--redis"),
        &arg("--namespace"),
        (quorum > 0).then_some(quorum),
        arg("--name"),
        false,
    )
    .await;
    println!("ready");
    let mut go = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut go)
        .await
        .unwrap();
    let end = Instant::now() + Duration::from_millis(arg("--millis").parse().unwrap());
    let counts = Arc::new(Counts::default());
    let port = arg("--port").parse().unwrap();
    let calling = tokio::spawn(calls(me.breaker.clone(), port, counts.clone(), late, end));
    let mut last = State::Closed;
    while !calling.is_finished() {
        let now = me.breaker.state();
        if now != last {
            println!("state {now}");
            last = now;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (ops, failed) = me.fleet.as_ref().map_or((0, 0), |f| {
        let s = f.stats();
        (s.ops_ok + s.ops_failed, s.ops_failed)
    });
    println!(
        "done {} {} {} {ops} {failed}",
        counts.failing_until_stopped.load(Ordering::Relaxed),
        counts.probes.load(Ordering::Relaxed),
        counts.late_failures.load(Ordering::Relaxed),
    );
}

/// The instances of a scenario run as processes: whether each one's breaker
/// is Closed (0) or not (1), as they last reported; absent ones are Closed.
struct Processes {
    states: Arc<Vec<AtomicU8>>,
}

impl Fleetwide for Processes {
    fn closed(&self) -> Vec<bool> {
        self.states
            .iter()
            .map(|s| s.load(Ordering::Relaxed) == 0)
            .collect()
    }
}

/// Starts instance `index` as a process; returns its standard input once it
/// is ready, and a task that follows its reports and ends with its counts.
async fn spawn(
    args: Vec<String>,
    index: usize,
    states: Arc<Vec<AtomicU8>>,
) -> (ChildStdin, tokio::task::JoinHandle<[u64; 5]>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--child")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start an instance");
    let stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.next_line().await.unwrap();
    assert_eq!(ready.as_deref(), Some("ready"), "instance {index}");
    let follow = tokio::spawn(async move {
        let mut done = [0; 5];
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(state) = line.strip_prefix("state ") {
                states[index].store(u8::from(state != "closed"), Ordering::Relaxed);
            } else if let Some(counts) = line.strip_prefix("done ") {
                for (slot, n) in done.iter_mut().zip(counts.split(' ')) {
                    *slot = n.parse().unwrap();
                }
            }
        }
        let _ = child.wait().await;
        done
    });
    (stdin, follow)
}

/// One scenario with every instance a process of its own.
async fn scenario_processes(
    urls: &[String],
    dep: &Dependency,
    quorum: Option<u32>,
    run: usize,
) -> Row {
    let namespace = format!("fleet-example/p{}/r{run}", quorum.unwrap_or(0));
    let states = Arc::new(
        (0..=INSTANCES)
            .map(|_| AtomicU8::new(0))
            .collect::<Vec<_>>(),
    );
    let args = |index: usize, name: String, millis: Duration, late: bool| {
        let mut a = vec![
            "--redis".to_owned(),
            urls[index % urls.len()].clone(),
            "--namespace".into(),
            namespace.clone(),
            "--quorum".into(),
            quorum.unwrap_or(0).to_string(),
            "--name".into(),
            name,
            "--port".into(),
            dep.port.to_string(),
            "--millis".into(),
            millis.as_millis().to_string(),
        ];
        if late {
            a.push("--late".into());
        }
        a
    };
    let total = HEALTHY + SICK + TAIL;
    let mut inputs = Vec::new();
    let mut follows = Vec::new();
    for i in 0..INSTANCES {
        let (stdin, follow) =
            spawn(args(i, format!("pod{i}"), total, false), i, states.clone()).await;
        inputs.push(stdin);
        follows.push(follow);
    }
    dep.sick.store(false, Ordering::Relaxed);
    let start = Instant::now();
    let end = start + total;
    for stdin in &mut inputs {
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
    }
    let fleet = Processes { states };

    tokio::time::sleep_until((start + HEALTHY).into()).await;
    dep.sick.store(true, Ordering::Relaxed);
    let spread = spread(start + HEALTHY, &fleet).await;
    tokio::time::sleep_until((start + HEALTHY + LATE_AFTER).into()).await;
    let (mut stdin, follow) = spawn(
        args(
            INSTANCES,
            "late".into(),
            end.saturating_duration_since(Instant::now()),
            true,
        ),
        INSTANCES,
        fleet.states.clone(),
    )
    .await;
    stdin.write_all(b"go\n").await.unwrap();
    stdin.flush().await.unwrap();
    inputs.push(stdin);
    follows.push(follow);

    let healed = start + HEALTHY + SICK;
    tokio::time::sleep_until(healed.into()).await;
    dep.sick.store(false, Ordering::Relaxed);
    let recovered_in = recovery(healed, end, &fleet).await;
    let mut totals = [0; 5];
    for follow in follows {
        for (t, n) in totals.iter_mut().zip(follow.await.unwrap()) {
            *t += n;
        }
    }
    Row {
        failing_until_stopped: totals[0],
        customer_seconds: 0.0,
        spread,
        probes: totals[1],
        recovered_in,
        traffic_rise: dep.traffic_rise(healed, FULL),
        late_failures: totals[2],
        store_ops_per_s: totals[3] as f64 / start.elapsed().as_secs_f64(),
        store_ops_failed: totals[4],
    }
}

/// `median (min–max)` of `values`, or how many runs had none.
fn summary(values: &[Option<f64>], unit: &str, decimals: usize) -> String {
    let mut v: Vec<f64> = values.iter().flatten().copied().collect();
    if v.is_empty() {
        return format!("none within {} s", TAIL.as_secs());
    }
    v.sort_by(f64::total_cmp);
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let missing = values.len() - v.len();
    let mut out = if v[0] == v[v.len() - 1] {
        format!("{median:.decimals$}{unit}")
    } else {
        format!(
            "{median:.decimals$}{unit} ({:.decimals$}–{:.decimals$})",
            v[0],
            v[v.len() - 1]
        )
    };
    if missing > 0 {
        out.push_str(&format!(
            ", {missing} run(s) not within {} s",
            TAIL.as_secs()
        ));
    }
    out
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--child") {
        return child(&args[1..]).await;
    }
    let processes = args.iter().any(|a| a == "--processes");
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .map_or(1, |at| args[at + 1].parse().expect("--runs N"));
    let cluster = args.iter().any(|a| a == "--cluster");
    let hang = args.iter().any(|a| a == "--hang");
    assert!(!(hang && processes), "--hang runs in one process");
    println!(
        "command: cargo run --release -p failfast-fleet --example fleet --{}",
        args.iter().map(|a| format!(" {a}")).collect::<String>()
    );
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map_or("unknown".into(), |out| {
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        });
    println!("commit: {commit}");
    // The store: one server, or three cluster primaries with each instance
    // given one node of them.
    let (_server, _cluster, urls) = if cluster {
        let c = support::RedisCluster::start(3, 0);
        let urls = (0..3).map(|i| c.url(i)).collect::<Vec<_>>();
        (None, Some(c), urls)
    } else {
        let s = support::RedisServer::start();
        let urls = vec![s.url()];
        (Some(s), None, urls)
    };
    let dep = Dependency::start().await;
    // Recovery periods that end while the dependency is still sick.
    let periods = (SICK.as_secs_f64() / RECOVERY.as_secs_f64()).floor();
    println!(
        "{INSTANCES} instances ({}) at {RATE} calls/s each, threshold 5, recovery {}s; \
         dependency sick for {}s ({periods} recovery periods); {}; {runs} run(s) per scenario{}\n",
        if processes {
            "one process each"
        } else {
            "in one process"
        },
        RECOVERY.as_secs(),
        SICK.as_secs(),
        if cluster {
            "Redis Cluster of 3 primaries, instance i given node i % 3"
        } else {
            "one Redis server"
        },
        if runs > 1 { ": median (min–max)" } else { "" },
    );
    // `--quorums 0,2`: only these scenarios (0: no sharing).
    let quorums: Vec<Option<u32>> = args
        .iter()
        .position(|a| a == "--quorums")
        .map_or("0,1,2,3", |at| args[at + 1].as_str())
        .split(',')
        .map(|k| Some(k.parse::<u32>().expect("--quorums 0,1,2,3")).filter(|k| *k > 0))
        .collect();
    let mut table = Vec::new();
    for quorum in quorums {
        let mut rows = Vec::new();
        for run in 0..runs {
            let row = if processes {
                scenario_processes(&urls, &dep, quorum, run).await
            } else {
                scenario(&urls, &dep, quorum, run, hang).await
            };
            eprintln!("{} run {} done", label(quorum), run + 1);
            rows.push(row);
        }
        table.push((label(quorum), rows));
    }
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    type Column<'a> = (
        String,
        Box<dyn Fn(&Row) -> Option<f64> + 'a>,
        &'static str,
        usize,
    );
    fn column<'a>(
        header: &str,
        f: impl Fn(&Row) -> Option<f64> + 'a,
        unit: &'static str,
        decimals: usize,
    ) -> Column<'a> {
        (header.to_owned(), Box::new(f), unit, decimals)
    }
    let count = |n: u64| Some(n as f64);
    let while_out = if hang { "hung" } else { "sick" };
    let probes = format!("probes per recovery period while {while_out}");
    let mut columns = vec![
        column(
            "failing calls until the fleet stopped",
            |r| count(r.failing_until_stopped),
            "",
            0,
        ),
        column("first open → all open", |r| ms(r.spread), " ms", 0),
        column(&probes, |r| Some(r.probes as f64 / periods), "", 1),
        column(
            "recovery → every breaker closed",
            |r| ms(r.recovered_in),
            " ms",
            0,
        ),
        column(
            "late pod's failing calls",
            |r| count(r.late_failures),
            "",
            0,
        ),
    ];
    if hang {
        let waited = column(
            "customer-seconds waiting for them",
            |r| Some(r.customer_seconds),
            "",
            0,
        );
        columns.insert(1, waited);
    } else {
        let rise = column(
            "traffic back, 10 % → 90 %",
            |r| ms(r.traffic_rise),
            " ms",
            0,
        );
        columns.insert(4, rise);
        columns.push(column("store ops/s", |r| Some(r.store_ops_per_s), "", 1));
        columns.push(column(
            "failed store ops",
            |r| count(r.store_ops_failed),
            "",
            0,
        ));
    }
    let first = if hang {
        format!("hang outage ({}s timeout)", TIMEOUT.as_secs())
    } else {
        "scenario".into()
    };
    let headers: Vec<&str> = columns.iter().map(|c| c.0.as_str()).collect();
    println!("| {first} | {} |", headers.join(" | "));
    println!("|---|{}", "---|".repeat(columns.len()));
    for (label, rows) in table {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, f, unit, decimals)| {
                summary(&rows.iter().map(f).collect::<Vec<_>>(), unit, *decimals)
            })
            .collect();
        println!("| {label} | {} |", cells.join(" | "));
    }
}
