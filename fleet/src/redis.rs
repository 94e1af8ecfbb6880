//! The Redis transport: Lua scripts, one multiplexed connection (one per node
//! on Redis Cluster) and RESP3 push for events.
//!
//! Client choice: the `redis` crate (pinned), because its `ConnectionManager` gives
//! exactly the three things this transport needs from a client: a response timeout
//! per command, reconnection with exponential backoff, and RESP3 push delivery with
//! automatic resubscription on the same multiplexed connection (one socket per
//! process). `fred` offers the same with a larger surface (its own reconnect policy,
//! pool and runtime types); nothing here needs more, and scripts, `SET NX PX` and
//! `PUBLISH` look the same in both.
//!
//! Redis Cluster (`redis+cluster://` URLs): the same crate's cluster client
//! (`cluster-async`) routes each script by its first key (one breaker's keys
//! share a hash tag, so one slot), follows `MOVED` and `ASK`, reconnects node
//! by node and keeps the subscription across failovers (it resubscribes on
//! the node that owns the channel's slot; a `PUBLISH` reaches every node's
//! subscribers). `SCRIPT LOAD` goes to every node.
//!
//! Every script uses the store's own clock (`TIME`) and writes only keys with an
//! expiry. Values found in the store are never trusted: wrong types are deleted or
//! ignored, numbers are range-checked, and keys without expiry are repaired.

use crate::config::FleetConfig;
use crate::keys::{BreakerKeys, channel};
use crate::payload::{self, Codec, Notice, NoticeKind, clamp_ttl, parse_generation, parse_lease};
use crate::transport::Refusal;
use crate::transport::{
    FleetOpen, Incoming, LeaseHolder, LeaseOutcome, ReportOutcome, StoreSnapshot, Transport,
    TransportError, TransportResult, VoteOutcome,
};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, ErrorKind, IntoConnectionInfo, Pipeline, ProtocolVersion, PushInfo, PushKind, RedisError,
    RedisFuture, Script, Value,
};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// Helpers shared by the scripts: type repair, range-checked numbers, the open step.
const PRELUDE: &str = r"
local function clean(key, kind)
  local t = redis.call('TYPE', key).ok
  if t ~= kind and t ~= 'none' then redis.call('DEL', key) end
end
local function num(v, lo, hi)
  local n = tonumber(v)
  if n == nil or n ~= n or n < lo or n > hi then return lo end
  return math.floor(n)
end
local function str(key)
  if redis.call('TYPE', key).ok ~= 'string' then return -2, false end
  return redis.call('PTTL', key), redis.call('GET', key)
end
-- Opens the fleet at the next generation for min(base * 2^level, cap) ms and publishes.
local function open_next(open, gen, base, cap, state_ttl, chan, payload)
  clean(gen, 'hash')
  local g = num(redis.call('HGET', gen, 'gen'), 0, 9007199254740991) + 1
  local level = num(redis.call('HGET', gen, 'level'), 0, 40)
  local ms = math.min(tonumber(base) * 2 ^ level, tonumber(cap))
  local gs = string.format('%d', g)
  redis.call('HSET', gen, 'gen', gs, 'level', string.format('%d', level + 1))
  redis.call('PEXPIRE', gen, state_ttl)
  redis.call('SET', open, gs, 'PX', string.format('%d', ms))
  redis.call('PUBLISH', chan, payload)
  return gs, ms
end
";

