//! The adaptive concurrency limit (`Builder::adaptive_concurrency`): moved
//! by the latency of the calls it admits and cut by their failures, between
//! its least and most places, never more calls at once than the limit, and
//! every place given back on every path.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use failfast_runtime::__private::Bulkhead;
use failfast_runtime::{Breaker, ManualClock, Mode, Outcome, Reason, State};

fn adaptive(name: &'static str, least: u32, most: u32) -> Breaker {
    Breaker::builder()
        .name(name)
        .adaptive_concurrency(least, most)
        .threshold(1_000_000)
        .build()
        .unwrap()
}

fn limit(b: &Breaker) -> u32 {
    b.snapshot().concurrency_limit.expect("an adaptive limit")
}

#[test]
fn failures_cut_the_limit_by_a_tenth_down_to_its_least() {
    let b = adaptive("adaptive.decrease", 5, 100);
    assert_eq!(limit(&b), 100, "it starts at its most");
    let mut expected = 100;
    for _ in 0..40 {
        b.acquire().unwrap().record(Outcome::Failure);
        expected = (expected * 9 / 10).max(5);
        assert_eq!(limit(&b), expected);
    }
    assert_eq!(limit(&b), 5);
    // Neutral outcomes move nothing.
    for _ in 0..10 {
        b.acquire().unwrap().record(Outcome::Neutral);
    }
    assert_eq!(limit(&b), 5);
}

/// Windows whose latency is at the baseline raise the limit by
/// `(most − least) × t / 20 s`: from its least to its most in 20 s, one call
/// at a time. A call that finds every place taken is refused and counted.
#[test]
fn at_its_baseline_it_grows_back_evenly_in_20_s_one_call_at_a_time() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.increase", 4, 10);
    for _ in 0..20 {
        timed(&b, &clock, TEN_MS, Outcome::Success);
    }
    for _ in 0..20 {
        timed(&b, &clock, TEN_MS, Outcome::Failure);
    }
    assert_eq!(limit(&b), 4);
    let held: Vec<_> = (0..4).map(|_| b.acquire().unwrap()).collect();
    let refused = b.acquire().unwrap_err();
    assert_eq!(
        (refused.reason(), refused.state()),
        (Reason::ConcurrencyLimit, State::Closed)
    );
    assert_eq!(b.snapshot().rejected, 1);
    drop(held);
    // A second between calls: 6 × 1 s / 20 s = 0.3 places a call.
    let mut limits = Vec::new();
    for _ in 0..20 {
        clock.advance(Duration::from_secs(1) - TEN_MS);
        timed(&b, &clock, TEN_MS, Outcome::Success);
        limits.push(limit(&b));
    }
    assert!(limits.windows(2).all(|w| w[0] <= w[1]), "{limits:?}");
    assert!((6..=8).contains(&limits[9]), "{limits:?}");
    assert_eq!(limits[19], 10, "{limits:?}");
    // Slower by half (15 ms) is still its baseline; no higher than the most.
    for _ in 0..20 {
        clock.advance(Duration::from_secs(1));
        timed(&b, &clock, Duration::from_millis(15), Outcome::Success);
    }
    assert_eq!(limit(&b), 10);
}

/// A dependency that became slower for good, not for our calls (the same
/// latency at one call as at many): the limit may fall at first, but the
/// new latency becomes the baseline and the limit is back at its most
/// within 30 s; it is not pinned low by the old, faster baseline.
#[test]
fn a_dependency_slower_for_good_becomes_the_new_baseline() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.slower", 1, 16);
    // 2 calls at once, 10 ms each, then 50 ms each.
    let pair = |latency: Duration| {
        let (first, second) = (b.acquire(), b.acquire());
        clock.advance(latency);
        for permit in [first, second].into_iter().flatten() {
            permit.record(Outcome::Success);
        }
        clock.advance(latency);
    };
    for _ in 0..200 {
        pair(TEN_MS);
    }
    assert_eq!(limit(&b), 16);
    let mut lowest = 16;
    let start = clock.now();
    while clock.now() - start < Duration::from_secs(30) {
        pair(5 * TEN_MS);
        lowest = lowest.min(limit(&b));
    }
    println!("lowest {lowest}");
    assert_eq!(limit(&b), 16, "30 s later");
    let burst: Vec<_> = (0..16).map(|_| b.acquire()).collect();
    assert!(burst.iter().all(Result::is_ok));
}

