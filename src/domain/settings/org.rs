//! Organization settings: the SMS/voice opt-out coupling, the compliance service, quiet
//! hours, and the engine's members (time zone, business, assistant, providers), which
//! live in their own record (`EngineSettings`). An SMS or voice provider has a sending
//! rate (`ratePerSecond`, above 0 and at most 1000; `twilio` 10 and `sandbox` unlimited
//! unless set), which the engine's pacing keeps to.
//!
//! `assistant` merges its members into what was set (a member left out keeps its
//! value). A change of `quietHours` or `timeZone` re-computes, in the same write, the
//! agenda rows quiet hours deferred (a reaction owed to `engagement::reactions`).
//!
//! A change arrives as an `OrgPatch` (from `PATCH /v1/org`'s JSON, or built by the
//! console from its forms), each member checked as it is set, so a refusal names its
//! field (`Error::InvalidField`).

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::domain::records::written::{Reaction, Written};
use crate::domain::settings::clock::{parse_hhmm, WEEKDAYS};
use crate::domain::settings::email::SmtpPatch;
use crate::domain::settings::twilio::TwilioPatch;
use crate::domain::settings::webchat::WebchatPatch;
use crate::domain::settings::{bound_secret, Endpoint};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::outbound_address::OutboundPolicy;
use crate::store::browser_calls::BrowserCallKeys;
use crate::store::rows::{
    AssistantSettings, ConsentRequired, ConsentRequirement, EngineSettings, KeypadDigit, OrgRecord,
    OrgSettings, ProviderSettings, Purpose, RevocationScope,
};
use crate::store::webchat::WebchatSettings;
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
    out.insert(
        "voiceOptOutDigit".into(),
        json!(e.voice_opt_out.digit.to_string()),
    );
    out.insert(
        "voiceOptOutSentence".into(),
        json!(e.voice_opt_out.sentence),
    );
    out.insert(
        "consentRequired".into(),
        json!(e
            .consent_required
            .0
            .iter()
            .map(|r| json!({"channel": r.channel.as_str(), "purpose": r.purpose.as_str()}))
            .collect::<Vec<_>>()),
    );
    out.insert("optOutKeywords".into(), json!(e.opt_out_keywords));
    out.insert("revocationScope".into(), json!(e.revocation_scope.as_str()));
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

/// The largest `assistant.maxTokens` accepted.
pub const MAX_ASSISTANT_MAX_TOKENS: u64 = 65_536;

/// The most holidays an organization keeps.
const MAX_HOLIDAYS: usize = 366;

/// The most opt-out keywords of its own an organization keeps, and their length.
pub const MAX_OPT_OUT_KEYWORDS: usize = 20;
pub const MAX_OPT_OUT_KEYWORD_CHARS: usize = 40;

/// `consentRequired`'s items: `{"channel", "purpose"}` each.
fn consent_requirements(items: &[Value]) -> Result<Vec<ConsentRequirement>> {
    let refused = || {
        Error::field(
            "consentRequired",
            "consentRequired is a list of {\"channel\": \"sms\" | \"voice\" | \"email\", \"purpose\": \"marketing\" | \"informational\"}",
        )
    };
    items
        .iter()
        .map(|item| {
            let members = item.as_object().ok_or_else(refused)?;
            if members.keys().any(|k| k != "channel" && k != "purpose") {
                return Err(refused());
            }
            let text = |k: &str| members.get(k).and_then(Value::as_str);
            Ok(ConsentRequirement {
                channel: text("channel")
                    .and_then(Channel::parse)
                    .ok_or_else(refused)?,
                purpose: text("purpose")
                    .and_then(Purpose::parse)
                    .ok_or_else(refused)?,
            })
        })
        .collect()
}

/// A change to an organization's settings (`PATCH /v1/org`'s body, or a console form):
/// its members in the order given, each checked as it is set. `update` applies them in
/// that order; what depends on the settings before (a secret kept, the assistant's
/// required members) is checked there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrgPatch {
    changes: Vec<Change>,
}

/// One member of an `OrgPatch`, checked.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    Coupled(bool),
    ComplianceUrl(Option<String>),
    ComplianceChannels(Option<Vec<String>>),
    ComplianceTimeoutMs(Option<u64>),
    QuietHours(Option<(String, String)>),
    /// Empty: none.
    TimeZone(String),
    /// Empty: none.
    DefaultCountry(String),
    /// Empty: every day.
    FollowUpDays(Vec<String>),
    Holidays(Vec<String>),
    Business {
        name: String,
        help_text: String,
    },
    Assistant(Option<AssistantPatch>),
    /// Every channel left out goes back to the sandbox.
    Providers(Vec<(Channel, ProviderPatch)>),
    VoiceOptOutDigit(KeypadDigit),
    VoiceOptOutSentence(bool),
    ConsentRequired(Vec<ConsentRequirement>),
    /// Normalized, each once.
    OptOutKeywords(Vec<String>),
    RevocationScope(RevocationScope),
    /// `webchat`: its members merged into what was set.
    Webchat(WebchatPatch),
}

/// How one member of `PATCH /v1/org`'s body becomes a change: its name (for the
/// refusal, which names it) and its JSON value, read into the patch or refused.
type Setter = fn(&mut OrgPatch, &str, &Value) -> Result<()>;

