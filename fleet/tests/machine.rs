//! The fleet state machine for one breaker, driven by hand: no store, no runtime.

mod support;

use failfast::State;
use failfast::integration::Cause;
use failfast_fleet::machine::{Command, Machine};
use failfast_fleet::{
    FleetConfig, FleetOpen, LeaseHolder, LeaseOutcome, LocalTransition, ReportOutcome,
    StoreSnapshot, TransportError, VoteOutcome,
};
use std::time::{Duration, Instant};
use support::FakeMember;

fn cfg() -> FleetConfig {
    support::config("redis://unused/", "me")
}

fn t(from: State, to: State, cause: Cause) -> LocalTransition {
    LocalTransition { from, to, cause }
}

fn open(generation: u64, ms: u64) -> StoreSnapshot {
    StoreSnapshot {
        open: Some(FleetOpen {
            generation,
            remaining: Duration::from_millis(ms),
        }),
        ..StoreSnapshot::default()
    }
}

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn only_opens_on_local_evidence_are_voted() {
    let mut m = Machine::new(1);
    let now = Instant::now();
    use State::*;
    assert_eq!(
        m.on_local(t(Closed, Open, Cause::Calls), now),
        Some(Command::Vote)
    );
    assert_eq!(m.on_local(t(Closed, Open, Cause::Remote), now), None);
    assert_eq!(m.on_local(t(Closed, Open, Cause::Manual), now), None);
    assert_eq!(m.on_local(t(Open, HalfOpen, Cause::Calls), now), None);
}

#[test]
fn a_remote_open_is_applied_on_the_local_clock_and_capped() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let now = Instant::now();
    m.on_snapshot(&cfg, &*member, &open(3, 1500), now);
    assert_eq!(member.last_open(), Some(now + MS(1500)));
    assert_eq!(m.remote_generation(), Some(3));
    // The same open read again changes nothing; an older generation is ignored.
    m.on_snapshot(&cfg, &*member, &open(3, 1400), now + MS(100));
    m.on_snapshot(&cfg, &*member, &open(3, 1500), now + MS(5)); // a faster read: still the same open
    m.on_snapshot(&cfg, &*member, &open(2, 50_000), now + MS(100));
    assert_eq!(member.open_count(), 1);
    // A newer one far in the future is held to max_remote_open.
    m.on_snapshot(&cfg, &*member, &open(4, 10_000_000), now + MS(200));
    assert_eq!(
        member.last_open(),
        Some(now + MS(200) + cfg.max_remote_open)
    );
}

#[test]
fn recent_local_successes_veto_a_remote_open_but_not_our_own() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    member.successes.store(
        u64::from(cfg.veto_successes),
        std::sync::atomic::Ordering::Relaxed,
    );
    let mut m = Machine::new(1);
    let now = Instant::now();
    m.on_snapshot(&cfg, &*member, &open(1, 1500), now);
    assert_eq!((member.open_count(), m.vetoes()), (0, 1));
    let mine = FleetOpen {
        generation: 2,
        remaining: MS(1500),
    };
    m.on_vote(&cfg, &*member, Ok(VoteOutcome::Opened(mine)), now);
    assert_eq!((member.open_count(), m.vetoes()), (1, 1));
}

