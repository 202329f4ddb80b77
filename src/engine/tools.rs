//! The assistant's tools, applied through the same domain functions the HTTP API uses
//! (an `opt_out` is exactly an unsubscribe, with its webhooks), each in one write job
//! together with its `TOOL_CALL` event (`{"name", "arguments", "result", "channel"}`,
//! whose id is the tool call's). A tool the model named wrongly, or called with
//! malformed arguments, is recorded with `result.ok == false` and changes nothing.
//!
//! With a calendar on the lead's profile the booking tools apply too (`find_times`,
//! `book_meeting`, `reschedule_meeting`, `cancel_meeting`, through
//! `records::meetings`, bookedBy `assistant`); their open times are read outside the
//! writer, and a booking at a time that is not open answers them (`openTimes`).
//!
//! Bounds on one answer (enforced by `reply::converse`, which calls [`Engine::apply_tool`]
//! and [`Engine::record_refused`]): at most [`MAX_TOOL_CALLS`] calls are applied, the
//! rest recorded as [`TOO_MANY`]; `handoff` and `opt_out` apply once ([`ONCE`]).
//! `schedule_call` takes a time from now to [`MAX_CALL_AHEAD_DAYS`] ahead. Every
//! `TOOL_CALL` event has its own id: a call whose id an earlier event of the lead holds
//! gets a fresh one derived from it (the model's ids repeat).
//!
//! A replay runs the same loop with its tools **dry** ([`ToolMode::Dry`], a
//! [`DryRun`]): every call is recorded by name and nothing is written; `find_times`
//! reads the real calendar (the draft's) and answers its open times, the rest answer
//! `{"ok": true, "dryRun": true}` and keep their effect on the conversation (after
//! `opt_out` or `handoff` nothing more is said).

use chrono::Utc;
use serde_json::{json, Map, Value};

use super::Engine;
use crate::channel::Channel;
use crate::domain::contact::quiet_hours::outside_quiet_hours;
use crate::domain::conversation::hold;
use crate::domain::engagement::reactions::React;
use crate::domain::engagement::{agenda, enrolment};
use crate::domain::records::events;
use crate::domain::records::leads::{self, LeadPatch, LeadText};
use crate::domain::records::meetings::{self, BookInput};
use crate::domain::records::subscriptions;
use crate::domain::records::tags;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::providers::model::tools::{self as assistant, Tool, ToolCallRequest};
use crate::store::calendars::{BookedBy, MeetingRecord};
use crate::store::rows::{JobKind, LeadRecord, StopReason, SystemEvent, TagRecord};
use crate::store::{EventKey, Reader, WriteTx};
use crate::time::now_micros;
use crate::webhooks::{self, WebhookEvent};

/// The most tool calls of one answer that are applied.
pub const MAX_TOOL_CALLS: usize = 8;
/// The result's error of a call past [`MAX_TOOL_CALLS`].
pub const TOO_MANY: &str = "too many tool calls";
/// The result's error of a second `handoff` or `opt_out` in one answer.
pub const ONCE: &str = "already applied in this answer";
/// `schedule_call`'s `at` may be at most this far ahead.
pub const MAX_CALL_AHEAD_DAYS: i64 = 30;
/// An `at` this little in the past is taken as now (the model's clock is the prompt's
/// minute).
const PAST_GRACE_MICROS: i64 = 5 * 60 * 1_000_000;

/// Whether a tool takes effect once per answer.
pub fn once_per_answer(name: &str) -> bool {
    matches!(name, "handoff" | "opt_out")
}

/// What a tool means for the rest of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Continue,
    /// `opt_out`: no further reply is generated.
    OptedOut,
    /// `handoff`: no further reply; a human takes over (on a call, by a transfer).
    HandedOff,
    /// `transfer` on a live call: the assistant's side ends and a human is rung.
    Transfer,
}

impl Effect {
    /// Whether the assistant says nothing more after it.
    pub fn ends_conversation(self) -> bool {
        self != Effect::Continue
    }
}

