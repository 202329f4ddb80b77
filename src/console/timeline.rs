//! A lead's timeline in words: every message with who wrote it, calls with their
//! transcript and recording, the assistant's tool calls, compliance blocks, what
//! people did, and custom events; oldest first, like a chat.

use maud::{html, Markup};
use serde_json::Value;

use super::layout;
use crate::channel::Owner;
use crate::domain::records::consent::CONSENT_EVENT;
use crate::domain::records::meetings::MEETING_EVENT;
use crate::domain::records::message_shape::MessageShape;
use crate::domain::records::recordings::{self, LinkKey};
use crate::error::Result;
use crate::store::calendars::CalendarReader;
use crate::store::rows::{LeadRecord, SystemEvent};
use crate::store::{EventRow, Flow, ReadTx, Reader, Start};

/// The most items a lead's page shows (the newest ones).
pub const MAX_ITEMS: usize = 500;

/// The lead's events, oldest first (by creation): at most the newest [`MAX_ITEMS`],
/// and how many there are in all.
pub fn events(read: &ReadTx, org: &str, lead: &str) -> Result<(Vec<EventRow>, usize)> {
    let mut rows = Vec::new();
    let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
    read.scan_events(org, lead, start, |row| {
        rows.push(row);
        Ok(Flow::Continue)
    })?;
    let total = rows.len();
    rows.sort_by(|a, b| {
        (a.record.created_at, a.updated_at).cmp(&(b.record.created_at, b.updated_at))
    });
    if rows.len() > MAX_ITEMS {
        rows.drain(..rows.len() - MAX_ITEMS);
    }
    Ok((rows, total))
}

/// What the timeline needs besides the events.
pub struct Context<'a> {
    pub read: &'a ReadTx,
    pub org: &'a str,
    pub lead: &'a LeadRecord,
    pub zone: &'a str,
    pub link_key: &'a LinkKey,
    pub link_ttl_secs: u64,
}

/// The timeline as an ordered list.
pub fn render(ctx: &Context, rows: &[EventRow]) -> Result<Markup> {
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(item(ctx, row)?);
    }
    Ok(html! {
        ol.timeline aria-label="Timeline" {
            @for item in &items { (item) }
        }
    })
}

/// Who wrote a message: the lead, or on the organization's side its origin in words.
pub fn author(lead_name: &str, owner: Owner, data: &Value) -> String {
    if owner == Owner::Lead {
        return lead_name.to_string();
    }
    let str_of = |key: &str| data.get(key).and_then(Value::as_str);
    match str_of("origin") {
        Some("assistant") => "Assistant".into(),
        Some("keyword") => "Keyword reply".into(),
        Some("cadence") => match data.get("step").and_then(Value::as_u64) {
            Some(step) => format!("Cadence step {step}"),
            None => "Cadence".into(),
        },
        Some("human") => data
            .pointer("/sentBy/name")
            .and_then(Value::as_str)
            .unwrap_or("A person")
            .to_string(),
        _ => "API".into(),
    }
}