#[test]
fn the_lease_is_requested_just_before_the_deadline_and_the_winner_reports() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let now = Instant::now();
    m.on_snapshot(&cfg, &*member, &open(5, 1500), now);
    assert_eq!(m.tick(&cfg, now + MS(1500) - cfg.probe_lead - MS(1)), None);
    let at = now + MS(1500) - cfg.probe_lead;
    assert_eq!(m.tick(&cfg, at), Some(Command::Acquire { generation: 5 }));
    assert_eq!(m.tick(&cfg, at), None, "one request at a time");
    m.on_lease(
        &cfg,
        &*member,
        Ok(LeaseOutcome::Won {
            lease: cfg.probe_lease,
        }),
        at,
    );
    assert!(m.holds_lease());
    use State::*;
    assert_eq!(
        m.on_local(t(Open, HalfOpen, Cause::Calls), at + MS(400)),
        None
    );
    assert_eq!(
        m.on_local(t(HalfOpen, Open, Cause::Calls), at + MS(500)),
        Some(Command::Report {
            generation: 5,
            success: false
        }),
        "a failed fleet probe is reported, not voted"
    );
    let reopened = FleetOpen {
        generation: 6,
        remaining: MS(3000),
    };
    m.on_report(
        &cfg,
        &*member,
        Ok(ReportOutcome::Reopened(reopened)),
        at + MS(510),
    );
    assert_eq!(m.remote_generation(), Some(6));
    let at = at + MS(510) + MS(3000) - cfg.probe_lead;
    assert_eq!(m.tick(&cfg, at), Some(Command::Acquire { generation: 6 }));
    m.on_lease(
        &cfg,
        &*member,
        Ok(LeaseOutcome::Won {
            lease: cfg.probe_lease,
        }),
        at,
    );
    assert_eq!(
        m.on_local(t(HalfOpen, Closed, Cause::Calls), at + MS(400)),
        Some(Command::Report {
            generation: 6,
            success: true
        })
    );
    assert_eq!(m.remote_generation(), None);
}

#[test]
fn a_loser_waits_for_the_winner_and_after_three_losses_probes_itself() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let mut now = Instant::now();
    m.on_snapshot(&cfg, &*member, &open(1, 1000), now);
    for loss in 1..=cfg.max_lost_leases {
        now = m.remote_until().unwrap() - cfg.probe_lead;
        assert_eq!(
            m.tick(&cfg, now),
            Some(Command::Acquire { generation: 1 }),
            "loss {loss}"
        );
        let opens = member.open_count();
        m.on_lease(
            &cfg,
            &*member,
            Ok(LeaseOutcome::Lost {
                remaining: MS(1500),
            }),
            now,
        );
        assert_eq!(m.lost_leases(), loss);
        if loss < cfg.max_lost_leases {
            let until = member.last_open().unwrap();
            assert_eq!(member.open_count(), opens + 1);
            // The end of the lease it lost to, plus jitter, plus the lead
            // with which it asks again: it asks only once that lease is over.
            let earliest = now + MS(1500) + cfg.probe_lead;
            assert!(
                until >= earliest && until <= earliest + cfg.lease_jitter,
                "loss {loss}"
            );
            assert_eq!(
                m.tick(&cfg, now + MS(1500) - MS(1)),
                None,
                "loss {loss}: asks again while the lease it lost to still runs"
            );
        } else {
            assert_eq!(member.open_count(), opens, "no more deferring");
            assert!(m.probes_locally());
            assert_eq!(m.tick(&cfg, now + MS(5000)), None);
        }
    }
    // A new generation (someone's probe failed) starts the count again.
    m.on_snapshot(&cfg, &*member, &open(2, 3000), now + MS(100));
    assert_eq!((m.lost_leases(), m.probes_locally()), (0, false));
}

/// A fleet close releases the breaker at once, then ramps: in slot `k`
/// (from 0) of the ten in `close_jitter` a closed breaker is held open from
/// `(k + 1) / 10` of the slot to its end; the last slot admits throughout.
#[test]
fn a_fleet_close_releases_at_once_and_ramps_the_share_admitted_up() {
    let cfg = cfg(); // close_jitter 200 ms: slots of 20 ms
    let now = Instant::now();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    m.on_snapshot(&cfg, &*member, &open(4, 1500), now);
    // Open key gone but no close recorded: a probe is running, not a close.
    m.on_snapshot(&cfg, &*member, &StoreSnapshot::default(), now + MS(1600));
    assert_eq!(member.release_count(), 0);
    let closed = StoreSnapshot {
        closed: 4,
        ..StoreSnapshot::default()
    };
    let at = now + MS(1700);
    m.on_snapshot(&cfg, &*member, &closed, at);
    assert_eq!(*member.releases.lock().unwrap(), [at], "released at once");
    assert_eq!(m.remote_generation(), None);
    assert!(m.ramping());
    *member.state.lock().unwrap() = State::Closed; // its next call closed it
    let opens_before = member.open_count();
    let slot = cfg.close_jitter / 10;
    let mut holds = Vec::new();
    // Ticks every millisecond through the ramp.
    for ms in 0..=u64::try_from(cfg.close_jitter.as_millis()).unwrap() + 5 {
        let tick = at + MS(ms);
        let before = member.open_count();
        m.ramp(&cfg, &*member, tick);
        if member.open_count() > before {
            holds.push((tick - at, member.last_open().unwrap() - at));
        }
    }
    let expected: Vec<_> = (0..9u32)
        .map(|k| (slot * k + slot * (k + 1) / 10, slot * (k + 1)))
        .collect();
    assert_eq!(
        holds, expected,
        "held from a rising share of each slot to its end"
    );
    assert_eq!(member.open_count(), opens_before + 9);
    assert!(!m.ramping(), "over after the last slot");
}