/// How a turn's tool calls are carried out.
#[derive(Clone, Copy)]
pub(super) enum ToolMode<'a> {
    /// Applied through the domain, each with its `TOOL_CALL` event.
    /// `transfer_available`: a live call whose profile has a transfer number.
    Live { transfer_available: bool },
    /// Recorded in the [`DryRun`], never applied (a replay).
    Dry(&'a DryRun),
}

/// What a dry turn's tool calls came to: the tools called, by name, in order, and the
/// model tokens the turn's answers used.
#[derive(Debug, Default)]
pub(super) struct DryRun {
    /// The draft's calendar and the lead's zone, when the draft books.
    pub booking: Option<Booking>,
    calls: std::sync::Mutex<Vec<String>>,
    tokens: std::sync::atomic::AtomicU64,
}

impl DryRun {
    pub fn new(booking: Option<Booking>) -> DryRun {
        DryRun {
            booking,
            ..DryRun::default()
        }
    }

    fn called(&self, name: &str) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.to_string());
    }

    pub fn add_tokens(&self, tokens: u64) {
        self.tokens
            .fetch_add(tokens, std::sync::atomic::Ordering::Relaxed);
    }

    /// The tools called so far and the tokens used, leaving both empty.
    pub fn take(&self) -> (Vec<String>, u64) {
        let calls = std::mem::take(&mut *self.calls.lock().unwrap_or_else(|p| p.into_inner()));
        let tokens = self.tokens.swap(0, std::sync::atomic::Ordering::Relaxed);
        (calls, tokens)
    }
}

impl Engine {
    /// Records the calls of one answer in `dry`, applying none: the same bounds as a
    /// live answer (the first [`MAX_TOOL_CALLS`], `handoff` and `opt_out` once). Answers
    /// each call's result and the effect that ended the conversation, if one did.
    pub(super) async fn dry_answer(
        &self,
        org: &str,
        channel: Channel,
        calls: &[ToolCallRequest],
        dry: &DryRun,
    ) -> Result<(Vec<Value>, Option<Effect>)> {
        let mut results = Vec::with_capacity(calls.len());
        let mut ended = None;
        let mut once: Vec<&str> = Vec::new();
        let (applied, over) = calls.split_at(calls.len().min(MAX_TOOL_CALLS));
        for call in applied {
            let name = call.name.as_str();
            dry.called(name);
            if once_per_answer(name) && once.contains(&name) {
                results.push(json!({"ok": false, "error": ONCE}));
                continue;
            }
            let (result, effect) = self.dry_tool(org, channel, call, dry).await?;
            if result["ok"] == Value::Bool(true) && once_per_answer(name) {
                once.push(name);
            }
            if effect.ends_conversation() {
                ended = Some(effect);
            }
            results.push(result);
        }
        for call in over {
            dry.called(&call.name);
            results.push(json!({"ok": false, "error": TOO_MANY}));
        }
        Ok((results, ended))
    }

    /// One call's dry result: `find_times` reads the draft's calendar; the others
    /// change nothing.
    async fn dry_tool(
        &self,
        org: &str,
        channel: Channel,
        call: &ToolCallRequest,
        dry: &DryRun,
    ) -> Result<(Value, Effect)> {
        let done = json!({"ok": true, "dryRun": true});
        let tool = match parse(call, channel == Channel::Voice, dry.booking.is_some()) {
            Ok(tool) => tool,
            Err(error) => return Ok((json!({"ok": false, "error": error}), Effect::Continue)),
        };
        Ok(match (tool, &dry.booking) {
            (Tool::FindTimes { day }, Some(booking)) => {
                let mut booking = booking.clone();
                match self.external_busy(org, &booking.calendar).await {
                    Ok(busy) => booking.external = busy,
                    Err(e) => {
                        return Ok((
                            json!({"ok": false, "error": e.to_string()}),
                            Effect::Continue,
                        ))
                    }
                }
                let times = booking.times(&self.store, org, day)?;
                (
                    json!({"ok": true, "times": booking.shown(&times)}),
                    Effect::Continue,
                )
            }
            (Tool::OptOut { .. }, _) => (done, Effect::OptedOut),
            (Tool::Handoff { .. }, _) => (done, Effect::HandedOff),
            (Tool::Transfer, _) if channel != Channel::Voice => (
                json!({"ok": false, "error": "transfer needs a live call"}),
                Effect::Continue,
            ),
            (Tool::Transfer, _) => (done, Effect::Transfer),
            _ => (done, Effect::Continue),
        })
    }
}