/// Every setting `PATCH /v1/org` writes, one row each: a new setting is a row here
/// (its name and its reading) and a method on [`OrgPatch`] holding its rules.
const SETTINGS: &[(&str, Setter)] = &[
    ("followUpDays", |p, name, v| match v {
        Value::Null => p.follow_up_days(None),
        Value::Array(days) => p.follow_up_days(Some(&texts(days).ok_or_else(|| invalid(name))?)),
        _ => Err(invalid(name)),
    }),
    ("holidays", |p, name, v| match v {
        Value::Null => p.holidays(None),
        Value::Array(dates) if dates.len() <= MAX_HOLIDAYS => {
            p.holidays(Some(&texts(dates).ok_or_else(|| invalid(name))?))
        }
        _ => Err(invalid(name)),
    }),
    ("defaultCountry", |p, name, v| match v {
        Value::Null => p.default_country(None),
        Value::String(code) => p.default_country(Some(code)),
        _ => Err(invalid(name)),
    }),
    ("timeZone", |p, name, v| match v {
        Value::Null => p.time_zone(None),
        Value::String(zone) => p.time_zone(Some(zone)),
        _ => Err(invalid(name)),
    }),
    ("business", business_member),
    ("assistant", |p, name, v| {
        match v {
            Value::Null => p.assistant(None),
            Value::Object(members) => p.assistant(Some(AssistantPatch::from_json(members)?)),
            _ => return Err(invalid(name)),
        }
        Ok(())
    }),
    ("providers", providers_member),
    ("voiceOptOutDigit", |p, name, v| match v {
        Value::Null => p.voice_opt_out_digit(None),
        Value::String(digit) => p.voice_opt_out_digit(Some(digit)),
        _ => Err(invalid(name)),
    }),
    ("voiceOptOutSentence", |p, name, v| {
        p.voice_opt_out_sentence(v.as_bool().ok_or_else(|| invalid(name))?);
        Ok(())
    }),
    ("consentRequired", |p, name, v| {
        let items = v.as_array().ok_or_else(|| invalid(name))?;
        p.consent_required(consent_requirements(items)?);
        Ok(())
    }),
    ("optOutKeywords", |p, name, v| {
        let words = v.as_array().ok_or_else(|| invalid(name))?;
        p.opt_out_keywords(&texts(words).ok_or_else(|| invalid(name))?)
    }),
    ("revocationScope", |p, name, v| {
        let scope = v.as_str().ok_or_else(|| invalid(name))?;
        p.revocation_scope(RevocationScope::parse(scope).ok_or_else(|| {
            Error::field(
                "revocationScope",
                "revocationScope is all (every channel) or channel",
            )
        })?);
        Ok(())
    }),
    ("webchat", |p, _, v| {
        p.webchat(WebchatPatch::from_json(v)?);
        Ok(())
    }),
    ("smsVoiceOptOutCoupled", |p, name, v| {
        p.sms_voice_opt_out_coupled(v.as_bool().ok_or_else(|| invalid(name))?);
        Ok(())
    }),
    ("complianceUrl", |p, name, v| {
        let url = match v {
            Value::Null => None,
            Value::String(url) if crate::domain::records::webhook_endpoints::is_valid_url(url) => {
                Some(url.clone())
            }
            _ => return Err(invalid(name)),
        };
        p.changes.push(Change::ComplianceUrl(url));
        Ok(())
    }),
    ("complianceChannels", |p, name, v| {
        let channels = match v {
            Value::Null => None,
            Value::Array(items) => {
                let mut channels = Vec::new();
                for item in items {
                    let c = item
                        .as_str()
                        .and_then(Channel::parse)
                        .ok_or_else(|| invalid(name))?;
                    if !channels.contains(&c.as_str().to_string()) {
                        channels.push(c.as_str().to_string());
                    }
                }
                Some(channels)
            }
            _ => return Err(invalid(name)),
        };
        p.changes.push(Change::ComplianceChannels(channels));
        Ok(())
    }),
    ("complianceTimeoutMs", |p, name, v| {
        let ms = match v {
            Value::Null => None,
            v => Some(
                v.as_u64()
                    .filter(|ms| (1..=60_000).contains(ms))
                    .ok_or_else(|| invalid(name))?,
            ),
        };
        p.changes.push(Change::ComplianceTimeoutMs(ms));
        Ok(())
    }),
    ("quietHours", |p, name, v| match v {
        Value::Null => p.quiet_hours(None),
        Value::Object(window) => {
            if window.keys().any(|k| k != "start" && k != "end") {
                return Err(invalid(name));
            }
            let time = |k: &str| {
                window
                    .get(k)
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(name))
            };
            p.quiet_hours(Some((time("start")?, time("end")?)))
        }
        _ => Err(invalid(name)),
    }),
];

fn invalid(name: &str) -> Error {
    Error::invalid_field(name)
}