fn item(ctx: &Context, row: &EventRow) -> Result<Markup> {
    let data = &row.record.data.0;
    let when = layout::time(row.record.created_at, ctx.zone);
    let lead_name = layout::lead_name(ctx.lead);
    if let Some(shape) = MessageShape::of(&row.kind, data) {
        let text = shape.text();
        let subject = shape.content.get("subject").and_then(Value::as_str);
        let status = data.get("status").and_then(Value::as_str);
        let class = if shape.owner == Owner::Lead {
            "from-lead"
        } else {
            "from-user"
        };
        let who = match data.get("origin").and_then(Value::as_str) {
            Some("meeting") if shape.owner != Owner::Lead => {
                meeting_message_author(ctx, data, text)?
            }
            _ => author(&lead_name, shape.owner, data),
        };
        return Ok(html! {
            li class=(class) {
                div.meta {
                    span.who { (who) }
                    " · " (shape.medium.words())
                    @if let Some(status) = status { " · " (status) }
                    " · " (when)
                }
                @if let Some(subject) = subject { p { strong { (subject) } } }
                p.text { (text) }
                @if let Some(error) = data.get("error").and_then(Value::as_str) {
                    p.error { (error) }
                }
            }
        });
    }
    let kind = row.kind.as_str();
    let markup = if kind == SystemEvent::Call.as_str() {
        call(ctx, row, &when)?
    } else if kind == SystemEvent::ToolCall.as_str() {
        note(&when, &tool_words(data))
    } else if kind == SystemEvent::ComplianceBlocked.as_str() {
        let reason = data
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("blocked");
        let source = data
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("local");
        let channel = data.get("channel").and_then(Value::as_str).unwrap_or("");
        note(
            &when,
            &format!(
                "Blocked: {} ({source}) {}",
                reason_words(reason),
                channel_label(channel)
            ),
        )
    } else if kind == SystemEvent::UserAction.as_str() {
        note(&when, &action_words(data))
    } else if kind == MEETING_EVENT {
        let zone = match data.get("calendar").and_then(Value::as_str) {
            Some(name) => ctx
                .read
                .calendar(ctx.org, name)?
                .map(|c| c.time_zone)
                .filter(|z| z.parse::<chrono_tz::Tz>().is_ok()),
            None => None,
        };
        note(
            &when,
            &meeting_words(data, zone.as_deref().unwrap_or(ctx.zone)),
        )
    } else if kind == CONSENT_EVENT {
        note(&when, &consent_words(data))
    } else {
        // A custom event: its type and its fields as a short list, never JSON.
        let fields: Vec<(String, String)> = data
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), value_words(v))).collect())
            .unwrap_or_default();
        html! {
            li.note {
                div.meta { span.who { (kind) } " · " (when) }
                @if !fields.is_empty() {
                    dl.facts {
                        @for (name, value) in &fields { dt { (name) } dd { (value) } }
                    }
                }
            }
        }
    };
    Ok(markup)
}

/// Who sent a meeting's confirmation or reminder: the person who booked the meeting,
/// or the assistant ("Dana Ortiz · meeting confirmation"), never "API" for a person's
/// doing.
fn meeting_message_author(ctx: &Context, data: &Value, text: &str) -> Result<String> {
    let meeting = match data.get("meetingId").and_then(Value::as_str) {
        Some(id) => ctx.read.meeting(ctx.org, id)?,
        None => None,
    };
    let who = match meeting.map(|m| m.booked_by) {
        Some(crate::store::calendars::BookedBy::User { name, .. }) => name,
        Some(crate::store::calendars::BookedBy::Assistant) => "Assistant".to_string(),
        _ => "Booking".to_string(),
    };
    let what = if text.trim_start().starts_with("Reminder") {
        "meeting reminder"
    } else {
        "meeting confirmation"
    };
    Ok(format!("{who} · {what}"))
}

/// A time as a sentence says it, in `zone`: "Tue 2 Dec, 10:00 AM (America/Chicago)".
fn spoken_time(iso: &str, zone: &str) -> String {
    let Ok(at) = chrono::DateTime::parse_from_rfc3339(iso) else {
        return iso.to_string();
    };
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => format!(
            "{} ({zone})",
            at.with_timezone(&tz).format("%a %-d %b, %-I:%M %p")
        ),
        Err(_) => format!(
            "{} (UTC)",
            at.with_timezone(&chrono::Utc)
                .format("%a %-d %b, %-I:%M %p")
        ),
    }
}

/// Who booked, as the `MEETING` event's `bookedBy` says.
fn booked_by_words(by: Option<&Value>) -> String {
    match by {
        Some(Value::String(s)) if s == "assistant" => "the assistant".into(),
        Some(Value::Object(m)) => m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("a person")
            .to_string(),
        _ => "the API".into(),
    }
}

/// A `MEETING` event in words: "Meeting booked for Tue 2 Dec, 10:00 AM
/// (America/Chicago) by Dana Ortiz".
pub fn meeting_words(data: &Value, zone: &str) -> String {
    let str_of = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
    let when = spoken_time(str_of("start"), zone);
    let calendar = match str_of("calendar") {
        "" => String::new(),
        name => format!(" on {name}"),
    };
    match str_of("action") {
        "booked" => format!(
            "Meeting booked for {when}{calendar} by {}",
            booked_by_words(data.get("bookedBy"))
        ),
        "rescheduled" => format!("Meeting moved to {when}{calendar}"),
        "canceled" => format!("Meeting of {when} canceled"),
        "completed" => format!("Meeting of {when} took place"),
        "no_show" => format!("The lead did not come to the meeting of {when}"),
        other => format!("Meeting of {when}: {}", other.replace('_', " ")),
    }
}

