//! How a call that ran ended, decided from its result: the classifiers of
//! the service-stack integrations (features `http`, `tower`,
//! `reqwest-middleware`).
//!
//! [`HttpClassifier`] judges HTTP answers by status, [`GrpcClassifier`] gRPC
//! answers by `grpc-status`, and any closure `Fn(&Result<Res, E>) -> Outcome`
//! judges what you like. [`tower::CircuitBreakerLayer`](crate::integrations::tower) and the
//! reqwest middleware take one of them.
//!
//! Their rules are also predicates for the attribute's `counts = …`, so a
//! function and a layer count the same answers as failures:
//! `http::StatusCode::is_server_error` (what [`HttpClassifier`] counts of
//! a status) for a function returning `Result<T, http::StatusCode>`,
//! `grpc_failure` (with the `tonic` feature) for one returning
//! `Result<T, tonic::Status>`, where it is also the default when `counts`
//! is not given.
//!
//! # Refusals of breakers further down
//!
//! A call refused by another breaker below (a tower layer under this one, a
//! middleware after this one, a `#[circuit_breaker]` function this one
//! calls) never reached the dependency: the failures that opened that
//! breaker were seen here as they happened, and counting its refusals too
//! would open this breaker on one failure of the dependency. So every rule
//! here takes a refusal as neutral, in each shape failfast gives one:
//!
//! - an error that is or carries a [`Rejected`] (tower's `RefuseWithError`,
//!   reqwest-middleware's refusal, an `io::Error` made of one);
//! - a `tonic::Status` made of one (the attribute's refusal as a status,
//!   tower's `RefuseWithStatus`, or the `UNKNOWN` a tonic client makes of a
//!   boxed `Rejected`): it has the `Rejected` in its `source` chain;
//! - an `http::Response` made of one (tower's `RefuseWithResponse`, or a
//!   handler answering `http::Response::from(rejected)`): it has the
//!   `Rejected` in its extensions.
//!
//! The marks stay in the process: a server's answer never carries one, so a
//! server that is unavailable, for whatever reason, counts. A timeout
//! (`TimedOut`, `DEADLINE_EXCEEDED`, 504) is no refusal: the call waited on
//! the dependency, and every breaker on the way counts it. An
//! `http::StatusCode` has no room for a mark: a refusal converted to one
//! is any 503 to `StatusCode::is_server_error`.

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
/// | a response with a [`Rejected`] in its extensions: the `503` a breaker further down answered (`http::Response::from(rejected)`) | neutral |
/// | 5xx | failure |
/// | 429 and every other 4xx | neutral: the caller's fault, or a limit on the caller |
/// | 1xx, 2xx, 3xx | success |
///
/// On a bare status the rule is `http::StatusCode::is_server_error`: a
/// predicate for the attribute's `counts` on a function whose error is a
/// status (`#[circuit_breaker(counts = http::StatusCode::is_server_error)]`;
/// for another error type, in a closure: `counts = |e: &reqwest::Error|
/// e.status().is_some_and(|s| s.is_server_error())`), or the rule a permit
/// is resolved with ([`Permit::resolve`](crate::Permit::resolve)). A status
/// has no room to say that it is a refusal of a breaker further down (a
/// `Result<T, StatusCode>` function's own refusal, passed up with `?`): it
/// counts that 503 as any other. Stacked breakers that should not count
/// each other's refusals pass an `http::Response` (which this classifier
/// reads for the mark: see the [module docs](self)), a `tonic::Status`, or
/// an error of their own with the [`Rejected`] in it.
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
            Ok(response) if is_refusal(response) => Outcome::Neutral,
            Ok(response) => status_outcome(response.status()),
            Err(error) => error_outcome(error),
        }
    }
}