impl Engine {
    /// Applies one tool call and records it; answers the result the model is shown.
    /// `transfer_available`: a live call whose profile has a transfer number.
    pub(super) async fn apply_tool(
        &self,
        org: &str,
        lead: &str,
        channel: Channel,
        call: &ToolCallRequest,
        transfer_available: bool,
    ) -> Result<(Value, Effect)> {
        let mut booking = self.booking_of(org, lead)?;
        let mut parsed = parse(call, channel == Channel::Voice, booking.is_some());
        // A CalDAV calendar's busy times, read outside the writer (its cache, at most
        // 60 s old): a server that cannot be read offers and books nothing.
        if let (
            Ok(Tool::FindTimes { .. } | Tool::BookMeeting { .. } | Tool::RescheduleMeeting { .. }),
            Some(b),
        ) = (&parsed, booking.as_mut())
        {
            match self.external_busy(org, &b.calendar).await {
                Ok(busy) => b.external = busy,
                Err(e) => parsed = Err(e.to_string()),
            }
        }
        // Open times are read outside the writer: `find_times`' answer, and a booking's
        // answer when its time is taken.
        let times = match (&parsed, &booking) {
            (Ok(Tool::FindTimes { day }), Some(b)) => Some(b.times(&self.store, org, *day)),
            (Ok(Tool::BookMeeting { .. } | Tool::RescheduleMeeting { .. }), Some(b)) => {
                Some(b.times(&self.store, org, None))
            }
            _ => None,
        };
        let times = times.transpose()?.unwrap_or_default();
        let (org, lead, call) = (org.to_string(), lead.to_string(), call.clone());
        self.store
            .write(move |tx| {
                let caller = Caller::system(&org);
                let booking = booking.as_ref().map(|b| (b, times.as_slice()));
                let (result, effect) = match &parsed {
                    Err(error) => (json!({"ok": false, "error": error}), Effect::Continue),
                    Ok(tool) => {
                        let applied = apply(
                            tx,
                            &caller,
                            &lead,
                            channel,
                            tool,
                            transfer_available,
                            booking,
                        );
                        match applied {
                            Ok(done) => done,
                            Err(Error::Internal(cause)) => return Err(Error::Internal(cause)),
                            Err(refused) => (
                                json!({"ok": false, "error": refused.to_string()}),
                                Effect::Continue,
                            ),
                        }
                    }
                };
                record(tx, &org, &lead, channel, &call, &result)?;
                Ok((result, effect))
            })
            .await
    }

    /// Records `calls`, none applied, each with `{"ok": false, "error": error}`, in one
    /// write job; answers that result.
    pub(super) async fn record_refused(
        &self,
        org: &str,
        lead: &str,
        channel: Channel,
        calls: Vec<ToolCallRequest>,
        error: &'static str,
    ) -> Result<Value> {
        let result = json!({"ok": false, "error": error});
        let (org, lead, shown) = (org.to_string(), lead.to_string(), result.clone());
        self.store
            .write(move |tx| {
                for call in &calls {
                    record(tx, &org, &lead, channel, call, &shown)?;
                }
                Ok(())
            })
            .await?;
        Ok(result)
    }
}

