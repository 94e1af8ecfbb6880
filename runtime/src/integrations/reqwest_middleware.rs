//! A circuit breaker per host for a `reqwest` client, as a
//! [`reqwest_middleware::Middleware`] (feature `reqwest-middleware`).
//!
//! [`CircuitBreakerMiddleware`] asks a breaker before every request; a
//! refused request is not sent, and the outcome of a sent one is decided by
//! a classifier ([`Classify`]) from the `Result<reqwest::Response,
//! reqwest_middleware::Error>` the rest of the chain produced. By default
//! ([`per_host`](CircuitBreakerMiddleware::per_host)):
//!
//! - **one breaker per host**: a [`Family`] keyed by the request URL's host
//!   and port ([`Host`]), so a sick host does not refuse calls to the
//!   healthy ones; members are named `NAME[host:port]`;
//! - **the HTTP classifier** ([`HttpClassifier`]): 5xx and errors
//!   (connection refused, timeouts, …) are failures, 429 and the other 4xx
//!   neutral, the rest successes; a refusal of another breaker further down
//!   the chain is neutral.
//!
//! The middleware's breakers are registered when it is made: the family
//! ([`registry::register`](crate::ops::registry::register)) is listed by
//! [`registry::families`](crate::ops::registry::families) and a host's breaker
//! found by [`registry::get`](crate::ops::registry::get)`("NAME[host:port]")`;
//! the one breaker of [`new`](CircuitBreakerMiddleware::new) is listed by
//! [`registry::all`](crate::ops::registry::all).
//!
//! A refusal is a [`reqwest_middleware::Error::Middleware`] holding the
//! [`Rejected`](crate::Rejected): find it with `downcast_ref::<Rejected>()` on the
//! variant's error.
//!
//! ```no_run
//! use failfast_runtime::reqwest_middleware::CircuitBreakerMiddleware;
//! use failfast_runtime::{Breaker, Family, Rejected};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let hosts = Family::builder(
//!     Breaker::builder().name("upstream").threshold(5).recovery(Duration::from_secs(30)),
//! )
//! .build()?;
//! let breakers = CircuitBreakerMiddleware::per_host(hosts);
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(breakers)
//!     .build();
//!
//! match client.get("http://inventory.internal/stock/SKU-1").send().await {
//!     Ok(response) => println!("{}", response.status()),
//!     Err(reqwest_middleware::Error::Middleware(error)) if error.is::<Rejected>() => {
//!         let refused = error.downcast_ref::<Rejected>().unwrap();
//!         println!("not sent: {refused}, next trial in {:?}", refused.retry_after());
//!     }
//!     Err(error) => println!("failed: {error}"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The permit is held while the rest of the chain runs (and past it, for a
//! response left to its body: see below): a request future dropped before
//! it finished (a caller's timeout, a cancelled task) gives a half-open
//! trial back and is neutral, or a slow call once it ran longer than the
//! breaker's `slow`; a panic further down the chain is a failure.
//! When the family was built with
//! [`max_concurrent`](crate::FamilyBuilder::max_concurrent), each host's
//! concurrency limit is applied too, and a request over it is refused the
//! same way (after waiting its turn for up to the family's
//! [`max_wait`](crate::Builder::max_wait), as a future, if it has
//! one).
//!
//! # When the outcome is decided
//!
//! The classifier sees the response's head (or the error). A response it
//! counts as a failure or neutral (a 5xx, a 4xx), and an error, are
//! recorded then. A response it counts as a success is decided by its
//! body: the middleware hands the response back with its body watched, and
//!
//! - a body that fails partway (the connection closed before
//!   `Content-Length` bytes, the client's timeout) is a failure;
//! - a body read to its end is a success;
//! - a body dropped before its end (the response dropped unread, or half
//!   read) is a success too: the host answered well as far as anyone
//!   looked. Not neutral, as a dropped request is: a client that reads
//!   only statuses would then count its failures and none of its
//!   successes, and a half-open breaker would never close under it.
//!
//! Each is recorded when it happens, so the slow-call rule times the
//! request to the end of its body, its error or its drop. An empty body
//! (`HEAD`, 204, 304, `Content-Length: 0`) ends with its head, and is
//! decided then.
//!
//! Until its verdict a request keeps what it took: its permit (a half-open
//! trial stays taken), its host's breaker (the family does not evict it
//! under a streaming body) and its place under the host's concurrency
//! limit. A response kept unread keeps them too: read it or drop it.
//!
//! The response is otherwise the one the rest of the chain gave: its
//! status, headers, extensions, [`url`](Response::url) and content length.
//! An error of the body reaches the caller as the error reqwest gives for
//! it (the same kind, message and URL: `is_decode`, `is_timeout`), with
//! two more `reqwest::Error`s of kind body wrapped around its cause in the
//! [`source`](std::error::Error::source) chain: the body passed through
//! `http::Response` and back, the only way to wrap it.
//!
//! # Redirects
//!
//! reqwest follows redirects inside the client, below every middleware, so
//! a request is asked of its own host's breaker only. Its answer is charged
//! to the host that gave it, the response's [`url`](Response::url) (or a
//! transport error's): when host A redirects to host B, B's breaker counts
//! B's answer as a call of its own when it admits one (not while it is
//! open), decided as above, and A's call is a success, A having answered,
//! recorded when B's head arrives. A's call is timed to B's head, for the
//! slow-call rule. To ask each host's breaker before it is called, turn the
//! client's redirects off (`reqwest::redirect::Policy::none()`) and follow
//! them above the middleware.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::integrations::classify::{Classify, HttpClassifier};
use crate::ops::registry::BreakerRef;
use crate::policy::bulkhead::{Bulkhead, BulkheadPermit};
use crate::policy::keyed::Member;
use crate::{Breaker, Family, Key, Outcome, Permit};
use verdict::Verdict;

