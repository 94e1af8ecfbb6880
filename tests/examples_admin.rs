//! Runs the admin service of `examples/admin.rs` (the same code, included
//! as a module) on loopback: after a trip, `/metrics` has the breaker's
//! series with the values the calls made, and never-called breakers are
//! listed and controllable. One test: the Prometheus recorder is global.

#[allow(dead_code)]
#[path = "../examples/admin.rs"]
mod admin;

use failfast::State;

fn line<'a>(text: &'a str, series: &str) -> Option<&'a str> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .map(|l| l[series.len()..].trim())
}

#[tokio::test]
async fn metrics_scraped_after_a_trip_show_the_calls_the_state_and_the_transition() {
    let addr = admin::start(admin::install_recorder()).await.unwrap();

    // Before any call: the series exist, at zero.
    let (status, before) = admin::request(addr, "GET", "/metrics").await.unwrap();
    assert_eq!(status, 200);
    let lookup = r#"failfast_calls_total{breaker="inventory::lookup",outcome="success"}"#;
    assert_eq!(line(&before, lookup), Some("0"), "{before}");

    for _ in 0..3 {
        assert!(matches!(
            admin::charge(false),
            Err(admin::PaymentError::Declined)
        ));
    }
    assert!(matches!(
        admin::charge(true),
        Err(admin::PaymentError::Unavailable(_))
    ));

    let (status, text) = admin::request(addr, "GET", "/metrics").await.unwrap();
    assert_eq!(status, 200);
    for (series, value) in [
        (
            r#"failfast_calls_total{breaker="payments::charge",outcome="failure"}"#,
            "3",
        ),
        (
            r#"failfast_calls_total{breaker="payments::charge",outcome="rejected"}"#,
            "1",
        ),
        (
            r#"failfast_calls_total{breaker="payments::charge",outcome="success"}"#,
            "0",
        ),
        (
            r#"failfast_calls_total{breaker="payments::charge",outcome="timeout"}"#,
            "0",
        ),
        (r#"failfast_state{breaker="payments::charge"}"#, "1"),
        (
            r#"failfast_transitions_total{breaker="payments::charge",from="closed",to="open"}"#,
            "1",
        ),
        (r#"failfast_threshold{breaker="payments::charge"}"#, "3"),
        (
            r#"failfast_recovery_seconds{breaker="payments::charge"}"#,
            "30",
        ),
        (r#"failfast_state{breaker="inventory::lookup"}"#, "0"),
    ] {
        assert_eq!(line(&text, series), Some(value), "{series} in\n{text}");
    }

    // Every breaker, the never-called one included, as JSON.
    let (status, body) = admin::request(addr, "GET", "/breakers").await.unwrap();
    assert_eq!(status, 200);
    let all: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"inventory::lookup"), "{names:?}");
    let charge = all
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "payments::charge");
    assert_eq!(charge.unwrap()["state"], "open");

    // Manual control before the first call.
    let (status, body) = admin::request(addr, "POST", "/breakers/inventory::lookup/force-open")
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(matches!(
        admin::lookup(),
        Err(admin::PaymentError::Unavailable(_))
    ));
    let (status, _) = admin::request(addr, "POST", "/breakers/payments::charge/reset")
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        failfast::registry::get("payments::charge").unwrap().state(),
        State::Closed
    );
    let (status, _) = admin::request(addr, "POST", "/breakers/nope/reset")
        .await
        .unwrap();
    assert_eq!(status, 404);
}