#[test]
fn every_way_a_call_ends_gives_its_place_back() {
    let b = adaptive("adaptive.paths", 1, 1);
    b.acquire().unwrap().record(Outcome::Success);
    drop(b.acquire().unwrap());
    let _ = b.call(|| Err::<(), _>("down"));
    let _ = std::panic::catch_unwind(|| b.call(|| -> Result<(), ()> { panic!("boom") }));
    // A permit a full bulkhead refuses gives its place back too.
    let bulkhead = Bulkhead::new(0);
    let mut permit = b.acquire().unwrap();
    assert!(bulkhead.enter(&b, &mut permit).is_err());
    drop(permit);
    // The one place is free: a call is admitted, and the next one refused.
    let held = b.acquire().expect("the place was given back every time");
    assert!(b.acquire().is_err());
    drop(held);
    assert!(b.acquire().is_ok());
}

#[test]
fn trials_take_no_place_and_forced_closed_calls_none() {
    let clock = ManualClock::new();
    let b = Breaker::builder()
        .name("adaptive.trials")
        .adaptive_concurrency(1, 1)
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    b.acquire().unwrap().record(Outcome::Failure);
    clock.advance(Duration::from_secs(1));
    let trial = b.acquire().unwrap();
    assert!(trial.is_trial());
    trial.record(Outcome::Success);
    assert_eq!(b.state(), State::Closed);
    let held = b.acquire().expect("the trial held no place");
    assert!(b.acquire().is_err());
    drop(held);
    b.set_mode(Mode::ForcedClosed);
    let forced: Vec<_> = (0..5).map(|_| b.acquire().unwrap()).collect();
    drop(forced);
    b.set_mode(Mode::Normal);
    let held = b.acquire().expect("forced-closed calls held no place");
    assert!(b.acquire().is_err());
    drop(held);
}

#[test]
fn observe_only_counts_what_it_would_refuse_and_lets_it_through() {
    let b = adaptive("adaptive.observe", 2, 2);
    b.set_mode(Mode::ObserveOnly);
    let held: Vec<_> = (0..5).map(|_| b.acquire().unwrap()).collect();
    assert_eq!(b.snapshot().would_reject, 3);
    drop(held);
    b.set_mode(Mode::Normal);
    let held: Vec<_> = (0..2).map(|_| b.acquire().unwrap()).collect();
    assert!(b.acquire().is_err(), "every place given back, no more");
    drop(held);
}

#[test]
fn calls_an_observe_only_breaker_would_have_refused_give_back_no_place() {
    let b = Breaker::builder()
        .name("adaptive.observed")
        .adaptive_concurrency(1, 1)
        .threshold(1)
        .build()
        .unwrap();
    b.set_mode(Mode::ObserveOnly);
    b.acquire().unwrap().record(Outcome::Failure);
    // Open, observe-only: let through, holding no place, giving none back,
    // whether the call ends or a full bulkhead refuses it.
    for _ in 0..3 {
        b.acquire().unwrap().record(Outcome::Success);
    }
    let mut observed = b.acquire().unwrap();
    assert!(Bulkhead::new(0).enter(&b, &mut observed).is_err());
    drop(observed);
    assert_eq!(b.snapshot().would_reject, 4);
    b.set_mode(Mode::Normal);
    let held = b.acquire().expect("the one place is free");
    assert!(b.acquire().is_err(), "and there is only one");
    drop(held);
}

