//! The organization's `webchat` setting: the website as a channel
//! (`shared/spec/webchat.md`). `{"enabled", "allowedOrigins", "greeting", "profile",
//! "voice", "consentText", "maxSessionsPerHour", "maxAssistantTurnsPerSession"}`; a
//! member left out of a `PATCH /v1/org` keeps its value, `null` (the whole setting)
//! puts back the defaults (off).
//!
//! Each member is checked as it is read, so a refusal names it (`webchat.greeting`);
//! `update` checks that `profile` names a profile of the organization.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::store::webchat::WebchatSettings;

/// Bounds of the texts, in characters.
pub const GREETING_CHARS: usize = 500;
pub const CONSENT_TEXT_CHARS: usize = 2_000;
/// The most allowed origins.
pub const MAX_ORIGINS: usize = 20;
/// The largest `maxSessionsPerHour` and `maxAssistantTurnsPerSession`.
pub const MAX_SESSIONS_PER_HOUR: u64 = 100_000;
pub const MAX_TURNS: u64 = 1_000;

/// The setting as `GET /v1/org` shows it.
pub fn view(s: &WebchatSettings) -> Value {
    json!({
        "enabled": s.enabled,
        "allowedOrigins": s.allowed_origins,
        "greeting": s.greeting,
        "profile": (!s.profile.is_empty()).then_some(&s.profile),
        "voice": s.voice,
        "consentText": s.consent_text,
        "maxSessionsPerHour": s.max_sessions_per_hour,
        "maxAssistantTurnsPerSession": s.max_assistant_turns_per_session,
    })
}

/// A change of `webchat`: the members given, each checked; `None` of the whole: the
/// defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebchatPatch {
    pub reset: bool,
    pub enabled: Option<bool>,
    pub allowed_origins: Option<Vec<String>>,
    pub greeting: Option<String>,
    /// `Some("")`: none.
    pub profile: Option<String>,
    pub voice: Option<bool>,
    pub consent_text: Option<String>,
    pub max_sessions_per_hour: Option<u32>,
    pub max_assistant_turns_per_session: Option<u32>,
}

fn field(member: &str, why: &str) -> Error {
    Error::field(
        &format!("webchat.{member}"),
        format!("webchat.{member} {why}"),
    )
}

fn invalid(member: &str) -> Error {
    Error::invalid_field(&format!("webchat.{member}"))
}

impl WebchatPatch {
    /// `webchat`'s JSON: `null` (the defaults) or an object of members.
    pub fn from_json(value: &Value) -> Result<WebchatPatch> {
        let members: &Map<String, Value> = match value {
            Value::Null => {
                return Ok(WebchatPatch {
                    reset: true,
                    ..WebchatPatch::default()
                })
            }
            Value::Object(members) => members,
            _ => return Err(Error::invalid_field("webchat")),
        };
        let mut p = WebchatPatch::default();
        for (name, v) in members {
            let flag = || v.as_bool().ok_or_else(|| invalid(name));
            let text = || match v {
                Value::Null => Ok(""),
                Value::String(t) => Ok(t.as_str()),
                _ => Err(invalid(name)),
            };
            match name.as_str() {
                "enabled" => p.enabled = Some(flag()?),
                "voice" => p.voice = Some(flag()?),
                "allowedOrigins" => {
                    let items = match v {
                        Value::Null => Vec::new(),
                        Value::Array(items) => items
                            .iter()
                            .map(|i| i.as_str().ok_or_else(|| invalid(name)))
                            .collect::<Result<Vec<_>>>()?,
                        _ => return Err(invalid(name)),
                    };
                    p.set_origins(&items)?;
                }
                "greeting" => p.set_greeting(text()?)?,
                "consentText" => p.set_consent_text(text()?)?,
                "profile" => p.profile = Some(text()?.trim().to_string()),
                "maxSessionsPerHour" => {
                    p.max_sessions_per_hour = Some(bounded(name, v, 1, MAX_SESSIONS_PER_HOUR)?)
                }
                "maxAssistantTurnsPerSession" => {
                    p.max_assistant_turns_per_session = Some(bounded(name, v, 0, MAX_TURNS)?)
                }
                other => return Err(Error::unknown_field(&format!("webchat.{other}"))),
            }
        }
        Ok(p)
    }

    /// The origins, each `https://host[:port]` (or `http://` for `localhost`), once.
    pub fn set_origins(&mut self, items: &[&str]) -> Result<()> {
        if items.len() > MAX_ORIGINS {
            return Err(field(
                "allowedOrigins",
                &format!("holds at most {MAX_ORIGINS} origins"),
            ));
        }
        let mut out: Vec<String> = Vec::new();
        for item in items {
            let origin = normal_origin(item).ok_or_else(|| {
                field(
                    "allowedOrigins",
                    &format!("is a list of origins such as https://acme.example (no path): {item:?} is not one"),
                )
            })?;
            if !out.contains(&origin) {
                out.push(origin);
            }
        }
        self.allowed_origins = Some(out);
        Ok(())
    }

