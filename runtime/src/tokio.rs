//! tokio's timer, for the delays between the attempts of an async retry.

use std::time::Duration;

/// Sleeps `delay` on tokio's timer (which honours a paused test clock).
pub(crate) async fn sleep(delay: Duration) {
    ::tokio::time::sleep(delay).await;
}