/// A `CONSENT` entry in words: "Consent for SMS revoked — the lead wrote “Stop
/// please”", "Consent for Voice granted (marketing) by Dana Ortiz — “yes, call me”".
pub fn consent_words(data: &Value) -> String {
    let str_of = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
    let channel = channel_label(str_of("channel"));
    let granted = str_of("status") == "granted";
    let purpose = match str_of("purpose") {
        "" => String::new(),
        p if granted => format!(" ({p})"),
        _ => String::new(),
    };
    let person = data
        .pointer("/proof/recordedBy/name")
        .and_then(Value::as_str);
    let text = data.pointer("/proof/text").and_then(Value::as_str);
    let how = match (str_of("source"), person) {
        (_, Some(name)) => format!(" by {name}"),
        ("import", _) => " by an import".into(),
        ("api", _) => " through the API".into(),
        ("web_form", _) => " on a web form".into(),
        ("keyword" | "reply", _) if text.is_some() => String::new(),
        ("keyword", _) => " by a keyword reply".into(),
        ("reply", _) => " in the lead's reply".into(),
        ("call", _) => " on a call".into(),
        ("unsubscribe_link", _) => " with the email's unsubscribe link".into(),
        ("timeout", _) => " as its time ran out".into(),
        _ => String::new(),
    };
    let status = if granted { "granted" } else { "revoked" };
    let quote = match (str_of("source"), text) {
        ("keyword" | "reply", Some(t)) => format!(" — the lead wrote “{t}”"),
        (_, Some(t)) => format!(" — “{t}”"),
        (_, None) => String::new(),
    };
    format!("Consent for {channel} {status}{purpose}{how}{quote}")
}

/// A custom event's field value in words: text as it is, a list joined, a group as
/// `name: value` pairs.
fn value_words(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        Value::Bool(true) => "Yes".into(),
        Value::Bool(false) => "No".into(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items.iter().map(value_words).collect::<Vec<_>>().join(", "),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}: {}", value_words(v)))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn note(when: &Markup, words: &str) -> Markup {
    html! { li.note { div.meta { (when) } p.text { (words) } } }
}

fn channel_label(channel: &str) -> &str {
    match channel {
        "sms" => "SMS",
        "email" => "Email",
        "voice" => "Voice",
        "webchat" => "Web chat",
        other => other,
    }
}

fn reason_words(reason: &str) -> String {
    match reason {
        "dnc" => "DNC".into(),
        other => other.replace('_', " "),
    }
}

/// A tool call in words: what the assistant did ("Assistant marked the lead hot").
pub fn tool_words(data: &Value) -> String {
    let name = data.get("name").and_then(Value::as_str).unwrap_or("a tool");
    let ok = data.pointer("/result/ok").and_then(Value::as_bool) != Some(false);
    let done = match name {
        "mark_hot" => "marked the lead hot".to_string(),
        "mark_qualified" => "marked the lead qualified".to_string(),
        "handoff" => "handed the lead off to a person".to_string(),
        "opt_out" => "opted the lead out".to_string(),
        "add_tags" | "add_tag" => "added tags".to_string(),
        "schedule_call" => "scheduled a call".to_string(),
        "update_summary" | "set_summary" => "updated the lead's summary".to_string(),
        "transfer" => "transferred the call".to_string(),
        other => format!("used {other}"),
    };
    if ok {
        format!("Assistant {done}")
    } else {
        let why = data
            .pointer("/result/error")
            .and_then(Value::as_str)
            .unwrap_or("refused");
        format!("Assistant tried: {done} ({why})")
    }
}

/// A person's action in words ("Ana Ruiz took over").
pub fn action_words(data: &Value) -> String {
    let name = data
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("Someone");
    let detail = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
    let channels = data
        .get("channels")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .map(channel_label)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let did = match data
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "take_over" => "took over".to_string(),
        "hand_back" => "handed back to the assistant".to_string(),
        "unsubscribe" => format!("unsubscribed the lead ({channels})"),
        "resubscribe" => format!("resubscribed the lead ({channels})"),
        "add_to_dnc" => format!("added {} to the DNC list", detail("phone")),
        "add_tag" => format!("added the tag {}", detail("tag")),
        "remove_tag" => format!("removed the tag {}", detail("tag")),
        "mark_hot" => "marked the lead hot".to_string(),
        "mark_qualified" => "marked the lead qualified".to_string(),
        "delete" => "deleted the lead".to_string(),
        "retry_send" => "sent a failed message again".to_string(),
        "dismiss_failure" => "dismissed a failed send".to_string(),
        "seen_calendar_change" => "saw the meeting changed in the calendar".to_string(),
        "called_back" => "called the lead back".to_string(),
        "record_consent" => format!(
            "recorded consent {} ({})",
            detail("status"),
            channel_label(detail("channel"))
        ),
        "confirm_opt_out" => "opted the lead out (a possible opt-out)".to_string(),
        "dismiss_opt_out" => "decided it was not an opt-out".to_string(),
        "set_field" => format!("set {} to {}", detail("field"), detail("value")),
        "remove_field" => format!("removed the field {}", detail("field")),
        "add_to_campaign" => format!("added the lead to the campaign {}", detail("profile")),
        other => other.replace('_', " "),
    };
    format!("{name} {did}")
}

