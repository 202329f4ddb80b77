//! A profile's `transfer` member: how a transfer reaches a person.
//!
//! `{"mode": "warm" | "cold", "number", "fallbackNumber", "name", "ringSeconds"
//! (10–60, default 25), "acceptDigit" (default "1"), "holdMusicUrl"}`. The numbers are
//! the profile's `transferNumber` / `fallbackTransferNumber` (the old members stay as
//! the cold form; given both ways, they must agree). A warm transfer needs a number.
//! Each refusal is a 400 naming its field (`transfer.ringSeconds`).

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::store::rows::{KeypadDigit, TransferMode, TransferSettings};

/// How long a person's phone rings when the profile says nothing.
pub const DEFAULT_RING_SECONDS: u32 = 25;
/// The shortest and longest ring a profile may set.
pub const RING_SECONDS: std::ops::RangeInclusive<u32> = 10..=60;
/// The longest `name` and `holdMusicUrl`, in characters.
const MAX_NAME_CHARS: usize = 80;
const MAX_URL_CHARS: usize = 2048;

const MEMBERS: &[&str] = &[
    "mode",
    "number",
    "fallbackNumber",
    "name",
    "ringSeconds",
    "acceptDigit",
    "holdMusicUrl",
];

/// The `transfer` member as written: its settings and the numbers it names (raw, as
/// the old members are: blank is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferInput {
    pub settings: TransferSettings,
    pub number: Option<String>,
    pub fallback_number: Option<String>,
}

/// The default settings of a profile whose transfer is `mode`.
pub fn defaults(mode: TransferMode) -> TransferSettings {
    TransferSettings {
        mode,
        name: String::new(),
        ring_seconds: DEFAULT_RING_SECONDS,
        accept_digit: KeypadDigit::ONE,
        hold_music_url: String::new(),
    }
}

fn field(member: &str) -> Error {
    Error::invalid_field(&format!("transfer.{member}"))
}

fn text(object: &Map<String, Value>, member: &str) -> Result<Option<String>> {
    match object.get(member) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(field(member)),
    }
}

/// Reads the body's `transfer` member: `None` when absent or `null`.
pub fn read(body: &Map<String, Value>) -> Result<Option<TransferInput>> {
    let object = match body.get("transfer") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(Error::invalid_field("transfer")),
    };
    if let Some(unknown) = object.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(Error::BadRequest(format!(
            "Unknown field: transfer.{unknown}"
        )));
    }
    let mode = match text(object, "mode")? {
        None => TransferMode::Cold,
        Some(m) => TransferMode::parse(m.trim()).ok_or_else(|| field("mode"))?,
    };
    let mut settings = defaults(mode);
    if let Some(name) = text(object, "name")? {
        let name = name.trim();
        if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(field("name"));
        }
        settings.name = name.to_string();
    }
    match object.get("ringSeconds") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let seconds = v
                .as_u64()
                .and_then(|s| u32::try_from(s).ok())
                .filter(|s| RING_SECONDS.contains(s))
                .ok_or_else(|| field("ringSeconds"))?;
            settings.ring_seconds = seconds;
        }
    }
    if let Some(digit) = text(object, "acceptDigit")? {
        settings.accept_digit =
            KeypadDigit::parse(digit.trim()).ok_or_else(|| field("acceptDigit"))?;
    }
    if let Some(url) = text(object, "holdMusicUrl")? {
        let url = url.trim();
        if !url.is_empty() && !is_web_url(url) {
            return Err(field("holdMusicUrl"));
        }
        settings.hold_music_url = url.to_string();
    }
    Ok(Some(TransferInput {
        settings,
        number: text(object, "number")?,
        fallback_number: text(object, "fallbackNumber")?,
    }))
}

/// An absolute `https://` (or `http://`) URL with a host, without spaces or control
/// characters: what Twilio can fetch as a conference's `waitUrl`.
fn is_web_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    url.chars().count() <= MAX_URL_CHARS
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
        && rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
}