/// `business`: `{"name", "helpText"}`, each a text or `null` (none).
fn business_member(patch: &mut OrgPatch, name: &str, value: &Value) -> Result<()> {
    let members = match value {
        Value::Null => return patch.business("", ""),
        Value::Object(members) => members,
        _ => return Err(invalid(name)),
    };
    let (mut business_name, mut help_text) = (String::new(), String::new());
    for (member, value) in members {
        let slot = match member.as_str() {
            "name" => &mut business_name,
            "helpText" => &mut help_text,
            other => return Err(Error::unknown_field(&format!("business.{other}"))),
        };
        *slot = match value {
            Value::Null => String::new(),
            Value::String(t) => business_text(member, t)?,
            _ => return Err(Error::invalid_field(&format!("business.{member}"))),
        };
    }
    patch.changes.push(Change::Business {
        name: business_name,
        help_text,
    });
    Ok(())
}

/// `providers`: a provider per channel (`sms`, `voice`, `email`); `null`, or a channel
/// left out, the sandbox.
fn providers_member(patch: &mut OrgPatch, name: &str, value: &Value) -> Result<()> {
    let channels = match value {
        Value::Null => {
            patch.providers(Vec::new());
            return Ok(());
        }
        Value::Object(channels) => channels,
        _ => return Err(invalid(name)),
    };
    let mut chosen = Vec::new();
    for (channel, value) in channels {
        let channel = match channel.as_str() {
            "sms" => Channel::Sms,
            "voice" => Channel::Voice,
            "email" => Channel::Email,
            other => return Err(Error::unknown_field(&format!("providers.{other}"))),
        };
        chosen.push((channel, ProviderPatch::from_json(channel, value)?));
    }
    patch.providers(chosen);
    Ok(())
}

impl OrgPatch {
    /// `PATCH /v1/org`'s body; `null` clears an optional setting. Each member is read
    /// by its row of `SETTINGS`; `id` and `name` are read-only, anything else unknown.
    pub fn from_json(body: &Map<String, Value>) -> Result<OrgPatch> {
        let mut patch = OrgPatch::default();
        for (name, value) in body {
            match SETTINGS.iter().find(|(setting, _)| setting == name) {
                Some((_, set)) => set(&mut patch, name, value)?,
                None if name == "id" || name == "name" => {
                    return Err(Error::BadRequest(format!("Field is read-only: {name}")))
                }
                None => return Err(Error::unknown_field(name)),
            }
        }
        Ok(patch)
    }

    /// The days follow-ups run (`mon` ... `sun`, any case, each once, at least one);
    /// `None` (or all seven): every day.
    pub fn follow_up_days(&mut self, days: Option<&[&str]>) -> Result<()> {
        let weekdays = WEEKDAYS;
        let mut out: Vec<String> = Vec::new();
        for day in days.unwrap_or_default() {
            let day = day.to_ascii_lowercase();
            if !weekdays.contains(&day.as_str()) || out.contains(&day) {
                return Err(Error::invalid_field("followUpDays"));
            }
            out.push(day);
        }
        if days.is_some() && out.is_empty() {
            return Err(Error::field(
                "followUpDays",
                "followUpDays needs at least one day (null: every day)",
            ));
        }
        out.sort_by_key(|d| weekdays.iter().position(|w| w == d));
        // Every day is the default: stored as none.
        if out.len() == weekdays.len() {
            out.clear();
        }
        self.changes.push(Change::FollowUpDays(out));
        Ok(())
    }

    /// Dates without follow-ups (`YYYY-MM-DD`, at most 366), sorted, each once.
    pub fn holidays(&mut self, dates: Option<&[&str]>) -> Result<()> {
        let dates = dates.unwrap_or_default();
        if dates.len() > MAX_HOLIDAYS {
            return Err(Error::invalid_field("holidays"));
        }
        let mut out = Vec::new();
        for date in dates {
            let parsed = chrono::NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d")
                .map_err(|_| Error::invalid_field("holidays"))?;
            out.push(parsed.format("%Y-%m-%d").to_string());
        }
        out.sort();
        out.dedup();
        self.changes.push(Change::Holidays(out));
        Ok(())
    }

    /// The country imports read phones without `+` in; `None`: none.
    pub fn default_country(&mut self, code: Option<&str>) -> Result<()> {
        let code = match code {
            None => String::new(),
            Some(code) => crate::phone::Country::parse(code)
                .ok_or_else(|| Error::invalid_field("defaultCountry"))?
                .code()
                .to_string(),
        };
        self.changes.push(Change::DefaultCountry(code));
        Ok(())
    }

    /// An IANA time zone; `None`: none.
    pub fn time_zone(&mut self, zone: Option<&str>) -> Result<()> {
        let zone = match zone {
            None => String::new(),
            Some(zone) if zone.parse::<chrono_tz::Tz>().is_ok() => zone.to_string(),
            Some(_) => return Err(Error::invalid_field("timeZone")),
        };
        self.changes.push(Change::TimeZone(zone));
        Ok(())
    }

    /// How texts name the business and the answer to HELP (empty: none).
    pub fn business(&mut self, name: &str, help_text: &str) -> Result<()> {
        let name = business_text("name", name)?;
        let help_text = business_text("helpText", help_text)?;
        self.changes.push(Change::Business { name, help_text });
        Ok(())
    }

    /// The model server; `None` removes it.
    pub fn assistant(&mut self, assistant: Option<AssistantPatch>) {
        self.changes.push(Change::Assistant(assistant));
    }

    /// Each channel's provider; a channel left out goes back to the sandbox.
    pub fn providers(&mut self, providers: Vec<(Channel, ProviderPatch)>) {
        self.changes.push(Change::Providers(providers));
    }

