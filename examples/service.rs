//! A checkout service, as a team would write it. Each order reserves stock
//! on one of three inventory replicas, then charges the payment gateway:
//!
//! - each replica has its own breaker (`key = self.name`), and checkout
//!   fails over to the next replica whose breaker takes calls, in turn
//!   (`FamilyRef::failover`);
//! - `charge` and `refund` share one breaker for the gateway (`breaker!`);
//! - the service's TOML file (and `FAILFAST__…` variables) override the
//!   declared settings at start-up;
//! - an admin listing shows every breaker, each replica's included, with
//!   its settings and where each came from, the file, the environment or
//!   the declaration (`registry::all()`, each row's `Snapshot`), and a
//!   Prometheus scrape shows the same as metrics, the replicas' thresholds
//!   from the file included.
//!
//! The replicas and the gateway are simulated in-process: a sick one hangs
//! 200 ms, then fails. `tests/examples_service.rs` runs this story on
//! tokio's paused clock and checks what it prints.
//!
//! ```text
//! cargo run --example service --features metrics,serde
//! FAILFAST__CHECKOUT_PAYMENTS__RECOVERY=1s cargo run --example service --features metrics,serde
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use failfast::{Builder, Rejected, circuit_breaker, configure, registry};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

#[derive(Debug)]
pub enum CheckoutError {
    /// A dependency failed (timed out, 5xx): what the breakers count.
    Down(&'static str),
    /// A breaker refused the call; the dependency was not called.
    Refused(Rejected),
}

impl From<Rejected> for CheckoutError {
    fn from(rejected: Rejected) -> Self {
        CheckoutError::Refused(rejected)
    }
}

/// A simulated server: healthy, or sick (each call hangs 200 ms, then fails).
#[derive(Default)]
pub struct Server {
    sick: AtomicBool,
    /// Calls that reached it.
    pub hits: AtomicU32,
}

impl Server {
    pub fn set_sick(&self, sick: bool) {
        self.sick.store(sick, Ordering::Relaxed);
    }

    async fn call(&self) -> Result<u32, CheckoutError> {
        let n = self.hits.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.sick.load(Ordering::Relaxed) {
            return Ok(n);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        Err(CheckoutError::Down("timed out after 200 ms"))
    }
}

pub struct Replica {
    pub name: &'static str,
    pub server: Server,
}

/// The replica's key in the family (`key = self.name`): what
/// `failover` reads.
impl AsRef<str> for Replica {
    fn as_ref(&self) -> &str {
        self.name
    }
}

impl Replica {
    /// Reserves stock on this replica: one breaker per replica, named
    /// `checkout::inventory[replica-a]` and so on.
    #[circuit_breaker(name = "checkout::inventory", key = self.name, threshold = 5,
                      recovery = "30s", counts = CheckoutError::Down(_))]
    async fn reserve(&self) -> Result<u32, CheckoutError> {
        self.server.call().await
    }
}

#[derive(Default)]
pub struct Gateway(pub Server);

impl Gateway {
    #[circuit_breaker(breaker = PAYMENTS, counts = CheckoutError::Down(_))]
    async fn charge(&self) -> Result<u32, CheckoutError> {
        self.0.call().await
    }

    #[circuit_breaker(breaker = PAYMENTS, counts = CheckoutError::Down(_))]
    async fn refund(&self) -> Result<u32, CheckoutError> {
        self.0.call().await
    }
}

// One breaker for the gateway, whichever operation calls it.
failfast::breaker!(static PAYMENTS = name = "checkout::payments", threshold = 5, recovery = "30s");

/// The service's configuration file. Its `[failfast]` table changes the
/// declared settings by breaker name (a family's name: every replica's).
pub const CONFIG: &str = r#"
[failfast."checkout::inventory"]
threshold = 2

[failfast."checkout::payments"]
threshold = 2
recovery = "3s"
"#;

#[derive(serde::Deserialize)]
struct ConfigFile {
    failfast: BTreeMap<String, Builder>,
}

/// Applies the file's overrides, then the environment's. Called again
/// when the file changes, it puts a breaker whose section was deleted back
/// to its declared settings.
pub fn configure_breakers(out: &mut impl Write) -> Result<(), Box<dyn std::error::Error>> {
    let file: ConfigFile = toml::from_str(CONFIG)?;
    // The whole table: each section on its own (one refused keeps no other
    // from applying), and what it no longer names back to declared.
    configure::reload(file.failfast).map_err(listed)?;
    let env = configure::from_env(std::env::vars_os()).map_err(listed)?;
    let stock = registry::family("checkout::inventory").unwrap().config();
    let pay = registry::get("checkout::payments").unwrap();
    let pay = pay.config();
    writeln!(
        out,
        "settings from service.toml ({env} FAILFAST__ variables):\n  \
         checkout::inventory threshold {}\n  \
         checkout::payments  threshold {}, recovery {:?}",
        stock.threshold(),
        pay.threshold(),
        pay.recovery()
    )?;
    Ok(())
}

