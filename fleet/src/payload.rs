//! Everything read from the store or the channel is hostile until parsed here:
//! size-capped, versioned, clamped, and (with a key) authenticated.
//!
//! An event is a *nudge*, not a state: `ff1 <kind> <origin> <mac> <breaker>`. A
//! receiver answers it by reading the breaker's keys back ([`crate::StoreSnapshot`]), so a
//! replayed or forged event can at most cause one read; the store's state, clamped,
//! is what gets applied. With [`crate::FleetConfig::hmac_key`] set, `<mac>` is the
//! hex HMAC-SHA256 of the version, namespace, kind, origin and breaker, and events
//! without a valid one are dropped before any read.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::time::Duration;

/// Longest payload or value accepted from the store.
pub const MAX_PAYLOAD: usize = 256;

const VERSION: &str = "ff1";

/// What an event says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// The fleet opened (or reopened) the breaker.
    Open,
    /// A fleet probe succeeded: the breaker closed.
    Close,
}

impl NoticeKind {
    fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Open => "open",
            NoticeKind::Close => "close",
        }
    }
}

/// A parsed, authenticated event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Open or close.
    pub kind: NoticeKind,
    /// Instance that caused it.
    pub origin: String,
    /// Breaker it is about.
    pub breaker: String,
}

/// Why an event was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Longer than [`MAX_PAYLOAD`].
    Oversized,
    /// Not UTF-8, wrong field count, unknown version or kind, bad names.
    Malformed,
    /// Signature missing or wrong while a key is configured.
    Forged,
}

/// Encodes and checks events for one namespace.
#[derive(Clone)]
pub struct Codec {
    namespace: String,
    key: Option<Hmac<Sha256>>,
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codec")
            .field("namespace", &self.namespace)
            .field("signed", &self.key.is_some())
            .finish()
    }
}

impl Codec {
    /// A codec for `namespace`, signing and verifying with `key` when given.
    pub fn new(namespace: &str, key: Option<&[u8]>) -> Self {
        Codec {
            namespace: namespace.to_owned(),
            key: key
                .map(|k| Hmac::<Sha256>::new_from_slice(k).expect("HMAC takes keys of any length")),
        }
    }

    fn mac(&self, kind: &str, origin: &str, breaker: &str) -> Option<Hmac<Sha256>> {
        let mut mac = self.key.clone()?;
        for part in [VERSION, &self.namespace, kind, origin, breaker] {
            mac.update(&(part.len() as u32).to_be_bytes());
            mac.update(part.as_bytes());
        }
        Some(mac)
    }

    /// The wire form of `notice`.
    pub fn encode(&self, notice: &Notice) -> String {
        let kind = notice.kind.as_str();
        let mac = match self.mac(kind, &notice.origin, &notice.breaker) {
            Some(mac) => hex(&mac.finalize().into_bytes()),
            None => "-".to_owned(),
        };
        format!(
            "{VERSION} {kind} {} {mac} {}",
            notice.origin, notice.breaker
        )
    }