    /// The keypad digit that opts a lead out of voice on a call (`0` to `9`); `None`:
    /// the default, 9.
    pub fn voice_opt_out_digit(&mut self, digit: Option<&str>) -> Result<()> {
        let digit = match digit {
            None => KeypadDigit::NINE,
            Some(d) => KeypadDigit::parse(d.trim())
                .ok_or_else(|| Error::invalid_field("voiceOptOutDigit"))?,
        };
        self.changes.push(Change::VoiceOptOutDigit(digit));
        Ok(())
    }

    /// Whether a call's greeting says how to opt out (on by default).
    pub fn voice_opt_out_sentence(&mut self, on: bool) {
        self.changes.push(Change::VoiceOptOutSentence(on));
    }

    /// The (channel, purpose) pairs outreach needs recorded consent for, each once.
    pub fn consent_required(&mut self, pairs: Vec<ConsentRequirement>) {
        let mut out: Vec<ConsentRequirement> = Vec::new();
        for pair in pairs {
            if !out.contains(&pair) {
                out.push(pair);
            }
        }
        self.changes.push(Change::ConsentRequired(out));
    }

    /// The organization's own opt-out words (at most 20, each 1 to 40 characters as
    /// `revocation::normalize` reads it), kept normalized, each once.
    pub fn opt_out_keywords(&mut self, words: &[&str]) -> Result<()> {
        if words.len() > MAX_OPT_OUT_KEYWORDS {
            return Err(Error::field(
                "optOutKeywords",
                format!("optOutKeywords takes at most {MAX_OPT_OUT_KEYWORDS} keywords"),
            ));
        }
        let mut out: Vec<String> = Vec::new();
        for word in words {
            let normalized = crate::words::normalize(word);
            let length = normalized.chars().count();
            if length == 0 || length > MAX_OPT_OUT_KEYWORD_CHARS {
                return Err(Error::field(
                    "optOutKeywords",
                    format!("each of optOutKeywords has 1 to {MAX_OPT_OUT_KEYWORD_CHARS} characters of letters and digits: {word:?}"),
                ));
            }
            if !out.contains(&normalized) {
                out.push(normalized);
            }
        }
        self.changes.push(Change::OptOutKeywords(out));
        Ok(())
    }

    /// What a definite revocation unsubscribes: every channel, or the one it came on.
    /// `webchat`: the members given, merged into what was set.
    pub fn webchat(&mut self, patch: WebchatPatch) {
        self.changes.push(Change::Webchat(patch));
    }

    pub fn revocation_scope(&mut self, scope: RevocationScope) {
        self.changes.push(Change::RevocationScope(scope));
    }

    pub fn sms_voice_opt_out_coupled(&mut self, on: bool) {
        self.changes.push(Change::Coupled(on));
    }

    /// Quiet hours from `start` to `end` (`HH:MM`); `None`: none.
    pub fn quiet_hours(&mut self, window: Option<(&str, &str)>) -> Result<()> {
        let window = match window {
            None => None,
            Some((start, end)) => {
                let time = |t: &str| {
                    parse_hhmm(t)
                        .map(|_| t.to_string())
                        .ok_or_else(|| Error::invalid_field("quietHours"))
                };
                Some((time(start)?, time(end)?))
            }
        };
        self.changes.push(Change::QuietHours(window));
        Ok(())
    }
}

/// Every item's text, when every item is one.
fn texts(items: &[Value]) -> Option<Vec<&str>> {
    items.iter().map(Value::as_str).collect()
}

/// `business.name` or `business.helpText`: at most 320 characters.
fn business_text(member: &str, text: &str) -> Result<String> {
    if text.chars().count() <= 320 {
        Ok(text.to_string())
    } else {
        Err(Error::invalid_field(&format!("business.{member}")))
    }
}

/// `assistant`'s members as given, each checked; merged into the assistant before (a
/// member left out keeps its value, but `apiKey` only while `baseUrl` stays the same:
/// a new `baseUrl` without a key clears it). `baseUrl` and `model` are required once
/// there is an assistant and cannot be cleared; `null` clears `apiKey` (it is never
/// shown, so a client cannot send it back), `timeoutMs` (back to 30000) and `maxTokens`
/// (back to the channel's default).
#[derive(Clone, Default, PartialEq)]
pub struct AssistantPatch {
    base_url: Option<String>,
    model: Option<String>,
    api_key: Option<Option<String>>,
    timeout_ms: Option<u64>,
    max_tokens: Option<Option<u32>>,
}

