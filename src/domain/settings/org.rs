//! Organization settings: the SMS/voice opt-out coupling, the compliance service, quiet
//! hours, and the engine's members (time zone, business, assistant, providers), which
//! live in their own record (`EngineSettings`). An SMS or voice provider has a sending
//! rate (`ratePerSecond`, above 0 and at most 1000; `twilio` 10 and `sandbox` unlimited
//! unless set), which the engine's pacing keeps to.
//!
//! `assistant` merges its members into what was set (a member left out keeps its
//! value). A change of `quietHours` or `timeZone` re-computes, in the same write, the
//! agenda rows quiet hours deferred (`engagement::agenda::recompute_deferred`).

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::domain::contact::quiet_hours::parse_hhmm;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{
    AssistantSettings, EngineSettings, OrgRecord, OrgSettings, ProviderSettings,
};
use crate::store::Reader;
use crate::store::WriteTx;

pub const DEFAULT_COMPLIANCE_TIMEOUT_MS: u64 = 3000;

pub fn view(org: &OrgRecord, engine: &EngineSettings) -> Value {
    let s = &org.settings;
    let mut view = json!({
        "id": org.id,
        "name": org.name,
        "smsVoiceOptOutCoupled": s.sms_voice_opt_out_coupled,
        "complianceUrl": s.compliance_url,
        "complianceChannels": s.compliance_channels,
        "complianceTimeoutMs": s.compliance_timeout_ms.unwrap_or(DEFAULT_COMPLIANCE_TIMEOUT_MS),
        "quietHours": s.quiet_hours.as_ref().map(|(start, end)| json!({"start": start, "end": end})),
    });
    if let Value::Object(members) = &mut view {
        members.extend(engine_view(engine));
    }
    view
}

/// The engine's members of the view. Secrets are write-only: only `...Set` shows them.
fn engine_view(e: &EngineSettings) -> Map<String, Value> {
    let text = |t: &str| (!t.is_empty()).then(|| t.to_string());
    let business = (!e.business_name.is_empty() || !e.help_text.is_empty())
        .then(|| json!({"name": text(&e.business_name), "helpText": text(&e.help_text)}));
    let assistant = e.assistant.as_ref().map(|a| {
        json!({"baseUrl": a.base_url, "model": a.model, "timeoutMs": a.timeout_ms,
            "maxTokens": a.max_tokens,
            "apiKeySet": a.api_key.as_ref().is_some_and(|k| !k.is_empty())})
    });
    // `ratePerSecond` is the rate in force: a `twilio` provider's default shows as 10, a
    // sandbox's `null` is unlimited. Email has none.
    let provider = |p: &ProviderSettings, paced: bool| {
        let mut view = match p {
            ProviderSettings::Sandbox { latency_ms, .. } => {
                json!({"kind": "sandbox", "latencyMs": latency_ms})
            }
            ProviderSettings::Smtp(smtp) => crate::domain::settings::email::view(smtp),
            ProviderSettings::Twilio(twilio) => crate::domain::settings::twilio::view(twilio),
        };
        if let (true, Value::Object(members)) = (paced, &mut view) {
            members.insert("ratePerSecond".into(), json!(p.rate_per_second()));
        }
        view
    };
    let mut out = Map::new();
    out.insert("timeZone".into(), json!(text(&e.time_zone)));
    out.insert("defaultCountry".into(), json!(text(&e.default_country)));
    out.insert(
        "followUpDays".into(),
        if e.follow_up_days.is_empty() {
            Value::Null
        } else {
            json!(e.follow_up_days)
        },
    );
    out.insert("holidays".into(), json!(e.holidays));
    out.insert("business".into(), json!(business));
    out.insert("assistant".into(), json!(assistant));
    out.insert(
        "providers".into(),
        json!({"sms": provider(&e.sms, true), "voice": provider(&e.voice, true),
            "email": provider(&e.email, false)}),
    );
    out
}