/// Whether `response` is a breaker's refusal made into an answer
/// (`http::Response::from(rejected)`), which keeps the [`Rejected`] in its
/// extensions.
#[inline]
fn is_refusal<B>(response: &http::Response<B>) -> bool {
    response.extensions().get::<Rejected>().is_some()
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
/// `io::Error`, a `reqwest_middleware::Error` or a `tonic::Status` holding
/// it, or with it in its chain of sources.
pub(crate) fn is_rejected<E: 'static>(error: &E) -> bool {
    let any: &dyn Any = error;
    #[cfg(feature = "tonic")]
    if let Some(status) = any.downcast_ref::<tonic::Status>() {
        return chain_has_rejected(status);
    }
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
/// (their `source` is that error's source), so they are opened here; a
/// `tonic::Status` made of a refusal has it as its source.
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
/// | a refusal of a breaker further down: an error that is or carries a [`Rejected`], a `tonic::Status` made of one, a response with one in its extensions | neutral |
/// | `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNKNOWN` | failure |
/// | `CANCELLED` with the message `Timeout expired`: tonic's own time limit | failure |
/// | every other code (`INVALID_ARGUMENT`, `NOT_FOUND`, the caller's `CANCELLED`, …) | neutral |
///
/// The same rule, on a `tonic::Status`, is `grpc_failure` (feature
/// `tonic`), a predicate for the attribute's `counts`.
///
/// The code is read from the `grpc-status` header of an `http::Response`
/// (a tonic `Channel` or server route): a call that fails before any message
/// is sent answers with its status in the headers ("trailers-only"). A
/// response without `grpc-status` is judged by its HTTP status as
/// [`HttpClassifier`] does (a proxy's 502 is a failure). An error that is a
/// `tonic::Status` (with the `tonic` feature; also inside a `Box<dyn Error + Send + Sync>`) is
/// judged by its code; an error that is or carries a [`Rejected`] (a
/// breaker further down refused), a status made of one and a response that
/// carries one are neutral (see the [module docs](self)); any other error
/// (transport, timeout) is a failure.
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
            Ok(response) if is_refusal(response) => Outcome::Neutral,
            Ok(response) => match response.headers().get("grpc-status") {
                Some(code) => grpc_code_outcome(code, response.headers().get("grpc-message")),
                None => status_outcome(response.status()),
            },
            Err(error) => grpc_error_outcome(error),
        }
    }
}

/// `UNKNOWN`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `INTERNAL`,
/// `UNAVAILABLE`.
const GRPC_FAILURES: [i32; 5] = [2, 4, 8, 13, 14];

/// `CANCELLED`: the caller's cancellation, or one of tonic's time limits.
const GRPC_CANCELLED: i32 = 1;

/// The message of the `CANCELLED` status tonic makes of its own time limits
/// (`tonic::TimeoutExpired`'s), and as tonic writes it in `grpc-message`.
const TONIC_TIMEOUT: [&str; 2] = ["Timeout expired", "Timeout%20expired"];

/// The rule of [`GrpcClassifier`] and [`grpc_failure`]: a code that says
/// the server is sick or overloaded, or a `CANCELLED` whose message says it
/// is tonic's time limit.
fn grpc_code_fails(code: i32, message: Option<&[u8]>) -> bool {
    GRPC_FAILURES.contains(&code)
        || (code == GRPC_CANCELLED
            && message.is_some_and(|m| TONIC_TIMEOUT.iter().any(|t| t.as_bytes() == m)))
}

fn grpc_number_outcome(code: i32, message: Option<&[u8]>) -> Outcome {
    if code == 0 {
        Outcome::Success
    } else if grpc_code_fails(code, message) {
        Outcome::Failure
    } else {
        Outcome::Neutral
    }
}

/// Whether [`GrpcClassifier`] counts this status as a failure: its code says
/// the server is sick or overloaded (`UNAVAILABLE`, `DEADLINE_EXCEEDED`,
/// `RESOURCE_EXHAUSTED`, `INTERNAL`, `UNKNOWN`), or it is one of tonic's own
/// time limits (below). Every other code (`INVALID_ARGUMENT`, `NOT_FOUND`,
/// `PERMISSION_DENIED`, `DATA_LOSS`, the caller's own `CANCELLED`, …) is
/// not. With the `tonic` feature.
///
/// Nor is a refusal of a breaker further down in this process, made into a
/// status: the `UNAVAILABLE` of `tonic::Status::from(rejected)` (what a
/// `#[circuit_breaker]` function answers when refused), or the `UNKNOWN` a
/// tonic client makes of a tower layer's boxed [`Rejected`]. Such a status
/// has the [`Rejected`] in its `source` chain, and never reached the
/// dependency; the failures that opened that breaker were counted here as
/// they happened. So an outer function calling an inner one with `?`
/// counts a failure of the server once, not once more for each refusal
/// that follows it:
///
/// ```
/// use failfast_runtime::{classify::grpc_failure, Breaker, Rejected};
/// use tonic::Status;
///
/// let inner = Breaker::builder().name("ledger").threshold(1).build()?;
/// let _ = inner.call(|| Err::<(), _>("down"));
/// let refused = Status::from(inner.acquire().unwrap_err());
/// assert_eq!(refused.code(), tonic::Code::Unavailable);
/// assert!(!grpc_failure(&refused), "a refusal further down");
/// let source = std::error::Error::source(&refused).unwrap();
/// assert_eq!(source.downcast_ref::<Rejected>().unwrap().name(), "ledger");
/// assert!(grpc_failure(&Status::unavailable("down")), "the server's own");
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// The mark is no part of what a server sends: a server's `UNAVAILABLE`
/// counts, whatever made it answer so. A timeout (`DEADLINE_EXCEEDED`,
/// the attribute's `timeout` included) is not a refusal: it counts at every
/// level, each breaker once.
///
/// The attribute's default on a function returning
/// `Result<T, tonic::Status>`: without `counts = …`, it counts what this
/// counts. Also a predicate for `counts` where a `tonic::Status` is reached
/// another way (`counts = |e: &MyError| matches!(e, MyError::Grpc(s) if
/// grpc_failure(s))`), and the rule a permit is resolved with
/// ([`Permit::resolve`](crate::Permit::resolve)):
///
/// ```
/// use failfast_runtime::{classify::grpc_failure, Breaker, State};
/// use tonic::Status;
///
/// let breaker = Breaker::builder().threshold(2).build()?;
/// let call = |status| breaker.acquire().unwrap().resolve(&Err::<(), _>(status), grpc_failure);
/// for _ in 0..5 {
///     call(Status::not_found("no such sku"));
/// }
/// assert_eq!(breaker.snapshot().consecutive_failures, 0, "the caller's fault");
/// for _ in 0..2 {
///     call(Status::unavailable("down"));
/// }
/// assert_eq!(breaker.state(), State::Open);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
///
/// A tonic client's time limit (`Endpoint::timeout`, `Request::set_timeout`)
/// does not end in `DEADLINE_EXCEEDED`: tonic answers `CANCELLED` with the
/// message `Timeout expired`. This predicate, and so the attribute's
/// default, counts that status, telling it from a cancellation by its
/// message alone (tonic promises no stable conversion). The attribute's own
/// `timeout = …` is sturdier: a call past it counts whatever `counts` says.
#[cfg(feature = "tonic")]
#[must_use]
pub fn grpc_failure(status: &tonic::Status) -> bool {
    grpc_code_fails(status.code() as i32, Some(status.message().as_bytes()))
        && !chain_has_rejected(status)
}