    pub fn set_greeting(&mut self, text: &str) -> Result<()> {
        self.greeting = Some(bounded_text("greeting", text, GREETING_CHARS)?);
        Ok(())
    }

    pub fn set_consent_text(&mut self, text: &str) -> Result<()> {
        self.consent_text = Some(bounded_text("consentText", text, CONSENT_TEXT_CHARS)?);
        Ok(())
    }

    /// The setting after this change.
    pub fn merged(self, before: WebchatSettings) -> WebchatSettings {
        let mut s = if self.reset {
            WebchatSettings::default()
        } else {
            before
        };
        if let Some(v) = self.enabled {
            s.enabled = v;
        }
        if let Some(v) = self.allowed_origins {
            s.allowed_origins = v;
        }
        if let Some(v) = self.greeting {
            s.greeting = v;
        }
        if let Some(v) = self.profile {
            s.profile = v;
        }
        if let Some(v) = self.voice {
            s.voice = v;
        }
        if let Some(v) = self.consent_text {
            s.consent_text = v;
        }
        if let Some(v) = self.max_sessions_per_hour {
            s.max_sessions_per_hour = v;
        }
        if let Some(v) = self.max_assistant_turns_per_session {
            s.max_assistant_turns_per_session = v;
        }
        s
    }
}

fn bounded(name: &str, v: &Value, low: u64, high: u64) -> Result<u32> {
    v.as_u64()
        .filter(|n| (low..=high).contains(n))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| field(name, &format!("is a whole number from {low} to {high}")))
}

fn bounded_text(name: &str, text: &str, chars: usize) -> Result<String> {
    let text = text.trim();
    if text.chars().count() > chars {
        return Err(field(name, &format!("is at most {chars} characters")));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(invalid(name));
    }
    Ok(text.to_string())
}

/// `https://Acme.example/` → `https://acme.example`; a path, a query, user info or
/// another scheme: none. `http://` only for `localhost` and `127.0.0.1`.
pub fn normal_origin(text: &str) -> Option<String> {
    let text = text.trim().trim_end_matches('/');
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return None;
    }
    let host = rest.to_ascii_lowercase();
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !name.ends_with(']') || host.starts_with('[') => {
            port.parse::<u16>().ok()?;
            (name.to_string(), Some(port))
        }
        _ => (host.clone(), None),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'))
    {
        return None;
    }
    let local = name == "localhost" || name == "127.0.0.1" || name == "[::1]";
    match scheme.as_str() {
        "https" => {}
        "http" if local => {}
        _ => return None,
    }
    Some(match port {
        Some(port) => format!("{scheme}://{name}:{port}"),
        None => format!("{scheme}://{name}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized_and_only_origins() {
        assert_eq!(
            normal_origin("https://Acme.Example/").as_deref(),
            Some("https://acme.example")
        );
        assert_eq!(
            normal_origin("https://acme.example:8443").as_deref(),
            Some("https://acme.example:8443")
        );
        assert_eq!(
            normal_origin("http://localhost:3000").as_deref(),
            Some("http://localhost:3000")
        );
        for bad in [
            "http://acme.example",
            "https://acme.example/page",
            "acme.example",
            "https://",
            "https://a b",
            "https://u@acme.example",
            "javascript://x",
        ] {
            assert_eq!(normal_origin(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_patch_merges_its_members_and_names_a_refused_one() {
        let p = WebchatPatch::from_json(
            &json!({"enabled": true, "allowedOrigins": ["https://acme.example"], "greeting": "Hi"}),
        )
        .unwrap();
        let s = p.merged(WebchatSettings::default());
        assert!(s.enabled);
        assert_eq!(s.allowed_origins, ["https://acme.example"]);
        assert_eq!(s.max_sessions_per_hour, 500);
        let s = WebchatPatch::from_json(&json!({"greeting": "Hello"}))
            .unwrap()
            .merged(s);
        assert!(s.enabled, "a member left out keeps its value");
        assert_eq!(s.greeting, "Hello");
        let e = WebchatPatch::from_json(&json!({"maxSessionsPerHour": 0})).unwrap_err();
        assert_eq!(e.refused_field(), Some("webchat.maxSessionsPerHour"));
        let e = WebchatPatch::from_json(&json!({"colour": "red"})).unwrap_err();
        assert_eq!(e.to_string(), "Unknown field: webchat.colour");
        let s = WebchatPatch::from_json(&Value::Null).unwrap().merged(s);
        assert_eq!(s, WebchatSettings::default());
    }
}
