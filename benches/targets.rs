//! Every performance target of `benches/README.md`, measured in one run, as
//! ratios to the peers and floors measured beside them.
//!
//! Criterion measures one case after another, and on a shared machine the
//! host's speed drifts between them: the same code's median can move by a
//! third from one group to the next, which is as much as the distance to a
//! target. Here every case runs once per *round*, the rounds repeat (21 by
//! default, each case first in turn), and each case is reported by its best
//! round and its median round. A drift then touches every case alike, and the
//! best round, as in a "best of N" harness, is the case's cost when the host
//! left it alone.
//!
//! Each call is made as a user makes it:
//! - sync cases through an `Arc<dyn Fn() -> Result<(), Fault>>` from a caller
//!   that is not inlined (so each breaker's whole call path is paid on every
//!   call), timed in the thread's CPU time, on one thread and on two threads
//!   sharing the breaker (each thread's CPU time per call);
//! - `async fn`s awaited in a loop inside one `block_on` on a current-thread
//!   tokio runtime, inlined into that loop and, as an `async fn` whose body
//!   does real work is, polled through `Pin<&mut dyn Future>`: the plain
//!   `async fn`, the annotated one, and their floor, the breaker's own work
//!   written by hand in the `async fn` (no future of its own for the body).
//!
//! ```sh
//! cargo bench -p failfast-benches --bench targets        # about a minute
//! TARGETS_ROUNDS=41 TARGETS_CALLS=2000000 cargo bench -p failfast-benches --bench targets
//! TARGETS_ONLY="1 thread/consecutive" cargo bench -p failfast-benches --bench targets  # those cases only
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use failfast::__private::ConstConfig;
use failfast::{Breaker, Builder, ManualClock, State};
use failsafe::CircuitBreaker;
use recloser::Recloser;

#[path = "support/call.rs"]
mod call;
#[path = "support/cpu_time.rs"]
mod cpu_time;
#[path = "support/side_by_side.rs"]
mod side_by_side;
// Only `on_cpu`: two threads are timed `side_by_side` here.
#[path = "support/protected.rs"]
mod protected;
#[allow(dead_code)]
#[path = "support/threads.rs"]
mod threads;
use call::{Fault, answer, arg, looped_dyn_on_cpu, looped_on_cpu};
use protected::{
    arg_1_in_64, bulkheaded, consecutive, failfast_consecutive, failfast_rate,
    failsafe_consecutive, guarded_async, keyed, open, plain_async, rate, rate_some_failing,
    retried, work,
};
use side_by_side::side_by_side;
use threads::on_cpu;

type Protected = Arc<dyn Fn() -> Result<(), Fault> + Send + Sync>;

/// The caller a user writes: not inlined, calling through the trait object.
#[inline(never)]
fn through(f: &Protected) -> Result<(), Fault> {
    f()
}

fn protected(f: impl Fn() -> Result<(), Fault> + Send + Sync + 'static) -> Protected {
    Arc::new(f)
}

/// The floor of `guarded_async` (`support/protected.rs`): the breaker's own
/// work written by hand in the `async fn` itself, with `guarded_async`'s
/// settings and its entry point (`__private::acquire` on a `static`). The
/// body is called inline, with no future of its own, and the outcome
/// recorded before returning: what the attribute would cost if it added
/// nothing to the breaker's work.
async fn floor_async(x: u64) -> Result<(), Fault> {
    static BREAKER: Breaker = Breaker::from_config(
        ConstConfig::new("floor_async")
            .threshold(5)
            .recovery(Duration::from_secs(30))
            .into_config(),
    );
    let permit = match failfast::__private::acquire(&BREAKER) {
        Ok(permit) => permit,
        Err(rejected) => return Err(rejected.into()),
    };
    let result = answer(x);
    match result {
        Ok(()) => permit.record(failfast::Outcome::Success),
        Err(_) => permit.record(failfast::Outcome::Failure),
    }
    result
}

/// `guarded_async` (`support/protected.rs`) with a time limit: the body
/// polled through the timer, the limit read from the breaker as the call
/// starts.
#[failfast::circuit_breaker(threshold = 5, recovery = "30s", timeout = "10s")]
async fn timed_async(x: u64) -> Result<(), Fault> {
    answer(x)
}

