//! Settings: what an organization configures. Its own settings (compliance, quiet hours,
//! the engine's members), its profiles (cadences, reply delay, dispositions) with the
//! template engine their texts use, and the email and Twilio provider kinds.
//!
//! Shared by the provider kinds: a sending rate (`ratePerSecond`), and the rule that
//! binds a write-only secret to the endpoint it goes to ([`bound_secret`]), here.

pub mod availability;
pub mod calendars;
pub mod clock;
pub mod email;
pub mod org;
pub mod profiles;
pub mod replays;
pub mod templates;
pub mod transfer;
pub mod twilio;
pub mod webchat;

use serde_json::Value;

use crate::error::{Error, Result};

/// Where a write-only secret is sent: a URL (Twilio's and the assistant's `baseUrl`, a
/// calendar's CalDAV URL; a trailing `/` does not count) or an SMTP server's host and
/// port (the host in any case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint(String);

impl Endpoint {
    pub fn url(url: &str) -> Endpoint {
        Endpoint(url.trim().trim_end_matches('/').to_string())
    }

    pub fn host_port(host: &str, port: u16) -> Endpoint {
        Endpoint(format!("{}:{port}", host.trim().to_ascii_lowercase()))
    }
}

/// A write-only secret after a save, bound to its endpoint: the one `given`; else the
/// `stored` one, only while its endpoint stays the same; else none (cleared). A key
/// holder who moves the endpoint must give the secret again: the stored one never
/// travels to a place it was not given for. The one rule of Twilio's auth token, the
/// SMTP password, the assistant's API key and a calendar's CalDAV password.
pub fn bound_secret<S>(
    given: Option<S>,
    stored: Option<(&Endpoint, S)>,
    now: &Endpoint,
) -> Option<S> {
    given.or_else(|| {
        stored
            .filter(|(endpoint, _)| *endpoint == now)
            .map(|(_, secret)| secret)
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_stays_only_with_its_endpoint() {
        let here = Endpoint::url("https://api.example.com/");
        let there = Endpoint::url("https://evil.example.net");
        assert_eq!(here, Endpoint::url("https://api.example.com"));
        assert_eq!(bound_secret(None, Some((&here, "s")), &here), Some("s"));
        assert_eq!(bound_secret(None, Some((&here, "s")), &there), None);
        assert_eq!(
            bound_secret(Some("t"), Some((&here, "s")), &there),
            Some("t")
        );
        assert_eq!(bound_secret::<&str>(None, None, &here), None);
        let smtp = Endpoint::host_port("Mail.Example.com", 587);
        assert_eq!(smtp, Endpoint::host_port("mail.example.com", 587));
        assert_ne!(smtp, Endpoint::host_port("mail.example.com", 25));
    }
}