fn call(ctx: &Context, row: &EventRow, when: &Markup) -> Result<Markup> {
    let record = ctx.read.call(ctx.org, &row.id)?;
    let Some(record) = record else {
        return Ok(note(when, "Call"));
    };
    let d = &record.details;
    let direction = match d.direction.map(|d| format!("{d:?}")) {
        Some(d) if d.eq_ignore_ascii_case("inbound") => "Inbound call",
        _ => "Outbound call",
    };
    let turns: Vec<(String, String)> = d
        .transcript
        .as_ref()
        .and_then(|t| t.to_value().ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|turn| {
            let role = turn.get("role").and_then(Value::as_str).unwrap_or("");
            let text = turn.get("text").and_then(Value::as_str).unwrap_or("");
            let who = match role {
                "lead" | "user" => layout::lead_name(ctx.lead),
                "agent" | "assistant" => "Assistant".to_string(),
                other => other.to_string(),
            };
            (who, text.to_string())
        })
        .collect();
    let audio = match ctx.read.recording(ctx.org, &row.id)? {
        Some(_) => {
            let expires = recordings::link_expiry(recordings::now_secs(), ctx.link_ttl_secs);
            let sig = ctx.link_key.sign(ctx.org, &row.id, expires)?;
            let enc = |s: &str| {
                percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
                    .to_string()
            };
            Some(format!(
                "/v1/recordings/{}/{}?expires={expires}&sig={sig}",
                enc(ctx.org),
                enc(&row.id)
            ))
        }
        None => None,
    };
    Ok(html! {
        li.note {
            div.meta {
                span.who { (direction) } " · " (when)
            }
            dl.facts {
                dt { "Status" } dd { (call_status_words(d.call_status.as_deref())) }
                dt { "Duration" } dd { (d.duration_seconds.unwrap_or(0)) " s" }
                @if let Some(transfer) = transfer_words(d) {
                    dt { "Transfer" } dd { (transfer) }
                }
                @if d.has_voicemail == Some(true) {
                    dt { "Voicemail" } dd { "A voicemail was left" }
                }
                @if d.hit_call_screening == Some(true) {
                    dt { "Call screening" } dd {
                        @if d.reached_human_after_screening == Some(true) { "Screened, then the lead answered" }
                        @else { "A call screener answered" }
                    }
                }
                @if let Some(summary) = d.summary.as_deref().filter(|s| !s.is_empty()) {
                    dt { "Summary" } dd { (summary) }
                }
                @if let Some(disposition) = d.disposition_name.as_deref() {
                    dt { "Disposition" } dd { (disposition) }
                }
            }
            @if let Some(url) = &audio {
                audio controls preload="none" src=(url) { a href=(url) { "Download the recording" } }
            }
            @if !turns.is_empty() {
                details {
                    summary { "Transcript (" (turns.len()) " turns)" }
                    ol {
                        @for (who, text) in &turns {
                            li { strong { (who) ": " } (text) }
                        }
                    }
                }
            }
        }
    })
}

/// A call's status as a person reads it ("In progress", "No answer"): the provider's
/// word with its case and separators undone.
fn call_status_words(status: Option<&str>) -> String {
    let Some(status) = status.filter(|s| !s.is_empty()) else {
        return "Unknown".to_string();
    };
    let lower = status.replace(['_', '-'], " ").to_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => "Unknown".to_string(),
    }
}