#[test]
fn a_ramp_leaves_a_breaker_alone_that_is_not_closed_and_ends_on_its_own_open() {
    let cfg = cfg();
    let now = Instant::now();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    m.on_snapshot(&cfg, &*member, &open(4, 1500), now);
    let closed = StoreSnapshot {
        closed: 4,
        ..StoreSnapshot::default()
    };
    m.on_snapshot(&cfg, &*member, &closed, now + MS(1700));
    let opens = member.open_count();
    // No call came yet (still open, its trial due): nothing to hold.
    *member.state.lock().unwrap() = State::HalfOpen;
    m.ramp(&cfg, &*member, now + MS(1705));
    assert_eq!(member.open_count(), opens);
    assert!(m.ramping());
    // Its trial failed: open on its own evidence, voted; the ramp is over.
    assert_eq!(
        m.on_local(
            t(State::HalfOpen, State::Open, Cause::Calls),
            now + MS(1710)
        ),
        Some(Command::Vote)
    );
    assert!(!m.ramping());
    *member.state.lock().unwrap() = State::Closed;
    m.ramp(&cfg, &*member, now + MS(1750));
    assert_eq!(member.open_count(), opens);
}

#[test]
fn a_pod_started_during_a_probe_waits_for_its_result() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let now = Instant::now();
    let probing = StoreSnapshot {
        probe: Some(LeaseHolder {
            instance: "other".into(),
            generation: 9,
            remaining: MS(1200),
        }),
        ..StoreSnapshot::default()
    };
    m.on_snapshot(&cfg, &*member, &probing, now);
    let until = member
        .last_open()
        .expect("held open while the fleet probes");
    // After the lease, plus jitter, plus the lead with which it would ask again.
    let earliest = now + MS(1200) + cfg.probe_lead;
    assert!(until >= earliest && until <= earliest + cfg.lease_jitter);
    assert_eq!(m.tick(&cfg, now + MS(1200) - MS(1)), None);
    // Its own lease, seen back, is not a reason to wait.
    let mut mine = Machine::new(2);
    let own = StoreSnapshot {
        probe: Some(LeaseHolder {
            instance: cfg.instance.clone(),
            generation: 9,
            remaining: MS(1200),
        }),
        ..StoreSnapshot::default()
    };
    let member2 = FakeMember::new("dep");
    mine.on_snapshot(&cfg, &*member2, &own, now);
    assert_eq!(member2.open_count(), 0);
}

#[test]
fn an_unreachable_store_means_local_probing_and_a_resync_votes_again() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let now = Instant::now();
    use State::*;
    assert_eq!(
        m.on_local(t(Closed, Open, Cause::Calls), now),
        Some(Command::Vote)
    );
    m.on_vote(&cfg, &*member, Err(TransportError::Timeout), now);
    assert_eq!(member.open_count(), 0, "a failed vote applies nothing");
    m.on_snapshot(&cfg, &*member, &open(1, 1000), now);
    let at = now + MS(1000) - cfg.probe_lead;
    assert_eq!(m.tick(&cfg, at), Some(Command::Acquire { generation: 1 }));
    m.on_lease(
        &cfg,
        &*member,
        Err(TransportError::Unavailable("down".into())),
        at,
    );
    assert!(m.probes_locally());
    assert_eq!(
        member.open_count(),
        1,
        "the remote open is not extended without the store"
    );
    assert_eq!(m.resync(&cfg), vec![Command::StoreSnapshot, Command::Vote]);
    assert!(
        !m.probes_locally(),
        "the store is back: compete for the lease again"
    );
    assert_eq!(
        m.on_local(t(Open, Closed, Cause::Calls), at + MS(500)),
        None
    );
    assert_eq!(
        m.resync(&cfg),
        vec![Command::StoreSnapshot],
        "closed: nothing to vote"
    );
}