/// Every refusal of an override, one per line.
fn listed(refused: Vec<failfast::ConfigError>) -> String {
    let lines: Vec<String> = refused.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// One order: stock from the next replica in turn whose breaker takes
/// calls, failing over to the others on error; then the charge.
pub async fn checkout(order: usize, replicas: &[Replica], gateway: &Gateway) -> String {
    let family = registry::family("checkout::inventory").unwrap();
    let up: Vec<&Replica> = family.failover(replicas).collect();
    let mut line = format!("order {order:>2}  stock:");
    for skipped in replicas
        .iter()
        .filter(|r| !up.iter().any(|u| u.name == r.name))
    {
        line += &format!(" ({} skipped)", skipped.name);
    }
    let mut reserved = None;
    for replica in up {
        match replica.reserve().await {
            Ok(_) => {
                reserved = Some(replica.name);
                break;
            }
            Err(error) => line += &format!(" {} {} →", replica.name, describe(&error)),
        }
    }
    let Some(name) = reserved else {
        return line + " none: order refused";
    };
    match gateway.charge().await {
        Ok(_) => line + &format!(" {name}  payment: charged"),
        Err(error) => line + &format!(" {name}  payment: {}, order held", describe(&error)),
    }
}

fn describe(error: &CheckoutError) -> String {
    match error {
        CheckoutError::Down(why) => format!("failed ({why})"),
        CheckoutError::Refused(rejected) => {
            let (name, state) = (rejected.name(), rejected.state());
            let retry = rejected.retry_after().unwrap_or_default();
            let secs = retry.as_secs_f64().ceil();
            format!("refused by {name} ({state}, retry in {secs}s)")
        }
    }
}

/// What an admin page would show: every breaker, each key's of a family,
/// with the settings it runs with and where each came from (serialised
/// whole, each row is the JSON of an admin endpoint).
pub fn admin_listing(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<32} state  calls failures refused threshold        recovery",
        "breaker"
    )?;
    for s in registry::all().into_iter().map(|b| b.snapshot()) {
        let (name, state) = (&*s.name, s.state);
        let (calls, failures, refused) = (s.calls, s.failures, s.rejected);
        let from = |key| s.origins.get(key).copied().unwrap_or_default();
        let threshold = format!("{} {}", s.settings.threshold(), from("threshold"));
        let recovery = format!("{:?} {}", s.settings.recovery(), from("recovery"));
        let row = format!("{name:<32} {state:<6} {calls:>5} {failures:>8} {refused:>7}");
        writeln!(out, "{row} {threshold:<16} {recovery}")?;
    }
    Ok(())
}

/// The story, printed to `out`; `metrics` renders what the recorder holds.
pub async fn run(
    out: &mut impl Write,
    metrics: &PrometheusHandle,
) -> Result<(), Box<dyn std::error::Error>> {
    configure_breakers(out)?;
    let replicas = ["replica-a", "replica-b", "replica-c"].map(|name| Replica {
        name,
        server: Server::default(),
    });
    let gateway = Gateway::default();

    writeln!(out, "\n== replica-b stops answering")?;
    replicas[1].server.set_sick(true);
    for order in 1..=6 {
        writeln!(out, "{}", checkout(order, &replicas, &gateway).await)?;
    }
    let hits = replicas[1].server.hits.load(Ordering::Relaxed);
    writeln!(out, "replica-b was called {hits} times in 6 orders")?;

    writeln!(out, "\n== the payment gateway goes down")?;
    gateway.0.set_sick(true);
    let before = gateway.0.hits.load(Ordering::Relaxed);
    for order in 7..=9 {
        writeln!(out, "{}", checkout(order, &replicas, &gateway).await)?;
    }
    let refund = gateway.refund().await;
    let refund = refund.map_or_else(|e| describe(&e), |_| "done".into());
    writeln!(out, "refund of order 1: {refund}")?;
    let hits = gateway.0.hits.load(Ordering::Relaxed) - before;
    writeln!(out, "the gateway was called {hits} times for 4 requests")?;

    let payments = registry::get("checkout::payments").unwrap();
    let recovery = payments.config().recovery();
    writeln!(out, "\n== the gateway is back; {recovery:?} later:")?;
    gateway.0.set_sick(false);
    tokio::time::sleep(recovery).await;
    writeln!(out, "{}", checkout(10, &replicas, &gateway).await)?;
    let state = payments.state();
    writeln!(
        out,
        "checkout::payments is {state} now: that charge was its trial"
    )?;

    writeln!(out, "\n== GET /admin/breakers")?;
    admin_listing(out)?;

    writeln!(out, "\n== GET /metrics (excerpt)")?;
    failfast::metrics::export();
    for line in metrics.render().lines().filter(|l| shown(l)) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The states, the transitions, the refusals and the thresholds, where
/// not zero.
fn shown(line: &str) -> bool {
    let series = [
        "failfast_state{",
        "failfast_transitions_total{",
        "failfast_threshold{",
    ];
    (series.iter().any(|s| line.starts_with(s)) || line.contains("outcome=\"rejected\""))
        && !line.ends_with(" 0")
}

/// Installs the Prometheus recorder, with every declared breaker's series.
pub fn install_recorder() -> PrometheusHandle {
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder");
    failfast::metrics::export();
    handle
}

#[tokio::main]
#[allow(dead_code)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut std::io::stdout(), &install_recorder()).await
}
