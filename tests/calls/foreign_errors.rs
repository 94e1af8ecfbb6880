//! Functions whose error type the user does not own, guarded without a
//! `fallback`: failfast converts the rejection into `std::io::Error`, and
//! with its `http` and `tonic` features into `http::StatusCode`,
//! `http::Response<B>` and `tonic::Status`.

use failfast::circuit_breaker;
use std::io;

#[circuit_breaker(threshold = 1, recovery = "60s", name = "foreign::io")]
fn read_config(fail: bool) -> io::Result<u32> {
    if fail {
        return Err(io::Error::other("disk gone"));
    }
    Ok(7)
}

#[test]
fn an_io_result_function_is_refused_with_an_io_error() {
    assert_eq!(read_config(false).unwrap(), 7);
    assert_eq!(read_config(true).unwrap_err().to_string(), "disk gone");
    let refused = read_config(false).unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
    let rejected = refused
        .get_ref()
        .and_then(|e| e.downcast_ref::<failfast::Rejected>())
        .expect("the rejection is inside");
    assert_eq!(rejected.name(), "foreign::io");
}

#[circuit_breaker(threshold = 5, timeout = "20ms", name = "foreign::io_timeout")]
async fn slow_read(hang: bool) -> io::Result<u32> {
    if hang {
        std::future::pending::<()>().await;
    }
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn an_io_result_function_that_times_out_gets_a_timed_out_io_error() {
    assert_eq!(slow_read(false).await.unwrap(), 1);
    let timed_out = slow_read(true).await.unwrap_err();
    assert_eq!(timed_out.kind(), io::ErrorKind::TimedOut);
    let inner = timed_out
        .get_ref()
        .and_then(|e| e.downcast_ref::<failfast::TimedOut>())
        .expect("the timeout is inside");
    assert_eq!(inner.name(), "foreign::io_timeout");
}

#[circuit_breaker(max_concurrent = 1, name = "foreign::io_busy")]
fn busy(inner: &dyn Fn() -> io::Result<()>) -> io::Result<()> {
    inner()
}

#[test]
fn an_io_result_function_at_its_concurrency_limit_is_resource_busy() {
    let refused = busy(&|| busy(&|| Ok(())));
    assert_eq!(refused.unwrap_err().kind(), io::ErrorKind::ResourceBusy);
}

#[cfg(feature = "http")]
mod http_errors {
    use super::circuit_breaker;
    use http::{Response, StatusCode};

    #[circuit_breaker(threshold = 1, recovery = "60s", name = "foreign::status")]
    async fn status(fail: bool) -> Result<&'static str, StatusCode> {
        if fail {
            return Err(StatusCode::BAD_GATEWAY);
        }
        Ok("ok")
    }

    #[circuit_breaker(timeout = "20ms", name = "foreign::status_timeout")]
    async fn hangs() -> Result<&'static str, StatusCode> {
        std::future::pending::<()>().await;
        Ok("never")
    }

    #[tokio::test(start_paused = true)]
    async fn a_status_code_function_that_times_out_gets_504() {
        assert_eq!(hangs().await, Err(StatusCode::GATEWAY_TIMEOUT));
    }

    #[tokio::test]
    async fn a_status_code_function_is_refused_with_503() {
        assert_eq!(status(true).await, Err(StatusCode::BAD_GATEWAY));
        assert_eq!(status(false).await, Err(StatusCode::SERVICE_UNAVAILABLE));
    }

    // `http::Response` is a large error; clippy says so of any function
    // returning it.
    #[allow(clippy::result_large_err)]
    #[circuit_breaker(threshold = 1, recovery = "60s", name = "foreign::response")]
    fn respond(fail: bool) -> Result<&'static str, Response<String>> {
        if fail {
            return Err(Response::new("upstream broke".to_owned()));
        }
        Ok("ok")
    }

    #[test]
    fn a_response_function_is_refused_with_503_and_retry_after() {
        assert_eq!(respond(true).unwrap_err().body(), "upstream broke");
        let refused = respond(false).unwrap_err();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        let seconds: u64 = refused.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&seconds), "{seconds}");
    }
}

#[cfg(feature = "tonic")]
mod grpc_errors {
    use super::circuit_breaker;
    use tonic::{Code, Status};

    #[circuit_breaker(threshold = 1, recovery = "60s", name = "foreign::grpc")]
    async fn balance(fail: bool) -> Result<u64, Status> {
        if fail {
            return Err(Status::internal("ledger crashed"));
        }
        Ok(100)
    }

    #[circuit_breaker(timeout = "20ms", name = "foreign::grpc_timeout")]
    async fn hangs() -> Result<u64, Status> {
        std::future::pending::<()>().await;
        Ok(0)
    }

    #[tokio::test(start_paused = true)]
    async fn a_tonic_status_function_that_times_out_is_deadline_exceeded() {
        assert_eq!(hangs().await.unwrap_err().code(), Code::DeadlineExceeded);
    }

    #[tokio::test]
    async fn a_tonic_status_function_is_refused_as_unavailable() {
        assert_eq!(balance(true).await.unwrap_err().code(), Code::Internal);
        let refused = balance(false).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable);
        let pushback: u64 = refused
            .metadata()
            .get("grpc-retry-pushback-ms")
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60_000).contains(&pushback), "{pushback}");
    }
}

/// `reject_with`: any error type, with the user's own conversion.
mod reject_with {
    use super::circuit_breaker;
    use std::future::Future as _;

    fn unavailable(rejected: failfast::Rejected) -> String {
        format!("unavailable: {}", rejected.name())
    }

    #[circuit_breaker(threshold = 1, reject_with = unavailable, name = "reject_with::sync")]
    fn lookup(fail: bool) -> Result<u32, String> {
        if fail {
            return Err("backend broke".to_owned());
        }
        Ok(3)
    }

    #[test]
    fn a_sync_function_converts_its_refusals_with_the_given_function() {
        assert_eq!(lookup(false), Ok(3));
        assert_eq!(lookup(true), Err("backend broke".to_owned()));
        assert_eq!(
            lookup(false),
            Err("unavailable: reject_with::sync".to_owned())
        );
    }

    #[circuit_breaker(
        threshold = 1,
        max_concurrent = 1,
        reject_with = unavailable,
        name = "reject_with::async"
    )]
    async fn fetch(fail: bool) -> Result<u32, String> {
        tokio::task::yield_now().await;
        if fail {
            return Err("backend broke".to_owned());
        }
        Ok(4)
    }

    #[tokio::test]
    async fn an_async_function_converts_open_and_concurrency_refusals() {
        // The only slot is held by a pending call: the next one is refused
        // at the concurrency limit, through `unavailable`.
        let held = fetch(false);
        let mut held = Box::pin(held);
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(held.as_mut().poll(&mut cx).is_pending());
        assert_eq!(
            fetch(false).await,
            Err("unavailable: reject_with::async".to_owned())
        );
        assert_eq!(held.await, Ok(4));
        // Then open.
        assert_eq!(fetch(true).await, Err("backend broke".to_owned()));
        assert_eq!(
            fetch(false).await,
            Err("unavailable: reject_with::async".to_owned())
        );
    }
}