mod verdict;

/// A host a [`CircuitBreakerMiddleware`] keeps a breaker for: the request
/// URL's host and port (the scheme's default port when the URL names none).
/// Shown as `host:port`, which is how the member breakers are named. One
/// host however it is spelled: the name in lower case, without a trailing
/// dot (`Example.COM.` is `example.com`).
///
/// The key of the [`Family`] a per-host middleware is built from
/// (`Family<Host>`); the middleware makes it from each request's URL.
///
/// ```
/// use failfast_runtime::reqwest_middleware::{CircuitBreakerMiddleware, Host};
/// use failfast_runtime::{Breaker, Family};
///
/// let hosts: Family<Host> = Family::builder(Breaker::builder().name("api")).build()?;
/// let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
/// let url = reqwest::Url::parse("https://api.example.com/v1/items").unwrap();
/// assert_eq!(middleware.breaker_for(&url).unwrap().name(), "api[api.example.com:443]");
/// let url = reqwest::Url::parse("https://API.Example.com.:443/v1/items").unwrap();
/// assert_eq!(middleware.breaker_for(&url).unwrap().name(), "api[api.example.com:443]");
/// assert_eq!(hosts.stats().stored, 1);
/// # Ok::<(), failfast_runtime::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    host: String,
    port: u16,
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Hashes as the borrowed host of a request's URL does, so that the
/// family's lookup of a request's host finds its key.
impl Hash for Host {
    fn hash<H: Hasher>(&self, state: &mut H) {
        HostRef {
            host: Cow::Borrowed(&self.host),
            port: self.port,
        }
        .hash(state);
    }
}

/// A request's host, borrowed from its URL: the lookup allocates nothing
/// (unless the name has capitals, which the URL parser already lowered for
/// `http` and `https`).
#[derive(Hash)]
struct HostRef<'a> {
    host: Cow<'a, str>,
    port: u16,
}

impl<'a> HostRef<'a> {
    fn of(url: &'a reqwest::Url) -> Option<Self> {
        let host = url.host_str()?;
        // `example.com.` is `example.com` (an address never ends in a dot).
        let host = match host.strip_suffix('.') {
            Some(name) if !name.is_empty() => name,
            _ => host,
        };
        let host = if host.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(host.to_ascii_lowercase())
        } else {
            Cow::Borrowed(host)
        };
        Some(HostRef {
            host,
            port: url.port_or_known_default()?,
        })
    }
}

impl Key for HostRef<'_> {
    type Owned = Host;
    fn to_key(&self) -> Host {
        Host {
            host: self.host.clone().into_owned(),
            port: self.port,
        }
    }
    fn matches(&self, owned: &Host) -> bool {
        self.host == owned.host && self.port == owned.port
    }
    fn label(&self, out: &mut String) {
        out.push_str(&self.host);
        out.push(':');
        out.push_str(&self.port.to_string());
    }
}

/// Which breaker guards a request.
#[derive(Clone, Debug)]
enum Breakers {
    /// One per host.
    PerHost(Family<Host>),
    /// One for every request.
    One(BreakerRef),
}

