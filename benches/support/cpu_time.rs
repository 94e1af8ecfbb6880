//! The CPU time a thread has consumed, for benches that run on a machine
//! shared with other work: time spent descheduled is left out.

use std::time::Duration;

/// CPU time consumed by the calling thread.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(
        ts.tv_sec.try_into().unwrap(),
        ts.tv_nsec.try_into().unwrap(),
    )
}
