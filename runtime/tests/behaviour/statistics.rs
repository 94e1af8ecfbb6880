//! The trip rules against their mathematics.
//!
//! Every call fails independently with probability `p`. `N` is the number of
//! calls up to and including the one that trips the breaker. For each rule the
//! expected value `E[N]` and the standard deviation `σ` of `N` are derived below;
//! the test runs `RUNS` breakers (seeded RNG, so the run is reproducible) and
//! requires the measured mean within 4 standard errors, `4 σ / √RUNS`, of `E[N]`.
//! A correct breaker misses that band with probability 6·10⁻⁵ per seed; each
//! check also asserts that the band is far narrower than the gap to the rule's
//! off-by-one neighbours, so an off-by-one rule cannot pass.
//!
//! `cargo test -p failfast-runtime --test behaviour statistics:: -- --nocapture` prints the
//! expected and measured means.

use std::time::Duration;

use failfast_runtime::{Breaker, Builder, ManualClock, State};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const RUNS: u32 = 4000;
const SEED: u64 = 0x0FA1_1FA5;
/// Standard errors allowed between the measured and the expected mean.
const Z: f64 = 4.0;

/// Calls until `breaker` opens, each failing with probability `p`.
fn calls_until_trip(breaker: &Breaker, p: f64, rng: &mut StdRng) -> u32 {
    let mut calls = 0;
    while breaker.state() == State::Closed {
        calls += 1;
        let fails = rng.gen_bool(p);
        let result = breaker.call(|| if fails { Err(()) } else { Ok(()) });
        assert!(!matches!(result, Err(failfast_runtime::Error::Rejected(_))));
        assert!(calls < 10_000_000, "never tripped");
    }
    calls
}

struct Measured {
    mean: f64,
    sd: f64,
}

fn measure(p: f64, build: impl Fn() -> Builder, seed: u64) -> Measured {
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    for _ in 0..RUNS {
        let breaker = build()
            .recovery(Duration::from_secs(30))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let n = f64::from(calls_until_trip(&breaker, p, &mut rng));
        sum += n;
        sum_sq += n * n;
    }
    let runs = f64::from(RUNS);
    let mean = sum / runs;
    let sd = ((sum_sq - runs * mean * mean) / (runs - 1.0)).sqrt();
    Measured { mean, sd }
}

/// Compares a measured mean with the expected `(mean, σ)` and prints both.
fn check(rule: &str, expected: (f64, f64), measured: &Measured, neighbours: &[f64]) {
    let (mean, sd) = expected;
    let se = sd / f64::from(RUNS).sqrt();
    let tolerance = Z * se;
    println!(
        "{rule}: expected E[N] = {mean:.4} (σ {sd:.3}), measured {:.4} (s {:.3}) over {RUNS} \
         runs; |Δ| = {:.4}, tolerance {Z}·SE = {tolerance:.4}",
        measured.mean,
        measured.sd,
        (measured.mean - mean).abs()
    );
    assert!(
        (measured.mean - mean).abs() <= tolerance,
        "{rule}: measured mean {} is more than {Z} standard errors ({tolerance}) from {mean}",
        measured.mean
    );
    // The sample spread agrees with the derived σ (loose: 10%).
    assert!(
        (measured.sd / sd - 1.0).abs() < 0.1,
        "{rule}: sample s {} vs σ {sd}",
        measured.sd
    );
    for &other in neighbours {
        assert!(
            (other - mean).abs() > 3.0 * tolerance,
            "{rule}: the band does not tell {mean} from a neighbouring rule's {other}"
        );
    }
}

// ------------------------------------------------------------ consecutive rule
//
// Threshold k. Let E_j be the expected number of further calls until the trip
// when the last j calls failed (j < k), q = 1 − p:
//
//     E_j = 1 + p E_{j+1} + q E_0,   E_k = 0.
//
// Unrolling from j = k−1 down gives E_0 = (1 − p^k) / (q p^k): the classic
// waiting time for a run of k. Its variance (same recursion on the second
// moment) is
//
//     Var N = (1 − (2k+1) q p^k − p^(2k+1)) / (q² p^(2k)),
//
// which is q/p² for k = 1, the geometric distribution.

fn consecutive_mean(p: f64, k: i32) -> f64 {
    (1.0 - p.powi(k)) / ((1.0 - p) * p.powi(k))
}

fn consecutive_sd(p: f64, k: i32) -> f64 {
    let q = 1.0 - p;
    let var =
        (1.0 - f64::from(2 * k + 1) * q * p.powi(k) - p.powi(2 * k + 1)) / (q * q * p.powi(2 * k));
    var.sqrt()
}

#[test]
fn consecutive_rule_mean_calls_to_trip() {
    for (i, (p, k)) in [(0.5, 3), (0.3, 2), (0.6, 5), (0.2, 1)]
        .into_iter()
        .enumerate()
    {
        let expected = (consecutive_mean(p, k), consecutive_sd(p, k));
        let measured = measure(
            p,
            || Breaker::builder().threshold(u32::try_from(k).unwrap()),
            SEED + i as u64,
        );
        let neighbours = [consecutive_mean(p, k + 1)]
            .into_iter()
            .chain((k > 1).then(|| consecutive_mean(p, k - 1)))
            .collect::<Vec<_>>();
        check(
            &format!("consecutive, threshold {k}, p = {p}"),
            expected,
            &measured,
            &neighbours,
        );
    }
}