/// Eight threads call at once, each call failing one time in five (the
/// limit keeps moving): at no moment are more calls running than the limit
/// read before each admission allows, nor more than the most places; when
/// they are done every place is free again.
#[test]
fn threads_never_run_more_calls_than_the_most_places() {
    let b = Arc::new(adaptive("adaptive.threads", 2, 6));
    let running = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let (b, running, peak) = (b.clone(), running.clone(), peak.clone());
            std::thread::spawn(move || {
                let mut refused = 0;
                for i in 0..20_000u32 {
                    let Ok(permit) = b.acquire() else {
                        refused += 1;
                        continue;
                    };
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::hint::spin_loop();
                    running.fetch_sub(1, Ordering::SeqCst);
                    permit.record(if (i + t) % 5 == 0 {
                        Outcome::Failure
                    } else {
                        Outcome::Success
                    });
                }
                refused
            })
        })
        .collect();
    let refused: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 6, "{peak} calls at once");
    println!("peak {peak}, refused {refused}, limit now {}", limit(&b));
    // Every place is free: as many calls as the limit are admitted at once.
    let n = limit(&b);
    let held: Vec<_> = (0..n).map(|_| b.acquire().unwrap()).collect();
    assert!(b.acquire().is_err());
    drop(held);
}

fn adaptive_on(clock: &ManualClock, name: &'static str, least: u32, most: u32) -> Breaker {
    Breaker::builder()
        .name(name)
        .adaptive_concurrency(least, most)
        .threshold(1_000_000)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// One call that takes `latency` on `clock` and ends with `outcome`.
fn timed(b: &Breaker, clock: &ManualClock, latency: Duration, outcome: Outcome) {
    let permit = b.acquire().expect("admitted");
    clock.advance(latency);
    permit.record(outcome);
}

const TEN_MS: Duration = Duration::from_millis(10);

/// After an outage has cut the limit to its least places, one healthy call
/// a second brings it back to its most within 30 s, however few of its
/// places are in use; a burst of as many calls as the most places is then
/// admitted whole.
#[test]
fn after_an_outage_one_call_a_second_brings_it_back_to_its_most_within_30_s() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.regrow", 1, 64);
    for _ in 0..20 {
        timed(&b, &clock, TEN_MS, Outcome::Success);
    }
    for _ in 0..60 {
        timed(&b, &clock, TEN_MS, Outcome::Failure);
    }
    assert_eq!(limit(&b), 1, "the outage cut it to its least");
    let mut back_after = None;
    for second in 1..=30 {
        clock.advance(Duration::from_secs(1) - TEN_MS);
        timed(&b, &clock, TEN_MS, Outcome::Success);
        if back_after.is_none() && limit(&b) == 64 {
            back_after = Some(second);
        }
    }
    assert!(back_after.is_some(), "still at {} after 30 s", limit(&b));
    println!("back at its most after {back_after:?} s");
    let burst: Vec<_> = (0..64).map(|_| b.acquire()).collect();
    assert!(
        burst.iter().all(Result::is_ok),
        "a burst of 64: {} refused",
        burst.iter().filter(|p| p.is_err()).count()
    );
    assert!(b.acquire().is_err(), "and no more than 64");
}

/// A queue's cut counts every place taken as the window closes, the
/// closing call's own included (it has given its place back by then).
/// Baseline 10 ms; then 16 calls at once (every place) take 21 ms, twice:
/// the second window closes at the first call of the second 16, with 16
/// places taken and 9 samples of 21 ms in 21 ms. The need by Little's law
/// is 16 × 10 / 21 = 7.6 places, and with half again (a clean window was
/// seen this period) 11.4: the limit falls to 11. Without the closing
/// call, 15 × 10 / 21 × 1.5 = 10.7.
#[test]
fn a_queues_cut_counts_the_closing_calls_place() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.closing_place", 1, 16);
    // Twenty windows of eight calls one at a time: the baseline, learnt.
    for _ in 0..160 {
        timed(&b, &clock, TEN_MS, Outcome::Success);
    }
    assert_eq!(limit(&b), 16);
    let latency = Duration::from_millis(21);
    // The first window over the baseline may be noise: the limit stays.
    let first: Vec<_> = (0..16).map(|_| b.acquire().unwrap()).collect();
    clock.advance(latency);
    for permit in first {
        permit.record(Outcome::Success);
    }
    assert_eq!(limit(&b), 16);
    let mut second: Vec<_> = (0..16).map(|_| b.acquire().unwrap()).collect();
    clock.advance(latency);
    second.pop().unwrap().record(Outcome::Success);
    assert_eq!(limit(&b), 11);
    for permit in second {
        permit.record(Outcome::Success);
    }
}