/// The breaker a request goes through, held for the request's duration.
enum Guard {
    /// A host's breaker, held on a lease stripe (see `Member::hold`) so the
    /// family does not evict it under the request.
    Member(Arc<Member>, usize),
    One(BreakerRef),
}

impl Guard {
    fn member(member: Arc<Member>) -> Guard {
        let stripe = member.hold();
        Guard::Member(member, stripe)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Guard::Member(member, stripe) = self {
            member.release(*stripe);
        }
    }
}

impl Guard {
    fn breaker(&self) -> &Breaker {
        match self {
            Guard::Member(member, _) => member,
            Guard::One(breaker) => breaker,
        }
    }

    /// The host's concurrency limit, when its family has one.
    fn bulkhead(&self) -> Option<&Bulkhead> {
        match self {
            Guard::Member(member, _) => member.bulkhead(),
            Guard::One(_) => None,
        }
    }
}

/// A [`reqwest_middleware::Middleware`] that guards requests with circuit
/// breakers: one per host by default. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct CircuitBreakerMiddleware<C = HttpClassifier> {
    breakers: Breakers,
    classifier: C,
}

impl CircuitBreakerMiddleware {
    /// One breaker per host, from `family` (its settings, and `max_keys` or
    /// `max_concurrent` if you like): each host's breaker is made on its
    /// first request and named `NAME[host:port]`. Classifies with
    /// [`HttpClassifier`]. The family is registered
    /// ([`registry::register`](crate::ops::registry::register)).
    ///
    /// ```
    /// use failfast_runtime::reqwest_middleware::{CircuitBreakerMiddleware, Host};
    /// use failfast_runtime::{Breaker, Family};
    ///
    /// let hosts: Family<Host> = Family::builder(Breaker::builder().name("upstream").max_keys(16))
    ///     .max_concurrent(32)
    ///     .build()?;
    /// let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
    /// assert_eq!(hosts.stats().stored, 0); // a host's breaker is made on its first request
    /// assert!(failfast_runtime::registry::family("upstream").is_some());
    /// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
    ///     .with(middleware)
    ///     .build();
    /// # let _ = client;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    #[must_use]
    pub fn per_host(family: Family<Host>) -> Self {
        family.register();
        Self {
            breakers: Breakers::PerHost(family),
            classifier: HttpClassifier,
        }
    }

    /// One breaker for every request, whatever its host (a [`Breaker`],
    /// `Arc<Breaker>`, `&'static Breaker` or [`BreakerRef`]), which is
    /// registered ([`registry::register`](crate::ops::registry::register)).
    ///
    /// ```
    /// use failfast_runtime::reqwest_middleware::CircuitBreakerMiddleware;
    /// use failfast_runtime::{registry, Breaker};
    ///
    /// let middleware = CircuitBreakerMiddleware::new(Breaker::builder().name("payments").build()?);
    /// assert!(registry::get("payments").is_some());
    /// # let _ = middleware;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn new(breaker: impl Into<BreakerRef>) -> Self {
        let breaker = breaker.into();
        crate::ops::registry::register(&breaker);
        Self {
            breakers: Breakers::One(breaker),
            classifier: HttpClassifier,
        }
    }
}

