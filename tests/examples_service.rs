//! Runs the checkout service of `examples/service.rs` (the same code,
//! included as a module) on tokio's paused clock, so that the sick
//! replica's hangs and the payments breaker's recovery take no time and
//! the story is the same on every run, and checks what it prints. One
//! test: the Prometheus recorder is global.

#[allow(dead_code)]
#[path = "../examples/service.rs"]
mod service;

#[tokio::test(start_paused = true)]
async fn the_checkout_story_fails_over_holds_orders_recovers_and_reports() {
    failfast::testing::follow_tokio_clock();
    let mut out = Vec::new();
    service::run(&mut out, &service::install_recorder())
        .await
        .expect("the story runs");
    let text = String::from_utf8(out).unwrap();
    print!("{text}");
    let (story, metrics) = text.split_once("== GET /metrics (excerpt)\n").unwrap();
    assert_eq!(story, STORY, "the story as printed:\n{story}");
    let mut metrics: Vec<&str> = metrics.lines().collect();
    metrics.sort_unstable();
    assert_eq!(metrics, METRICS, "the metrics as printed:\n{metrics:#?}");
}

const STORY: &str = r#"settings from service.toml (0 FAILFAST__ variables):
  checkout::inventory threshold 2
  checkout::payments  threshold 2, recovery 3s

== replica-b stops answering
order  1  stock: replica-a  payment: charged
order  2  stock: replica-b failed (timed out after 200 ms) → replica-c  payment: charged
order  3  stock: replica-c  payment: charged
order  4  stock: replica-a  payment: charged
order  5  stock: replica-b failed (timed out after 200 ms) → replica-c  payment: charged
order  6  stock: (replica-b skipped) replica-c  payment: charged
replica-b was called 2 times in 6 orders

== the payment gateway goes down
order  7  stock: (replica-b skipped) replica-a  payment: failed (timed out after 200 ms), order held
order  8  stock: (replica-b skipped) replica-c  payment: failed (timed out after 200 ms), order held
order  9  stock: (replica-b skipped) replica-a  payment: refused by checkout::payments (open, retry in 3s), order held
refund of order 1: refused by checkout::payments (open, retry in 3s)
the gateway was called 2 times for 4 requests

== the gateway is back; 3s later:
order 10  stock: (replica-b skipped) replica-c  payment: charged
checkout::payments is closed now: that charge was its trial

== GET /admin/breakers
breaker                          state  calls failures refused threshold        recovery
checkout::payments               closed    11        2       2 2 file           3s file
checkout::inventory[replica-a]   closed     4        0       0 2 file           30s declared
checkout::inventory[replica-b]   open       2        2       0 2 file           30s declared
checkout::inventory[replica-c]   closed     6        0       0 2 file           30s declared

"#;

const METRICS: [&str; 10] = [
    r#"failfast_calls_total{breaker="checkout::payments",outcome="rejected"} 2"#,
    r#"failfast_state{breaker="checkout::inventory[replica-b]"} 1"#,
    r#"failfast_threshold{breaker="checkout::inventory[replica-a]"} 2"#,
    r#"failfast_threshold{breaker="checkout::inventory[replica-b]"} 2"#,
    r#"failfast_threshold{breaker="checkout::inventory[replica-c]"} 2"#,
    r#"failfast_threshold{breaker="checkout::payments"} 2"#,
    r#"failfast_transitions_total{breaker="checkout::inventory[replica-b]",from="closed",to="open"} 1"#,
    r#"failfast_transitions_total{breaker="checkout::payments",from="closed",to="open"} 1"#,
    r#"failfast_transitions_total{breaker="checkout::payments",from="half_open",to="closed"} 1"#,
    r#"failfast_transitions_total{breaker="checkout::payments",from="open",to="half_open"} 1"#,
];