/// The number the profile keeps from `old` (the `transferNumber`-style member, raw)
/// and `new` (the `transfer` object's): they must agree when both are given.
pub fn merged(old: String, new: Option<String>, member: &str) -> Result<String> {
    match new {
        None => Ok(old),
        Some(new) if old.trim().is_empty() => Ok(new),
        Some(new) => {
            let same = crate::phone::normalize(&old) == crate::phone::normalize(&new);
            if same || new.trim().is_empty() {
                Ok(old)
            } else {
                Err(field(member))
            }
        }
    }
}

/// A warm transfer needs a number to ring.
pub fn check(settings: Option<&TransferSettings>, number: &str) -> Result<()> {
    match settings {
        Some(s) if s.mode == TransferMode::Warm && number.is_empty() => Err(field("number")),
        _ => Ok(()),
    }
}

/// The wire shape: `null` when the profile sets nothing (a cold transfer to the
/// numbers, as the old members say).
pub fn view(settings: Option<&TransferSettings>, number: &str, fallback: &str) -> Value {
    let Some(s) = settings else {
        return Value::Null;
    };
    let or_null = |t: &str| {
        if t.is_empty() {
            Value::Null
        } else {
            json!(t)
        }
    };
    json!({
        "mode": s.mode.as_str(),
        "number": or_null(number),
        "fallbackNumber": or_null(fallback),
        "name": or_null(&s.name),
        "ringSeconds": s.ring_seconds,
        "acceptDigit": s.accept_digit.to_string(),
        "holdMusicUrl": or_null(&s.hold_music_url),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn refusal(v: Value) -> String {
        match read(&body(json!({ "transfer": v }))) {
            Err(e) => e.to_string(),
            Ok(t) => panic!("accepted: {t:?}"),
        }
    }

    #[test]
    fn a_warm_transfer_reads_with_its_defaults() {
        let t = read(&body(
            json!({"transfer": {"mode": "warm", "number": "+15550100001"}}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(t.settings.mode, TransferMode::Warm);
        assert_eq!(t.settings.ring_seconds, 25);
        assert_eq!(t.settings.accept_digit.to_string(), "1");
        assert_eq!(t.number.as_deref(), Some("+15550100001"));
        assert!(read(&body(json!({}))).unwrap().is_none());
    }

    #[test]
    fn each_bad_member_is_named() {
        for (v, named) in [
            (json!({"mode": "hot"}), "transfer.mode"),
            (json!({"ringSeconds": 9}), "transfer.ringSeconds"),
            (json!({"ringSeconds": 61}), "transfer.ringSeconds"),
            (json!({"ringSeconds": "20"}), "transfer.ringSeconds"),
            (json!({"acceptDigit": "12"}), "transfer.acceptDigit"),
            (json!({"acceptDigit": "#"}), "transfer.acceptDigit"),
            (json!({"holdMusicUrl": "ftp://x"}), "transfer.holdMusicUrl"),
            (json!({"holdMusicUrl": "https://"}), "transfer.holdMusicUrl"),
            (json!({"number": 5}), "transfer.number"),
        ] {
            assert!(
                refusal(v.clone()).ends_with(named),
                "{v}: {}",
                refusal(v.clone())
            );
        }
        assert_eq!(refusal(json!({"ring": 1})), "Unknown field: transfer.ring");
        assert!(refusal(json!("warm")).ends_with("transfer"));
    }

    #[test]
    fn numbers_given_both_ways_must_agree() {
        assert_eq!(
            merged("".into(), Some("+1555".into()), "number").unwrap(),
            "+1555"
        );
        assert_eq!(
            merged("+15550100001".into(), None, "number").unwrap(),
            "+15550100001"
        );
        assert!(merged("+15550100001".into(), Some("+15550100002".into()), "number").is_err());
        assert!(check(Some(&defaults(TransferMode::Warm)), "").is_err());
        assert!(check(Some(&defaults(TransferMode::Cold)), "").is_ok());
    }
}
