//! Per-key rate limiting: a token bucket per API key, off unless configured.
//!
//! Each key's bucket holds up to `burst` tokens and refills at `rate` per second; a
//! request takes one. An empty bucket answers 429 with `Retry-After`, the whole seconds
//! until a token is back. Buckets live in memory: a restart forgives everyone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::error::{Error, Result};

pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    pub fn new(rate_per_second: f64, burst: u32) -> Self {
        RateLimiter {
            rate: rate_per_second,
            burst: f64::from(burst),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token for `key_id`, or says how long to wait.
    pub fn check(&self, key_id: &str) -> Result<()> {
        self.check_at(key_id, Instant::now())
    }

    fn check_at(&self, key_id: &str, now: Instant) -> Result<()> {
        let mut buckets = self
            .buckets
            .lock()
            .map_err(|_| Error::Internal("rate limiter lock poisoned".into()))?;
        let bucket = buckets.entry(key_id.to_string()).or_insert(Bucket {
            tokens: self.burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / self.rate;
            Err(Error::RateLimited {
                retry_after_secs: wait.ceil().max(1.0) as u64,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn allows_the_burst_then_refills_at_the_rate() {
        let limiter = RateLimiter::new(2.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check_at("k", t0).is_ok());
        }
        match limiter.check_at("k", t0) {
            Err(Error::RateLimited { retry_after_secs }) => assert_eq!(retry_after_secs, 1),
            other => panic!("expected 429, got {other:?}"),
        }
        // Another key has its own bucket.
        assert!(limiter.check_at("other", t0).is_ok());
        // Half a second at 2/s gives one token back.
        assert!(limiter
            .check_at("k", t0 + Duration::from_millis(500))
            .is_ok());
        assert!(limiter
            .check_at("k", t0 + Duration::from_millis(500))
            .is_err());
    }
}