/// The call checked into a `Tool` (`providers::model::tools::parse_tool`), and
/// `add_tag`'s name refused, as a malformed argument, when it makes no tag id
/// (`records::tags::tag_id`).
fn parse(call: &ToolCallRequest, voice: bool, booking: bool) -> std::result::Result<Tool, String> {
    match assistant::parse_tool(call, voice, booking)? {
        Tool::AddTag { name } if tags::tag_id(&name).is_empty() => {
            Err("invalid argument: name (needs a letter or a digit)".into())
        }
        tool => Ok(tool),
    }
}

/// The calendar the lead's profile books on, and the zone its times are written in.
#[derive(Debug, Clone, Default)]
pub(super) struct Booking {
    calendar: String,
    /// The lead's time zone, else the organization's.
    zone: String,
    /// The calendar's CalDAV busy times (none for the built-in calendar).
    external: Vec<(i64, i64)>,
}

impl Booking {
    /// Booking on `calendar` for `lead` (in its zone, else the organization's).
    pub(super) fn on(calendar: &str, lead: &LeadRecord, org_zone: &str) -> Booking {
        Booking {
            calendar: calendar.to_string(),
            zone: crate::domain::contact::quiet_hours::zone_of(lead, org_zone).to_string(),
            external: Vec::new(),
        }
    }

    /// Up to 5 open times (on `day`, else from now), on a snapshot.
    fn times(
        &self,
        store: &crate::store::Store,
        org: &str,
        day: Option<chrono::NaiveDate>,
    ) -> Result<Vec<i64>> {
        // The built-in calendar's busy times are read here; CalDAV's came from its cache.
        meetings::assistant_times(
            &store.read()?,
            &Caller::system(org),
            &self.calendar,
            &self.zone,
            day,
            &self.external,
        )
    }

    /// Open times as the model is shown them: the words and the value to book.
    fn shown(&self, times: &[i64]) -> Value {
        Value::Array(
            times
                .iter()
                .map(|&t| {
                    json!({
                        "time": meetings::words(t, &self.zone),
                        "start": meetings::local_rfc3339(t, &self.zone),
                    })
                })
                .collect(),
        )
    }
}

impl Engine {
    /// The lead's profile's calendar, when it names one.
    fn booking_of(&self, org: &str, lead: &str) -> Result<Option<Booking>> {
        let read = self.store.read()?;
        let Some(record) = read.lead(org, lead)? else {
            return Ok(None);
        };
        let calendar = read
            .profile(org, &record.customer_profile)?
            .map(|p| p.calendar)
            .unwrap_or_default();
        if calendar.is_empty() {
            return Ok(None);
        }
        let org_zone = read.engine_settings(org)?.time_zone;
        let zone = crate::domain::contact::quiet_hours::zone_of(&record, &org_zone).to_string();
        Ok(Some(Booking {
            calendar,
            zone,
            external: Vec::new(),
        }))
    }
}

/// The booking tools: `find_times` answers `times` (read before the write); a booking or
/// a move at a time that is not open answers the open times instead and changes nothing.
fn apply_booking(
    tx: &mut WriteTx,
    caller: &Caller,
    lead: &str,
    tool: &Tool,
    (booking, times): (&Booking, &[i64]),
) -> Result<Value> {
    let taken = |error: &Error| matches!(error, Error::Conflict(m) if m == "Time not available");
    let refused_time = || {
        json!({
            "ok": false,
            "error": "Time not available",
            "openTimes": booking.shown(times),
        })
    };
    let done = |m: &MeetingRecord| {
        json!({
            "ok": true,
            "meetingId": m.id,
            "time": meetings::words(m.start, &booking.zone),
            "start": meetings::local_rfc3339(m.start, &booking.zone),
        })
    };
    let next = |tx: &WriteTx| -> Result<MeetingRecord> {
        meetings::next_booked(tx, &caller.org_id, lead)?
            .ok_or_else(|| Error::BadRequest("The lead has no booked meeting".into()))
    };
    Ok(match tool {
        Tool::FindTimes { .. } => json!({"ok": true, "times": booking.shown(times)}),
        Tool::BookMeeting { start } => {
            let input = BookInput {
                calendar: booking.calendar.clone(),
                start: *start,
            };
            match meetings::book(
                tx,
                caller,
                lead,
                &input,
                BookedBy::Assistant,
                &booking.external,
            ) {
                Ok(written) => done(&written.react(tx)?),
                Err(e) if taken(&e) => refused_time(),
                Err(e) => return Err(e),
            }
        }
        Tool::RescheduleMeeting { start } => {
            let meeting = next(tx)?;
            match meetings::reschedule(tx, caller, &meeting.id, *start, &booking.external) {
                Ok(written) => done(&written.react(tx)?),
                Err(e) if taken(&e) => refused_time(),
                Err(e) => return Err(e),
            }
        }
        Tool::CancelMeeting => {
            let meeting = next(tx)?;
            let canceled = meetings::cancel(tx, caller, &meeting.id).react(tx)?;
            json!({
                "ok": true,
                "meetingId": canceled.id,
                "canceled": meetings::words(canceled.start, &booking.zone),
            })
        }
        _ => json!({"ok": true}),
    })
}