impl std::fmt::Debug for AssistantPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssistantPatch")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|k| k.as_ref().map(|_| "(set)")),
            )
            .field("timeout_ms", &self.timeout_ms)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl AssistantPatch {
    /// `assistant`'s members, checked in order.
    pub fn from_json(members: &Map<String, Value>) -> Result<AssistantPatch> {
        let mut patch = AssistantPatch::default();
        for (member, value) in members {
            match (member.as_str(), value) {
                ("baseUrl", Value::String(url)) => patch.base_url(url)?,
                ("model", Value::String(m)) => patch.model(m)?,
                ("apiKey", Value::Null) => patch.api_key(None),
                ("apiKey", Value::String(k)) => patch.api_key(Some(k)),
                ("timeoutMs", Value::Null) => patch.timeout_ms(None)?,
                ("timeoutMs", v) => patch.timeout_ms(Some(
                    v.as_u64().ok_or_else(|| assistant_invalid("timeoutMs"))?,
                ))?,
                ("maxTokens", Value::Null) => patch.max_tokens(None)?,
                ("maxTokens", v) => patch.max_tokens(Some(
                    v.as_u64().ok_or_else(|| assistant_invalid("maxTokens"))?,
                ))?,
                ("baseUrl" | "model" | "apiKey", _) => return Err(assistant_invalid(member)),
                (other, _) => return Err(Error::unknown_field(&format!("assistant.{other}"))),
            }
        }
        Ok(patch)
    }

    /// An OpenAI-compatible server's API base (absolute http or https).
    pub fn base_url(&mut self, url: &str) -> Result<()> {
        if !crate::domain::records::webhook_endpoints::is_valid_url(url) {
            return Err(assistant_invalid("baseUrl"));
        }
        self.base_url = Some(url.to_string());
        Ok(())
    }

    pub fn model(&mut self, model: &str) -> Result<()> {
        if model.trim().is_empty() {
            return Err(assistant_invalid("model"));
        }
        self.model = Some(model.to_string());
        Ok(())
    }

    /// `None` or empty: no key.
    pub fn api_key(&mut self, key: Option<&str>) {
        self.api_key = Some(key.filter(|k| !k.is_empty()).map(str::to_string));
    }

    /// One attempt's bound, 1 to 600000 ms; `None`: the default.
    pub fn timeout_ms(&mut self, ms: Option<u64>) -> Result<()> {
        self.timeout_ms = Some(match ms {
            None => DEFAULT_ASSISTANT_TIMEOUT_MS,
            Some(ms) if (1..=600_000).contains(&ms) => ms,
            Some(_) => return Err(assistant_invalid("timeoutMs")),
        });
        Ok(())
    }

    /// Each request's `max_tokens`, 1 to [`MAX_ASSISTANT_MAX_TOKENS`]; `None`: the
    /// channel's default.
    pub fn max_tokens(&mut self, tokens: Option<u64>) -> Result<()> {
        self.max_tokens = Some(match tokens {
            None => None,
            Some(n) => Some(
                Some(n)
                    .filter(|n| (1..=MAX_ASSISTANT_MAX_TOKENS).contains(n))
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| assistant_invalid("maxTokens"))?,
            ),
        });
        Ok(())
    }

    /// This patch over `previous`.
    fn merged(self, previous: Option<AssistantSettings>) -> Result<AssistantSettings> {
        let (base_url, model, api_key, timeout_ms, max_tokens) = match previous {
            Some(p) => (
                Some(p.base_url),
                Some(p.model),
                p.api_key,
                p.timeout_ms,
                p.max_tokens,
            ),
            None => (None, None, None, DEFAULT_ASSISTANT_TIMEOUT_MS, None),
        };
        let stored = base_url.as_deref().map(|url| (Endpoint::url(url), api_key));
        let base_url = self
            .base_url
            .or(base_url)
            .ok_or_else(|| assistant_invalid("baseUrl"))?;
        // The key stays only with the server it was given for.
        let api_key = match self.api_key {
            Some(given) => given,
            None => bound_secret(
                None,
                stored.as_ref().map(|(at, key)| (at, key.clone())),
                &Endpoint::url(&base_url),
            )
            .flatten(),
        };
        Ok(AssistantSettings {
            base_url,
            model: self
                .model
                .or(model)
                .ok_or_else(|| assistant_invalid("model"))?,
            api_key,
            timeout_ms: self.timeout_ms.unwrap_or(timeout_ms),
            max_tokens: self.max_tokens.unwrap_or(max_tokens),
        })
    }
}

fn assistant_invalid(member: &str) -> Error {
    Error::invalid_field(&format!("assistant.{member}"))
}

/// The kinds of provider a channel may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Sandbox,
    Twilio,
    Smtp,
}

impl ProviderKind {
    /// `kind` for `channel`: `sandbox`, `twilio` (sms, voice) or `smtp` (email); another
    /// channel's kind is not supported, anything else not a kind.
    pub fn parse(channel: Channel, kind: Option<&str>) -> Result<ProviderKind> {
        match (kind, channel) {
            (Some("sandbox"), _) => Ok(ProviderKind::Sandbox),
            (Some("smtp"), Channel::Email) => Ok(ProviderKind::Smtp),
            (Some("twilio"), Channel::Sms | Channel::Voice) => Ok(ProviderKind::Twilio),
            (Some("twilio" | "smtp"), _) => {
                Err(Error::BadRequest("Provider not supported yet".into()))
            }
            _ => Err(Error::invalid_field(&format!(
                "providers.{}.kind",
                channel.as_str()
            ))),
        }
    }
}

/// One channel's provider as given: `null` is the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderPatch {
    Sandbox {
        latency_ms: u64,
        rate_per_second: Option<f64>,
    },
    Twilio(TwilioPatch),
    Smtp(SmtpPatch),
}

impl ProviderPatch {
    /// The sandbox: nothing leaves this machine, unpaced.
    pub fn sandbox() -> ProviderPatch {
        ProviderPatch::Sandbox {
            latency_ms: 0,
            rate_per_second: None,
        }
    }

