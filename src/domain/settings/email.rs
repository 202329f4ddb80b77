//! The `smtp` kind of an email provider in the organization's settings: parsing a
//! `providers.email` object into [`SmtpSettings`] and its view. Kept apart from
//! `settings::org` so each provider kind's rules stay in one place; secrets (`password`,
//! `inboundSigningKey`) are write-only, and an absent one keeps the stored value.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::store::rows::{SmtpSecurity, SmtpSettings};

/// The message of a `PATCH` that configures smtp on a server without `public_url`.
pub const NEEDS_PUBLIC_URL: &str = "public_url must be set to use the smtp provider";

/// Parses `{"kind": "smtp", "host", "port", "security", "username"?, "password"?,
/// "from", "inboundSigningKey"?}` at `path`; `previous` lends the secrets a client
/// cannot send back.
pub fn parse(
    path: &str,
    members: Map<String, Value>,
    previous: Option<&SmtpSettings>,
) -> Result<SmtpSettings> {
    let mut host = None;
    let mut port = None;
    let mut security = None;
    let mut username = None;
    let mut password = previous.and_then(|p| p.password.clone());
    let mut from = None;
    let mut inbound_signing_key = previous.and_then(|p| p.inbound_signing_key.clone());
    let secret = |value: Value, invalid: Error| match value {
        Value::Null => Ok(None),
        Value::String(s) if s.len() <= 1024 => Ok((!s.is_empty()).then_some(s)),
        _ => Err(invalid),
    };
    for (member, value) in members {
        let invalid = Error::invalid_field(&format!("{path}.{member}"));
        match member.as_str() {
            "kind" => {}
            "host" => {
                host = Some(
                    value
                        .as_str()
                        .map(str::trim)
                        .filter(|h| is_host(h))
                        .map(str::to_string)
                        .ok_or(invalid)?,
                )
            }
            "port" => {
                port = Some(
                    value
                        .as_u64()
                        .filter(|p| (1..=65_535).contains(p))
                        .map(|p| p as u16)
                        .ok_or(invalid)?,
                )
            }
            "security" => {
                security = Some(match value.as_str() {
                    Some("tls") => SmtpSecurity::Tls,
                    Some("starttls") => SmtpSecurity::StartTls,
                    Some("none") => SmtpSecurity::None,
                    _ => return Err(invalid),
                })
            }
            "username" => {
                username = match value {
                    Value::Null => None,
                    Value::String(u) if u.len() <= 320 => (!u.is_empty()).then_some(u),
                    _ => return Err(invalid),
                }
            }
            "password" => password = secret(value, invalid)?,
            "inboundSigningKey" => inbound_signing_key = secret(value, invalid)?,
            "from" => {
                from = Some(
                    value
                        .as_str()
                        .map(str::trim)
                        .filter(|f| f.parse::<lettre::message::Mailbox>().is_ok())
                        .map(str::to_string)
                        .ok_or(invalid)?,
                )
            }
            other => return Err(Error::unknown_field(&format!("{path}.{other}"))),
        }
    }
    let required = |name: &str| Error::invalid_field(&format!("{path}.{name}"));
    Ok(SmtpSettings {
        host: host.ok_or_else(|| required("host"))?,
        port: port.ok_or_else(|| required("port"))?,
        security: security.ok_or_else(|| required("security"))?,
        username,
        password,
        from: from.ok_or_else(|| required("from"))?,
        inbound_signing_key,
    })
}

/// A host name or IP literal: no spaces, no scheme, no port.
fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'))
}

/// The view: the secrets only as `passwordSet` and `inboundSigningKeySet`.
pub fn view(s: &SmtpSettings) -> Value {
    let security = match s.security {
        SmtpSecurity::Tls => "tls",
        SmtpSecurity::StartTls => "starttls",
        SmtpSecurity::None => "none",
    };
    json!({
        "kind": "smtp",
        "host": s.host,
        "port": s.port,
        "security": security,
        "username": s.username,
        "passwordSet": s.password.is_some(),
        "from": s.from,
        "inboundSigningKeySet": s.inbound_signing_key.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn required_members_name_their_path() {
        let err = parse(
            "providers.email",
            members(json!({"kind": "smtp", "port": 25, "security": "none", "from": "a@b.example"})),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid format for field: providers.email.host"
        );
        let err = parse(
            "providers.email",
            members(json!({"kind": "smtp", "host": "h", "port": 25, "security": "none", "from": "not a mailbox"})),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Invalid format for field: providers.email.from"
        );
    }

    #[test]
    fn absent_secrets_keep_the_stored_ones_and_debug_hides_them() {
        let first = parse(
            "providers.email",
            members(
                json!({"kind": "smtp", "host": "smtp.example.com", "port": 587,
                "security": "starttls", "username": "u", "password": "hunter2",
                "from": "Sam <sam@acme.example>", "inboundSigningKey": "key-1"}),
            ),
            None,
        )
        .unwrap();
        let second = parse(
            "providers.email",
            members(
                json!({"kind": "smtp", "host": "smtp.example.com", "port": 587,
                "security": "starttls", "from": "sam@acme.example"}),
            ),
            Some(&first),
        )
        .unwrap();
        assert_eq!(second.password.as_deref(), Some("hunter2"));
        assert_eq!(second.inbound_signing_key.as_deref(), Some("key-1"));
        let debug = format!("{second:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains("key-1"),
            "{debug}"
        );
        let view = view(&second).to_string();
        assert!(
            !view.contains("hunter2") && !view.contains("key-1"),
            "{view}"
        );
    }
}
