//! Waiting until something happens: [`poll`] asks every 50 ms, within a bound.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long a test waits for something the server should do promptly.
pub const WAIT: Duration = Duration::from_secs(15);

/// Calls `check` every 50 ms until it answers `Ok`, for at most `limit`; panics with
/// `what` and the last `Err` (a description of what was seen) when time runs out.
pub async fn poll<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "{what}: not within {limit:?}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