    /// `providers.<channel>`: `{"kind": "sandbox", "latencyMs"?, "ratePerSecond"?}`,
    /// `twilio` (`settings::twilio`) or `smtp` (`settings::email`).
    pub fn from_json(channel: Channel, value: &Value) -> Result<ProviderPatch> {
        let path = format!("providers.{}", channel.as_str());
        let members = match value {
            Value::Null => return Ok(ProviderPatch::sandbox()),
            Value::Object(members) => members,
            _ => return Err(Error::invalid_field(&path)),
        };
        match ProviderKind::parse(channel, members.get("kind").and_then(Value::as_str))? {
            ProviderKind::Sandbox => {}
            ProviderKind::Smtp => return SmtpPatch::from_json(members).map(ProviderPatch::Smtp),
            ProviderKind::Twilio => {
                return TwilioPatch::from_json(channel, members).map(ProviderPatch::Twilio)
            }
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
                "ratePerSecond" if channel != Channel::Email => {
                    rate_per_second = super::rate(&format!("{path}.ratePerSecond"), value)?
                }
                other => return Err(Error::unknown_field(&format!("{path}.{other}"))),
            }
        }
        Ok(ProviderPatch::Sandbox {
            latency_ms,
            rate_per_second,
        })
    }

    /// The settings: this patch over `previous`, what the channel had (its secrets stay
    /// when absent).
    fn settings(self, previous: &ProviderSettings) -> Result<ProviderSettings> {
        Ok(match self {
            ProviderPatch::Sandbox {
                latency_ms,
                rate_per_second,
            } => ProviderSettings::Sandbox {
                latency_ms,
                rate_per_second,
            },
            ProviderPatch::Twilio(patch) => {
                ProviderSettings::Twilio(patch.settings(match previous {
                    ProviderSettings::Twilio(p) => Some(p),
                    _ => None,
                })?)
            }
            ProviderPatch::Smtp(patch) => {
                ProviderSettings::Smtp(patch.settings(match previous {
                    ProviderSettings::Smtp(p) => Some(p),
                    _ => None,
                })?)
            }
        })
    }
}

/// Applies a partial update; `null` clears an optional setting. Answers the
/// organization and its engine settings. A new outbound address (`complianceUrl`, the
/// assistant's `baseUrl`, a Twilio `baseUrl`, the SMTP `host`) that `policy`
/// (`outbound_allow_private`) refuses is a 400 naming its field, and changes nothing.
pub fn update(
    tx: &mut WriteTx,
    caller: &Caller,
    patch: OrgPatch,
    public_url: Option<&str>,
    policy: OutboundPolicy,
) -> Result<Written<(OrgRecord, EngineSettings)>> {
    let mut org = tx
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    let mut s: OrgSettings = org.settings.clone();
    let mut engine = tx.engine_settings(&caller.org_id)?;
    let engine_before = engine.clone();
    let mut webchat: Option<WebchatSettings> = None;
    let mut browser: Option<BrowserCallKeys> = None;
    for change in patch.changes {
        let e = &mut engine;
        match change {
            Change::Coupled(on) => s.sms_voice_opt_out_coupled = on,
            Change::ComplianceUrl(url) => s.compliance_url = url,
            Change::ComplianceChannels(channels) => s.compliance_channels = channels,
            Change::ComplianceTimeoutMs(ms) => s.compliance_timeout_ms = ms,
            Change::QuietHours(window) => s.quiet_hours = window,
            Change::TimeZone(zone) => e.time_zone = zone,
            Change::DefaultCountry(code) => e.default_country = code,
            Change::FollowUpDays(days) => e.follow_up_days = days,
            Change::Holidays(dates) => e.holidays = dates,
            Change::VoiceOptOutDigit(digit) => e.voice_opt_out.digit = digit,
            Change::VoiceOptOutSentence(on) => e.voice_opt_out.sentence = on,
            Change::Business { name, help_text } => {
                e.business_name = name;
                e.help_text = help_text;
            }
            Change::Assistant(None) => e.assistant = None,
            Change::Assistant(Some(patch)) => e.assistant = Some(patch.merged(e.assistant.take())?),
            Change::ConsentRequired(pairs) => e.consent_required = ConsentRequired(pairs),
            Change::OptOutKeywords(words) => e.opt_out_keywords = words,
            Change::RevocationScope(scope) => e.revocation_scope = scope,
            Change::Webchat(patch) => {
                let before = match webchat.take() {
                    Some(s) => s,
                    None => tx.webchat_settings(&caller.org_id)?,
                };
                webchat = Some(patch.merged(before));
            }
            Change::Providers(channels) => {
                let mut chosen = [
                    ProviderSettings::default(),
                    ProviderSettings::default(),
                    ProviderSettings::default(),
                ];
                // The keys of calls from the browser go with a twilio voice provider.
                let keys_before = match browser.take() {
                    Some(keys) => keys,
                    None => tx.browser_call_keys(&caller.org_id)?,
                };
                let mut keys = BrowserCallKeys::default();
                for (channel, patch) in channels {
                    let slot = match channel {
                        Channel::Sms => 0,
                        Channel::Voice => 1,
                        Channel::Email => 2,
                    };
                    let previous = [&e.sms, &e.voice, &e.email][slot];
                    let browser_patch = match &patch {
                        ProviderPatch::Twilio(t) if channel == Channel::Voice => {
                            Some(t.browser().clone())
                        }
                        _ => None,
                    };
                    chosen[slot] = patch.settings(previous)?;
                    if let (Some(browser_patch), ProviderSettings::Twilio(now)) =
                        (browser_patch, &chosen[slot])
                    {
                        let before = match previous {
                            ProviderSettings::Twilio(p) => Some(p),
                            _ => None,
                        };
                        keys = browser_patch.keys(&keys_before, before, now);
                    }
                }
                browser = Some(keys);
                let [sms, voice, email] = chosen;
                (e.sms, e.voice, e.email) = (sms, voice, email);
            }
        }
    }
    check_addresses(policy, (&org.settings, &engine_before), (&s, &engine))?;
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
    if let Some(webchat) = &webchat {
        if !webchat.profile.is_empty() && tx.profile(&caller.org_id, &webchat.profile)?.is_none() {
            return Err(Error::field(
                "webchat.profile",
                format!("webchat.profile names no profile: {}", webchat.profile),
            ));
        }
        tx.put_webchat_settings(&caller.org_id, webchat)?;
    }
    if let Some(keys) = &browser {
        tx.put_browser_call_keys(&caller.org_id, keys)?;
    }
    let quiet_changed =
        s.quiet_hours != org.settings.quiet_hours || engine.time_zone != engine_before.time_zone;
    org.settings = s;
    tx.put_org(&org)?;
    if engine != engine_before {
        tx.put_engine_settings(&caller.org_id, &engine)?;
    }
    if quiet_changed {
        // Owed to engagement, in this same write: the work quiet hours deferred follows
        // the new window.
        let org_id = caller.org_id.clone();
        return Ok(Written::owing(
            (org, engine),
            Reaction::QuietHoursChanged { org: org_id },
        ));
    }
    Ok(Written::owing_nothing((org, engine)))
}

