//! A breaker per key of the request (feature `keyed`).

use std::borrow::Cow;
use std::hash::Hash;
use std::mem;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::future::{Handle, Kind, MemberSlot, OwnedPermit, PanicGuard, ResponseFuture, State};
use super::layer::{CircuitBreaker, CircuitBreakerLayer, inner_ready};
use super::refuse::{OnRejected, RefuseWithError};
use crate::integrations::classify::{Classify, HttpClassifier};
use crate::policy::bulkhead::Bulkhead;
use crate::{Family, Key, Member};

/// Finds the breaker of a request in a [`Family`]: the key function of
/// a [`CircuitBreakerLayer::per_key`] layer. Implemented by [`ByAuthority`]
/// and by every closure `Fn(&Req) -> K` returning an owned key (a `String`,
/// an integer, a tuple of them).
pub(super) trait KeyOf<Req, K> {
    /// The breaker of `request`'s key in `family`, made if the key is
    /// new.
    fn member(&self, family: &Family<K>, request: &Req) -> Arc<Member>;
}

impl<Req, K, F> KeyOf<Req, K> for F
where
    F: Fn(&Req) -> K,
    K: Key<Owned = K> + Clone + Eq + Send + Sync + 'static,
{
    #[inline]
    fn member(&self, family: &Family<K>, request: &Req) -> Arc<Member> {
        family.get(&self(request))
    }
}

/// Keys an `http::Request` by its authority, `host` or `host:port` as the
/// request names it: the URI's (a client's absolute-form request, or
/// HTTP/2's `:authority`), else the `Host` header, else `""`. User
/// information (`user:password@`) is left out, so it never reaches a
/// breaker's name. One key however the host is spelled: the name in
/// lower case, without a trailing dot, and without the scheme's default
/// port when the URI names its scheme (`http://Inventory.:80` is
/// `inventory`). Looked up without allocating, unless the spelling
/// needed that.
///
/// ```
/// use failfast_runtime::tower::{ByAuthority, CircuitBreakerLayer};
/// use failfast_runtime::{Breaker, Family};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), tower::BoxError> {
/// let hosts: Family<String> = Family::builder(Breaker::builder().name("upstream")).build()?;
/// let service = CircuitBreakerLayer::per_key(hosts.clone(), ByAuthority).layer(service_fn(
///     |_: http::Request<()>| async { Ok::<_, std::io::Error>(http::Response::new(())) },
/// ));
/// for request in [
///     http::Request::get("http://user:secret@inventory:8080/stock").body(())?,
///     http::Request::get("/stock").header("host", "search").body(())?,
///     http::Request::get("/stock").header("host", "Search.").body(())?,
/// ] {
///     service.clone().oneshot(request).await?;
/// }
/// let mut names: Vec<_> = hosts.members().iter().map(|m| m.name().to_owned()).collect();
/// names.sort();
/// assert_eq!(names, ["upstream[inventory:8080]", "upstream[search]"]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ByAuthority;

impl<B> KeyOf<http::Request<B>, String> for ByAuthority {
    fn member(&self, family: &Family<String>, request: &http::Request<B>) -> Arc<Member> {
        let authority = match request.uri().authority() {
            Some(authority) => authority.as_str(),
            None => request
                .headers()
                .get(http::header::HOST)
                .and_then(|host| host.to_str().ok())
                .unwrap_or(""),
        };
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let default_port = match request.uri().scheme_str() {
            Some("http") => Some("80"),
            Some("https") => Some("443"),
            _ => None,
        };
        match one_spelling(host, default_port) {
            Cow::Borrowed(host) => family.get(host),
            Cow::Owned(host) => family.get(host.as_str()),
        }
    }
}

/// `authority` (`host` or `host:port`) in lower case, without a
/// trailing dot after the host, and without the port when it is
/// `default_port` (or empty).
fn one_spelling<'a>(authority: &'a str, default_port: Option<&str>) -> Cow<'a, str> {
    // An IPv6 address (`[::1]`) holds colons of its own.
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (authority, None),
    };
    let kept_port = port.filter(|port| !port.is_empty() && Some(*port) != default_port);
    let name = match host.strip_suffix('.') {
        Some(name) if !name.is_empty() => name,
        _ => host,
    };
    let lower = !name.bytes().any(|b| b.is_ascii_uppercase());
    if lower && name.len() == host.len() && kept_port == port {
        return Cow::Borrowed(authority);
    }
    let mut key = name.to_ascii_lowercase();
    if let Some(port) = kept_port {
        key.push(':');
        key.push_str(port);
    }
    Cow::Owned(key)
}

/// The breakers of a [`per_key`](CircuitBreakerLayer::per_key) layer: a family and
/// the key function that picks a request's member. The `B` of such a layer
/// and of the service it makes, `CircuitBreaker<S, C, R, PerKey<K, KF>>`.
#[derive(Debug)]
pub struct PerKey<K, KF> {
    family: Family<K>,
    key: KF,
}

impl<K, KF: Clone> Clone for PerKey<K, KF> {
    fn clone(&self) -> Self {
        PerKey {
            family: self.family.clone(),
            key: self.key.clone(),
        }
    }
}