/// KEYS: votes, open, gen. ARGV: member, fingerprint prefix, window ms, quorum, base ms,
/// cap ms, state ttl ms, channel, payload.
/// Reply: {0 counted | 1 opened | 2 already open, generation, remaining ms, votes}.
const VOTE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
clean(KEYS[1], 'zset')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local votes = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(m, 1, #ARGV[2]) == ARGV[2] then votes = votes + 1 end
end
local pttl, g = str(KEYS[2])
if pttl > 0 then return {2, g, pttl, votes} end
if votes < tonumber(ARGV[4]) then return {0, false, 0, votes} end
local gs, ms = open_next(KEYS[2], KEYS[3], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
return {1, gs, ms, votes}
";

/// KEYS: open, probe, gen. Reply: {open pttl, open value, probe pttl, probe value, closed}.
const SNAPSHOT: &str = r"
local opttl, oval = str(KEYS[1])
local pptl, pval = str(KEYS[2])
local closed = false
if redis.call('TYPE', KEYS[3]).ok == 'hash' then closed = redis.call('HGET', KEYS[3], 'closed') end
return {opttl, oval, pptl, pval, closed}
";

/// KEYS: probe, gen. ARGV: `instance:generation`, lease ms, generation.
/// Reply: {1 won | 0 lost | 2 stale, pttl}.
///
/// A lease is only for the newest generation: asking for an older one is
/// refused (stale), and a lease still held for an older one is void (its
/// report would be refused) and is taken over.
const ACQUIRE: &str = r"
local current = 0
if redis.call('TYPE', KEYS[2]).ok == 'hash' then
  current = num(redis.call('HGET', KEYS[2], 'gen'), 0, 9007199254740991)
end
local asked = num(ARGV[3], 0, 9007199254740991)
if asked < current then return {2, 0} end
clean(KEYS[1], 'string')
local pttl, holder = str(KEYS[1])
if pttl == -1 then redis.call('DEL', KEYS[1]) end
if holder then
  local held = tonumber(string.match(holder, ':(%d+)$'))
  if held == nil or held < current then redis.call('DEL', KEYS[1]) end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, tonumber(ARGV[2])} end
return {0, redis.call('PTTL', KEYS[1])}
";

/// KEYS: probe, open, gen, votes. ARGV: `instance:generation`, success (1/0), generation,
/// base ms, cap ms, state ttl ms, channel, close payload, open payload.
/// Reply: {0 refused | 1 closed | 2 reopened, generation, remaining ms}.
const REPORT: &str = r"
local _, lease = str(KEYS[1])
if lease ~= ARGV[1] then return {0, false, 0} end
if redis.call('TYPE', KEYS[3]).ok ~= 'hash' or redis.call('HGET', KEYS[3], 'gen') ~= ARGV[3] then
  return {0, false, 0}
end
redis.call('DEL', KEYS[1])
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[2], KEYS[4])
  clean(KEYS[3], 'hash')
  redis.call('HSET', KEYS[3], 'level', '0', 'closed', ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[6])
  redis.call('PUBLISH', ARGV[7], ARGV[8])
  return {1, false, 0}
