//! How a call that ran ended, decided from its result: the classifiers of
//! the service-stack integrations (features `http`, `tower`,
//! `reqwest-middleware`).
//!
//! [`HttpClassifier`] judges HTTP answers by status, [`GrpcClassifier`] gRPC
//! answers by `grpc-status`, and any closure `Fn(&Result<Res, E>) -> Outcome`
//! judges what you like. [`tower::CircuitBreakerLayer`](crate::tower) and the
//! reqwest middleware take one of them.

use std::any::Any;

use http::header::HeaderValue;

use crate::{Outcome, Rejected};

/// tower's and reqwest-middleware's boxed error.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Decides the [`Outcome`] of a call from what the inner service produced.
///
/// Implemented by [`HttpClassifier`], [`GrpcClassifier`], and every closure
/// `Fn(&Result<Res, E>) -> Outcome`, so that a neutral outcome (an error
/// that is the caller's fault) is as easy to say as a failure:
///
/// ```
/// use failfast_runtime::classify::Classify;
/// use failfast_runtime::Outcome;
///
/// #[derive(Debug)]
/// enum DbError { Connection, Constraint }
///
/// let classify = |result: &Result<u64, DbError>| match result {
///     Ok(_) => Outcome::Success,
///     Err(DbError::Connection) => Outcome::Failure,
///     Err(DbError::Constraint) => Outcome::Neutral,
/// };
/// assert_eq!(classify.classify(&Err(DbError::Constraint)), Outcome::Neutral);
/// // CircuitBreakerLayer::new(breaker).classifier(classify)
/// ```
pub trait Classify<Res, E> {
    /// The outcome of a call that produced `result`.
    fn classify(&self, result: &Result<Res, E>) -> Outcome;
}

impl<F, Res, E> Classify<Res, E> for F
where
    F: Fn(&Result<Res, E>) -> Outcome,
{
    #[inline]
    fn classify(&self, result: &Result<Res, E>) -> Outcome {
        self(result)
    }
}

/// The default classifier, for services answering `http::Response<B>`:
///
/// | result | outcome |
/// |---|---|
/// | `Err(_)` that is or carries a [`Rejected`]: a breaker further down refused, nothing was sent | neutral |
/// | any other `Err(_)`: a transport error, a tower timeout, … | failure |
/// | 5xx | failure |
/// | 429 and every other 4xx | neutral: the caller's fault, or a limit on the caller |
/// | 1xx, 2xx, 3xx | success |
///
/// ```
/// use failfast_runtime::classify::{Classify, HttpClassifier};
/// use failfast_runtime::Outcome;
///
/// let answer = |status: u16| http::Response::builder().status(status).body(()).unwrap();
/// let outcome = |r: Result<http::Response<()>, &'static str>| HttpClassifier.classify(&r);
/// assert_eq!(outcome(Ok(answer(200))), Outcome::Success);
/// assert_eq!(outcome(Ok(answer(429))), Outcome::Neutral);
/// assert_eq!(outcome(Ok(answer(503))), Outcome::Failure);
/// assert_eq!(outcome(Err("connection reset")), Outcome::Failure);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpClassifier;

impl<B, E: 'static> Classify<http::Response<B>, E> for HttpClassifier {
    #[inline]
    fn classify(&self, result: &Result<http::Response<B>, E>) -> Outcome {
        match result {
            Ok(response) => status_outcome(response.status()),
            Err(error) => error_outcome(error),
        }
    }
}

/// An error is a failure, unless it is a refusal of a breaker further down
/// the stack: that call never reached the dependency, and says nothing of
/// its health.
#[inline]
pub(crate) fn error_outcome<E: 'static>(error: &E) -> Outcome {
    if is_rejected(error) {
        Outcome::Neutral
    } else {
        Outcome::Failure
    }
}