impl CircuitBreakerLayer {
    /// A layer guarding each request with the breaker of its key in
    /// `family`, found by `key` (a closure `Fn(&Req) -> K`, or
    /// [`ByAuthority`]); a key's breaker is made on its first request.
    /// The family is registered
    /// ([`registry::register`](crate::ops::registry::register)).
    ///
    /// ```
    /// use failfast_runtime::tower::CircuitBreakerLayer;
    /// use failfast_runtime::{Breaker, Family};
    ///
    /// // One breaker per tenant, named "search[TENANT]".
    /// let tenants: Family<String> = Family::builder(Breaker::builder().name("search").max_keys(256))
    ///     .build()?;
    /// let layer = CircuitBreakerLayer::per_key(tenants, |request: &http::Request<String>| {
    ///     let tenant = request.headers().get("x-tenant").and_then(|t| t.to_str().ok());
    ///     tenant.unwrap_or("anonymous").to_owned()
    /// });
    /// # let _ = layer;
    /// # Ok::<(), failfast_runtime::ConfigError>(())
    /// ```
    pub fn per_key<K, KF>(
        family: Family<K>,
        key: KF,
    ) -> CircuitBreakerLayer<HttpClassifier, RefuseWithError, PerKey<K, KF>>
    where
        K: Clone + Hash + Eq + Send + Sync + 'static,
    {
        family.register();
        CircuitBreakerLayer {
            breaker: PerKey { family, key },
            classifier: HttpClassifier,
            on_rejected: RefuseWithError,
        }
    }
}

impl<S, Req, K, KF, C, R> Service<Req> for CircuitBreaker<S, C, R, PerKey<K, KF>>
where
    S: Service<Req>,
    KF: KeyOf<Req, K>,
    C: Classify<S::Response, S::Error> + Clone,
    R: OnRejected<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = ResponseFuture<S::Future, C, R>;

    /// The inner service's readiness; no breaker is asked (see the
    /// [module documentation](super#readiness-never-takes-a-trial)).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        inner_ready(&mut self.inner, &self.on_rejected, cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let refused = |rejected| ResponseFuture {
            kind: Kind::Refused,
            state: State::Refused(Some(rejected)),
            classifier: self.classifier.clone(),
            on_rejected: self.on_rejected.clone(),
        };
        let member = self.breaker.key.member(&self.breaker.family, &request);
        let mut admitted = match member.breaker().acquire() {
            Ok(permit) => permit,
            Err(rejected) => return refused(rejected),
        };
        // The family's `max_concurrent`, per key: a place in the key's
        // bulkhead once the breaker has admitted the call, held until
        // the response future is dropped.
        let holds_slot = match member.bulkhead().map(Bulkhead::try_enter) {
            None => false,
            Some(Some(slot)) => {
                slot.keep();
                true
            }
            Some(None) => {
                let rejected =
                    crate::policy::bulkhead::concurrency_limit(member.breaker(), &mut admitted);
                drop(admitted);
                return refused(rejected);
            }
        };
        let detached = admitted.detach();
        let mut permit = OwnedPermit {
            breaker: Handle::Member(MemberSlot {
                stripe: member.hold(),
                member,
                holds_slot,
            }),
            detached: Some(detached),
        };
        // A panic in the inner `call` is a failure.
        let guard = PanicGuard(&mut permit);
        let future = self.inner.call(request);
        mem::forget(guard);
        ResponseFuture {
            kind: Kind::Admitted { future },
            state: State::Admitted(permit),
            classifier: self.classifier.clone(),
            on_rejected: self.on_rejected.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::super::CircuitBreakerLayer;
    use super::ByAuthority;
    use crate::Breaker;
    use tower::Layer;

    /// The place a keyed call holds in its member's bulkhead comes back when
    /// its response future is done with, so the next call to that key passes.
    #[tokio::test]
    async fn a_keyed_call_gives_its_place_back_when_it_is_done() {
        use tower::{ServiceExt, service_fn};

        let hosts: crate::Family<String> =
            crate::Family::builder(Breaker::builder().name("tower-places"))
                .max_concurrent(1)
                .build()
                .unwrap();
        let service = CircuitBreakerLayer::per_key(hosts.clone(), ByAuthority).layer(service_fn(
            |_: http::Request<()>| async { Ok::<_, Infallible>(http::Response::new(())) },
        ));
        for call in 0..3 {
            let request = http::Request::get("http://db-1/").body(()).unwrap();
            let answered = service.clone().oneshot(request).await;
            assert!(answered.is_ok(), "call {call} was refused");
            let place = hosts.get("db-1");
            assert_eq!(place.bulkhead().unwrap().running(), 0, "call {call}");
        }
    }

    /// A keyed layer is ready when the service it wraps is, as the layer of
    /// one breaker is.
    #[tokio::test]
    async fn readiness_is_the_inner_services() {
        use tower::limit::ConcurrencyLimit;
        use tower::service_fn;

        let hosts: crate::Family<String> =
            crate::Family::builder(Breaker::builder().name("tower-keyed-ready"))
                .build()
                .unwrap();
        let service =
            CircuitBreakerLayer::per_key(hosts, ByAuthority).layer(ConcurrencyLimit::new(
                service_fn(|request: http::Request<u32>| async move {
                    Ok::<_, Infallible>(http::Response::new(*request.body()))
                }),
                1,
            ));
        super::super::layer::tests::ready_when_a_limit_of_one_is(service, |n| {
            http::Request::get("http://db-1/").body(n).unwrap()
        })
        .await;
    }
}
