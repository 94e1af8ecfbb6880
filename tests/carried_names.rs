//! A keyed breaker's name is built at run time (`function[key]`), and every
//! refusal and timeout carries it. Made on two threads at once, they carry
//! each thread's own copy of it, so threads refused at once by one key do
//! not all write one reference count: a full bulkhead's refusal, and a
//! call cut off at its `timeout`. (In a test binary of its own: each thread
//! here has a totals slot of its own.)

use std::sync::Barrier;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use failfast::{Reason, Rejected, TimedOut, circuit_breaker};

#[derive(Debug)]
enum CallError {
    Refused(Rejected),
    TimedOut(TimedOut),
}

impl From<Rejected> for CallError {
    fn from(r: Rejected) -> Self {
        CallError::Refused(r)
    }
}

impl From<TimedOut> for CallError {
    fn from(t: TimedOut) -> Self {
        CallError::TimedOut(t)
    }
}

/// Holds its place while `hold` is given: tells `hold.0` it is inside, then
/// waits until `hold.1`'s sender is dropped.
#[circuit_breaker(key = host, max_concurrent = 1, name = "names.held")]
fn held(host: &str, hold: Option<(Sender<()>, Receiver<()>)>) -> Result<(), CallError> {
    if let Some((inside, release)) = hold {
        inside.send(()).unwrap();
        let _ = release.recv();
    }
    Ok(())
}

/// Runs `call` on two threads alive at once (neither returns before both
/// have called): what each returned.
fn on_two_threads<T: Send>(call: impl Fn() -> T + Sync) -> [T; 2] {
    let both = Barrier::new(2);
    std::thread::scope(|s| {
        let threads = [(); 2].map(|()| {
            s.spawn(|| {
                both.wait();
                let made = call();
                both.wait();
                made
            })
        });
        threads.map(|t| t.join().unwrap())
    })
}

/// The address of the name an error carries, and what the error was.
fn carried(result: Result<(), CallError>) -> (usize, String) {
    match result {
        Err(CallError::Refused(r)) if r.reason() == Reason::ConcurrencyLimit => {
            (r.name().as_ptr() as usize, format!("refused: {}", r.name()))
        }
        Err(CallError::TimedOut(t)) => (
            t.name().as_ptr() as usize,
            format!("timed out: {}", t.name()),
        ),
        other => (0, format!("{other:?}")),
    }
}

#[test]
fn a_full_bulkheads_refusals_carry_each_threads_copy_of_the_name() {
    let names = std::thread::scope(|s| {
        let (inside, entered) = channel();
        // Dropped when this closure returns or unwinds: the holder leaves.
        let (_release, released) = channel();
        s.spawn(move || held("h1", Some((inside, released))));
        entered.recv().unwrap();
        on_two_threads(|| carried(held("h1", None)))
    });
    for (_, what) in &names {
        assert_eq!(what, "refused: names.held[h1]");
    }
    assert_ne!(names[0].0, names[1].0, "each thread its own copy");
}

#[circuit_breaker(key = host, timeout = "10ms", threshold = 100, name = "names.hangs")]
async fn hangs(host: &str) -> Result<(), CallError> {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(())
}

#[test]
fn timeouts_carry_each_threads_copy_of_the_name() {
    let rt = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    };
    // The key's first counted call makes its per-thread slots.
    assert!(matches!(
        rt().block_on(hangs("h2")),
        Err(CallError::TimedOut(_))
    ));
    let names = on_two_threads(|| carried(rt().block_on(hangs("h2"))));
    for (_, what) in &names {
        assert_eq!(what, "timed out: names.hangs[h2]");
    }
    assert_ne!(names[0].0, names[1].0, "each thread its own copy");
}