/// The baseline learns from windows of several calls at once, as long as
/// no call was refused in them: calls four at a time, 10 ms each, settle
/// it at 10 ms; then sixteen at a time taking 30 ms are a queue, and the
/// limit is cut. (Were those windows not learnt, the baseline would stay
/// too young to tell a queue, and the limit would stay at its most.)
#[test]
fn the_baseline_learns_from_windows_of_several_calls_at_once() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.learns_together", 1, 16);
    let round = |calls: usize, latency: Duration| {
        let held: Vec<_> = (0..calls).filter_map(|_| b.acquire().ok()).collect();
        clock.advance(latency);
        for permit in held {
            permit.record(Outcome::Success);
        }
    };
    for _ in 0..80 {
        round(4, TEN_MS);
    }
    assert_eq!(limit(&b), 16, "no queue at 10 ms");
    for _ in 0..6 {
        round(16, Duration::from_millis(30));
    }
    assert!(
        limit(&b) < 16,
        "a queue of 30 ms left the limit at {}",
        limit(&b)
    );
}

/// A dependency of `workers` workers, each call `service` long once a
/// worker is free, first come first served, called every `every` for
/// `secs` seconds through `b` on `clock`: what came of it.
#[derive(Debug, Default)]
struct Run {
    served: u64,
    refused: u64,
    /// The limit at the end of each second.
    limits: Vec<u32>,
    /// Latencies of the calls served in the last `tail` seconds, in ms.
    tail: Vec<f64>,
}

fn serve(
    b: &Breaker,
    clock: &ManualClock,
    workers: usize,
    service: Duration,
    every: Duration,
    secs: u64,
    tail: u64,
) -> Run {
    serve_with(b, clock, workers, || service, every, secs, tail)
}

/// `serve`, each call's service time drawn from `service`.
fn serve_with(
    b: &Breaker,
    clock: &ManualClock,
    workers: usize,
    mut service: impl FnMut() -> Duration,
    every: Duration,
    secs: u64,
    tail: u64,
) -> Run {
    use std::cmp::Reverse;
    use std::collections::{BTreeMap, BinaryHeap};
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap();
    let start = nanos(clock.now());
    let end = start + secs * 1_000_000_000;
    let mut free = vec![start; workers];
    let mut done = BinaryHeap::new();
    let mut held = BTreeMap::new();
    let mut run = Run::default();
    let mut next_call = start;
    let mut next_second = start + 1_000_000_000;
    let mut id = 0u64;
    loop {
        let next_done = done.peek().map_or(u64::MAX, |&Reverse((at, _, _))| at);
        let at = next_call.min(next_done).min(next_second);
        if at >= end {
            break;
        }
        let now = nanos(clock.now());
        clock.advance(Duration::from_nanos(at - now));
        if at == next_done {
            let Reverse((at, admitted, id)) = done.pop().unwrap();
            let permit: failfast_runtime::Permit<'_> = held.remove(&id).unwrap();
            permit.record(Outcome::Success);
            run.served += 1;
            if at >= end - tail * 1_000_000_000 {
                run.tail.push((at - admitted) as f64 / 1e6);
            }
        } else if at == next_second {
            run.limits.push(limit(b));
            next_second += 1_000_000_000;
        } else {
            next_call += nanos(every);
            match b.acquire() {
                Ok(permit) => {
                    let worker = (0..workers).min_by_key(|&w| free[w]).unwrap();
                    let finish = free[worker].max(at) + nanos(service());
                    free[worker] = finish;
                    id += 1;
                    held.insert(id, permit);
                    done.push(Reverse((finish, at, id)));
                }
                Err(_) => run.refused += 1,
            }
        }
    }
    run.limits.push(limit(b));
    drop(held);
    run
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q) as usize]
}

