//! Reconfiguring a breaker again and again leaves its memory flat: what a
//! reconfiguration replaces (the settings, and the rate window when the
//! shape changes) is freed once no call reads it, so 10,000 reconfigurations
//! hold what 10 do.
//!
//! A counting global allocator keeps the live bytes of the whole process (a
//! replaced value is freed by whichever thread drops the last reference to
//! it: the reconfiguring one, or a call still reading it). The tests of this
//! binary take turns, so that neither sees the other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Mutex, PoisonError};

use failfast_runtime::{Breaker, State};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

fn size(bytes: usize) -> isize {
    isize::try_from(bytes).expect("an allocation fits in isize")
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are ours. Counting is one atomic
// addition, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(size(layout.size()), Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract; passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(size(layout.size()), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(size(new_size) - size(layout.size()), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, that is from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(size(layout.size()), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, that is from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time: the count is the whole process's.
static TURN: Mutex<()> = Mutex::new(());

fn live() -> isize {
    LIVE.load(Ordering::SeqCst)
}

/// Far below what one replaced value kept per reconfiguration would add up
/// to over 10,000 (a `Config` is about 100 bytes, a window of 2^16 calls
/// 16 KiB), far above the noise of the harness around a test.
const SLACK: isize = 64 * 1024;

/// Calls `reconfigure(i)` `n` times while another thread keeps calling
/// through `b` (so calls hold the settings and the window as they are
/// replaced), and returns the live bytes once that thread has stopped.
fn reconfigured(b: &Breaker, n: u32, reconfigure: impl Fn(u32)) -> isize {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = b.call(|| Err::<(), _>("down"));
                let _ = b.call(|| Ok::<_, &str>(()));
            }
        });
        for i in 0..n {
            reconfigure(i);
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(b.state(), State::Closed, "a failure in two never trips");
    live()
}

/// Memory after 10 and after 10,000 more reconfigurations: what stays
/// behind, printed for the record (`--nocapture`).
fn flat(what: &str, b: &Breaker, reconfigure: impl Fn(u32)) {
    let at_10 = reconfigured(b, 10, &reconfigure);
    let at_10_010 = reconfigured(b, 10_000, &reconfigure);
    let grown = at_10_010 - at_10;
    eprintln!(
        "{what}: {at_10} live bytes after 10 reconfigurations, {at_10_010} after 10,010 \
         ({grown:+})"
    );
    assert!(
        grown < SLACK,
        "{what}: 10,000 reconfigurations grew memory by {grown} bytes"
    );
}

/// A periodic reload that flips one value: every reconfiguration publishes
/// new settings, and the ones it replaces are freed.
#[test]
fn flipping_a_threshold_leaves_memory_flat() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let b = Breaker::builder().threshold(1_000).build().unwrap();
    flat("threshold 999/1000", &b, |i| {
        b.reconfigure(&Breaker::builder().threshold(999 + i % 2))
            .unwrap();
    });
}

/// A reload that flips the rate window's shape between 2^16 − 1 and 2^16
/// calls: every reconfiguration starts a fresh window (16 KiB) and
/// publishes new settings, and the window and settings it replaces are
/// freed once no call reads them.
#[test]
fn alternating_window_shapes_leave_memory_flat() {
    let _turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    let b = Breaker::builder()
        .failure_rate(1.0)
        .window_calls(1 << 16)
        .min_calls(100)
        .build()
        .unwrap();
    flat("window 2^16 - 1/2^16 calls", &b, |i| {
        b.reconfigure(&Breaker::builder().window_calls((1 << 16) - i % 2))
            .unwrap();
    });
}