/// 400 naming the field of each outbound address new in `after` (not in `before`) that
/// `policy` refuses; an address saved before is left to the connect-time check.
fn check_addresses(
    policy: OutboundPolicy,
    before: (&OrgSettings, &EngineSettings),
    after: (&OrgSettings, &EngineSettings),
) -> Result<()> {
    if policy.allows_private() {
        return Ok(());
    }
    if let Some(url) = &after.0.compliance_url {
        if before.0.compliance_url.as_ref() != Some(url) {
            policy.check_url("complianceUrl", url)?;
        }
    }
    if let Some(assistant) = &after.1.assistant {
        let old = before.1.assistant.as_ref().map(|a| a.base_url.as_str());
        if old != Some(assistant.base_url.as_str()) {
            policy.check_url("assistant.baseUrl", &assistant.base_url)?;
        }
    }
    for (channel, old, new) in [
        (Channel::Sms, &before.1.sms, &after.1.sms),
        (Channel::Voice, &before.1.voice, &after.1.voice),
        (Channel::Email, &before.1.email, &after.1.email),
    ] {
        let path = format!("providers.{}", channel.as_str());
        match (old, new) {
            (ProviderSettings::Twilio(old), ProviderSettings::Twilio(new))
                if old.base_url == new.base_url => {}
            (_, ProviderSettings::Twilio(new)) => {
                policy.check_url(&format!("{path}.baseUrl"), &new.base_url)?
            }
            (ProviderSettings::Smtp(old), ProviderSettings::Smtp(new)) if old.host == new.host => {}
            (_, ProviderSettings::Smtp(new)) => {
                policy.check_host(&format!("{path}.host"), &new.host)?
            }
            _ => {}
        }
    }
    Ok(())
}

/// A phone as a person or a sender writes it (`(512) 555-0100`, `+1 512 ...`) read by
/// `phone::read` in the organization's `defaultCountry`: the one reader of typed
/// phones for the console's forms, "Send test" and `POST /v1/inbound/sms`.
pub fn read_phone(
    read: &impl Reader,
    org: &str,
    input: &str,
) -> Result<std::result::Result<String, crate::phone::Unreadable>> {
    let country = crate::phone::Country::parse(&read.engine_settings(org)?.default_country);
    Ok(crate::phone::read(input, country))
}

/// The words of a typed phone that cannot be read, for a form's field.
pub fn unreadable_phone(why: crate::phone::Unreadable) -> &'static str {
    match why {
        crate::phone::Unreadable::NoCountry => "Write the number with its country code, such as +15125550100 (or set the organization's default country under Settings)",
        crate::phone::Unreadable::Invalid => "This is not a phone number: write it as (512) 555-0100 or +15125550100",
    }
}

/// A new organization named `name` (1 to 100 printable characters, unique): what
/// `engaged org create` and the first run's setup page both make.
pub fn create(tx: &mut WriteTx, name: &str) -> Result<OrgRecord> {
    let name = name.trim().to_string();
    if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
        return Err(Error::field(
            "organization",
            "organization names are 1 to 100 printable characters",
        ));
    }
    if tx.org_id_by_name(&name)?.is_some() {
        return Err(Error::Conflict(format!(
            "Organization already exists: {name}"
        )));
    }
    let org = OrgRecord {
        id: crate::ids::generate("org"),
        name,
        created_at: tx.tick(),
        settings: OrgSettings::default(),
    };
    tx.put_org(&org)?;
    Ok(org)
}

