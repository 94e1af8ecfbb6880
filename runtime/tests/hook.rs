//! The process-wide transition hook: every transition of every breaker, in
//! order per breaker across threads, with its cause; remote opens marked as
//! such; a panicking hook leaves the breaker and its caller alone; a second
//! hook is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use failfast_runtime::integration::{self, Cause, Change};
use failfast_runtime::{Breaker, ManualClock, Mode, State};

type Seen = (State, State, Mode, Cause);

/// What the hook saw, by breaker name.
static SEEN: Mutex<Option<HashMap<String, Vec<Seen>>>> = Mutex::new(None);

fn record(change: &Change<'_>) {
    let name = change.breaker.name().to_owned();
    assert!(name != "hook-panics", "a hook that panics");
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    seen.get_or_insert_with(HashMap::new)
        .entry(name)
        .or_default()
        .push((change.from, change.to, change.mode, change.cause));
}

fn installed() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| integration::install_hook(&record).expect("the first hook"));
}

fn seen(name: &str) -> Vec<Seen> {
    let seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    seen.as_ref()
        .and_then(|s| s.get(name).cloned())
        .unwrap_or_default()
}

fn breaker(name: &str, clock: &ManualClock) -> Breaker {
    Breaker::builder()
        .name(name.to_owned())
        .threshold(1)
        .recovery(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn a_second_hook_is_refused() {
    installed();
    assert_eq!(
        integration::install_hook(&record),
        Err(integration::AlreadyInstalled)
    );
}

/// Four threads, each cycling its own breaker through trips, trials and manual
/// control: the hook sees each breaker's transitions, all of them, in the
/// order they happened, with their causes.
#[test]
fn every_transition_reaches_the_hook_in_order_per_breaker() {
    installed();
    const CYCLES: usize = 300;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let name = format!("hook-storm-{t}");
                let clock = ManualClock::new();
                let b = breaker(&name, &clock);
                for i in 0..CYCLES {
                    let _ = b.call(|| Err::<(), _>("refused"));
                    clock.advance(Duration::from_secs(2));
                    let _ = b.call(|| Ok::<_, &str>(()));
                    if i % 10 == 0 {
                        b.set_mode(Mode::ForcedOpen);
                        b.reset();
                    }
                }
                name
            })
        })
        .collect();
    for thread in threads {
        let name = thread.join().unwrap();
        let mut expected = Vec::new();
        for i in 0..CYCLES {
            expected.push((State::Closed, State::Open, Mode::Normal, Cause::Calls));
            expected.push((State::Open, State::HalfOpen, Mode::Normal, Cause::Calls));
            expected.push((State::HalfOpen, State::Closed, Mode::Normal, Cause::Calls));
            if i % 10 == 0 {
                expected.push((State::Closed, State::Open, Mode::ForcedOpen, Cause::Manual));
                expected.push((State::Open, State::Closed, Mode::Normal, Cause::Manual));
            }
        }
        assert_eq!(seen(&name), expected, "{name}");
    }
}

#[test]
fn remote_opens_reach_the_hook_as_remote() {
    installed();
    let clock = ManualClock::new();
    let b = breaker("hook-remote", &clock);
    let open = integration::open_remote(&b, Duration::from_secs(5), None).expect("applied");
    integration::release_remote(&b, open, Duration::ZERO);
    let causes: Vec<_> = seen("hook-remote").iter().map(|s| (s.1, s.3)).collect();
    assert_eq!(causes[0], (State::Open, Cause::Remote));
    assert!(
        causes.iter().all(|(_, c)| *c == Cause::Remote),
        "{causes:?}"
    );
}

#[test]
fn a_panicking_hook_leaves_the_breaker_and_its_caller_alone() {
    installed();
    let clock = ManualClock::new();
    let b = Arc::new(breaker("hook-panics", &clock));
    let _ = b.call(|| Err::<(), _>("refused"));
    assert_eq!(b.state(), State::Open);
    clock.advance(Duration::from_secs(2));
    assert_eq!(b.call(|| Ok::<_, &str>(7)).ok(), Some(7));
    assert_eq!(b.state(), State::Closed);
}