/// Every sync path, as the closure a user would hold.
struct Paths {
    floor: Protected,
    failsafe: Protected,
    recloser: Protected,
    consecutive: Protected,
    consecutive_call: Protected,
    rate: Protected,
    rate_call: Protected,
    graded_call: Protected,
    failing: Protected,
    failing_call: Protected,
    open: Protected,
    open_call: Protected,
    open_failsafe: Protected,
    open_recloser: Protected,
    open_named: Protected,
    half_open: Protected,
    shedding: Protected,
    bulkhead: Protected,
    retried: Protected,
    keyed: Protected,
    /// `failing_call`'s breaker.
    failing_breaker: &'static Breaker,
}

fn paths() -> Paths {
    let an_hour = Duration::from_secs(3600);
    let fs = failsafe_consecutive(5, Duration::from_secs(30));
    let rc = Recloser::default();
    let by_call = |b: Breaker| move || b.call(|| work(arg())).map_err(|_| Fault::Unavailable);
    let failing_breaker: &'static Breaker = Box::leak(Box::new(failfast_rate()));

    // Opened for an hour by one failure.
    let tripped = |builder: Builder| {
        let breaker = builder
            .threshold(1)
            .recovery(an_hour)
            .build()
            .expect("valid settings");
        let _ = breaker.call(|| work(u64::MAX));
        assert_eq!(breaker.state(), State::Open);
        breaker
    };
    let open_breaker = tripped(Breaker::builder());
    // Named at run time, as a keyed family's members and per-host breakers
    // are: its name is an `Arc<str>`, which every `Rejected` carries.
    let open_named = tripped(Breaker::builder().name(format!("open-{}", arg())));
    let _ = open(u64::MAX);
    assert_eq!(open(arg()), Err(Fault::Unavailable));
    let fs_open = failsafe_consecutive(1, an_hour);
    let _ = fs_open.call(|| work(u64::MAX));
    assert!(fs_open.call(|| work(arg())).is_err());
    let rc_open = Recloser::custom().open_wait(an_hour).build();
    for _ in 0..200 {
        let _ = rc_open.call(|| work(u64::MAX));
    }
    assert!(rc_open.call(|| work(arg())).is_err());

    // Half-open with its one trial slot taken, on a clock that stands still,
    // so that the trial's lease never runs out and every call is refused.
    let clock = ManualClock::new();
    let half_open: &'static Breaker = Box::leak(Box::new(
        Breaker::builder()
            .threshold(1)
            .recovery(Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .expect("valid settings"),
    ));
    let _ = half_open.call(|| work(u64::MAX));
    clock.advance(Duration::from_secs(2));
    std::mem::forget(half_open.acquire().expect("the trial call"));
    assert!(
        half_open
            .call(|| work(1))
            .is_err_and(|e| matches!(e, failfast::Error::Rejected(_)))
    );
    assert_eq!(half_open.state(), State::HalfOpen);

    // Shedding all but its probes, on the system clock: the dependency
    // fails every call, those let through included, so the chance stays.
    let shedding = Breaker::builder()
        .shed(2.0)
        .build()
        .expect("valid settings");
    for _ in 0..100 {
        let _ = shedding.call(|| work(u64::MAX));
    }
    assert!(shedding.snapshot().shedding > 0.9);

    Paths {
        floor: protected(|| work(arg())),
        failsafe: protected(move || fs.call(|| work(arg())).map_err(|_| Fault::Unavailable)),
        recloser: protected(move || rc.call(|| work(arg())).map_err(|_| Fault::Unavailable)),
        consecutive: protected(|| consecutive(arg())),
        consecutive_call: protected(by_call(failfast_consecutive())),
        rate: protected(|| rate(arg())),
        rate_call: protected(by_call(failfast_rate())),
        graded_call: protected(by_call(
            Breaker::builder()
                .shed(2.0)
                .build()
                .expect("valid settings"),
        )),
        failing: protected(|| rate_some_failing(arg_1_in_64())),
        failing_call: protected(move || {
            failing_breaker
                .call(|| work(arg_1_in_64()))
                .map_err(|_| Fault::Unavailable)
        }),
        open: protected(|| open(arg())),
        open_call: protected(by_call(open_breaker)),
        open_failsafe: protected(move || {
            fs_open.call(|| work(arg())).map_err(|_| Fault::Unavailable)
        }),
        open_recloser: protected(move || {
            rc_open.call(|| work(arg())).map_err(|_| Fault::Unavailable)
        }),
        open_named: protected(by_call(open_named)),
        half_open: protected(|| {
            half_open
                .call(|| work(arg()))
                .map_err(|_| Fault::Unavailable)
        }),
        shedding: protected(move || {
            shedding
                .call(|| work(black_box(u64::MAX)))
                .map_err(|_| Fault::Unavailable)
        }),
        bulkhead: protected(|| bulkheaded(arg())),
        retried: protected(|| retried(arg())),
        keyed: protected(|| keyed(black_box("10.0.0.1"), arg())),
        failing_breaker,
    }
}

