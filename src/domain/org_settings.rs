//! Organization settings: the SMS/voice opt-out coupling, the compliance service, and
//! quiet hours.

use serde_json::{json, Map, Value};

use super::channel::Channel;
use super::Caller;
use crate::error::{Error, Result};
use crate::store::records::{OrgRecord, OrgSettings};
use crate::store::Reader;
use crate::store::WriteTx;

pub const DEFAULT_COMPLIANCE_TIMEOUT_MS: u64 = 3000;

pub fn view(org: &OrgRecord) -> Value {
    let s = &org.settings;
    json!({
        "id": org.id,
        "name": org.name,
        "smsVoiceOptOutCoupled": s.sms_voice_opt_out_coupled,
        "complianceUrl": s.compliance_url,
        "complianceChannels": s.compliance_channels,
        "complianceTimeoutMs": s.compliance_timeout_ms.unwrap_or(DEFAULT_COMPLIANCE_TIMEOUT_MS),
        "quietHours": s.quiet_hours.as_ref().map(|(start, end)| json!({"start": start, "end": end})),
    })
}

/// Applies a partial update; `null` clears an optional setting.
pub fn update(tx: &mut WriteTx, caller: &Caller, body: Map<String, Value>) -> Result<OrgRecord> {
    let mut org = tx
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    let mut s: OrgSettings = org.settings.clone();
    for (name, value) in body {
        match name.as_str() {
            "smsVoiceOptOutCoupled" => {
                s.sms_voice_opt_out_coupled =
                    value.as_bool().ok_or_else(|| Error::invalid_field(&name))?
            }
            "complianceUrl" => {
                s.compliance_url = match value {
                    Value::Null => None,
                    Value::String(url) if super::webhook_endpoints::is_valid_url(&url) => Some(url),
                    _ => return Err(Error::invalid_field(&name)),
                }
            }
            "complianceChannels" => {
                s.compliance_channels = match value {
                    Value::Null => None,
                    Value::Array(items) => {
                        let mut channels = Vec::new();
                        for item in items {
                            let c = item
                                .as_str()
                                .and_then(Channel::parse)
                                .ok_or_else(|| Error::invalid_field(&name))?;
                            if !channels.contains(&c.as_str().to_string()) {
                                channels.push(c.as_str().to_string());
                            }
                        }
                        Some(channels)
                    }
                    _ => return Err(Error::invalid_field(&name)),
                }
            }
            "complianceTimeoutMs" => {
                s.compliance_timeout_ms = match value {
                    Value::Null => None,
                    v => Some(
                        v.as_u64()
                            .filter(|ms| (1..=60_000).contains(ms))
                            .ok_or_else(|| Error::invalid_field(&name))?,
                    ),
                }
            }
            "quietHours" => {
                s.quiet_hours = match value {
                    Value::Null => None,
                    Value::Object(window) => {
                        let time = |k: &str| {
                            window
                                .get(k)
                                .and_then(Value::as_str)
                                .filter(|t| parse_hhmm(t).is_some())
                                .map(str::to_string)
                                .ok_or_else(|| Error::invalid_field("quietHours"))
                        };
                        if window.keys().any(|k| k != "start" && k != "end") {
                            return Err(Error::invalid_field("quietHours"));
                        }
                        Some((time("start")?, time("end")?))
                    }
                    _ => return Err(Error::invalid_field(&name)),
                }
            }
            "id" | "name" => return Err(Error::BadRequest(format!("Field is read-only: {name}"))),
            other => return Err(Error::unknown_field(other)),
        }
    }
    org.settings = s;
    tx.put_org(&org)?;
    Ok(org)
}

/// Minutes after midnight of `HH:MM`.
pub fn parse_hhmm(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    // `u32::from_str` takes a leading `+`, which is not a clock time.
    let digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || !digits(m) {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

#[cfg(test)]
mod tests {
    use super::parse_hhmm;

    #[test]
    fn clock_times_are_hh_mm() {
        assert_eq!(parse_hhmm("21:00"), Some(1260));
        assert_eq!(parse_hhmm("08:05"), Some(485));
        for bad in [
            "24:00", "8:00", "08:60", "0800", "aa:bb", "", "+8:00", "08:+5",
        ] {
            assert_eq!(parse_hhmm(bad), None, "{bad}");
        }
    }
}
