//! The `twilio` kind of an SMS (or voice) provider in the organization's settings:
//! parsing `providers.sms` or `providers.voice` into [`TwilioSettings`] and its view.
//! `authToken` is write-only: the view says `authTokenSet`, and a later `PATCH` without
//! it keeps the stored one. Messages may go out through a messaging service instead of a
//! `from` number; calls cannot, so the voice slot needs `from`. Twilio's ids are checked
//! when saved (`accountSid` `AC` and `messagingServiceSid` `MG`, each followed by 32 hex
//! digits): a typo is a 400 now, not every send refused later.

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::error::{Error, Result};
use crate::store::rows::TwilioSettings;

/// The message of a `PATCH` that configures twilio on a server without `public_url`.
pub const NEEDS_PUBLIC_URL: &str = "public_url must be set to use the twilio provider";

pub const DEFAULT_BASE_URL: &str = "https://api.twilio.com";

/// Parses `{"kind": "twilio", "accountSid", "authToken", "from" | "messagingServiceSid",
/// "baseUrl"?}` at `path`, the provider of `channel` (voice needs `from`).
pub fn parse(
    path: &str,
    channel: Channel,
    members: Map<String, Value>,
    previous: Option<&TwilioSettings>,
) -> Result<TwilioSettings> {
    let mut account_sid = None;
    let mut auth_token = previous.map(|p| p.auth_token.clone());
    let mut from = String::new();
    let mut messaging_service_sid = String::new();
    let mut base_url = DEFAULT_BASE_URL.to_string();
    let mut rate_per_second = None;
    for (member, value) in members {
        let invalid = || Error::invalid_field(&format!("{path}.{member}"));
        let text = |value: Value| match value {
            Value::String(s) if !s.trim().is_empty() && s.len() <= 256 => Ok(s.trim().to_string()),
            _ => Err(invalid()),
        };
        match member.as_str() {
            "kind" => {}
            "accountSid" => {
                let sid = text(value)?;
                if !is_sid(&sid, "AC") {
                    return Err(invalid());
                }
                account_sid = Some(sid);
            }
            "ratePerSecond" => {
                rate_per_second =
                    crate::domain::settings::rate(&format!("{path}.{member}"), &value)?
            }
            "authToken" => auth_token = Some(text(value)?),
            "from" => {
                from = match value {
                    Value::Null => String::new(),
                    Value::String(s) => crate::phone::normalize(&s).ok_or_else(invalid)?,
                    _ => return Err(invalid()),
                }
            }
            "messagingServiceSid" => {
                messaging_service_sid = match value {
                    Value::Null => String::new(),
                    other => {
                        let sid = text(other)?;
                        if !is_sid(&sid, "MG") {
                            return Err(invalid());
                        }
                        sid
                    }
                }
            }
            "baseUrl" => {
                base_url = match value {
                    Value::String(url)
                        if crate::domain::records::webhook_endpoints::is_valid_url(&url) =>
                    {
                        url.trim_end_matches('/').to_string()
                    }
                    _ => return Err(invalid()),
                }
            }
            other => return Err(Error::unknown_field(&format!("{path}.{other}"))),
        }
    }
    if from.is_empty() && (messaging_service_sid.is_empty() || channel == Channel::Voice) {
        return Err(Error::invalid_field(&format!("{path}.from")));
    }
    Ok(TwilioSettings {
        account_sid: account_sid
            .ok_or_else(|| Error::invalid_field(&format!("{path}.accountSid")))?,
        auth_token: auth_token.ok_or_else(|| Error::invalid_field(&format!("{path}.authToken")))?,
        from,
        messaging_service_sid,
        base_url,
        rate_per_second,
    })
}