end
local gs, ms = open_next(KEYS[2], KEYS[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[9])
return {2, gs, ms}
";

/// KEYS: any key of the breaker's slot (`failfast:{<ns>/<breaker>}:check`,
/// never holding a value). A write where the breaker's keys live, through a
/// script: what the health check repeats after a refusal.
const CHECK: &str = r"
redis.call('DEL', KEYS[1])
return 1
";

/// Capacity of the event queue between the connection and the background task.
/// When it is full, events are dropped: the periodic read-back catches up.
const EVENT_QUEUE: usize = 1024;

/// [`Transport`] over Redis 6.2+ or Valkey (RESP3 push for events): a single
/// server (`redis://`, `rediss://`) or a Redis Cluster (`redis+cluster://`,
/// `rediss+cluster://`, one node or several, comma-separated: any node will
/// do, the client learns the others).
///
/// Each breaker's keys share a hash tag, so each script touches one cluster
/// slot and is routed to the node that owns it.
pub struct RedisTransport {
    conn: Conn,
    cluster: bool,
    namespace: String,
    instance: String,
    channel: String,
    codec: Codec,
    timeout: Duration,
    vote_window: Duration,
    quorum: u32,
    open_base: Duration,
    open_cap: Duration,
    max_remote_open: Duration,
    probe_lease: Duration,
    state_ttl: Duration,
    events: Mutex<Option<mpsc::Receiver<Incoming>>>,
    scripts: [Script; 4],
    check: Script,
}

/// The connection: one server's, or a cluster's (one per node, routed by key).
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

impl Conn {
    async fn subscribe(&mut self, channel: String) -> redis::RedisResult<()> {
        match self {
            Conn::Single(c) => c.subscribe(channel).await,
            Conn::Cluster(c) => c.subscribe(channel).await,
        }
    }
}

/// The node URLs of a `redis+cluster://` or `rediss+cluster://` URL (one
/// `redis://` / `rediss://` URL per comma-separated `host:port`, each with
/// the user, password, path and query), or `None` for any other scheme.
pub(crate) fn cluster_nodes(url: &str) -> Option<Vec<String>> {
    let (scheme, rest) = url.split_once("://")?;
    let plain = match scheme {
        "redis+cluster" => "redis",
        "rediss+cluster" => "rediss",
        _ => return None,
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (user, hosts) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    Some(
        hosts
            .split(',')
            .map(|host| format!("{plain}://{user}{host}{tail}"))
            .collect(),
    )
}

impl std::fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTransport")
            .field("namespace", &self.namespace)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// What a client error means for the fleet: a timeout, an unreachable store,
/// a refusal (an error reply: see [`Refusal`]), or a reply this crate does
/// not accept.
pub(crate) fn map_err(e: RedisError) -> TransportError {
    if e.is_timeout() {
        TransportError::Timeout
    } else if e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.kind() == ErrorKind::ClusterConnectionNotFound
    {
        TransportError::Unavailable(e.to_string())
    } else if e.kind() == ErrorKind::AuthenticationFailed {
        TransportError::Refused(Refusal::Permission, e.to_string())
    } else if let (ErrorKind::Server(_) | ErrorKind::Extension, Some(code)) = (e.kind(), e.code()) {
        TransportError::Refused(Refusal::from_code(code), e.to_string())
    } else {
        TransportError::Protocol(e.to_string())
    }
}

fn protocol(what: &str) -> TransportError {
    TransportError::Protocol(what.to_owned())
}

fn int(v: Option<&Value>) -> TransportResult<i64> {
    match v {
        Some(Value::Int(n)) => Ok(*n),
        _ => Err(protocol("expected an integer")),
    }
}

/// A string value from a script reply, or `None` for nil / absent.
fn bytes(v: Option<&Value>) -> Option<&[u8]> {
    match v {
        Some(Value::BulkString(b)) if b.len() <= payload::MAX_PAYLOAD => Some(b),
        _ => None,
    }
}

fn array(v: Value, len: usize) -> TransportResult<Vec<Value>> {
    match v {
        Value::Array(items) if items.len() == len => Ok(items),
        _ => Err(protocol("unexpected script reply shape")),
    }
}

impl RedisTransport {
    /// A transport for `config`; connects lazily, so it never waits for the store.
    /// Must be called inside a Tokio runtime.
    pub fn new(config: &FleetConfig) -> TransportResult<Self> {
        let codec = Codec::new(&config.namespace, config.hmac_key.as_deref());
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let chan = channel(&config.namespace);
        let push = {
            let codec = codec.clone();
            let chan = chan.clone().into_bytes();
            move |info: PushInfo| -> Result<(), ()> {
                let incoming = match info.kind {
                    PushKind::Disconnection => Incoming::Disconnected,
                    PushKind::Message => match (info.data.first(), info.data.get(1)) {
                        (Some(Value::BulkString(c)), Some(Value::BulkString(p))) if *c == chan => {
                            codec
                                .decode(p)
                                .map_or_else(Incoming::Rejected, Incoming::Notice)
                        }
                        _ => Incoming::Rejected(payload::Rejection::Malformed),
                    },
                    _ => return Ok(()),
                };
                // Never block the connection: a full queue drops the event.
                let _ = tx.try_send(incoming);
                Ok(())
            }
        };
        let invalid = |e: RedisError| TransportError::Protocol(e.to_string());
        // Connecting happens in the background, never on a call: the handshake
        // (TCP, HELLO, client info) gets more room than one command.
        let connect_timeout = config.command_timeout * 10;
        let nodes = cluster_nodes(&config.url);
        let cluster = nodes.is_some();
        let conn = if let Some(nodes) = nodes {
            let client = ClusterClientBuilder::new(nodes)
                .use_protocol(ProtocolVersion::RESP3)
                // A redirection is retried at once; a node that does not
                // answer is the fleet's to retry, with its own backoff.
                .retries(3)
                .min_retry_wait(1)
                .max_retry_wait(millis(config.command_timeout).max(2))
                .build()
                .map_err(invalid)?;
            let cluster = ClusterConfig::new()
                .set_connection_timeout(connect_timeout)
                .set_response_timeout(config.command_timeout)
                .set_push_sender(push);
            Conn::Cluster(client.get_pending_async_connection_with_config(cluster))
        } else {
            let info = config
                .url
                .as_str()
                .into_connection_info()
                .map_err(invalid)?;
            let settings = info
                .redis_settings()
                .clone()
                .set_protocol(ProtocolVersion::RESP3);
            let client = redis::Client::open(info.set_redis_settings(settings)).map_err(map_err)?;
            let manager = ConnectionManagerConfig::new()
                .set_response_timeout(Some(config.command_timeout))
                .set_connection_timeout(Some(connect_timeout))
                .set_number_of_retries(1)
                .set_min_delay(config.reconnect_min)
                .set_max_delay(config.reconnect_max)
                .set_push_sender(push)
                .set_automatic_resubscription();
            Conn::Single(ConnectionManager::new_lazy_with_config(client, manager).map_err(map_err)?)
        };
        Ok(RedisTransport {
            conn,
            cluster,
            namespace: config.namespace.clone(),
            instance: config.instance.clone(),
            channel: chan,
            codec,
            timeout: config.command_timeout,
            vote_window: config.vote_window,
            quorum: config.quorum,
            open_base: config.open_base,
            open_cap: config.open_cap,
            max_remote_open: config.max_remote_open,
            probe_lease: config.probe_lease,
            state_ttl: config.state_ttl,
            events: Mutex::new(Some(rx)),
            scripts: [VOTE, SNAPSHOT, ACQUIRE, REPORT]
                .map(|body| Script::new(&format!("{PRELUDE}{body}"))),
            check: Script::new(CHECK),
        })
    }

    /// Runs `op` on a clone of the connection, bounded by the command timeout.
    async fn run<T, F, Fut>(&self, op: F) -> TransportResult<T>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        match tokio::time::timeout(self.timeout, op(self.conn.clone())).await {
            Ok(result) => result.map_err(map_err),
            Err(_) => Err(TransportError::Timeout),
        }
    }

    fn notice(&self, kind: NoticeKind, breaker: &str) -> String {
        self.codec.encode(&Notice {
            kind,
            origin: self.instance.clone(),
            breaker: breaker.to_owned(),
        })
    }

    fn remote_open(&self, generation: Option<&[u8]>, remaining: i64) -> Option<FleetOpen> {
        Some(FleetOpen {
            generation: parse_generation(generation?)?,
            remaining: clamp_ttl(remaining, self.max_remote_open)?,
        })
    }

    fn lease_value(&self, generation: u64) -> String {
        format!("{}:{generation}", self.instance)
    }
}

impl Transport for RedisTransport {
    async fn ping(&self) -> TransportResult<()> {
        self.run(|mut c| async move { redis::cmd("PING").query_async::<()>(&mut c).await })
            .await
    }

    async fn resume(&self) -> TransportResult<()> {
        let chan = self.channel.clone();
        self.run(|mut c| async move { c.subscribe(chan).await })
            .await?;
        let scripts = || self.scripts.iter().chain([&self.check]);
        let loaded: Vec<String> = if self.cluster {
            // Each SCRIPT LOAD goes to every node (a pipeline would go to one).
            let loads = scripts().map(|script| {
                self.run(move |mut c| async move { script.load_async(&mut c).await })
            });
            futures_util::future::join_all(loads)
                .await
                .into_iter()
                .collect::<TransportResult<_>>()?
        } else {
            let mut load = redis::pipe();
            for script in scripts() {
                load.load_script(script);
            }
            self.run(|mut c| async move { load.query_async(&mut c).await })
                .await?
        };
        // A store (or a proxy in front of it) that keeps something else
        // than what it was given would answer every call with NOSCRIPT.
        if loaded
            .iter()
            .zip(scripts())
            .any(|(sha, script)| sha != script.get_hash())
        {
            return Err(TransportError::Refused(
                Refusal::NoScript,
                "SCRIPT LOAD answered another script's SHA1".into(),
            ));
        }
        Ok(())
    }

    async fn check(&self, breaker: &str) -> TransportResult<()> {
        let k = BreakerKeys::new(&self.namespace, breaker);
        let mut inv = self.check.prepare_invoke();
        inv.key(k.check);
        self.run(|mut c| async move { inv.invoke_async::<Value>(&mut c).await })
            .await
            .map(drop)
    }

    fn take_events(&self) -> Option<mpsc::Receiver<Incoming>> {
        self.events.lock().ok()?.take()
    }

    async fn vote(&self, breaker: &str, fingerprint: u64) -> TransportResult<VoteOutcome> {
        let k = BreakerKeys::new(&self.namespace, breaker);
        let prefix = format!("{fingerprint:016x}|");
        let mut inv = self.scripts[0].prepare_invoke();
        inv.key(&k.votes).key(&k.open).key(&k.generation);
        inv.arg(format!("{prefix}{}", self.instance))
            .arg(&prefix)
            .arg(millis(self.vote_window))
            .arg(self.quorum)
            .arg(millis(self.open_base))
            .arg(millis(self.open_cap))
            .arg(millis(self.state_ttl))
            .arg(&self.channel)
            .arg(self.notice(NoticeKind::Open, breaker));
        let reply = self
            .run(|mut c| async move { inv.invoke_async::<Value>(&mut c).await })
            .await?;
        let items = array(reply, 4)?;
        let votes = int(items.get(3))?.clamp(0, i64::from(u32::MAX)) as u32;
        let open = || {
            self.remote_open(bytes(items.get(1)), int(items.get(2)).unwrap_or(0))
                .ok_or_else(|| protocol("fleet open with an invalid generation or expiry"))
        };
        match int(items.first())? {
            0 => Ok(VoteOutcome::Counted { votes }),
            1 => Ok(VoteOutcome::Opened(open()?)),
            2 => Ok(VoteOutcome::AlreadyOpen(open()?)),
            _ => Err(protocol("unknown vote outcome")),
        }
    }

    async fn snapshot(&self, breaker: &str) -> TransportResult<StoreSnapshot> {
        let k = BreakerKeys::new(&self.namespace, breaker);
        let mut inv = self.scripts[1].prepare_invoke();
        inv.key(&k.open).key(&k.probe).key(&k.generation);
        let reply = self
            .run(|mut c| async move { inv.invoke_async::<Value>(&mut c).await })
            .await?;
        let items = array(reply, 5)?;
        let open = self.remote_open(bytes(items.get(1)), int(items.first())?);
        let probe = bytes(items.get(3))
            .and_then(parse_lease)
            .zip(clamp_ttl(int(items.get(2))?, self.probe_lease))
            .map(|((instance, generation), remaining)| LeaseHolder {
                instance,
                generation,
                remaining,
            });
        let closed = bytes(items.get(4)).and_then(parse_generation).unwrap_or(0);
        Ok(StoreSnapshot {
            open,
            probe,
            closed,
        })
    }

    async fn acquire_probe(&self, breaker: &str, generation: u64) -> TransportResult<LeaseOutcome> {
        let k = BreakerKeys::new(&self.namespace, breaker);
        let mut inv = self.scripts[2].prepare_invoke();
        inv.key(&k.probe)
            .key(&k.generation)
            .arg(self.lease_value(generation))
            .arg(millis(self.probe_lease))
            .arg(generation);
        let reply = self
            .run(|mut c| async move { inv.invoke_async::<Value>(&mut c).await })
            .await?;
        let items = array(reply, 2)?;
        let remaining = clamp_ttl(int(items.get(1))?, self.probe_lease).unwrap_or_default();
        Ok(match int(items.first())? {
            1 => LeaseOutcome::Won {
                lease: self.probe_lease,
            },
            2 => LeaseOutcome::Stale,
            _ => LeaseOutcome::Lost { remaining },
        })
    }

    async fn report_probe(
        &self,
        breaker: &str,
        generation: u64,
        success: bool,
    ) -> TransportResult<ReportOutcome> {
        let k = BreakerKeys::new(&self.namespace, breaker);
        let mut inv = self.scripts[3].prepare_invoke();
        inv.key(&k.probe)
            .key(&k.open)
            .key(&k.generation)
            .key(&k.votes);
        inv.arg(self.lease_value(generation))
            .arg(if success { "1" } else { "0" })
            .arg(generation.to_string())
            .arg(millis(self.open_base))
            .arg(millis(self.open_cap))
            .arg(millis(self.state_ttl))
            .arg(&self.channel)
            .arg(self.notice(NoticeKind::Close, breaker))
            .arg(self.notice(NoticeKind::Open, breaker));
        let reply = self
            .run(|mut c| async move { inv.invoke_async::<Value>(&mut c).await })
            .await?;
        let items = array(reply, 3)?;
        match int(items.first())? {
            0 => Ok(ReportOutcome::Refused),
            1 => Ok(ReportOutcome::Closed),
            2 => self
                .remote_open(bytes(items.get(1)), int(items.get(2))?)
                .map(ReportOutcome::Reopened)
                .ok_or_else(|| protocol("reopen with an invalid generation or expiry")),
            _ => Err(protocol("unknown report outcome")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::ServerErrorKind;

    fn server(kind: ServerErrorKind) -> RedisError {
        RedisError::from((ErrorKind::Server(kind), "from the store"))
    }

    #[test]
    fn a_cluster_url_gives_one_node_url_per_host() {
        assert_eq!(cluster_nodes("redis://127.0.0.1:6379/"), None);
        assert_eq!(
            cluster_nodes("redis+cluster://127.0.0.1:7000/"),
            Some(vec!["redis://127.0.0.1:7000/".to_owned()])
        );
        assert_eq!(
            cluster_nodes("rediss+cluster://fleet:p@ss@a:7000,b:7001/0?protocol=resp3"),
            Some(vec![
                "rediss://fleet:p@ss@a:7000/0?protocol=resp3".to_owned(),
                "rediss://fleet:p@ss@b:7001/0?protocol=resp3".to_owned(),
            ])
        );
        assert_eq!(
            cluster_nodes("redis+cluster://a:7000,b:7001"),
            Some(vec![
                "redis://a:7000".to_owned(),
                "redis://b:7001".to_owned()
            ])
        );
    }

    /// CROSSSLOT cannot come from a real server here: every script touches
    /// the keys of one breaker, under one hash tag, so one slot (see
    /// `keys::tests::the_four_keys_share_one_hash_tag`). A store that hashed
    /// keys otherwise would answer it; it is classified like the others.
    #[test]
    fn every_error_reply_is_a_refusal_of_its_kind() {
        let cases = [
            (server(ServerErrorKind::Moved), Refusal::Redirected),
            (server(ServerErrorKind::Ask), Refusal::Redirected),
            (server(ServerErrorKind::CrossSlot), Refusal::CrossSlot),
            (server(ServerErrorKind::NoPerm), Refusal::Permission),
            (server(ServerErrorKind::NoScript), Refusal::NoScript),
            (server(ServerErrorKind::ReadOnly), Refusal::ReadOnly),
            (server(ServerErrorKind::ClusterDown), Refusal::NotServing),
            (server(ServerErrorKind::MasterDown), Refusal::NotServing),
            (server(ServerErrorKind::TryAgain), Refusal::NotServing),
            (server(ServerErrorKind::BusyLoading), Refusal::NotServing),
            (server(ServerErrorKind::ResponseError), Refusal::Other),
            (
                RedisError::from((ErrorKind::AuthenticationFailed, "WRONGPASS")),
                Refusal::Permission,
            ),
        ];
        for (error, refusal) in cases {
            assert!(
                matches!(map_err(error.clone()), TransportError::Refused(r, _) if r == refusal),
                "{error:?} → {:?}",
                map_err(error.clone())
            );
        }
        for (code, refusal) in [
            ("OOM", Refusal::NoWrites),
            ("MISCONF", Refusal::NoWrites),
            ("WRONGPASS", Refusal::Permission),
            ("NOAUTH", Refusal::Permission),
            ("BUSY", Refusal::NotServing),
            ("SOMETHINGNEW", Refusal::Other),
        ] {
            assert_eq!(Refusal::from_code(code), refusal, "{code}");
        }
    }

    #[test]
    fn timeouts_and_lost_connections_are_not_refusals_nor_a_bad_reply() {
        let timeout = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(map_err(timeout), TransportError::Timeout);
        let reset = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(matches!(map_err(reset), TransportError::Unavailable(_)));
        let shape = RedisError::from((ErrorKind::UnexpectedReturnType, "not an array"));
        assert!(matches!(map_err(shape), TransportError::Protocol(_)));
    }
}