    /// Parses and authenticates a payload received from the channel.
    pub fn decode(&self, payload: &[u8]) -> Result<Notice, Rejection> {
        if payload.len() > MAX_PAYLOAD {
            return Err(Rejection::Oversized);
        }
        let text = std::str::from_utf8(payload).map_err(|_| Rejection::Malformed)?;
        let mut fields = text.splitn(5, ' ');
        let (Some(version), Some(kind), Some(origin), Some(mac), Some(breaker)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(Rejection::Malformed);
        };
        let kind = match (version, kind) {
            (VERSION, "open") => NoticeKind::Open,
            (VERSION, "close") => NoticeKind::Close,
            _ => return Err(Rejection::Malformed),
        };
        let origin_ok = !origin.is_empty()
            && origin.len() <= 64
            && origin
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !origin_ok || !crate::keys::valid_breaker_name(breaker) {
            return Err(Rejection::Malformed);
        }
        if let Some(expected) = self.mac(kind.as_str(), origin, breaker) {
            let given = unhex(mac).ok_or(Rejection::Forged)?;
            expected
                .verify_slice(&given)
                .map_err(|_| Rejection::Forged)?;
        }
        Ok(Notice {
            kind,
            origin: origin.to_owned(),
            breaker: breaker.to_owned(),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Largest generation accepted (also the largest integer a Lua number holds exactly).
pub const MAX_GENERATION: u64 = 1 << 53;

/// A generation stored as a decimal string: at most 16 digits, positive, ≤ [`MAX_GENERATION`].
pub fn parse_generation(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 16 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    (1..=MAX_GENERATION).contains(&n).then_some(n)
}

/// A lease value `<instance>:<generation>`.
pub fn parse_lease(value: &[u8]) -> Option<(String, u64)> {
    if value.len() > MAX_PAYLOAD {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let (instance, generation) = text.rsplit_once(':')?;
    let ok = !instance.is_empty()
        && instance.len() <= 64
        && instance
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    ok.then(|| {
        Some((
            instance.to_owned(),
            parse_generation(generation.as_bytes())?,
        ))
    })?
}

/// A remaining time in milliseconds as the store reports it (`PTTL`), clamped to `cap`.
///
/// Absent keys (`-2`), keys without expiry (`-1`, never written by this crate) and
/// non-positive values give `None`: a remote effect without an end is not applied.
pub fn clamp_ttl(millis: i64, cap: Duration) -> Option<Duration> {
    (millis > 0).then(|| Duration::from_millis(millis as u64).min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice() -> Notice {
        Notice {
            kind: NoticeKind::Open,
            origin: "pod-1".into(),
            breaker: "inventory::check stock".into(),
        }
    }

    #[test]
    fn round_trip_signed_and_unsigned() {
        for key in [None, Some(&b"k3y"[..])] {
            let codec = Codec::new("ns", key);
            let wire = codec.encode(&notice());
            assert_eq!(codec.decode(wire.as_bytes()), Ok(notice()), "{wire}");
        }
    }

    #[test]
    fn signed_codec_refuses_unsigned_wrong_key_other_namespace_and_tampering() {
        let signed = Codec::new("ns", Some(b"k3y"));
        let unsigned = Codec::new("ns", None).encode(&notice());
        assert_eq!(signed.decode(unsigned.as_bytes()), Err(Rejection::Forged));
        let other_key = Codec::new("ns", Some(b"other")).encode(&notice());
        assert_eq!(signed.decode(other_key.as_bytes()), Err(Rejection::Forged));
        let other_ns = Codec::new("ns2", Some(b"k3y")).encode(&notice());
        assert_eq!(signed.decode(other_ns.as_bytes()), Err(Rejection::Forged));
        let tampered = signed.encode(&notice()).replace(" open ", " close ");
        assert_eq!(signed.decode(tampered.as_bytes()), Err(Rejection::Forged));
    }

    #[test]
    fn garbage_is_malformed_and_big_is_oversized() {
        let codec = Codec::new("ns", None);
        for bad in [
            &b""[..],
            b"ff1 open",
            b"ff2 open a - b",
            b"ff1 shut a - b",
            b"ff1 open a:b - c",
            b"\xff\xfe",
        ] {
            assert_eq!(codec.decode(bad), Err(Rejection::Malformed), "{bad:?}");
        }
        let big = format!("ff1 open a - {}", "x".repeat(300));
        assert_eq!(codec.decode(big.as_bytes()), Err(Rejection::Oversized));
    }

    #[test]
    fn values_are_checked_and_clamped() {
        assert_eq!(parse_generation(b"42"), Some(42));
        for bad in [&b"-1"[..], b"0", b"", b"1e9", b"99999999999999999", b" 1"] {
            assert_eq!(parse_generation(bad), None, "{bad:?}");
        }
        assert_eq!(parse_lease(b"pod-1:7"), Some(("pod-1".into(), 7)));
        assert_eq!(parse_lease(b"pod 1:7"), None);
        assert_eq!(parse_lease(b":7"), None);
        let cap = Duration::from_secs(60);
        assert_eq!(clamp_ttl(1500, cap), Some(Duration::from_millis(1500)));
        assert_eq!(clamp_ttl(i64::MAX, cap), Some(cap));
        assert_eq!(clamp_ttl(-1, cap), None);
        assert_eq!(clamp_ttl(-2, cap), None);
        assert_eq!(clamp_ttl(0, cap), None);
    }
}