// ------------------------------------------------------ rate over a count window
//
// Window of the last n calls, failure_rate r, min_calls = n. The breaker can
// only trip once it holds n calls, and then trips on the first call after which
// at least m = ⌈r n⌉ of the last n calls failed.
//
// State: the last n outcomes as an n-bit word s (bit 1 = failure), a Markov
// chain from call n on: s' = ((s << 1) | x) mod 2^n with x ~ Bernoulli(p).
// Words with popcount(s) ≥ m are absorbing (tripped); call the others T.
//
// After call n the word is s with probability π(s) = p^|s| q^(n−|s|).
// Let h(s) = E[further calls until the trip | word s], s ∈ T:
//
//     h(s) = 1 + Σ_{x∈{0,1}} P(x) · [s'_x ∈ T] · h(s'_x)
//
// i.e. (I − Q) h = 1 with Q the transitions within T. Then
//
//     E[N] = n + Σ_{s∈T} π(s) h(s).
//
// For the spread, g(s) = E[(further calls)²] satisfies, since the further calls
// are 1 + those from s',
//
//     g(s) = 1 + Σ_x P(x) [s'_x ∈ T] (2 h(s'_x) + g(s'_x)),  i.e. (I − Q) g = 1 + 2 Q h,
//
// and E[N²] = Σ_s π(s) (n² + 2 n h(s) + g(s)) with h = g = 0 outside T.
// Both systems have at most 2^n unknowns; they are solved below by Gaussian
// elimination (n ≤ 8 → at most 256 unknowns).

/// Smallest failure count among `n` calls whose share reaches `rate`.
fn failures_to_trip(rate: f64, n: u32) -> u32 {
    (1..=n)
        .find(|&f| f64::from(f) / f64::from(n) >= rate)
        .unwrap()
}

/// Solves `a x = b` in place (Gaussian elimination with partial pivoting).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap();
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (offset, row) in lower.iter_mut().enumerate() {
            let factor = row[col] / pivot_row[col];
            if factor != 0.0 {
                for (cell, &above) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *cell -= factor * above;
                }
                b[col + 1 + offset] -= factor * b[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let tail: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - tail) / a[row][row];
    }
    x
}

/// The chain of the last `n` outcomes (bit set: failed), absorbed once `m`
/// of them failed: for each state, its index among the transient states
/// (`usize::MAX` for an absorbing one), and the first and second moments of
/// the further calls until absorption.
fn window_chain(n: u32, m: u32, p: f64) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let q = 1.0 - p;
    let mask = (1usize << n) - 1;
    let transient: Vec<usize> = (0..=mask).filter(|s| s.count_ones() < m).collect();
    let mut index = vec![usize::MAX; mask + 1];
    for (i, &s) in transient.iter().enumerate() {
        index[s] = i;
    }
    let size = transient.len();
    // (I − Q), and Q itself for the second system.
    let mut q_matrix = vec![vec![0.0; size]; size];
    for (i, &s) in transient.iter().enumerate() {
        for (x, px) in [(1, p), (0, q)] {
            let next = ((s << 1) | x) & mask;
            if index[next] != usize::MAX {
                q_matrix[i][index[next]] += px;
            }
        }
    }
    let i_minus_q: Vec<Vec<f64>> = (0..size)
        .map(|i| {
            (0..size)
                .map(|j| f64::from(u8::from(i == j)) - q_matrix[i][j])
                .collect()
        })
        .collect();
    let h = solve(i_minus_q.clone(), vec![1.0; size]);
    let rhs: Vec<f64> = (0..size)
        .map(|i| 1.0 + 2.0 * (0..size).map(|j| q_matrix[i][j] * h[j]).sum::<f64>())
        .collect();
    let g = solve(i_minus_q, rhs);
    (index, h, g)
}

/// `(E[N], σ(N))` for the rate rule over a window of `n` calls with `min_calls = n`,
/// tripping at `m` failures among the last `n`.
fn window_rule(n: u32, m: u32, p: f64) -> (f64, f64) {
    let q = 1.0 - p;
    let (index, h, g) = window_chain(n, m, p);
    let n_f = f64::from(n);
    let (mut mean, mut second) = (0.0, 0.0);
    for (s, &i) in index.iter().enumerate() {
        let ones = s.count_ones();
        let pi = p.powi(ones as i32) * q.powi((n - ones) as i32);
        let (hs, gs) = match i {
            usize::MAX => (0.0, 0.0),
            i => (h[i], g[i]),
        };
        mean += pi * (n_f + hs);
        second += pi * (n_f * n_f + 2.0 * n_f * hs + gs);
    }
    (mean, (second - mean * mean).sqrt())
}

