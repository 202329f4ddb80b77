//! The `smtp` kind of an email provider in the organization's settings: parsing a
//! `providers.email` object into [`SmtpSettings`] and its view. Kept apart from
//! `settings::org` so each provider kind's rules stay in one place; secrets (`password`,
//! `inboundSigningKey`) are write-only, and an absent one keeps the stored value. A
//! `PATCH`'s members (or the console's form) make an `SmtpPatch`, checked as it is built.

use serde_json::{json, Map, Value};

use super::{bound_secret, Endpoint};
use crate::error::{Error, Result};
use crate::store::rows::{SmtpSecurity, SmtpSettings};

/// The message of a `PATCH` that configures smtp on a server without `public_url`.
pub const NEEDS_PUBLIC_URL: &str = "public_url must be set to use the smtp provider";

/// Where an email provider's refusals point.
const PATH: &str = "providers.email";

fn invalid(member: &str) -> Error {
    Error::invalid_field(&format!("{PATH}.{member}"))
}

/// An `smtp` provider as a `PATCH` gives it, each member checked when set;
/// [`SmtpPatch::settings`] lends it the secrets it leaves out from what was stored.
#[derive(Clone, Default, PartialEq)]
pub struct SmtpPatch {
    host: Option<String>,
    port: Option<u16>,
    security: Option<SmtpSecurity>,
    username: Option<String>,
    /// `None`: keep the stored one; `Some(None)`: clear it.
    password: Option<Option<String>>,
    from: Option<String>,
    inbound_signing_key: Option<Option<String>>,
}

impl std::fmt::Debug for SmtpPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &Option<Option<String>>| s.as_ref().map(|s| s.as_ref().map(|_| "(set)"));
        f.debug_struct("SmtpPatch")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password", &set(&self.password))
            .field("from", &self.from)
            .field("inbound_signing_key", &set(&self.inbound_signing_key))
            .finish()
    }
}

/// A secret member: empty or `null` clears it.
fn secret(member: &str, value: Option<&str>) -> Result<Option<String>> {
    match value {
        None => Ok(None),
        Some(s) if s.len() <= 1024 => Ok((!s.is_empty()).then(|| s.to_string())),
        Some(_) => Err(invalid(member)),
    }
}

impl SmtpPatch {
    /// `{"kind": "smtp", "host", "port", "security", "username"?, "password"?, "from",
    /// "inboundSigningKey"?}`, its members checked in order.
    pub fn from_json(members: &Map<String, Value>) -> Result<SmtpPatch> {
        let mut patch = SmtpPatch::default();
        for (member, value) in members {
            match (member.as_str(), value) {
                ("kind", _) => {}
                ("host", Value::String(host)) => patch.host(host)?,
                ("port", value) => patch.port(value.as_u64().ok_or_else(|| invalid(member))?)?,
                ("security", Value::String(security)) => patch.security(security)?,
                ("username", Value::Null) => patch.username(None)?,
                ("username", Value::String(name)) => patch.username(Some(name))?,
                ("password", Value::Null) => patch.password(None)?,
                ("password", Value::String(p)) => patch.password(Some(p))?,
                ("inboundSigningKey", Value::Null) => patch.inbound_signing_key(None)?,
                ("inboundSigningKey", Value::String(k)) => patch.inbound_signing_key(Some(k))?,
                ("from", Value::String(from)) => patch.from(from)?,
                (
                    "host" | "security" | "username" | "password" | "inboundSigningKey" | "from",
                    _,
                ) => return Err(invalid(member)),
                (other, _) => return Err(Error::unknown_field(&format!("{PATH}.{other}"))),
            }
        }
        patch.checked()
    }

    /// A host name or IP literal (trimmed).
    pub fn host(&mut self, host: &str) -> Result<()> {
        let host = host.trim();
        if !is_host(host) {
            return Err(invalid("host"));
        }
        self.host = Some(host.to_string());
        Ok(())
    }

    pub fn port(&mut self, port: u64) -> Result<()> {
        self.port = Some(
            u16::try_from(port)
                .ok()
                .filter(|p| *p >= 1)
                .ok_or_else(|| invalid("port"))?,
        );
        Ok(())
    }

    /// `tls`, `starttls` or `none`.
    pub fn security(&mut self, security: &str) -> Result<()> {
        self.security = Some(match security {
            "tls" => SmtpSecurity::Tls,
            "starttls" => SmtpSecurity::StartTls,
            "none" => SmtpSecurity::None,
            _ => return Err(invalid("security")),
        });
        Ok(())
    }

    /// `None` or empty: no username.
    pub fn username(&mut self, username: Option<&str>) -> Result<()> {
        self.username = match username {
            None => None,
            Some(u) if u.len() <= 320 => (!u.is_empty()).then(|| u.to_string()),
            Some(_) => return Err(invalid("username")),
        };
        Ok(())
    }

    /// `None` or empty clears it; not called: the stored one stays.
    pub fn password(&mut self, password: Option<&str>) -> Result<()> {
        self.password = Some(secret("password", password)?);
        Ok(())
    }

    /// `None` or empty clears it; not called: the stored one stays.
    pub fn inbound_signing_key(&mut self, key: Option<&str>) -> Result<()> {
        self.inbound_signing_key = Some(secret("inboundSigningKey", key)?);
        Ok(())
    }

    /// A mailbox lettre reads (trimmed).
    pub fn from(&mut self, from: &str) -> Result<()> {
        let from = from.trim();
        if from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(invalid("from"));
        }
        self.from = Some(from.to_string());
        Ok(())
    }

    /// The patch once every member is set: host, port, security and from are required.
    pub fn checked(self) -> Result<SmtpPatch> {
        for (name, missing) in [
            ("host", self.host.is_none()),
            ("port", self.port.is_none()),
            ("security", self.security.is_none()),
            ("from", self.from.is_none()),
        ] {
            if missing {
                return Err(invalid(name));
            }
        }
        Ok(self)
    }

    /// The settings: this patch over `previous`, whose secrets stay when left out; the
    /// password only while the host and port stay the same (another server without a
    /// password given clears it: `passwordSet` false). The inbound signing key is not
    /// sent to the server (it checks what is posted to us), so it stays.
    pub fn settings(self, previous: Option<&SmtpSettings>) -> Result<SmtpSettings> {
        let checked = self.checked()?;
        let required = |name: &str| invalid(name);
        let host = checked.host.ok_or_else(|| required("host"))?;
        let port = checked.port.ok_or_else(|| required("port"))?;
        let stored = previous.map(|p| (Endpoint::host_port(&p.host, p.port), p.password.clone()));
        let password = match checked.password {
            Some(given) => given,
            None => bound_secret(
                None,
                stored.as_ref().map(|(at, password)| (at, password.clone())),
                &Endpoint::host_port(&host, port),
            )
            .flatten(),
        };
        Ok(SmtpSettings {
            host,
            port,
            security: checked.security.ok_or_else(|| required("security"))?,
            username: checked.username,
            password,
            from: checked.from.ok_or_else(|| required("from"))?,
            inbound_signing_key: checked
                .inbound_signing_key
                .unwrap_or_else(|| previous.and_then(|p| p.inbound_signing_key.clone())),
        })
    }
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

    /// What a `PATCH` makes of the email provider.
    fn parse(
        _path: &str,
        members: Map<String, Value>,
        previous: Option<&SmtpSettings>,
    ) -> Result<SmtpSettings> {
        SmtpPatch::from_json(&members)?.settings(previous)
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