/// One measured case: `run(calls)` makes about that many calls and returns
/// the CPU time per call, in ns, with how much two threads overlapped (1.0
/// for one thread).
struct Case<'a> {
    name: String,
    run: Box<dyn Fn(u64) -> (f64, f64) + 'a>,
    /// ns per call, one entry per round kept.
    rounds: Vec<f64>,
    /// ns per call of the rounds not kept: two threads that could run side
    /// by side for less than `PARALLEL` of their span.
    dropped: Vec<f64>,
}

/// Two-thread rounds whose threads were on a CPU together for less than this
/// share of the time are not kept: they measured one thread at a time.
const PARALLEL: f64 = 0.9;

impl<'a> Case<'a> {
    fn new(name: String, run: impl Fn(u64) -> (f64, f64) + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
            rounds: Vec::new(),
            dropped: Vec::new(),
        }
    }

    fn one_thread(name: String, run: impl Fn(u64) -> Duration + 'a) -> Self {
        Self::new(name, move |calls| {
            (run(calls).as_nanos() as f64 / calls as f64, 1.0)
        })
    }

    /// The rounds reported: those kept, or every round if none was kept
    /// (the report says so).
    fn reported(&self) -> &[f64] {
        if self.rounds.is_empty() {
            &self.dropped
        } else {
            &self.rounds
        }
    }

    fn best(&self) -> f64 {
        self.reported()
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    }

    fn median(&self) -> f64 {
        let mut sorted = self.reported().to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    }
}

