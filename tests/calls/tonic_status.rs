//! A function returning `Result<T, tonic::Status>` without `counts`: only
//! the codes that say the server is sick or overloaded count
//! (`classify::grpc_failure`), tonic's own time limit included; the
//! caller's mistakes (`INVALID_ARGUMENT`, `NOT_FOUND`, …) are neutral. An
//! explicit `counts` replaces that rule.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use failfast::classify::grpc_failure;
use failfast::{State, circuit_breaker, registry, retry};
use tonic::{Code, Status};

/// The ledger's client (its service is not used here).
use crate::common::grpc;

fn state(name: &str) -> State {
    registry::get(name).expect("registered").state()
}

fn consecutive_failures(name: &str) -> u32 {
    registry::get(name)
        .expect("registered")
        .snapshot()
        .consecutive_failures
}

#[circuit_breaker(threshold = 3, recovery = "60s", name = "tonic::default")]
fn get(code: Code) -> Result<u32, Status> {
    Err(Status::new(code, "the server's answer"))
}

#[test]
fn three_invalid_arguments_leave_it_closed_three_unavailable_open_it() {
    for _ in 0..3 {
        assert_eq!(
            get(Code::InvalidArgument).unwrap_err().code(),
            Code::InvalidArgument
        );
    }
    assert_eq!(
        state("tonic::default"),
        State::Closed,
        "the caller's mistake"
    );
    assert_eq!(consecutive_failures("tonic::default"), 0);
    for _ in 0..3 {
        assert_eq!(
            get(Code::Unavailable).unwrap_err().code(),
            Code::Unavailable
        );
    }
    assert_eq!(state("tonic::default"), State::Open);
    // Refused as `UNAVAILABLE`, with the time until the trial.
    let refused = get(Code::InvalidArgument).unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert!(refused.metadata().get("grpc-retry-pushback-ms").is_some());
}

#[circuit_breaker(threshold = 1, recovery = "60s", name = "tonic::every_code")]
fn answer(status: Status) -> Result<u32, Status> {
    Err(status)
}

/// Each code, and tonic's time limit, alone on a closed breaker that one
/// counted failure opens.
#[test]
fn every_code_counts_as_grpc_failure_says() {
    let handle = registry::get("tonic::every_code").expect("registered");
    let timed_out = || Status::from_error(Box::new(tonic::TimeoutExpired(())));
    let mut counted = Vec::new();
    for status in (1..=16)
        .map(|code| Status::new(Code::from(code), "an answer"))
        .chain([timed_out(), Status::cancelled("the caller gave up")])
    {
        handle.set_mode(failfast::Mode::Normal);
        let expected = grpc_failure(&status);
        let (code, message) = (status.code(), status.message().to_owned());
        let _ = answer(status);
        assert_eq!(
            handle.state() == State::Open,
            expected,
            "{code:?} {message:?}"
        );
        if expected {
            counted.push(code);
        }
    }
    assert_eq!(
        counted,
        [
            Code::Unknown,
            Code::DeadlineExceeded,
            Code::ResourceExhausted,
            Code::Internal,
            Code::Unavailable,
            Code::Cancelled, // "Timeout expired": tonic's own time limit
        ]
    );
}

#[circuit_breaker(threshold = 3, recovery = "60s", name = "tonic::by_default")]
fn by_default(code: Code) -> Result<u32, Status> {
    Err(Status::new(code, "the server's answer"))
}

#[circuit_breaker(threshold = 3, recovery = "60s", counts = |_: &Status| true, name = "tonic::counts_every")]
fn every_error_counts(code: Code) -> Result<u32, Status> {
    Err(Status::new(code, "the server's answer"))
}

#[circuit_breaker(
    threshold = 3,
    recovery = "60s",
    counts = |status: &Status| status.code() == Code::Internal,
    name = "tonic::counts_internal"
)]
fn only_internal_counts(code: Code) -> Result<u32, Status> {
    Err(Status::new(code, "the server's answer"))
}

#[test]
fn an_explicit_counts_replaces_the_default_rule() {
    for _ in 0..3 {
        let _ = by_default(Code::InvalidArgument);
        let _ = every_error_counts(Code::InvalidArgument);
    }
    assert_eq!(state("tonic::by_default"), State::Closed);
    assert_eq!(state("tonic::counts_every"), State::Open);
    for _ in 0..3 {
        let _ = only_internal_counts(Code::Unavailable);
    }
    assert_eq!(state("tonic::counts_internal"), State::Closed);
    assert_eq!(consecutive_failures("tonic::counts_internal"), 0);
}

#[circuit_breaker(
    threshold = 2,
    recovery = "60s",
    ignores = |status: &Status| status.code() == Code::Internal,
    name = "tonic::ignores"
)]
fn ignoring_internal(code: Code) -> Result<u32, Status> {
    Err(Status::new(code, "the server's answer"))
}

#[test]
fn ignores_alone_narrows_the_default_rule() {
    for code in [Code::Internal, Code::InvalidArgument, Code::NotFound] {
        let _ = ignoring_internal(code);
    }
    assert_eq!(state("tonic::ignores"), State::Closed);
    assert_eq!(consecutive_failures("tonic::ignores"), 0);
    let _ = ignoring_internal(Code::Unavailable);
    let _ = ignoring_internal(Code::Unavailable);
    assert_eq!(state("tonic::ignores"), State::Open);
}

static RETRIED: AtomicU32 = AtomicU32::new(0);

/// Only counted failures are retried, so the rule decides the retries too.
#[retry(attempts = 3, backoff = "1ms")]
#[circuit_breaker(threshold = 100, name = "tonic::retried")]
fn retried(code: Code) -> Result<u32, Status> {
    RETRIED.fetch_add(1, Ordering::SeqCst);
    Err(Status::new(code, "the server's answer"))
}