/// Whether `error` is a [`Rejected`], or carries one: a boxed error, an
/// `io::Error` or a `reqwest_middleware::Error` holding it, or with it in
/// its chain of sources.
pub(crate) fn is_rejected<E: 'static>(error: &E) -> bool {
    let any: &dyn Any = error;
    if let Some(error) = any.downcast_ref::<BoxError>() {
        chain_has_rejected(&**error)
    } else if let Some(error) = any.downcast_ref::<Box<dyn std::error::Error + Send>>() {
        chain_has_rejected(&**error)
    } else if let Some(error) = any.downcast_ref::<Box<dyn std::error::Error>>() {
        chain_has_rejected(&**error)
    } else if let Some(error) = any.downcast_ref::<std::io::Error>() {
        chain_has_rejected(error)
    } else {
        #[cfg(feature = "reqwest-middleware")]
        if let Some(error) = any.downcast_ref::<reqwest_middleware::Error>() {
            return chain_has_rejected(error);
        }
        any.is::<Rejected>()
    }
}

/// Whether `error` or one of its sources is a [`Rejected`]. An `io::Error`
/// and a `reqwest_middleware::Error` hide the error they wrap from the chain
/// (their `source` is that error's source), so they are opened here.
fn chain_has_rejected(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<Rejected>() {
            return true;
        }
        if let Some(inner) = error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            if chain_has_rejected(inner) {
                return true;
            }
        }
        #[cfg(feature = "reqwest-middleware")]
        if let Some(reqwest_middleware::Error::Middleware(inner)) =
            error.downcast_ref::<reqwest_middleware::Error>()
        {
            if inner.chain().any(chain_has_rejected) {
                return true;
            }
        }
        next = error.source();
    }
    false
}

#[inline]
pub(crate) fn status_outcome(status: http::StatusCode) -> Outcome {
    if status.is_server_error() {
        Outcome::Failure
    } else if status.is_client_error() {
        Outcome::Neutral
    } else {
        Outcome::Success
    }
}

/// A classifier for gRPC: the codes that say the server is sick or
/// overloaded are failures, the rest of the errors neutral.
///
/// | code | outcome |
/// |---|---|
/// | `OK` | success |
/// | `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNKNOWN` | failure |
/// | every other code (`INVALID_ARGUMENT`, `NOT_FOUND`, …) | neutral |
///
/// The code is read from the `grpc-status` header of an `http::Response`
/// (a tonic `Channel` or server route): a call that fails before any message
/// is sent answers with its status in the headers ("trailers-only"). A
/// response without `grpc-status` is judged by its HTTP status as
/// [`HttpClassifier`] does (a proxy's 502 is a failure). An error that is a
/// `tonic::Status` (with the `tonic` feature; also inside a `Box<dyn Error + Send + Sync>`) is
/// judged by its code; an error that is or carries a [`Rejected`] (a
/// breaker further down refused) is neutral; any other error (transport,
/// timeout) is a failure.
///
/// ```
/// use failfast_runtime::classify::{Classify, GrpcClassifier};
/// use failfast_runtime::Outcome;
///
/// let answer = |code: &str| {
///     http::Response::builder().header("grpc-status", code).body(()).unwrap()
/// };
/// let outcome = |r: Result<http::Response<()>, std::io::Error>| GrpcClassifier.classify(&r);
/// assert_eq!(outcome(Ok(answer("0"))), Outcome::Success);
/// assert_eq!(outcome(Ok(answer("14"))), Outcome::Failure); // UNAVAILABLE
/// assert_eq!(outcome(Ok(answer("3"))), Outcome::Neutral); // INVALID_ARGUMENT
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcClassifier;

impl<B, E: 'static> Classify<http::Response<B>, E> for GrpcClassifier {
    fn classify(&self, result: &Result<http::Response<B>, E>) -> Outcome {
        match result {
            Ok(response) => match response.headers().get("grpc-status") {
                Some(code) => grpc_code_outcome(code),
                None => status_outcome(response.status()),
            },
            Err(error) => grpc_error_outcome(error),
        }
    }
}

/// `UNKNOWN`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`,
/// `UNAVAILABLE`.
const GRPC_FAILURES: [i32; 5] = [2, 4, 8, 13, 14];

fn grpc_number_outcome(code: i32) -> Outcome {
    if code == 0 {
        Outcome::Success
    } else if GRPC_FAILURES.contains(&code) {
        Outcome::Failure
    } else {
        Outcome::Neutral
    }
}