fn env(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number")),
        Err(_) => default,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test -p failfast-benches
    // --benches` runs the binary without it, which gets one short round as a
    // smoke test.
    let benching = std::env::args().any(|arg| arg == "--bench");
    let rounds = if benching {
        env("TARGETS_ROUNDS", 21)
    } else {
        1
    };
    let calls = if benching {
        env("TARGETS_CALLS", 1_000_000)
    } else {
        1_000
    };
    assert!(
        rounds > 0 && calls > 0,
        "TARGETS_ROUNDS and TARGETS_CALLS must be at least 1"
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    // `timeout` needs the time driver, which the other cases do without.
    let timed_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime with a timer");
    let p = paths();
    let sync: [(&str, &Protected); 20] = [
        ("floor: bare call", &p.floor),
        ("failsafe", &p.failsafe),
        ("recloser", &p.recloser),
        ("consecutive, attribute", &p.consecutive),
        ("consecutive, Breaker::call", &p.consecutive_call),
        ("rate, attribute", &p.rate),
        ("rate, Breaker::call", &p.rate_call),
        ("graded (shed), Breaker::call", &p.graded_call),
        ("rate 1 in 64 failing, attribute", &p.failing),
        ("rate 1 in 64 failing, Breaker::call", &p.failing_call),
        ("open, attribute", &p.open),
        ("open, Breaker::call", &p.open_call),
        ("open, failsafe", &p.open_failsafe),
        ("open, recloser", &p.open_recloser),
        ("open, named at run time, Breaker::call", &p.open_named),
        ("half-open, Breaker::call", &p.half_open),
        ("shedding, Breaker::call", &p.shedding),
        ("bulkhead, attribute", &p.bulkhead),
        ("keyed attribute, a hit", &p.keyed),
        (
            "#[retry] #[circuit_breaker], first attempt succeeding",
            &p.retried,
        ),
    ];
    let mut cases: Vec<Case<'_>> = Vec::new();
    for (name, f) in sync {
        cases.push(Case::one_thread(format!("1 thread/{name}"), move |n| {
            on_cpu(n, || through(f))
        }));
        cases.push(Case::new(format!("2 threads/{name}"), move |n| {
            // About as long as the one-thread case takes at 10 ns a call.
            let span = Duration::from_nanos(n.saturating_mul(10));
            let run = side_by_side(span, || through(f));
            (run.per_call_ns, run.parallel)
        }));
    }
    let (rt, timed_rt) = (&rt, &timed_rt);
    let asyncs = [
        Case::one_thread("async/plain async fn".into(), move |n| {
            looped_on_cpu(rt, n, || plain_async(arg()))
        }),
        Case::one_thread("async/floor: breaker inline".into(), move |n| {
            looped_on_cpu(rt, n, || floor_async(arg()))
        }),
        Case::one_thread("async/attribute".into(), move |n| {
            looped_on_cpu(rt, n, || guarded_async(arg()))
        }),
        Case::one_thread("async dyn/plain async fn".into(), move |n| {
            looped_dyn_on_cpu(rt, n, || plain_async(arg()))
        }),
        Case::one_thread("async dyn/floor: breaker inline".into(), move |n| {
            looped_dyn_on_cpu(rt, n, || floor_async(arg()))
        }),
        Case::one_thread("async dyn/attribute".into(), move |n| {
            looped_dyn_on_cpu(rt, n, || guarded_async(arg()))
        }),
        Case::one_thread("async/attribute, timeout".into(), move |n| {
            looped_on_cpu(timed_rt, n, || timed_async(arg()))
        }),
        Case::one_thread("async dyn/attribute, timeout".into(), move |n| {
            looped_dyn_on_cpu(timed_rt, n, || timed_async(arg()))
        }),
    ];
    cases.extend(asyncs);
    // `TARGETS_ONLY=text`: only the cases whose name holds it (to profile one),
    // and no target table.
    let only = std::env::var("TARGETS_ONLY").ok();
    if let Some(only) = &only {
        cases.retain(|case| case.name.contains(only.as_str()));
        assert!(!cases.is_empty(), "no case matches TARGETS_ONLY={only:?}");
    }

    // A first round that is not kept: slots, shards and windows allocated,
    // caches and predictors warm.
    for case in &cases {
        (case.run)(calls / 10);
    }
    let n = cases.len();
    for round in 0..rounds as usize {
        for i in 0..n {
            let case = &mut cases[(round + i) % n];
            let (ns, parallel) = (case.run)(calls);
            if parallel >= PARALLEL {
                case.rounds.push(ns);
            } else {
                case.dropped.push(ns);
            }
        }
    }
    // Still closed: a bench that tripped a breaker would have measured
    // rejections.
    assert_eq!(consecutive(arg()), Ok(()));
    assert_eq!(rate_some_failing(arg()), Ok(()));
    assert_eq!(p.failing_breaker.state(), State::Closed);

    report(&cases, rounds, calls, only.is_none());
}

fn report(cases: &[Case<'_>], rounds: u64, calls: u64, targets: bool) {
    let by = |name: &str| {
        cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name}"))
    };
    println!(
        "{rounds} rounds; per round and case {calls} calls on one thread, or two threads \
         side by side for as long (10 ns × {calls}); ns per call in each thread's CPU time\n"
    );
    println!("| case | best | median | rounds kept |");
    println!("|---|---:|---:|---:|");
    for case in cases {
        println!(
            "| {} | {:.2} | {:.2} | {} |",
            case.name,
            case.best(),
            case.median(),
            if case.rounds.is_empty() {
                format!("none side by side: all {}", case.dropped.len())
            } else {
                format!(
                    "{}/{}",
                    case.rounds.len(),
                    case.rounds.len() + case.dropped.len()
                )
            }
        );
    }

    if !targets {
        return;
    }
    // (target, value from best rounds, value from medians, limit, unit)
    let mut rows: Vec<(String, f64, f64, f64, &str)> = Vec::new();
    let mut ratio = |target: String, a: &str, b: &str, limit: f64| {
        let (a, b) = (by(a), by(b));
        rows.push((
            target,
            a.best() / b.best(),
            a.median() / b.median(),
            limit,
            "×",
        ));
    };
    for who in ["attribute", "Breaker::call"] {
        ratio(
            format!("consecutive ({who}) ≤ 0.3× failsafe, 1 thread"),
            &format!("1 thread/consecutive, {who}"),
            "1 thread/failsafe",
            0.3,
        );
        ratio(
            format!("consecutive ({who}) ≤ 0.15× failsafe, 2 threads"),
            &format!("2 threads/consecutive, {who}"),
            "2 threads/failsafe",
            0.15,
        );
        ratio(
            format!("rate healthy ({who}) ≤ 0.35× recloser, 1 thread"),
            &format!("1 thread/rate, {who}"),
            "1 thread/recloser",
            0.35,
        );
        ratio(
            format!("rate healthy ({who}) ≤ 0.1× recloser, 2 threads"),
            &format!("2 threads/rate, {who}"),
            "2 threads/recloser",
            0.1,
        );
    }
    let faster_open =
        if by("1 thread/open, failsafe").best() <= by("1 thread/open, recloser").best() {
            "1 thread/open, failsafe"
        } else {
            "1 thread/open, recloser"
        };
    for who in ["attribute", "Breaker::call"] {
        ratio(
            format!("open rejection ({who}) ≤ 0.25× the faster peer"),
            &format!("1 thread/open, {who}"),
            faster_open,
            0.25,
        );
    }
    ratio(
        "a call while shedding ≤ 2× the open rejection (Breaker::call), 1 thread".into(),
        "1 thread/shedding, Breaker::call",
        "1 thread/open, Breaker::call",
        2.0,
    );
    for path in [
        "floor: bare call",
        "consecutive, attribute",
        "consecutive, Breaker::call",
        "rate, attribute",
        "graded (shed), Breaker::call",
        "rate 1 in 64 failing, attribute",
        "rate 1 in 64 failing, Breaker::call",
        "open, attribute",
        "open, named at run time, Breaker::call",
        "half-open, Breaker::call",
        "shedding, Breaker::call",
        "bulkhead, attribute",
        "keyed attribute, a hit",
        "#[retry] #[circuit_breaker], first attempt succeeding",
    ] {
        ratio(
            format!("{path}: 2 threads ≤ 1.5× 1 thread"),
            &format!("2 threads/{path}"),
            &format!("1 thread/{path}"),
            1.5,
        );
    }
    let mut difference = |target: String, a: &str, b: &str, limit: f64| {
        let (a, b) = (by(a), by(b));
        rows.push((
            target,
            a.best() - b.best(),
            a.median() - b.median(),
            limit,
            " ns",
        ));
    };
    for who in ["attribute", "Breaker::call"] {
        difference(
            format!("rate healthy − consecutive ({who}) ≤ 1.5 ns"),
            &format!("1 thread/rate, {who}"),
            &format!("1 thread/consecutive, {who}"),
            1.5,
        );
    }
    difference(
        "graded healthy − consecutive (Breaker::call) ≤ 2 ns".into(),
        "1 thread/graded (shed), Breaker::call",
        "1 thread/consecutive, Breaker::call",
        2.0,
    );
    // The `async fn` target: the attribute against the breaker's own work
    // written by hand in the `async fn` (`floor_async`).
    difference(
        "async attribute − floor (breaker inline) ≤ 2.5 ns".into(),
        "async/attribute",
        "async/floor: breaker inline",
        2.5,
    );
    difference(
        "the same, polled through dyn Future".into(),
        "async dyn/attribute",
        "async dyn/floor: breaker inline",
        2.5,
    );

    println!("\n| target | best rounds | median rounds | met (best / median) |");
    println!("|---|---:|---:|---|");
    let met = |v: f64, limit: f64| if v <= limit { "yes" } else { "no" };
    for (target, best, median, limit, unit) in rows {
        let (b, m) = if unit == "×" {
            (format!("{best:.3}×"), format!("{median:.3}×"))
        } else {
            (format!("{best:+.2} ns"), format!("{median:+.2} ns"))
        };
        println!(
            "| {target} | {b} | {m} | {} / {} |",
            met(best, limit),
            met(median, limit)
        );
    }
}