fn grpc_code_outcome(code: &HeaderValue, message: Option<&HeaderValue>) -> Outcome {
    match code
        .to_str()
        .ok()
        .and_then(|c| c.trim().parse::<i32>().ok())
    {
        Some(code) => grpc_number_outcome(code, message.map(HeaderValue::as_bytes)),
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
            return match status.code() {
                tonic::Code::Ok => Outcome::Success,
                _ if grpc_failure(status) => Outcome::Failure,
                _ => Outcome::Neutral,
            };
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

    fn grpc_with_message(code: &str, message: &str) -> Outcome {
        let response = http::Response::builder()
            .header("grpc-status", code)
            .header("grpc-message", message)
            .body(())
            .unwrap();
        GrpcClassifier.classify(&Ok::<_, std::io::Error>(response))
    }

    /// tonic's own time limit is `CANCELLED` "Timeout expired", written
    /// `Timeout%20expired` in `grpc-message`: a failure; any other
    /// cancellation is the caller's.
    #[test]
    fn a_cancelled_answer_is_a_failure_only_when_it_is_tonics_time_limit() {
        assert_eq!(
            grpc_with_message("1", "Timeout%20expired"),
            Outcome::Failure
        );
        assert_eq!(grpc_with_message("1", "Timeout expired"), Outcome::Failure);
        assert_eq!(grpc_with_message("1", "user%20gave%20up"), Outcome::Neutral);
        assert_eq!(grpc("1"), Outcome::Neutral);
        assert_eq!(
            grpc_with_message("3", "Timeout%20expired"),
            Outcome::Neutral,
            "only CANCELLED"
        );
    }

    /// The gRPC predicate and the classifier give every code and tonic's
    /// time limit the same verdict; so do the HTTP ones, for every status.
    #[cfg(feature = "tonic")]
    #[test]
    fn the_predicates_agree_with_their_classifiers() {
        for code in 0..=16 {
            let status = tonic::Status::new(tonic::Code::from(code), "message");
            let outcome = GrpcClassifier.classify(&Err::<http::Response<()>, _>(status));
            let status = tonic::Status::new(tonic::Code::from(code), "message");
            assert_eq!(
                grpc_failure(&status),
                outcome == Outcome::Failure,
                "code {code}"
            );
            assert_eq!(
                outcome == Outcome::Failure,
                grpc(&code.to_string()) == Outcome::Failure
            );
        }
        // What a tonic client's `Endpoint::timeout` gives the caller.
        let timed_out = tonic::Status::from_error(Box::new(tonic::TimeoutExpired(())));
        assert_eq!(timed_out.code(), tonic::Code::Cancelled);
        assert!(grpc_failure(&timed_out));
        // As a server writes it in its answer's headers.
        let mut headers = http::HeaderMap::new();
        timed_out.add_header(&mut headers).unwrap();
        let message = headers["grpc-message"].to_str().unwrap();
        assert_eq!(
            grpc_with_message("1", message),
            Outcome::Failure,
            "{message}"
        );
        assert!(!grpc_failure(&tonic::Status::cancelled(
            "the caller gave up"
        )));

        for status in 100..=999 {
            let status = http::StatusCode::from_u16(status).unwrap();
            let response = http::Response::builder().status(status).body(()).unwrap();
            let outcome = HttpClassifier.classify(&Ok::<_, Infallible>(response));
            assert_eq!(
                status.is_server_error(),
                outcome == Outcome::Failure,
                "status {status}"
            );
        }
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
        // An error whose code is `OK` (as in a response's `grpc-status: 0`).
        assert_eq!(
            status(tonic::Status::new(tonic::Code::Ok, "")),
            Outcome::Success
        );

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

    /// A refusal of a breaker forced open, named `name`.
    fn refusal(name: &'static str) -> Rejected {
        let breaker = crate::Breaker::builder().name(name).build().unwrap();
        breaker.set_mode(crate::Mode::ForcedOpen);
        breaker.acquire().unwrap_err()
    }

    /// The `503` made of a refusal is neutral to both classifiers; a `503`
    /// of the dependency's is a failure to both.
    #[test]
    fn a_response_made_of_a_refusal_is_neutral_and_another_503_a_failure() {
        let refused = || http::Response::<String>::from(refusal("classify-503"));
        let answered = || {
            let response = http::Response::builder().status(503);
            response.body(String::new()).unwrap()
        };
        let http = |r: http::Response<String>| HttpClassifier.classify(&Ok::<_, Infallible>(r));
        let grpc = |r: http::Response<String>| GrpcClassifier.classify(&Ok::<_, Infallible>(r));
        assert_eq!(http(refused()), Outcome::Neutral);
        assert_eq!(grpc(refused()), Outcome::Neutral);
        assert_eq!(http(answered()), Outcome::Failure);
        assert_eq!(grpc(answered()), Outcome::Failure);
        // A gRPC answer with the mark: the mark decides.
        let mut unavailable = refused();
        let headers = unavailable.headers_mut();
        headers.insert("grpc-status", HeaderValue::from_static("14"));
        assert_eq!(grpc(unavailable), Outcome::Neutral);
    }

    /// A status made of a refusal, whichever way, is neutral to
    /// `grpc_failure` and to both classifiers, as an error or boxed; the
    /// server's own `UNAVAILABLE` and a timeout made into a status count.
    #[cfg(feature = "tonic")]
    #[test]
    fn a_status_made_of_a_refusal_is_neutral_everywhere() {
        use tonic::{Code, Status};

        let as_error = |status: Status| {
            let http = HttpClassifier.classify(&Err::<http::Response<()>, _>(status.clone()));
            let grpc = GrpcClassifier.classify(&Err::<http::Response<()>, _>(status.clone()));
            let boxed: BoxError = Box::new(status.clone());
            let boxed_http = HttpClassifier.classify(&Err::<http::Response<()>, _>(boxed));
            let boxed: BoxError = Box::new(status);
            let boxed_grpc = GrpcClassifier.classify(&Err::<http::Response<()>, _>(boxed));
            [http, grpc, boxed_http, boxed_grpc]
        };
        let refusals = [
            // The attribute's refusal, and `RefuseWithStatus`'s.
            Status::from(refusal("classify-status")),
            // What a tonic client makes of a boxed `Rejected`, and of one
            // inside an `io::Error`.
            Status::from_error(Box::new(refusal("classify-boxed"))),
            Status::from_error(Box::new(std::io::Error::other(refusal("classify-io")))),
        ];
        for status in refusals {
            assert!(matches!(status.code(), Code::Unavailable | Code::Unknown));
            assert!(!grpc_failure(&status), "{status:?}");
            assert_eq!(
                as_error(status.clone()),
                [Outcome::Neutral; 4],
                "{status:?}"
            );
        }

        let unavailable = Status::unavailable("down");
        assert!(grpc_failure(&unavailable));
        assert_eq!(as_error(unavailable), [Outcome::Failure; 4]);
        let breaker = crate::Breaker::builder()
            .name("classify-slow")
            .build()
            .unwrap();
        let timed_out = Status::from(crate::TimedOut::new(
            breaker.shared_name(),
            std::time::Duration::from_secs(1),
        ));
        assert_eq!(timed_out.code(), Code::DeadlineExceeded);
        assert!(grpc_failure(&timed_out), "a timeout is no refusal");
        assert_eq!(as_error(timed_out), [Outcome::Failure; 4]);
    }
}