/// Offered 2.5 times what 4 workers of 10 ms serve, latency rises with
/// the calls in flight: the limit falls to about the workers' number and
/// stays there for a minute (no drift upward), the workers stay busy, and
/// the calls it admits wait little.
#[test]
fn overload_that_raises_latency_lowers_the_limit_and_it_stays_low() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.overload", 1, 64);
    // Light load first: 100 calls/s, a quarter of what the workers serve.
    let light = serve(&b, &clock, 4, TEN_MS, TEN_MS, 5, 5);
    assert_eq!(light.refused, 0);
    let mut run = serve(&b, &clock, 4, TEN_MS, Duration::from_millis(1), 60, 50);
    let settled = &run.limits[10..];
    println!("limits {:?}", run.limits);
    assert!(
        settled.iter().all(|&l| l <= 8),
        "the limit after 10 s of overload: {settled:?}"
    );
    let p99 = quantile(&mut run.tail, 0.99);
    let p50 = quantile(&mut run.tail, 0.5);
    println!(
        "served {}, refused {}, p50 {p50} ms, p99 {p99} ms",
        run.served, run.refused
    );
    assert!(p99 <= 25.0, "p99 {p99} ms");
    // 400 calls/s is all the workers can serve.
    assert!(
        run.served as f64 >= 0.9 * 400.0 * 60.0,
        "served {}",
        run.served
    );
}

/// A dependency whose latency varies as much as its mean (exponential
/// service times, 100 ms on average, 10 workers) asked for 70% of what it
/// serves: no queue of ours, and the limit refuses nothing. Noise is not a
/// queue: the least of many windows' averages, taken for the latency
/// without a queue, sat at half the mean, every window then looked like
/// one, and the limit fell to its least and refused most calls.
#[test]
fn a_noisy_dependency_with_room_to_spare_is_not_taken_for_a_queue() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.noise", 1, 50);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let exponential = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64(-0.1 * (1.0 - u).ln())
    };
    // One call every 1/70 s.
    let run = serve_with(
        &b,
        &clock,
        10,
        exponential,
        Duration::from_micros(14_286),
        120,
        1,
    );
    println!("limits {:?}", run.limits);
    assert!(
        run.refused as f64 <= 0.01 * run.served as f64,
        "{} refused, {} served, limits {:?}",
        run.refused,
        run.served,
        run.limits
    );
}

/// Calls refused for want of a place, and calls dropped without an
/// outcome, are no latency samples: only the admitted calls that end are.
/// Taken at the ~0 ms a refusal lasts, they would drag the baseline down
/// (and calls at the old latency would then look slow), or pull a window's
/// average down (and a slow, overloaded dependency would keep its limit).
#[test]
fn refused_and_dropped_calls_are_no_latency_samples() {
    let clock = ManualClock::new();
    let b = adaptive_on(&clock, "adaptive.samples", 1, 8);
    for _ in 0..200 {
        timed(&b, &clock, TEN_MS, Outcome::Success);
    }
    assert_eq!(limit(&b), 8);
    // Every place held for `latency`, while 100 calls are refused and 20
    // are admitted and dropped at once.
    let round = |latency: Duration| {
        let held: Vec<_> = (0..limit(&b)).map(|_| b.acquire().unwrap()).collect();
        for _ in 0..100 {
            assert!(b.acquire().is_err());
        }
        clock.advance(latency);
        for permit in held {
            permit.record(Outcome::Success);
        }
        for _ in 0..20 {
            drop(b.acquire().unwrap());
        }
    };
    for _ in 0..100 {
        round(TEN_MS);
    }
    assert_eq!(limit(&b), 8, "calls at their baseline amid refusals");
    let mut fell_after = None;
    for rounds in 1..=20 {
        round(10 * TEN_MS);
        if limit(&b) < 8 {
            fell_after = Some(rounds);
            break;
        }
    }
    assert!(
        fell_after.is_some(),
        "ten times slower amid refusals: {}",
        limit(&b)
    );
}