#[test]
fn an_operator_reset_during_the_probe_is_not_reported_as_its_result() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let (mut m, at, _) = asking_for_the_lease(&cfg, &member, 5, 1000);
    let won = LeaseOutcome::Won {
        lease: cfg.probe_lease,
    };
    m.on_lease(&cfg, &*member, Ok(won), at);
    assert!(m.holds_lease());
    use State::*;
    assert_eq!(
        m.on_local(t(HalfOpen, Closed, Cause::Manual), at + MS(400)),
        None
    );
    assert_eq!(
        m.on_local(t(HalfOpen, Open, Cause::Manual), at + MS(400)),
        None
    );
    assert!(!m.holds_lease());
}

/// A loser extends its open to the end of the winner's lease; when it wins
/// the next generation's lease, its breaker must probe at that generation's
/// deadline, not at the end of the old extension.
#[test]
fn a_winner_that_had_extended_its_open_probes_at_the_fleet_deadline() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let now = Instant::now();
    m.on_snapshot(&cfg, &*member, &open(1, 1000), now);
    let t1 = now + MS(800);
    assert_eq!(m.tick(&cfg, t1), Some(Command::Acquire { generation: 1 }));
    let lost = LeaseOutcome::Lost {
        remaining: MS(2000),
    };
    m.on_lease(&cfg, &*member, Ok(lost), t1);
    let extended = member.last_open().unwrap();
    assert!(extended >= t1 + MS(2000));

    // The winner's probe failed: generation 2 ends before the extension.
    let t2 = now + MS(1100);
    m.on_snapshot(&cfg, &*member, &open(2, 1500), t2);
    let deadline = t2 + MS(1500);
    assert!(deadline < extended);
    let t3 = deadline - MS(300);
    assert_eq!(m.tick(&cfg, t3), Some(Command::Acquire { generation: 2 }));
    assert_eq!(member.release_count(), 0);
    let won = LeaseOutcome::Won { lease: MS(2000) };
    m.on_lease(&cfg, &*member, Ok(won), t3);
    assert!(m.holds_lease());
    assert_eq!(*member.releases.lock().unwrap(), [deadline]);
}

/// A machine that follows fleet open `generation` of `ms` and has just
/// asked for its lease, `probe_lead` before the deadline: returns it with
/// the time it asked and the deadline.
fn asking_for_the_lease(
    cfg: &FleetConfig,
    member: &FakeMember,
    generation: u64,
    ms: u64,
) -> (Machine, Instant, Instant) {
    let mut m = Machine::new(1);
    let now = Instant::now();
    m.on_snapshot(cfg, member, &open(generation, ms), now);
    let deadline = now + MS(ms);
    let at = deadline - cfg.probe_lead;
    assert_eq!(m.tick(cfg, at), Some(Command::Acquire { generation }));
    (m, at, deadline)
}

/// A machine that follows fleet open `generation` of `ms`, won its lease
/// `probe_lead` before the deadline, and whose trial then failed at the
/// deadline: returns it with the deadline, once the failure was reported.
fn prober_whose_trial_failed(
    cfg: &FleetConfig,
    member: &FakeMember,
    generation: u64,
    ms: u64,
) -> (Machine, Instant) {
    let (mut m, at, deadline) = asking_for_the_lease(cfg, member, generation, ms);
    let won = LeaseOutcome::Won {
        lease: cfg.probe_lease,
    };
    m.on_lease(cfg, member, Ok(won), at);
    use State::*;
    m.on_local(t(Open, HalfOpen, Cause::Calls), deadline);
    assert_eq!(
        m.on_local(t(HalfOpen, Open, Cause::Calls), deadline),
        Some(Command::Report {
            generation,
            success: false
        })
    );
    (m, deadline)
}