/// `(E[N], σ(N))` for `threshold = k` failures within a window of the last
/// `n` calls: no `min_calls`, so the chain starts from the empty window (the
/// calls before the first count as successes) and can trip before `n` calls.
fn within_rule(n: u32, k: u32, p: f64) -> (f64, f64) {
    let (index, h, g) = window_chain(n, k, p);
    let (mean, second) = (h[index[0]], g[index[0]]);
    (mean, (second - mean * mean).sqrt())
}

#[test]
fn window_chain_agrees_with_closed_forms() {
    // failure_rate = 1.0 with min_calls = n is "n consecutive failures".
    for (n, p) in [(1, 0.3), (2, 0.5), (3, 0.5), (5, 0.6), (6, 0.5)] {
        let (mean, sd) = window_rule(n, n, p);
        let k = i32::try_from(n).unwrap();
        assert!(
            (mean / consecutive_mean(p, k) - 1.0).abs() < 1e-9,
            "n {n}: {mean}"
        );
        assert!(
            (sd / consecutive_sd(p, k) - 1.0).abs() < 1e-9,
            "n {n}: {sd}"
        );
    }
    // m = 1: N = n if any of the first n calls failed (probability 1 − q^n),
    // else n plus a geometric wait for the first failure (mean 1/p), so
    // E[N] = n + q^n / p.
    for (n, p) in [(4, 0.1), (6, 0.25)] {
        let q: f64 = 1.0 - p;
        let expected = f64::from(n) + q.powi(n as i32) / p;
        let (mean, _) = window_rule(n, 1, p);
        assert!((mean / expected - 1.0).abs() < 1e-9, "{mean} vs {expected}");
    }
}

#[test]
fn rate_over_window_mean_calls_to_trip() {
    let cases = [
        // (window n, failure_rate r, p)
        (4, 0.5, 0.1),
        (4, 0.75, 0.3),
        (6, 0.5, 0.15),
        (6, 0.5, 0.25),
        (8, 0.5, 0.2),
    ];
    for (i, (n, rate, p)) in cases.into_iter().enumerate() {
        let m = failures_to_trip(rate, n);
        let expected = window_rule(n, m, p);
        let measured = measure(
            p,
            || {
                Breaker::builder()
                    .failure_rate(rate)
                    .window_calls(n)
                    .min_calls(n)
            },
            SEED + 100 + i as u64,
        );
        // Neighbours: one failure more or fewer to trip.
        let neighbours = [window_rule(n, m + 1, p).0]
            .into_iter()
            .chain((m > 1).then(|| window_rule(n, m - 1, p).0))
            .collect::<Vec<_>>();
        check(
            &format!("rate {rate} over {n} calls (trips at {m} of {n}), p = {p}"),
            expected,
            &measured,
            &neighbours,
        );
    }
}

// ---------------------------------------------- failures within a count window
//
// `threshold = k` with `window = n`: the breaker trips at the first call
// after which k of the last n calls failed. Same chain as above, read from
// the empty window: E[N] is the expected absorption time from state 0, and
// the second moment the second system's value there. Closed forms bound it:
// k = 1 is the geometric wait (mean 1/p), k = n is n consecutive failures.

#[test]
fn within_chain_agrees_with_closed_forms() {
    for (n, p) in [(3, 0.2), (6, 0.45)] {
        let (mean, sd) = within_rule(n, 1, p);
        assert!((mean * p - 1.0).abs() < 1e-9, "n {n}: {mean}");
        assert!(
            (sd / ((1.0 - p).sqrt() / p) - 1.0).abs() < 1e-9,
            "n {n}: {sd}"
        );
        let k = i32::try_from(n).unwrap();
        let (mean, sd) = within_rule(n, n, p);
        assert!((mean / consecutive_mean(p, k) - 1.0).abs() < 1e-9);
        assert!((sd / consecutive_sd(p, k) - 1.0).abs() < 1e-9);
    }
}

#[test]
fn failures_within_a_count_window_mean_calls_to_trip() {
    let cases = [
        // (window n, threshold k, p): each far enough from its neighbours
        // below for 4000 runs to tell them apart.
        (3, 2, 0.15),
        (4, 3, 0.3),
        (5, 3, 0.2),
        (6, 4, 0.3),
        (8, 5, 0.35),
    ];
    for (i, (n, k, p)) in cases.into_iter().enumerate() {
        let expected = within_rule(n, k, p);
        let measured = measure(
            p,
            || Breaker::builder().threshold(k).window_calls(n),
            SEED + 200 + i as u64,
        );
        // Neighbours: one failure more or fewer, a window one call longer or
        // shorter, and the consecutive rule the same threshold would be.
        let neighbours = [
            within_rule(n, k + 1, p).0,
            within_rule(n, k - 1, p).0,
            within_rule(n + 1, k, p).0,
            within_rule(n - 1, k, p).0,
            consecutive_mean(p, i32::try_from(k).unwrap()),
        ];
        check(
            &format!("{k} failures within {n} calls, p = {p}"),
            expected,
            &measured,
            &neighbours,
        );
    }
}
