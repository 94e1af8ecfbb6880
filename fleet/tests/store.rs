//! The Redis transport against a real `redis-server`: quorum, expiry, the probe lease,
//! the fenced report, events, and values written by a hostile client.

mod support;

use failfast_fleet::payload::{Codec, Notice, NoticeKind, Rejection};
use failfast_fleet::{
    Incoming, LeaseOutcome, RedisTransport, ReportOutcome, Transport, TransportResult, VoteOutcome,
};
use redis::AsyncCommands;
use std::time::Duration;
use support::{RedisServer, raw};

const FP: u64 = 7;

/// A transport for `instance` whose commands have 1 s each: these tests
/// check what the store keeps, not how long it takes (`faults.rs` does),
/// and a loaded test machine can take longer than the default 100 ms to
/// answer the first commands of a server just started.
fn transport(url: &str, instance: &str) -> RedisTransport {
    let mut cfg = support::config(url, instance);
    cfg.command_timeout = Duration::from_secs(1);
    RedisTransport::new(&cfg).unwrap()
}

async fn all_keys(url: &str) -> Vec<String> {
    let mut c = raw(url).await;
    let mut keys: Vec<String> = c.keys("failfast:*").await.unwrap();
    keys.sort();
    keys
}

/// Every key the scripts wrote has an expiry.
async fn assert_every_key_expires(url: &str, step: &str) -> usize {
    let mut c = raw(url).await;
    let keys = all_keys(url).await;
    for key in &keys {
        let pttl: i64 = c.pttl(key).await.unwrap();
        assert!(pttl > 0, "{step}: key {key} has PTTL {pttl}");
    }
    keys.len()
}

#[tokio::test]
async fn one_vote_does_not_open_a_quorum_of_two_does() {
    let server = RedisServer::start();
    let (a, b, c) = (
        transport(&server.url(), "a"),
        transport(&server.url(), "b"),
        transport(&server.url(), "c"),
    );
    assert_eq!(
        a.vote("dep", FP).await,
        Ok(VoteOutcome::Counted { votes: 1 })
    );
    assert_eq!(
        a.vote("dep", FP).await,
        Ok(VoteOutcome::Counted { votes: 1 }),
        "a second vote of one instance is still one"
    );
    assert_eq!(a.snapshot("dep").await.unwrap().open, None);
    // A vote for a breaker configured differently does not count.
    assert_eq!(
        c.vote("dep", FP + 1).await,
        Ok(VoteOutcome::Counted { votes: 1 })
    );
    assert_eq!(a.snapshot("dep").await.unwrap().open, None);

    let Ok(VoteOutcome::Opened(open)) = b.vote("dep", FP).await else {
        panic!("the second instance's vote opens")
    };
    assert_eq!(open.generation, 1);
    assert_eq!(
        open.remaining,
        Duration::from_millis(1500),
        "first open lasts open_base"
    );
    let seen = c
        .snapshot("dep")
        .await
        .unwrap()
        .open
        .expect("open visible to everyone");
    assert_eq!(seen.generation, 1);
    assert!(
        matches!(c.vote("dep", FP).await, Ok(VoteOutcome::AlreadyOpen(o)) if o.generation == 1)
    );
    // Other breakers are untouched.
    assert_eq!(a.snapshot("other").await.unwrap().open, None);
}