/// The prober's trial fails at the fleet deadline. Until the report's reply
/// brings the next generation it asks for nothing: a lease taken now for the
/// generation just reported would be one nobody reports on, and every other
/// instance would lose it until it expired, then give up and probe on its own.
#[test]
fn a_reported_failure_asks_for_no_lease_until_its_reply() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let (mut m, deadline) = prober_whose_trial_failed(&cfg, &member, 2, 1500);
    for late in [0, 5, 50, 500] {
        assert_eq!(m.tick(&cfg, deadline + MS(late)), None, "{late} ms on");
    }
    let reopened = FleetOpen {
        generation: 3,
        remaining: MS(1500),
    };
    let replied = deadline + MS(600);
    m.on_report(
        &cfg,
        &*member,
        Ok(ReportOutcome::Reopened(reopened)),
        replied,
    );
    assert_eq!(m.remote_generation(), Some(3));
    assert_eq!(m.tick(&cfg, replied), None);
    assert_eq!(
        m.tick(&cfg, replied + MS(1500) - cfg.probe_lead),
        Some(Command::Acquire { generation: 3 })
    );
}

/// A report that is refused (the lease lapsed) or not answered leaves the
/// prober competing again, or probing locally: never waiting for nothing.
#[test]
fn a_refused_or_failed_report_does_not_leave_the_prober_waiting() {
    let cfg = cfg();
    for reply in [Ok(ReportOutcome::Refused), Err(TransportError::Timeout)] {
        let member = FakeMember::new("dep");
        let (mut m, deadline) = prober_whose_trial_failed(&cfg, &member, 2, 1000);
        let failed = reply.is_err();
        m.on_report(&cfg, &*member, reply, deadline + MS(10));
        if failed {
            assert!(m.probes_locally());
            assert_eq!(m.tick(&cfg, deadline + MS(20)), None);
        } else {
            assert!(!m.probes_locally());
            assert_eq!(
                m.tick(&cfg, deadline + MS(20)),
                Some(Command::Acquire { generation: 2 })
            );
        }
    }
}

/// The store has opened a newer generation than the one this machine asks
/// the lease of: no lease, local probing, until the newer generation is read,
/// which starts the lease round over.
#[test]
fn a_stale_lease_request_probes_locally_until_the_newer_generation_arrives() {
    let cfg = cfg();
    let member = FakeMember::new("dep");
    let (mut m, at, _) = asking_for_the_lease(&cfg, &member, 4, 1000);
    m.on_lease(&cfg, &*member, Ok(LeaseOutcome::Stale), at);
    assert!(m.probes_locally());
    assert!(!m.holds_lease());
    assert_eq!(m.lost_leases(), 0, "not a lost lease");
    assert_eq!(m.tick(&cfg, at + MS(100)), None);
    m.on_snapshot(&cfg, &*member, &open(5, 2000), at + MS(50));
    assert!(!m.probes_locally());
    assert_eq!(
        m.tick(&cfg, at + MS(50) + MS(2000) - cfg.probe_lead),
        Some(Command::Acquire { generation: 5 })
    );
}

/// Calls in flight past `hung_after` vote once there are `hung_calls` of
/// them on a closed breaker, not while the fleet is open, and again only
/// after half a vote window.
#[test]
fn hung_calls_vote_on_a_closed_breaker_once_per_half_window() {
    let mut cfg = cfg();
    cfg.hung_after = Some(MS(250));
    cfg.hung_calls = 3;
    let member = FakeMember::new("dep");
    let mut m = Machine::new(1);
    let now = Instant::now();
    assert_eq!(m.on_hung(&cfg, State::Closed, 2, now), None, "too few");
    assert_eq!(
        m.on_hung(&cfg, State::Open, 9, now),
        None,
        "voted on opening"
    );
    assert_eq!(m.on_hung(&cfg, State::Closed, 3, now), Some(Command::Vote));
    assert_eq!(m.on_hung(&cfg, State::Closed, 9, now + MS(25)), None);
    let again = now + cfg.vote_window / 2;
    assert_eq!(
        m.on_hung(&cfg, State::Closed, 9, again),
        Some(Command::Vote)
    );
    m.on_snapshot(&cfg, &*member, &open(2, 1500), again);
    assert_eq!(
        m.on_hung(&cfg, State::Closed, 9, again + cfg.vote_window),
        None,
        "open"
    );
}