#[test]
fn retries_follow_the_default_rule() {
    let _ = retried(Code::InvalidArgument);
    assert_eq!(RETRIED.load(Ordering::SeqCst), 1, "neutral: not retried");
    let _ = retried(Code::Unavailable);
    assert_eq!(RETRIED.load(Ordering::SeqCst), 4, "counted: three attempts");
}

/// A tonic client's own time limit, end to end: `Endpoint::timeout`
/// against a server that accepts connections and never answers.
mod tonic_time_limit {
    use super::*;

    use super::grpc::LedgerClient;
    use tonic::transport::Channel;

    /// The ledger's balance; or, with `give_up`, the caller's own
    /// cancellation, which does not count.
    #[circuit_breaker(threshold = 2, recovery = "60s", name = "tonic::time_limit")]
    async fn balance(client: &mut LedgerClient<Channel>, give_up: bool) -> Result<String, Status> {
        if give_up {
            return Err(Status::cancelled("the caller gave up"));
        }
        client.get("account-1").await
    }

    #[tokio::test]
    async fn a_call_past_endpoint_timeout_counts() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        // Accepts, and holds every connection without a word.
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .timeout(Duration::from_millis(50))
            .connect_lazy();
        let mut client = LedgerClient::new(channel);

        for _ in 0..2 {
            let status = balance(&mut client, true).await.unwrap_err();
            assert_eq!(status.code(), Code::Cancelled);
        }
        assert_eq!(state("tonic::time_limit"), State::Closed, "the caller's");
        let status = balance(&mut client, false).await.unwrap_err();
        assert_eq!(status.code(), Code::Cancelled, "{status:?}");
        assert_eq!(status.message(), "Timeout expired");
        assert_eq!(consecutive_failures("tonic::time_limit"), 1);
        let _ = balance(&mut client, false).await;
        assert_eq!(state("tonic::time_limit"), State::Open);
    }
}

/// Stacked breakers: `stacked_outer` calls `stacked_inner` with `?`, both
/// under the default rule. The inner one's refusal, passed up as its
/// `UNAVAILABLE`, never reached the server: the outer breaker counts the
/// server's answer once, and the refusals not at all.
mod stacked {
    use super::*;

    use failfast::{Mode, Rejected};

    #[circuit_breaker(threshold = 1, recovery = "60s", name = "tonic::stacked_inner")]
    fn stacked_inner(code: Code) -> Result<u32, Status> {
        Err(Status::new(code, "the server's answer"))
    }

    #[circuit_breaker(threshold = 3, recovery = "60s", name = "tonic::stacked_outer")]
    fn stacked_outer(code: Code) -> Result<u32, Status> {
        let balance = stacked_inner(code)?;
        Ok(balance)
    }

    #[circuit_breaker(
        threshold = 2,
        recovery = "60s",
        timeout = "20ms",
        name = "tonic::stacked_slow_inner"
    )]
    async fn slow_inner() -> Result<u32, Status> {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(0)
    }

    #[circuit_breaker(threshold = 2, recovery = "60s", name = "tonic::stacked_slow_outer")]
    async fn slow_outer() -> Result<u32, Status> {
        let balance = slow_inner().await?;
        Ok(balance)
    }

    fn counts(name: &str) -> (State, u64, u64, u64) {
        let s = registry::get(name).expect("registered").snapshot();
        (s.state, s.failures, s.neutral, s.rejected)
    }

    #[test]
    fn an_inner_refusal_is_neutral_in_the_outer_breaker_and_a_real_unavailable_counts() {
        for _ in 0..3 {
            let status = stacked_outer(Code::Unavailable).unwrap_err();
            assert_eq!(status.code(), Code::Unavailable);
        }
        assert_eq!(
            counts("tonic::stacked_inner"),
            (State::Open, 1, 0, 2),
            "one real failure, two refusals"
        );
        assert_eq!(
            counts("tonic::stacked_outer"),
            (State::Closed, 1, 2, 0),
            "the server's answer counted once"
        );

        // The refusal the caller gets is the inner breaker's, and says so.
        let refused = stacked_outer(Code::Unavailable).unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable);
        assert!(refused.metadata().get("grpc-retry-pushback-ms").is_some());
        let rejected = std::error::Error::source(&refused)
            .and_then(|source| source.downcast_ref::<Rejected>())
            .expect("the refusal inside");
        assert_eq!(rejected.name(), "tonic::stacked_inner");
        assert!(!grpc_failure(&refused));
        assert_eq!(consecutive_failures("tonic::stacked_outer"), 1);

        // The server's own UNAVAILABLE, let through by a closed inner
        // breaker, still counts: two more open the outer one.
        let inner = registry::get("tonic::stacked_inner").expect("registered");
        for _ in 0..2 {
            inner.set_mode(Mode::Normal);
            let status = stacked_outer(Code::Unavailable).unwrap_err();
            assert!(std::error::Error::source(&status).is_none(), "{status:?}");
        }
        assert_eq!(counts("tonic::stacked_outer"), (State::Open, 3, 3, 0));
    }

    /// A timeout of the inner breaker (`DEADLINE_EXCEEDED`) is not a
    /// refusal: the call waited on the dependency, and the outer breaker
    /// counts it as the inner one does.
    #[tokio::test]
    async fn an_inner_timeout_counts_in_the_outer_breaker() {
        for _ in 0..2 {
            let status = slow_outer().await.unwrap_err();
            assert_eq!(status.code(), Code::DeadlineExceeded);
        }
        assert_eq!(counts("tonic::stacked_slow_inner").0, State::Open);
        assert_eq!(counts("tonic::stacked_slow_outer"), (State::Open, 2, 0, 0));
    }
}