/// Applies `tool` for `lead`: its result for the model and what it means for the
/// conversation. A refusal comes before any change (the domain functions check first),
/// so the caller may still record the call in the same job. `booking`: the lead's
/// calendar and the open times read for this call.
fn apply(
    tx: &mut WriteTx,
    caller: &Caller,
    lead: &str,
    channel: Channel,
    tool: &Tool,
    transfer_available: bool,
    booking: Option<(&Booking, &[i64])>,
) -> Result<(Value, Effect)> {
    let patch = |tx: &mut WriteTx, set: &dyn Fn(&mut LeadPatch) -> Result<()>| -> Result<()> {
        let mut patch = LeadPatch::default();
        set(&mut patch)?;
        leads::update(tx, caller, lead, patch).react(tx).map(|_| ())
    };
    match tool {
        Tool::MarkHot => patch(tx, &|p| {
            p.is_hot = Some(true);
            Ok(())
        })?,
        Tool::MarkQualified => patch(tx, &|p| {
            p.is_qualified = Some(true);
            Ok(())
        })?,
        Tool::UpdateSummary { summary } => patch(tx, &|p| p.set_text(LeadText::Summary, summary))?,
        Tool::AddTag { name } => {
            let tag = TagRecord {
                id: tags::tag_id(name),
                name: name.clone(),
                condition: String::new(),
            };
            subscriptions::add_tags(tx, caller, lead, vec![tag]).react(tx)?;
        }
        Tool::OptOut { channels } => {
            subscriptions::unsubscribe(tx, caller, lead, channels.as_deref()).react(tx)?;
            hold::settle_opted_out(tx, &caller.org_id, lead, None)?;
            return Ok((json!({"ok": true}), Effect::OptedOut));
        }
        Tool::Handoff { reason } => {
            handoff(tx, caller, lead, channel, reason)?;
            return Ok((json!({"ok": true}), Effect::HandedOff));
        }
        Tool::FindTimes { .. }
        | Tool::BookMeeting { .. }
        | Tool::RescheduleMeeting { .. }
        | Tool::CancelMeeting => {
            // Parsed only when the profile has a calendar.
            let booking =
                booking.ok_or_else(|| Error::BadRequest("The profile has no calendar".into()))?;
            return Ok((
                apply_booking(tx, caller, lead, tool, booking)?,
                Effect::Continue,
            ));
        }
        Tool::ScheduleCall { at } => {
            let record = leads::live_lead(tx, caller, lead)?;
            if record.phone.is_empty() {
                return Err(Error::BadRequest("Lead has no phone".into()));
            }
            let now = now_micros();
            if let Some(at) = *at {
                if at < now - PAST_GRACE_MICROS {
                    return Err(Error::BadRequest("at is in the past".into()));
                }
                if at > now + MAX_CALL_AHEAD_DAYS * 86_400 * 1_000_000 {
                    return Err(Error::BadRequest(format!(
                        "at is more than {MAX_CALL_AHEAD_DAYS} days ahead"
                    )));
                }
            }
            let wanted = at.unwrap_or_default().max(now);
            let when =
                chrono::DateTime::<Utc>::from_timestamp_micros(wanted).unwrap_or_else(Utc::now);
            match outside_quiet_hours(tx, &caller.org_id, &record, when)? {
                Some(end) => agenda::schedule_deferred(
                    tx,
                    &caller.org_id,
                    lead,
                    end.timestamp_micros(),
                    wanted,
                    JobKind::Call,
                )?,
                None => agenda::schedule(tx, &caller.org_id, lead, wanted, JobKind::Call)?,
            };
        }
        Tool::Transfer if channel != Channel::Voice => {
            return Err(Error::BadRequest("transfer needs a live call".into()));
        }
        Tool::Transfer if !transfer_available => {
            return Err(Error::BadRequest(
                "no transfer number is set for this call; keep talking".into(),
            ));
        }
        Tool::Transfer => return Ok((json!({"ok": true}), Effect::Transfer)),
    }
    Ok((json!({"ok": true}), Effect::Continue))
}