impl<C> CircuitBreakerMiddleware<C> {
    /// The same middleware, deciding outcomes with `classifier`, a closure
    /// `Fn(&Result<reqwest::Response, reqwest_middleware::Error>) -> Outcome`
    /// or any [`Classify`].
    ///
    /// ```
    /// use failfast_runtime::reqwest_middleware::CircuitBreakerMiddleware;
    /// use failfast_runtime::{Breaker, Family, Outcome};
    ///
    /// // 429 is a failure here too: this upstream throttles when it is overloaded.
    /// let hosts = Family::builder(Breaker::builder().name("search")).build()?;
    /// let middleware = CircuitBreakerMiddleware::per_host(hosts)
    ///     .classifier(|result: &Result<reqwest::Response, reqwest_middleware::Error>| match result {
    ///         Ok(r) if r.status().is_server_error() || r.status() == 429 => Outcome::Failure,
    ///         Ok(r) if r.status().is_client_error() => Outcome::Neutral,
    ///         Ok(_) => Outcome::Success,
    ///         Err(_) => Outcome::Failure,
    ///     });
    /// # let _ = middleware;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> CircuitBreakerMiddleware<C2> {
        CircuitBreakerMiddleware {
            breakers: self.breakers,
            classifier,
        }
    }

    /// The breaker a request to `url` goes through: its host's (made now if
    /// it is the host's first), or the single breaker. `None` for a URL
    /// without a host under per-host breakers.
    ///
    /// ```
    /// use failfast_runtime::reqwest_middleware::CircuitBreakerMiddleware;
    /// use failfast_runtime::{Breaker, Family, State};
    ///
    /// let hosts = Family::builder(Breaker::builder().name("upstream")).build()?;
    /// let middleware = CircuitBreakerMiddleware::per_host(hosts);
    /// let url = reqwest::Url::parse("http://10.0.0.3:8080/health").unwrap();
    /// let breaker = middleware.breaker_for(&url).unwrap();
    /// assert_eq!(breaker.name(), "upstream[10.0.0.3:8080]");
    /// assert_eq!(breaker.state(), State::Closed);
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    #[must_use]
    pub fn breaker_for(
        &self,
        url: &reqwest::Url,
    ) -> Option<impl std::ops::Deref<Target = Breaker> + use<C>> {
        self.guard(url).map(GuardRef)
    }

    fn guard(&self, url: &reqwest::Url) -> Option<Guard> {
        match &self.breakers {
            Breakers::PerHost(family) => Some(Guard::member(family.get(&HostRef::of(url)?))),
            Breakers::One(breaker) => Some(Guard::One(breaker.clone())),
        }
    }

    /// The breaker of the host that gave `result`, when it is not the one
    /// asked (`asked`): reqwest followed a redirect to another host.
    fn answered_by(
        &self,
        asked: &Guard,
        result: &reqwest_middleware::Result<Response>,
    ) -> Option<Arc<Member>> {
        let (Breakers::PerHost(family), Guard::Member(asked, _)) = (&self.breakers, asked) else {
            return None;
        };
        let url = match result {
            Ok(response) => response.url(),
            Err(reqwest_middleware::Error::Reqwest(error)) => error.url()?,
            Err(reqwest_middleware::Error::Middleware(_)) => return None,
        };
        // What reqwest puts in a response built from an `http::Response`
        // without a URL (a cache middleware's answer): not a host.
        if url.host_str() == Some(NO_URL) {
            return None;
        }
        let answered = family.get(&HostRef::of(url)?);
        (!Arc::ptr_eq(&answered, asked)).then_some(answered)
    }
}

/// The host of the URL reqwest gives a response converted from an
/// `http::Response` that named none.
const NO_URL: &str = "no.url.provided.local";

/// A [`Guard`] shown as its breaker.
struct GuardRef(Guard);

impl std::ops::Deref for GuardRef {
    type Target = Breaker;

    fn deref(&self) -> &Breaker {
        self.0.breaker()
    }
}

/// Resolves a permit held across the rest of the chain: recorded when the
/// chain answers; dropped before that, an abandoned call (neutral, or slow
/// past `slow`), or a failure when the chain panicked.
struct Held<'a>(Option<Permit<'a>>);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(mut permit) = self.0.take() {
            if !std::thread::panicking() {
                permit.abandoned();
            }
            // Dropped while unwinding, the permit records a failure.
        }
    }
}

#[async_trait::async_trait]
impl<C> Middleware for CircuitBreakerMiddleware<C>
where
    C: Classify<Response, reqwest_middleware::Error> + Send + Sync + 'static,
{
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let Some(guard) = self.guard(request.url()) else {
            return next.run(request, extensions).await;
        };
        let breaker = guard.breaker();
        let mut permit = breaker
            .acquire()
            .map_err(reqwest_middleware::Error::middleware)?;
        // With the family's `max_wait`, the request waits its turn for a
        // place, as a future.
        let slot = match guard.bulkhead() {
            Some(bulkhead) => Some(
                bulkhead
                    .enter_async(breaker, &mut permit)
                    .await
                    .map_err(reqwest_middleware::Error::middleware)?,
            ),
            None => None,
        };
        let (result, permit) = {
            let mut held = Held(Some(permit));
            let result = next.run(request, extensions).await;
            match held.0.take() {
                Some(permit) => (result, permit),
                None => return result,
            }
        };
        let outcome = self.classifier.classify(&result);
        let mut verdict = match self.answered_by(&guard, &result) {
            None => {
                // The place is kept until the verdict, with the permit.
                let place = slot.map(BulkheadPermit::keep).is_some();
                let permit = permit.detach();
                Verdict::new(guard, permit, place)
            }
            Some(answered) => {
                // The asked host answered with a redirect.
                permit.record(Outcome::Success);
                drop(slot);
                let answered = Guard::member(answered);
                let Ok(permit) = answered.breaker().acquire() else {
                    return result;
                };
                let permit = permit.detach();
                Verdict::new(answered, permit, false)
            }
        };
        match result {
            Ok(response) if outcome == Outcome::Success => Ok(verdict.at_end_of_body(response)),
            result => {
                verdict.decide(outcome);
                result
            }
        }
    }
}