/// Whether `sid` is one of Twilio's ids of the kind `prefix` names: the prefix and 32
/// hex digits (`^AC[0-9a-fA-F]{32}$` for an account).
pub fn is_sid(sid: &str, prefix: &str) -> bool {
    sid.strip_prefix(prefix)
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub fn view(s: &TwilioSettings) -> Value {
    let text = |t: &str| (!t.is_empty()).then(|| t.to_string());
    json!({
        "kind": "twilio",
        "accountSid": s.account_sid,
        "authTokenSet": !s.auth_token.is_empty(),
        "from": text(&s.from),
        "messagingServiceSid": text(&s.messaging_service_sid),
        "baseUrl": s.base_url,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT: &str = "AC0123456789abcdef0123456789ABCDEF";
    const SERVICE: &str = "MG0123456789abcdef0123456789abcdef";

    fn members(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn required_members_are_named_and_the_token_is_kept() {
        let path = "providers.sms";
        let err = |v: Value| {
            parse(path, Channel::Sms, members(v), None)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"kind": "twilio", "authToken": "t", "from": "+15550100000"})),
            "Invalid format for field: providers.sms.accountSid"
        );
        assert_eq!(
            err(json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000"})),
            "Invalid format for field: providers.sms.authToken"
        );
        assert_eq!(
            err(json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t"})),
            "Invalid format for field: providers.sms.from"
        );
        let first = parse(
            path,
            Channel::Sms,
            members(json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "secret", "from": "+1 555 010 0000"})),
            None,
        )
        .unwrap();
        assert_eq!(first.from, "+15550100000");
        let again = parse(
            path,
            Channel::Sms,
            members(json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000"})),
            Some(&first),
        )
        .unwrap();
        assert_eq!(again.auth_token, "secret");
        assert!(!view(&again).to_string().contains("secret"));
        assert!(!format!("{again:?}").contains("secret"));
    }

    #[test]
    fn calls_need_a_from_number() {
        let service = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t", "messagingServiceSid": SERVICE});
        assert!(parse(
            "providers.sms",
            Channel::Sms,
            members(service.clone()),
            None
        )
        .is_ok());
        assert_eq!(
            parse("providers.voice", Channel::Voice, members(service), None)
                .unwrap_err()
                .to_string(),
            "Invalid format for field: providers.voice.from"
        );
        let voice = parse(
            "providers.voice",
            Channel::Voice,
            members(json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t", "from": "+15550100000"})),
            None,
        )
        .unwrap();
        assert_eq!(voice.from, "+15550100000");
    }

    #[test]
    fn twilio_ids_and_the_rate_are_checked_when_saved() {
        let parse_sms = |v: Value| parse("providers.sms", Channel::Sms, members(v), None);
        let parse_voice = |v: Value| parse("providers.voice", Channel::Voice, members(v), None);
        for bad in [
            "AC1",
            "AC0123456789abcdef0123456789ABCDE",
            "AC0123456789abcdef0123456789ABCDEF0",
            "AC0123456789abcdef0123456789ABCDEG",
            "MG0123456789abcdef0123456789abcdef",
            "ac0123456789abcdef0123456789abcdef",
        ] {
            let body = json!({"kind": "twilio", "accountSid": bad, "authToken": "t", "from": "+15550100000"});
            assert_eq!(
                parse_sms(body.clone()).unwrap_err().to_string(),
                "Invalid format for field: providers.sms.accountSid",
                "{bad}"
            );
            assert_eq!(
                parse_voice(body).unwrap_err().to_string(),
                "Invalid format for field: providers.voice.accountSid",
                "{bad}"
            );
        }
        for bad in ["MG1", "AC0123456789abcdef0123456789abcdef", "MGxyz"] {
            let body = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t", "messagingServiceSid": bad});
            assert_eq!(
                parse_sms(body).unwrap_err().to_string(),
                "Invalid format for field: providers.sms.messagingServiceSid",
                "{bad}"
            );
        }
        for bad in [json!(0), json!(-1), json!(1001), json!("10"), json!(true)] {
            let body = json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
                "from": "+15550100000", "ratePerSecond": bad});
            assert_eq!(
                parse_voice(body).unwrap_err().to_string(),
                "Invalid format for field: providers.voice.ratePerSecond",
                "{bad}"
            );
        }
        let paced = parse_sms(
            json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
            "messagingServiceSid": SERVICE, "ratePerSecond": 0.5}),
        )
        .unwrap();
        assert_eq!(paced.rate_per_second, Some(0.5));
        let default = parse_sms(
            json!({"kind": "twilio", "accountSid": ACCOUNT, "authToken": "t",
            "from": "+15550100000", "ratePerSecond": null}),
        )
        .unwrap();
        assert_eq!(default.rate_per_second, None);
        assert_eq!(
            crate::store::rows::ProviderSettings::Twilio(default).rate_per_second(),
            Some(10.0)
        );
    }
}