/// `handoff`: the assistant is switched off, the cadence stops (`handoff`), and a
/// `lead.handoff` webhook tells the team.
fn handoff(
    tx: &mut WriteTx,
    caller: &Caller,
    lead: &str,
    channel: Channel,
    reason: &str,
) -> Result<()> {
    let record = subscriptions::set_ai(tx, caller, lead, false).react(tx)?;
    enrolment::stop(tx, &caller.org_id, lead, StopReason::Handoff)?;
    crate::domain::conversation::handling::handed_off(tx, &caller.org_id, lead)?;
    let mut data = json!({
        "leadId": record.id,
        "phone": record.phone,
        "profile": record.customer_profile,
        "reason": reason,
        "channel": channel.as_str(),
    });
    if !record.external_lead_id.is_empty() {
        data["externalLeadId"] = json!(record.external_lead_id);
    }
    webhooks::emit(tx, &caller.org_id, WebhookEvent::LeadHandoff, data)
}

/// The `TOOL_CALL` event of `call`.
fn record(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    channel: Channel,
    call: &ToolCallRequest,
    result: &Value,
) -> Result<()> {
    let Some(record) = tx.lead(org, lead)? else {
        return Ok(());
    };
    let arguments = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ if call.arguments.trim().is_empty() => Value::Object(Map::new()),
        _ => Value::String(call.arguments.clone()),
    };
    let data = json!({
        "name": call.name,
        "arguments": arguments,
        "result": result,
        "channel": channel.as_str(),
    });
    // The model's ids repeat (across rounds and replies, some servers number them from
    // 0 each time): an id an earlier event holds gets a fresh one derived from it.
    let taken = |tx: &WriteTx, id: &str| -> Result<bool> {
        Ok(tx
            .event(EventKey {
                org,
                lead,
                kind: SystemEvent::ToolCall.as_str(),
                id,
            })?
            .is_some())
    };
    let mut id = call.id.clone();
    while taken(tx, &id)? {
        id = crate::ids::generate(&call.id);
    }
    events::record(
        tx,
        org,
        record,
        SystemEvent::ToolCall.as_str(),
        &id,
        data,
        |_| {},
    )
    .react(tx)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::model::tools::tests::call;

    #[test]
    fn add_tag_needs_a_name_that_makes_a_tag_id() {
        let err = |name: &str, args: &str| parse(&call(name, args), false, false).unwrap_err();
        // Moved here from `providers::model::tools` with the tag-id rule.
        assert!(err("add_tag", r#"{"name": " !? "}"#).starts_with("invalid argument: name"));
        assert_eq!(err("add_tag", "{}"), "missing argument: name");
        assert_eq!(
            parse(
                &call("add_tag", r#"{"name": "Solar Panels"}"#),
                false,
                false
            ),
            Ok(Tool::AddTag {
                name: "Solar Panels".into()
            })
        );
    }
}