impl<E: 'static> Classify<Response, E> for HttpClassifier {
    /// As for an `http::Response`: 5xx and errors fail, 4xx and refusals of
    /// breakers further down the chain are neutral.
    #[inline]
    fn classify(&self, result: &Result<Response, E>) -> Outcome {
        match result {
            Ok(response) => crate::integrations::classify::status_outcome(response.status()),
            Err(error) => crate::integrations::classify::error_outcome(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    /// A host key displays as it appears in its breaker's name.
    #[test]
    fn a_host_displays_as_in_its_breakers_name() {
        let url = url("https://API.Example.com.:443/v1/items");
        let host = HostRef::of(&url).unwrap();
        let mut label = String::new();
        host.label(&mut label);
        assert_eq!(host.to_key().to_string(), "api.example.com:443");
        assert_eq!(host.to_key().to_string(), label);
    }

    /// The dot that ends a name is dropped, unless the name is that dot
    /// alone: no host's key is empty.
    #[test]
    fn a_host_of_a_dot_alone_keeps_it() {
        for (text, key) in [("http://./a", ".:80"), ("http://a.:8080/", "a:8080")] {
            let url = url(text);
            assert_eq!(HostRef::of(&url).unwrap().to_key().to_string(), key);
        }
    }

    /// Many hosts, each with its breaker: a lookup is told apart from the
    /// other hosts stored beside it in the map, not only by its hash.
    #[test]
    fn each_of_many_hosts_finds_its_own_breaker() {
        let hosts: Family<Host> = Family::builder(Breaker::builder().name("many").max_keys(512))
            .build()
            .unwrap();
        let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
        let name = |i: u32| format!("h{i}.example:{}", 1000 + i % 7);
        for i in 0..512 {
            let url = url(&format!("http://{}/", name(i)));
            let breaker = middleware.breaker_for(&url).unwrap();
            assert_eq!(breaker.name(), format!("many[{}]", name(i)));
        }
        assert_eq!(hosts.stats().created, 512);
    }

    /// Requests to one host find the breaker its first request made, whatever
    /// their path; another port is another host.
    #[test]
    fn a_host_keeps_one_breaker_across_requests() {
        let hosts: Family<Host> = Family::builder(Breaker::builder().name("upstream"))
            .build()
            .unwrap();
        let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
        let first = middleware
            .breaker_for(&url("http://10.0.0.3:8080/a"))
            .unwrap();
        let again = middleware
            .breaker_for(&url("http://10.0.0.3:8080/b?q=1"))
            .unwrap();
        assert!(std::ptr::eq(&*first, &*again), "{}", again.name());
        let other = middleware
            .breaker_for(&url("http://10.0.0.3:8081/a"))
            .unwrap();
        assert!(!std::ptr::eq(&*first, &*other));
        assert_eq!(other.name(), "upstream[10.0.0.3:8081]");
        assert_eq!((hosts.stats().stored, hosts.stats().created), (2, 2));
    }

    /// A request holds its host's breaker only while it runs: held, the
    /// family may not evict it and a new host gets the overflow breaker;
    /// let go, the next new host takes its place.
    #[test]
    fn a_request_holds_its_hosts_breaker_only_while_it_runs() {
        let clock = crate::ManualClock::new();
        let hosts: Family<Host> = Family::builder(
            Breaker::builder()
                .name("held")
                .clock(clock.clone())
                .max_keys(1),
        )
        .build()
        .unwrap();
        let middleware = CircuitBreakerMiddleware::per_host(hosts.clone());
        let held = middleware.guard(&url("http://a:80/")).unwrap();
        let other = middleware.guard(&url("http://b:80/")).unwrap();
        assert_eq!(other.breaker().name(), "held[*]");
        drop((held, other));
        // A full family is looked through again a second after it was found
        // full.
        clock.advance(std::time::Duration::from_secs(1));
        let next = middleware.guard(&url("http://c:80/")).unwrap();
        assert_eq!(next.breaker().name(), "held[c:80]");
        assert_eq!(hosts.stats().evicted, 1);
    }
}