#[tokio::test]
async fn every_key_has_an_expiry_through_a_whole_cycle() {
    let server = RedisServer::start();
    let url = server.url();
    let (a, b) = (transport(&url, "a"), transport(&url, "b"));
    a.vote("dep", FP).await.unwrap();
    assert_eq!(assert_every_key_expires(&url, "after one vote").await, 1);
    b.vote("dep", FP).await.unwrap();
    assert_eq!(
        assert_every_key_expires(&url, "after the open").await,
        3,
        "{:?}",
        all_keys(&url).await
    );
    assert!(matches!(
        a.acquire_probe("dep", 1).await,
        Ok(LeaseOutcome::Won { .. })
    ));
    assert_eq!(assert_every_key_expires(&url, "with the lease").await, 4);
    let Ok(ReportOutcome::Reopened(again)) = a.report_probe("dep", 1, false).await else {
        panic!("reopened")
    };
    assert_eq!(again.generation, 2);
    assert_eq!(
        again.remaining,
        Duration::from_millis(3000),
        "second open doubles"
    );
    assert_every_key_expires(&url, "after the reopen").await;
    assert!(matches!(
        b.acquire_probe("dep", 2).await,
        Ok(LeaseOutcome::Won { .. })
    ));
    assert_eq!(
        b.report_probe("dep", 2, true).await,
        Ok(ReportOutcome::Closed)
    );
    assert_eq!(
        assert_every_key_expires(&url, "after the close").await,
        1,
        "{:?}",
        all_keys(&url).await
    );
    let snap = a.snapshot("dep").await.unwrap();
    assert_eq!((snap.open, snap.probe, snap.closed), (None, None, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_many_concurrent_contenders_wins_the_probe_lease() {
    let server = RedisServer::start();
    let contenders: Vec<std::sync::Arc<RedisTransport>> = (0..40)
        .map(|i| std::sync::Arc::new(transport(&server.url(), &format!("i{i}"))))
        .collect();
    for round in 0..5u64 {
        let breaker = format!("dep{round}");
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(contenders.len()));
        let tasks: Vec<_> = contenders
            .iter()
            .cloned()
            .map(|t| {
                let (barrier, breaker) = (barrier.clone(), breaker.clone());
                tokio::spawn(async move {
                    t.ping().await.unwrap(); // connect first, so the race is on SET NX only
                    barrier.wait().await;
                    t.acquire_probe(&breaker, 1).await
                })
            })
            .collect();
        let mut winners = 0;
        let mut losers = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(LeaseOutcome::Won { .. }) => winners += 1,
                Ok(LeaseOutcome::Lost { remaining }) => {
                    assert!(remaining > Duration::ZERO);
                    losers += 1;
                }
                other => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(
            (winners, losers),
            (1, contenders.len() - 1),
            "round {round}"
        );
    }
}

#[tokio::test]
async fn a_report_is_refused_once_the_lease_expired_or_was_taken() {
    let server = RedisServer::start();
    let url = server.url();
    let mut short = support::config(&url, "a");
    short.probe_lease = Duration::from_millis(400);
    short.probe_lead = Duration::from_millis(100);
    let a = RedisTransport::new(&short).unwrap();
    let b = transport(&url, "b");
    a.vote("dep", FP).await.unwrap();
    b.vote("dep", FP).await.unwrap();

    // Expired: nobody holds it any more.
    assert!(matches!(
        a.acquire_probe("dep", 1).await,
        Ok(LeaseOutcome::Won { .. })
    ));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        a.report_probe("dep", 1, true).await,
        Ok(ReportOutcome::Refused)
    );
    assert_eq!(
        a.report_probe("dep", 1, false).await,
        Ok(ReportOutcome::Refused)
    );

    // Taken: b holds it now; a stalled a cannot close or reopen.
    assert!(matches!(
        b.acquire_probe("dep", 1).await,
        Ok(LeaseOutcome::Won { .. })
    ));
    assert_eq!(
        a.report_probe("dep", 1, true).await,
        Ok(ReportOutcome::Refused)
    );
    let snap = b.snapshot("dep").await.unwrap();
    assert_eq!(snap.probe.as_ref().map(|p| p.instance.as_str()), Some("b"));
    assert_eq!(snap.closed, 0, "the refused report changed nothing");
    // A report for another generation than the lease's is refused too.
    assert_eq!(
        b.report_probe("dep", 2, true).await,
        Ok(ReportOutcome::Refused)
    );
    assert_eq!(
        b.report_probe("dep", 1, true).await,
        Ok(ReportOutcome::Closed)
    );
}

async fn next_incoming(rx: &mut tokio::sync::mpsc::Receiver<Incoming>) -> Incoming {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("an event within 5 s")
        .expect("stream open")
}

#[tokio::test]
async fn opens_and_closes_reach_a_second_client() {
    let server = RedisServer::start();
    let url = server.url();
    let (a, b, listener) = (
        transport(&url, "a"),
        transport(&url, "b"),
        transport(&url, "l"),
    );
    let mut events = listener.take_events().unwrap();
    assert!(listener.take_events().is_none(), "the stream is taken once");
    listener.resume().await.unwrap();
    a.vote("dep", FP).await.unwrap();
    b.vote("dep", FP).await.unwrap();
    let open = Notice {
        kind: NoticeKind::Open,
        origin: "b".into(),
        breaker: "dep".into(),
    };
    assert_eq!(next_incoming(&mut events).await, Incoming::Notice(open));
    b.acquire_probe("dep", 1).await.unwrap();
    b.report_probe("dep", 1, true).await.unwrap();
    let close = Notice {
        kind: NoticeKind::Close,
        origin: "b".into(),
        breaker: "dep".into(),
    };
    assert_eq!(next_incoming(&mut events).await, Incoming::Notice(close));
}

async fn set_open(url: &str, value: &[u8], px: Option<u64>) {
    let mut c = raw(url).await;
    let key = "failfast:{test/env/dep}:open";
    let _: () = c.del(key).await.unwrap();
    let _: () = match px {
        Some(ms) => redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("PX")
            .arg(ms)
            .query_async(&mut c)
            .await
            .unwrap(),
        None => c.set(key, value).await.unwrap(),
    };
}

#[tokio::test]
async fn garbage_negative_oversized_and_far_future_values_are_rejected_or_clamped() {
    let server = RedisServer::start();
    let url = server.url();
    let t = transport(&url, "a");
    for (value, px) in [
        (&b"garbage"[..], Some(10_000)),
        (b"-5", Some(10_000)),
        (b"0", Some(10_000)),
        (b"1e3", Some(10_000)),
        (&[b'7'; 300][..], Some(10_000)),
        (b"7", None), // no expiry: never applied
    ] {
        set_open(&url, value, px).await;
        let snap: TransportResult<_> = t.snapshot("dep").await;
        assert_eq!(
            snap.unwrap().open,
            None,
            "{:?}",
            String::from_utf8_lossy(value)
        );
    }
    // Far future: clamped to max_remote_open.
    set_open(&url, b"7", Some(1_000_000_000_000)).await;
    let open = t.snapshot("dep").await.unwrap().open.unwrap();
    assert_eq!(
        (open.generation, open.remaining),
        (7, Duration::from_secs(60))
    );

    // Wrong types everywhere: reads ignore them, scripts repair them.
    let mut c = raw(&url).await;
    for key in ["open", "probe", "gen", "votes"] {
        let key = format!("failfast:{{test/env/dep}}:{key}");
        let _: () = c.del(&key).await.unwrap();
        let _: () = c.rpush(&key, "x").await.unwrap();
    }
    assert_eq!(t.snapshot("dep").await.unwrap(), Default::default());
    let mut one = support::config(&url, "a");
    one.quorum = 1;
    let one = RedisTransport::new(&one).unwrap();
    let Ok(VoteOutcome::Opened(open)) = one.vote("dep", FP).await else {
        panic!("opens over the garbage")
    };
    assert_eq!(open.generation, 1);
    // A hostile generation counter restarts from 1 instead of failing or overflowing.
    let _: () = c
        .hset("failfast:{test/env/x}:gen", "gen", "1e400")
        .await
        .unwrap();
    let _: () = c
        .hset("failfast:{test/env/x}:gen", "level", "-3")
        .await
        .unwrap();
    let Ok(VoteOutcome::Opened(open)) = one.vote("x", FP).await else {
        panic!("opens")
    };
    assert_eq!(
        (open.generation, open.remaining),
        (1, Duration::from_millis(1500))
    );
    // A probe key without expiry (never written by us) does not block the lease forever.
    let _: () = c.set("failfast:{test/env/y}:probe", "z:1").await.unwrap();
    assert!(matches!(
        one.acquire_probe("y", 1).await,
        Ok(LeaseOutcome::Won { .. })
    ));
}

#[tokio::test]
async fn forged_and_malformed_publishes_are_dropped() {
    let server = RedisServer::start();
    let url = server.url();
    let mut cfg = support::config(&url, "l");
    cfg.hmac_key = Some(b"fleet secret".to_vec());
    let listener = RedisTransport::new(&cfg).unwrap();
    let mut events = listener.take_events().unwrap();
    listener.resume().await.unwrap();
    let mut c = raw(&url).await;
    let chan = "failfast:{test/env}:ev";
    let unsigned = Codec::new("test/env", None);
    let signed = Codec::new("test/env", Some(b"fleet secret"));
    let notice = Notice {
        kind: NoticeKind::Open,
        origin: "evil".into(),
        breaker: "dep".into(),
    };
    let cases: Vec<(Vec<u8>, Rejection)> = vec![
        (b"garbage".to_vec(), Rejection::Malformed),
        (vec![b'x'; 10_000], Rejection::Oversized),
        (unsigned.encode(&notice).into_bytes(), Rejection::Forged),
        (
            Codec::new("test/env", Some(b"guess"))
                .encode(&notice)
                .into_bytes(),
            Rejection::Forged,
        ),
        (
            signed.encode(&notice).replace("dep", "dex").into_bytes(),
            Rejection::Forged,
        ),
    ];
    for (payload, why) in cases {
        let _: () = c.publish(chan, &payload).await.unwrap();
        assert_eq!(next_incoming(&mut events).await, Incoming::Rejected(why));
    }
    let _: () = c.publish(chan, signed.encode(&notice)).await.unwrap();
    assert_eq!(next_incoming(&mut events).await, Incoming::Notice(notice));
}

/// The probe lease is only ever for the newest generation: asking for an
/// older one takes nothing, a lease still held for an older one is taken
/// over, and a report under an older generation is refused even once the
/// open it belonged to has expired.
#[tokio::test]
async fn the_probe_lease_and_its_report_belong_to_the_newest_generation_only() {
    let server = RedisServer::start();
    let url = server.url();
    let (a, b) = (transport(&url, "a"), transport(&url, "b"));
    a.vote("dep", FP).await.unwrap();
    b.vote("dep", FP).await.unwrap();
    assert!(matches!(
        a.acquire_probe("dep", 1).await,
        Ok(LeaseOutcome::Won { .. })
    ));
    let Ok(ReportOutcome::Reopened(again)) = a.report_probe("dep", 1, false).await else {
        panic!("reopened")
    };
    assert_eq!(again.generation, 2);

    // Generation 1 is over: no lease is taken for it.
    assert_eq!(a.acquire_probe("dep", 1).await, Ok(LeaseOutcome::Stale));
    assert_eq!(a.snapshot("dep").await.unwrap().probe, None);
    assert!(matches!(
        b.acquire_probe("dep", 2).await,
        Ok(LeaseOutcome::Won { .. })
    ));

    // A lease left over from generation 1 (or an unreadable one) does not
    // block generation 2's.
    let mut c = raw(&url).await;
    let probe = "failfast:{test/env/dep}:probe";
    for leftover in ["a:1", "garbage"] {
        let _: () = c.set_ex(probe, leftover, 60).await.unwrap();
        assert!(
            matches!(
                b.acquire_probe("dep", 2).await,
                Ok(LeaseOutcome::Won { .. })
            ),
            "{leftover}"
        );
        let holder = a.snapshot("dep").await.unwrap().probe.unwrap();
        assert_eq!((holder.instance.as_str(), holder.generation), ("b", 2));
    }
    // A lease of the current generation is not taken over.
    assert!(matches!(
        a.acquire_probe("dep", 2).await,
        Ok(LeaseOutcome::Lost { .. })
    ));

    // A stalled prober of generation 1 whose lease was written back cannot
    // report once the open has expired either.
    let _: () = c.set_ex(probe, "a:1", 60).await.unwrap();
    let _: () = c.del("failfast:{test/env/dep}:open").await.unwrap();
    assert_eq!(
        a.report_probe("dep", 1, true).await,
        Ok(ReportOutcome::Refused)
    );
    assert_eq!(a.snapshot("dep").await.unwrap().closed, 0);
}