fn grpc_code_outcome(code: &HeaderValue) -> Outcome {
    match code
        .to_str()
        .ok()
        .and_then(|c| c.trim().parse::<i32>().ok())
    {
        Some(code) => grpc_number_outcome(code),
        // Unreadable: gRPC says to take it as UNKNOWN.
        None => Outcome::Failure,
    }
}

fn grpc_error_outcome<E: 'static>(error: &E) -> Outcome {
    if is_rejected(error) {
        return Outcome::Neutral;
    }
    #[cfg(feature = "tonic")]
    {
        let any: &dyn Any = error;
        let status = any.downcast_ref::<tonic::Status>().or_else(|| {
            any.downcast_ref::<BoxError>()
                .and_then(|e| e.downcast_ref::<tonic::Status>())
        });
        if let Some(status) = status {
            return grpc_number_outcome(status.code() as i32);
        }
    }
    Outcome::Failure
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn grpc(code: &str) -> Outcome {
        let response = http::Response::builder()
            .header("grpc-status", code)
            .body(())
            .unwrap();
        GrpcClassifier.classify(&Ok::<_, std::io::Error>(response))
    }

    #[test]
    fn grpc_codes_that_say_the_server_is_sick_are_failures_the_rest_neutral() {
        assert_eq!(grpc("0"), Outcome::Success);
        for sick in ["2", "4", "8", "13", "14"] {
            assert_eq!(grpc(sick), Outcome::Failure, "code {sick}");
        }
        for neutral in ["1", "3", "5", "6", "7", "9", "10", "11", "12", "15", "16"] {
            assert_eq!(grpc(neutral), Outcome::Neutral, "code {neutral}");
        }
        assert_eq!(grpc("not a number"), Outcome::Failure, "read as UNKNOWN");
    }

    #[test]
    fn a_grpc_response_without_a_status_is_judged_by_its_http_status() {
        let answer = |status: u16| {
            let response = http::Response::builder().status(status).body(()).unwrap();
            GrpcClassifier.classify(&Ok::<_, std::io::Error>(response))
        };
        assert_eq!(answer(200), Outcome::Success);
        assert_eq!(answer(502), Outcome::Failure);
        assert_eq!(answer(404), Outcome::Neutral);
        let transport = Err::<http::Response<()>, _>(std::io::Error::other("reset"));
        assert_eq!(GrpcClassifier.classify(&transport), Outcome::Failure);
    }

    #[cfg(feature = "tonic")]
    #[test]
    fn tonic_status_errors_are_judged_by_their_code_also_inside_a_box_error() {
        let status = |s: tonic::Status| GrpcClassifier.classify(&Err::<http::Response<()>, _>(s));
        assert_eq!(status(tonic::Status::unavailable("down")), Outcome::Failure);
        assert_eq!(status(tonic::Status::internal("bug")), Outcome::Failure);
        assert_eq!(
            status(tonic::Status::invalid_argument("bad")),
            Outcome::Neutral
        );
        assert_eq!(status(tonic::Status::not_found("gone")), Outcome::Neutral);

        let boxed = |s: tonic::Status| {
            let error: BoxError = Box::new(s);
            GrpcClassifier.classify(&Err::<http::Response<()>, _>(error))
        };
        assert_eq!(
            boxed(tonic::Status::deadline_exceeded("slow")),
            Outcome::Failure
        );
        assert_eq!(
            boxed(tonic::Status::permission_denied("no")),
            Outcome::Neutral
        );
    }

    #[test]
    fn http_statuses_split_into_success_neutral_and_failure() {
        let answer = |status: u16| {
            let response = http::Response::builder().status(status).body(()).unwrap();
            HttpClassifier.classify(&Ok::<_, Infallible>(response))
        };
        for (status, outcome) in [
            (101, Outcome::Success),
            (204, Outcome::Success),
            (304, Outcome::Success),
            (400, Outcome::Neutral),
            (429, Outcome::Neutral),
            (499, Outcome::Neutral),
            (500, Outcome::Failure),
            (503, Outcome::Failure),
            (599, Outcome::Failure),
        ] {
            assert_eq!(answer(status), outcome, "status {status}");
        }
    }
}