/// The business name texts use: the organization's setting, else its name.
pub fn business_name(tx: &impl Reader, org: &str) -> Result<String> {
    let settings = tx.engine_settings(org)?;
    if !settings.business_name.is_empty() {
        return Ok(settings.business_name);
    }
    Ok(tx.org(org)?.map(|o| o.name).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(body: Value) -> Error {
        match body {
            Value::Object(members) => OrgPatch::from_json(&members).unwrap_err(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_org_patch_keeps_the_interface_messages_and_names_the_field() {
        let e = refusal(json!({"timeZone": "Mars/Olympus"}));
        assert_eq!(e.to_string(), "Invalid format for field: timeZone");
        assert_eq!(e.refused_field(), Some("timeZone"));
        let e = refusal(json!({"followUpDays": []}));
        assert_eq!(
            e.to_string(),
            "followUpDays needs at least one day (null: every day)"
        );
        assert_eq!(e.refused_field(), Some("followUpDays"));
        let e = refusal(json!({"quietHours": {"start": "21:00", "end": "25:00"}}));
        assert_eq!(e.refused_field(), Some("quietHours"));
        assert_eq!(
            refusal(json!({"business": {"slogan": "x"}})).to_string(),
            "Unknown field: business.slogan"
        );
        assert_eq!(
            refusal(json!({"name": "Acme"})).to_string(),
            "Field is read-only: name"
        );
        assert_eq!(
            refusal(json!({"assistant": {"timeoutMs": 0}})).to_string(),
            "Invalid format for field: assistant.timeoutMs"
        );
        assert_eq!(
            refusal(json!({"providers": {"email": {"kind": "twilio"}}})).to_string(),
            "Provider not supported yet"
        );
        assert_eq!(
            refusal(json!({"providers": {"sms": {"kind": "carrier-pigeon"}}})).to_string(),
            "Invalid format for field: providers.sms.kind"
        );
        assert_eq!(
            refusal(json!({"defaultCountry": "us", "holidays": ["2026-02-30"]})).to_string(),
            "Invalid format for field: holidays",
            "members are checked in order"
        );
        for bad in [
            json!("99"),
            json!("a"),
            json!(""),
            json!(9),
            json!("#"),
            json!(["9"]),
            json!("٣"),
        ] {
            let e = refusal(json!({ "voiceOptOutDigit": bad }));
            assert_eq!(e.to_string(), "Invalid format for field: voiceOptOutDigit");
            assert_eq!(e.refused_field(), Some("voiceOptOutDigit"));
        }
        assert_eq!(
            refusal(json!({"voiceOptOutSentence": "yes"})).to_string(),
            "Invalid format for field: voiceOptOutSentence"
        );
    }

    #[test]
    fn the_console_builds_the_same_patch_as_the_json() {
        let body = json!({"business": {"name": "Acme", "helpText": ""}, "timeZone": "America/Chicago",
            "quietHours": {"start": "21:00", "end": "08:00"}, "followUpDays": ["FRI", "mon"]});
        let Value::Object(members) = body else {
            unreachable!()
        };
        let mut built = OrgPatch::default();
        built.business("Acme", "").unwrap();
        built.time_zone(Some("America/Chicago")).unwrap();
        built.quiet_hours(Some(("21:00", "08:00"))).unwrap();
        built.follow_up_days(Some(&["FRI", "mon"])).unwrap();
        assert_eq!(OrgPatch::from_json(&members).unwrap(), built);
        let mut every_day = OrgPatch::default();
        every_day.follow_up_days(Some(&WEEKDAYS)).unwrap();
        assert_eq!(every_day.changes, vec![Change::FollowUpDays(Vec::new())]);
    }

    #[test]
    fn the_consent_settings_refuse_by_field() {
        for body in [
            json!({"consentRequired": [{"channel": "fax", "purpose": "marketing"}]}),
            json!({"consentRequired": [{"channel": "voice"}]}),
            json!({"consentRequired": [{"channel": "voice", "purpose": "marketing", "x": 1}]}),
            json!({"consentRequired": "voice"}),
        ] {
            assert_eq!(refusal(body).refused_field(), Some("consentRequired"));
        }
        let many: Vec<String> = (0..21).map(|i| format!("word{i}")).collect();
        for body in [
            json!({"optOutKeywords": many}),
            json!({"optOutKeywords": ["!!!"]}),
            json!({"optOutKeywords": ["x".repeat(41)]}),
            json!({"optOutKeywords": [3]}),
        ] {
            assert_eq!(refusal(body).refused_field(), Some("optOutKeywords"));
        }
        assert_eq!(
            refusal(json!({"revocationScope": "lead"})).refused_field(),
            Some("revocationScope")
        );
        let Value::Object(members) = json!({"optOutKeywords": ["BASTA!", "basta", "Ｎo más"]})
        else {
            unreachable!()
        };
        assert_eq!(
            OrgPatch::from_json(&members).unwrap().changes,
            vec![Change::OptOutKeywords(vec![
                "basta".into(),
                "no más".into()
            ])]
        );
    }
}