/// The assistant's per-attempt timeout when none is set.
pub const DEFAULT_ASSISTANT_TIMEOUT_MS: u64 = 30_000;

/// Applies one of the engine's members; false when `name` is not one of them.
fn engine_member(e: &mut EngineSettings, name: &str, value: Value) -> Result<bool> {
    match name {
        "followUpDays" => {
            e.follow_up_days = match value {
                Value::Null => Vec::new(),
                Value::Array(days) => {
                    let mut out: Vec<String> = Vec::new();
                    for day in days {
                        let day = day.as_str().map(str::to_ascii_lowercase);
                        match day {
                            Some(d)
                                if crate::domain::contact::quiet_hours::WEEKDAYS
                                    .contains(&d.as_str())
                                    && !out.contains(&d) =>
                            {
                                out.push(d)
                            }
                            _ => return Err(Error::invalid_field(name)),
                        }
                    }
                    if out.is_empty() {
                        return Err(Error::BadRequest(
                            "followUpDays needs at least one day (null: every day)".into(),
                        ));
                    }
                    out.sort_by_key(|d| {
                        crate::domain::contact::quiet_hours::WEEKDAYS
                            .iter()
                            .position(|w| w == d)
                    });
                    // Every day is the default: stored as none.
                    if out.len() == crate::domain::contact::quiet_hours::WEEKDAYS.len() {
                        Vec::new()
                    } else {
                        out
                    }
                }
                _ => return Err(Error::invalid_field(name)),
            }
        }
        "holidays" => {
            e.holidays = match value {
                Value::Null => Vec::new(),
                Value::Array(dates) if dates.len() <= 366 => {
                    let mut out = Vec::new();
                    for date in dates {
                        let parsed = date
                            .as_str()
                            .and_then(|d| {
                                chrono::NaiveDate::parse_from_str(d.trim(), "%Y-%m-%d").ok()
                            })
                            .ok_or_else(|| Error::invalid_field(name))?;
                        out.push(parsed.format("%Y-%m-%d").to_string());
                    }
                    out.sort();
                    out.dedup();
                    out
                }
                _ => return Err(Error::invalid_field(name)),
            }
        }
        "defaultCountry" => {
            e.default_country = match value {
                Value::Null => String::new(),
                Value::String(code) => crate::phone::Country::parse(&code)
                    .ok_or_else(|| Error::invalid_field(name))?
                    .code()
                    .to_string(),
                _ => return Err(Error::invalid_field(name)),
            }
        }
        "timeZone" => {
            e.time_zone = match value {
                Value::Null => String::new(),
                Value::String(zone) if zone.parse::<chrono_tz::Tz>().is_ok() => zone,
                _ => return Err(Error::invalid_field(name)),
            }
        }
        "business" => {
            let (mut business_name, mut help_text) = (String::new(), String::new());
            match value {
                Value::Null => {}
                Value::Object(members) => {
                    for (member, value) in members {
                        let slot = match member.as_str() {
                            "name" => &mut business_name,
                            "helpText" => &mut help_text,
                            other => {
                                return Err(Error::unknown_field(&format!("business.{other}")))
                            }
                        };
                        *slot = match value {
                            Value::Null => String::new(),
                            Value::String(t) if t.chars().count() <= 320 => t,
                            _ => return Err(Error::invalid_field(&format!("business.{member}"))),
                        };
                    }
                }
                _ => return Err(Error::invalid_field(name)),
            }
            e.business_name = business_name;
            e.help_text = help_text;
        }
        "assistant" => {
            e.assistant = match value {
                Value::Null => None,
                Value::Object(members) => Some(assistant(members, e.assistant.take())?),
                _ => return Err(Error::invalid_field(name)),
            }
        }
        "providers" => {
            let channels = match value {
                Value::Null => Map::new(),
                Value::Object(members) => members,
                _ => return Err(Error::invalid_field(name)),
            };
            let mut chosen = [
                ProviderSettings::default(),
                ProviderSettings::default(),
                ProviderSettings::default(),
            ];
            for (channel, value) in channels {
                let slot = match channel.as_str() {
                    "sms" => 0,
                    "voice" => 1,
                    "email" => 2,
                    other => return Err(Error::unknown_field(&format!("providers.{other}"))),
                };
                let previous = [&e.sms, &e.voice, &e.email][slot];
                chosen[slot] = provider(&format!("providers.{channel}"), value, previous)?;
            }
            let [sms, voice, email] = chosen;
            (e.sms, e.voice, e.email) = (sms, voice, email);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The largest `assistant.maxTokens` accepted.
pub const MAX_ASSISTANT_MAX_TOKENS: u64 = 65_536;

/// `assistant`: merged into the settings before (a member left out keeps its value);
/// `baseUrl` and `model` are required once there is an assistant and cannot be
/// cleared; `null` clears `apiKey` (it is never shown, so a client cannot send it
/// back), `timeoutMs` (back to 30000) and `maxTokens` (back to the channel's default).
fn assistant(
    members: Map<String, Value>,
    previous: Option<AssistantSettings>,
) -> Result<AssistantSettings> {
    let (mut base_url, mut model, mut api_key, mut timeout_ms, mut max_tokens) = match previous {
        Some(p) => (
            Some(p.base_url),
            Some(p.model),
            p.api_key,
            p.timeout_ms,
            p.max_tokens,
        ),
        None => (None, None, None, DEFAULT_ASSISTANT_TIMEOUT_MS, None),
    };
    for (member, value) in members {
        let invalid = || Error::invalid_field(&format!("assistant.{member}"));
        match (member.as_str(), value) {
            ("baseUrl", Value::String(url))
                if crate::domain::records::webhook_endpoints::is_valid_url(&url) =>
            {
                base_url = Some(url)
            }
            ("model", Value::String(m)) if !m.trim().is_empty() => model = Some(m),
            ("apiKey", Value::Null) => api_key = None,
            ("apiKey", Value::String(k)) => api_key = (!k.is_empty()).then_some(k),
            ("timeoutMs", Value::Null) => timeout_ms = DEFAULT_ASSISTANT_TIMEOUT_MS,
            ("timeoutMs", v) => {
                timeout_ms = v
                    .as_u64()
                    .filter(|ms| (1..=600_000).contains(ms))
                    .ok_or_else(invalid)?
            }
            ("maxTokens", Value::Null) => max_tokens = None,
            ("maxTokens", v) => {
                max_tokens = Some(
                    v.as_u64()
                        .filter(|n| (1..=MAX_ASSISTANT_MAX_TOKENS).contains(n))
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(invalid)?,
                )
            }
            ("baseUrl" | "model" | "apiKey", _) => return Err(invalid()),
            (other, _) => return Err(Error::unknown_field(&format!("assistant.{other}"))),
        }
    }
    Ok(AssistantSettings {
        base_url: base_url.ok_or_else(|| Error::invalid_field("assistant.baseUrl"))?,
        model: model.ok_or_else(|| Error::invalid_field("assistant.model"))?,
        api_key,
        timeout_ms,
        max_tokens,
    })
}

/// One channel's provider: `{"kind": "sandbox", "latencyMs"?}`, or `smtp` for email
/// (`settings::email`); `previous` is what the channel had (its secrets stay when absent).
fn provider(path: &str, value: Value, previous: &ProviderSettings) -> Result<ProviderSettings> {
    let members = match value {
        Value::Null => return Ok(ProviderSettings::default()),
        Value::Object(members) => members,
        _ => return Err(Error::invalid_field(path)),
    };
    match members.get("kind").and_then(Value::as_str) {
        Some("sandbox") => {}
        Some("smtp") if path == "providers.email" => {
            let previous = match previous {
                ProviderSettings::Smtp(p) => Some(p),
                _ => None,
            };
            return crate::domain::settings::email::parse(path, members, previous)
                .map(ProviderSettings::Smtp);
        }
        Some("twilio") if path != "providers.email" => {
            let previous = match previous {
                ProviderSettings::Twilio(p) => Some(p),
                _ => None,
            };
            let channel = if path == "providers.voice" {
                Channel::Voice
            } else {
                Channel::Sms
            };
            return crate::domain::settings::twilio::parse(path, channel, members, previous)
                .map(ProviderSettings::Twilio);
        }
        Some("twilio" | "smtp") => {
            return Err(Error::BadRequest("Provider not supported yet".into()))
        }
        _ => return Err(Error::invalid_field(&format!("{path}.kind"))),
    }
    let mut latency_ms = 0;
    let mut rate_per_second = None;
    for (member, value) in members {
        match member.as_str() {
            "kind" => {}
            "latencyMs" => {
                latency_ms = value
                    .as_u64()
                    .filter(|ms| *ms <= 600_000)
                    .ok_or_else(|| Error::invalid_field(&format!("{path}.latencyMs")))?
            }
            "ratePerSecond" if path != "providers.email" => {
                rate_per_second = super::rate(&format!("{path}.ratePerSecond"), &value)?
            }
            other => return Err(Error::unknown_field(&format!("{path}.{other}"))),
        }
    }
    Ok(ProviderSettings::Sandbox {
        latency_ms,
        rate_per_second,
    })
}

/// Applies a partial update; `null` clears an optional setting. Answers the
/// organization and its engine settings.
pub fn update(
    tx: &mut WriteTx,
    caller: &Caller,
    body: Map<String, Value>,
    public_url: Option<&str>,
) -> Result<(OrgRecord, EngineSettings)> {
    let mut org = tx
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    let mut s: OrgSettings = org.settings.clone();
    let mut engine = tx.engine_settings(&caller.org_id)?;
    let engine_before = engine.clone();
    for (name, value) in body {
        if engine_member(&mut engine, &name, value.clone())? {
            continue;
        }
        match name.as_str() {
            "smsVoiceOptOutCoupled" => {
                s.sms_voice_opt_out_coupled =
                    value.as_bool().ok_or_else(|| Error::invalid_field(&name))?
            }
            "complianceUrl" => {
                s.compliance_url = match value {
                    Value::Null => None,
                    Value::String(url)
                        if crate::domain::records::webhook_endpoints::is_valid_url(&url) =>
                    {
                        Some(url)
                    }
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
    if engine.email != engine_before.email
        && matches!(engine.email, ProviderSettings::Smtp(_))
        && public_url.is_none()
    {
        return Err(Error::BadRequest(
            crate::domain::settings::email::NEEDS_PUBLIC_URL.into(),
        ));
    }
    let twilio = |p: &ProviderSettings| matches!(p, ProviderSettings::Twilio(_));
    if (engine.sms != engine_before.sms && twilio(&engine.sms)
        || engine.voice != engine_before.voice && twilio(&engine.voice))
        && public_url.is_none()
    {
        return Err(Error::BadRequest(
            crate::domain::settings::twilio::NEEDS_PUBLIC_URL.into(),
        ));
    }
    let quiet_changed =
        s.quiet_hours != org.settings.quiet_hours || engine.time_zone != engine_before.time_zone;
    org.settings = s;
    tx.put_org(&org)?;
    if engine != engine_before {
        tx.put_engine_settings(&caller.org_id, &engine)?;
    }
    if quiet_changed {
        // In this same write: the work quiet hours deferred follows the new window.
        crate::domain::engagement::agenda::recompute_deferred(tx, &caller.org_id, None)?;
    }
    Ok((org, engine))
}

/// The business name texts use: the organization's setting, else its name.
pub fn business_name(tx: &impl Reader, org: &str) -> Result<String> {
    let settings = tx.engine_settings(org)?;
    if !settings.business_name.is_empty() {
        return Ok(settings.business_name);
    }
    Ok(tx.org(org)?.map(|o| o.name).unwrap_or_default())
}
