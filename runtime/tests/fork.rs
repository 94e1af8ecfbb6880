//! A forked child's breakers leave Open on time, when the parent had a breaker
//! open (and had read the coarse clock) at the fork: the child must never be
//! left with a coarse time frozen at the fork. Runs without the test harness:
//! `fork()` in a process with several threads running tests would copy them
//! half-way.
#![allow(unsafe_code)]

use std::time::Duration;

use failfast_runtime::{Breaker, State};

const RECOVERY: Duration = Duration::from_millis(50);

fn tripped() -> Breaker {
    let b = Breaker::builder()
        .threshold(1)
        .recovery(RECOVERY)
        .build()
        .unwrap();
    let _ = b.call(|| Err::<(), _>("down"));
    assert_eq!(b.state(), State::Open);
    b
}

/// In the child: 0 when both the parent's breaker and one opened in the child
/// recover.
fn child(inherited: &Breaker) -> i32 {
    std::thread::sleep(RECOVERY * 3);
    if inherited.acquire().is_err() {
        return 1;
    }
    let own = tripped();
    if own.acquire().is_ok() {
        return 2;
    }
    std::thread::sleep(RECOVERY * 3);
    if own.acquire().is_err() {
        return 3;
    }
    0
}

#[cfg(unix)]
fn main() {
    let parents = tripped();
    // Refused (reading the coarse clock) a few ms after the trip, so that
    // whatever the clock keeps is set up when the child inherits it.
    std::thread::sleep(Duration::from_millis(5));
    let _ = parents.acquire();
    // SAFETY: the child only sleeps, reads atomics and the clock, and leaves
    // with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = child(&parents);
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
    let code = libc::WEXITSTATUS(status);
    assert_eq!(
        code,
        0,
        "in the child, {}",
        match code {
            1 => "the inherited breaker never left Open",
            2 => "a breaker opened in the child admitted a call at once",
            _ => "a breaker opened in the child never left Open",
        }
    );
    std::thread::sleep(RECOVERY * 2);
    assert!(
        parents.acquire().is_ok(),
        "the parent's breaker recovers too"
    );
    println!("fork: 1 passed; 0 failed");
}

#[cfg(not(unix))]
fn main() {}
