//! Settings: what an organization configures. Its own settings (compliance, quiet hours,
//! the engine's members), its profiles (cadences, reply delay, dispositions) with the
//! template engine their texts use, and the email and Twilio provider kinds.
//!
//! Shared by the provider kinds: a sending rate (`ratePerSecond`), here.

pub mod availability;
pub mod calendars;
pub mod clock;
pub mod email;
pub mod org;
pub mod profiles;
pub mod templates;
pub mod twilio;

use serde_json::Value;

use crate::error::{Error, Result};

/// The most sends per second a provider may be given (Twilio's fastest senders, short
/// codes, take about 100).
pub const MAX_RATE_PER_SECOND: f64 = 1000.0;

/// A provider's `ratePerSecond` at `path`: a number above 0 and at most
/// [`MAX_RATE_PER_SECOND`]; `null` is the kind's default.
pub(crate) fn rate(path: &str, value: &Value) -> Result<Option<f64>> {
    match value {
        Value::Null => Ok(None),
        v => v
            .as_f64()
            .ok_or_else(|| Error::invalid_field(path))
            .and_then(|r| checked_rate(path, r))
            .map(Some),
    }
}

/// A provider's rate at `path`: above 0 and at most [`MAX_RATE_PER_SECOND`].
pub(crate) fn checked_rate(path: &str, rate: f64) -> Result<f64> {
    if rate > 0.0 && rate <= MAX_RATE_PER_SECOND {
        Ok(rate)
    } else {
        Err(Error::invalid_field(path))
    }
}