/// What happened to a call's transfer, in words: to whom and after how long, or why no
/// one took it; `None` for a call nobody transferred.
fn transfer_words(d: &crate::store::rows::CallDetails) -> Option<String> {
    use crate::store::rows::{EndedBy, TransferFailureCode, TransferStatus};
    let to = d
        .transfer_number
        .as_deref()
        .filter(|n| !n.is_empty())
        .map(|n| format!(" to {n}"))
        .unwrap_or_default();
    let wait = d.transfer_wait_duration_seconds.unwrap_or(0);
    Some(match (d.transfer_status?, d.transfer_failure_code) {
        (TransferStatus::Connected, _) => {
            let ended = match d.ended_by {
                Some(EndedBy::Lead) => "; the lead hung up first",
                Some(EndedBy::Agent) => "; the person hung up first",
                _ => "",
            };
            match d.mid_call_transfer_duration {
                Some(talked) => {
                    format!("Transferred{to} — connected after {wait} s, talked {talked} s{ended}")
                }
                None => format!("Transferred{to} — connected after {wait} s{ended}"),
            }
        }
        (TransferStatus::Failed, Some(TransferFailureCode::LeadDisconnected)) => {
            format!("The lead hung up while waiting for the transfer{to} ({wait} s)")
        }
        (TransferStatus::Failed, _) => format!("No one took the transfer{to} ({wait} s)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_names_who_wrote_it() {
        assert_eq!(author("Ada", Owner::Lead, &json!({})), "Ada");
        assert_eq!(
            author("Ada", Owner::User, &json!({"origin": "assistant"})),
            "Assistant"
        );
        assert_eq!(
            author("Ada", Owner::User, &json!({"origin": "cadence", "step": 2})),
            "Cadence step 2"
        );
        assert_eq!(
            author("Ada", Owner::User, &json!({"origin": "keyword"})),
            "Keyword reply"
        );
        assert_eq!(author("Ada", Owner::User, &json!({"origin": "api"})), "API");
        assert_eq!(author("Ada", Owner::User, &json!({})), "API");
        assert_eq!(
            author(
                "Ada",
                Owner::User,
                &json!({"origin": "human", "sentBy": {"userId": "u", "name": "Ana Ruiz"}})
            ),
            "Ana Ruiz"
        );
    }

    #[test]
    fn meetings_and_consent_read_as_sentences() {
        let booked = json!({"meetingId": "mtg_1", "calendar": "Sales", "start": "2026-12-01T16:00:00Z",
            "end": "2026-12-01T16:30:00Z", "status": "booked", "action": "booked",
            "bookedBy": {"userId": "usr_1", "name": "Dana Ortiz"}});
        assert_eq!(
            meeting_words(&booked, "America/Chicago"),
            "Meeting booked for Tue 1 Dec, 10:00 AM (America/Chicago) on Sales by Dana Ortiz"
        );
        let moved = json!({"start": "2026-12-01T16:00:00Z", "action": "rescheduled", "bookedBy": "assistant"});
        assert_eq!(
            meeting_words(&moved, "UTC"),
            "Meeting moved to Tue 1 Dec, 4:00 PM (UTC)"
        );
        let revoked = json!({"channel": "sms", "status": "revoked", "purpose": "marketing",
            "source": "reply", "proof": {"text": "Stop please"}});
        assert_eq!(
            consent_words(&revoked),
            "Consent for SMS revoked — the lead wrote “Stop please”"
        );
        let granted = json!({"channel": "voice", "status": "granted", "purpose": "marketing",
            "source": "console", "proof": {"recordedBy": {"userId": "u", "name": "Dana Ortiz"}, "text": "yes, call me"}});
        assert_eq!(
            consent_words(&granted),
            "Consent for Voice granted (marketing) by Dana Ortiz — “yes, call me”"
        );
        assert_eq!(
            value_words(&json!({"plan": "solar", "kw": [4, 6]})),
            "plan: solar; kw: 4, 6"
        );
    }

    #[test]
    fn actions_and_tool_calls_read_as_words() {
        assert_eq!(
            action_words(&json!({"action": "take_over", "name": "Ana Ruiz"})),
            "Ana Ruiz took over"
        );
        assert_eq!(
            action_words(
                &json!({"action": "unsubscribe", "name": "Ana", "channels": ["sms", "voice"]})
            ),
            "Ana unsubscribed the lead (SMS, Voice)"
        );
        assert_eq!(
            tool_words(&json!({"name": "mark_hot", "result": {"ok": true}})),
            "Assistant marked the lead hot"
        );
        assert_eq!(
            tool_words(&json!({"name": "handoff", "result": {"ok": false, "error": "once"}})),
            "Assistant tried: handed the lead off to a person (once)"
        );
    }
}
