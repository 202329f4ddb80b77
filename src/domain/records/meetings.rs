//! Meetings: booking, moving, cancelling and closing them (`completed`, `no_show`), the
//! open times of a calendar, the incremental listing, the view and the calendar's feed.
//!
//! **The slot is re-checked inside the write transaction** that books or moves a
//! meeting ([`book`], [`reschedule`]): the calendar's booked meetings are read in the
//! writer's transaction and `availability::is_open` decides, so of any number of
//! concurrent bookings of one slot exactly one commits and the others answer 409
//! `Time not available`. Each booking, move, cancellation and close records a `MEETING`
//! event on the lead (which carries `nextMeetingAt`), queues its webhook, and a booking
//! owes engagement's reaction: the lead's cadence stops (`meeting_booked`); a booking
//! and a move owe the meeting's reminders (a cancellation's rows find it canceled); each
//! booking, move and cancellation owes the lead's confirmation ([`confirmation_text`]).
//!
//! External busy times (a CalDAV collection's, read outside the writer) come in as a
//! parameter: empty for the built-in calendar.

use serde_json::{json, Map, Value};

use crate::cursor::CursorKey;
use crate::domain::records::events;
use crate::domain::records::leads;
use crate::domain::records::listing::{paginate, Cursor, Page};
use crate::domain::records::meeting_sync::{self, OwnerVersion};
use crate::domain::records::written::{Reaction, Written};
use crate::domain::settings::availability::{self, Window};
use crate::domain::settings::calendars;
use crate::domain::settings::templates;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::ics::{self, MeetingIcs, Person};
use crate::store::calendars::{
    BookedBy, CalendarReader, CalendarRecord, CalendarSync, MeetingRecord, MeetingStatus,
};
use crate::store::rows::{CalendarChange, MeetingChange};
use crate::store::{ReadTx, Reader, Start, WriteTx};
use crate::time::{self, Micros};
use crate::webhooks::{self, WebhookEvent};

/// The event type of a lead's meeting changes.
pub const MEETING_EVENT: &str = "MEETING";
/// At most this many open times in one answer.
pub const MAX_TIMES: usize = 500;
/// The feed holds meetings from this many days back.
pub const FEED_DAYS_BACK: i64 = 30;
/// At most this many meetings in a feed.
pub const FEED_MAX: usize = 5_000;

const MINUTE: Micros = 60_000_000;
/// The longest meeting (`meetingMinutes` ≤ 480) and buffer (≤ 240): how far before a
/// slot a booked meeting can start and still touch it.
const REACH: Micros = (480 + 240) * MINUTE;

/// `POST /v1/leads/{id}/meetings`: the calendar and the start.
#[derive(Debug, Clone, PartialEq)]
pub struct BookInput {
    pub calendar: String,
    pub start: Micros,
}

fn start_of(body: &Map<String, Value>) -> Result<Micros> {
    match body.get("start") {
        Some(Value::String(text)) => time::parse(text).ok_or_else(|| Error::invalid_field("start")),
        None | Some(Value::Null) => Err(Error::field("start", "Missing field: start")),
        Some(_) => Err(Error::invalid_field("start")),
    }
}

fn refuse_unknown(body: &Map<String, Value>, known: &[&str]) -> Result<()> {
    match body.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(Error::unknown_field(unknown)),
        None => Ok(()),
    }
}

impl BookInput {
    pub fn from_json(body: &Map<String, Value>) -> Result<BookInput> {
        refuse_unknown(body, &["calendar", "start"])?;
        let calendar = match body.get("calendar") {
            Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_string(),
            None | Some(Value::Null) => {
                return Err(Error::field("calendar", "Missing field: calendar"))
            }
            Some(_) => return Err(Error::invalid_field("calendar")),
        };
        Ok(BookInput {
            calendar,
            start: start_of(body)?,
        })
    }
}

/// `POST /v1/meetings/{id}/reschedule`: the new start.
pub fn reschedule_input(body: &Map<String, Value>) -> Result<Micros> {
    refuse_unknown(body, &["start"])?;
    start_of(body)
}

/// `PATCH /v1/meetings/{id}`: `completed` or `no_show`.
pub fn status_input(body: &Map<String, Value>) -> Result<MeetingStatus> {
    refuse_unknown(body, &["status"])?;
    match body
        .get("status")
        .and_then(Value::as_str)
        .and_then(MeetingStatus::parse)
    {
        Some(status @ (MeetingStatus::Completed | MeetingStatus::NoShow)) => Ok(status),
        _ => Err(Error::field(
            "status",
            "status must be \"completed\" or \"no_show\"",
        )),
    }
}

pub fn not_found() -> Error {
    Error::NotFound("Meeting not found".into())
}

fn time_not_available() -> Error {
    Error::Conflict("Time not available".into())
}

/// Whether `start` is an open slot of `calendar` now, in this write transaction: the
/// calendar's booked meetings (but `moving`, the meeting being moved) and `external`.
fn check_slot(
    tx: &WriteTx,
    org: &str,
    calendar: &CalendarRecord,
    start: Micros,
    moving: Option<&str>,
    external: &[(Micros, Micros)],
) -> Result<()> {
    let holidays = calendars::holidays(tx, org)?;
    let rules = calendars::rules(calendar, &holidays)?;
    let length = i64::from(calendar.meeting_minutes) * MINUTE;
    let mut busy = tx.booked_meetings_except(
        org,
        &calendar.name,
        start.saturating_sub(REACH),
        start.saturating_add(length + REACH),
        moving,
    )?;
    busy.extend_from_slice(external);
    if availability::is_open(&rules, time::now_micros(), start, &busy) {
        Ok(())
    } else {
        Err(time_not_available())
    }
}

/// The lead's timezone, else the organization's.
fn zone_of(tx: &WriteTx, org: &str, lead_zone: &str) -> Result<String> {
    if !lead_zone.is_empty() {
        return Ok(lead_zone.to_string());
    }
    Ok(tx.engine_settings(org)?.time_zone)
}

/// The wire `bookedBy`.
fn booked_by_view(by: &BookedBy) -> Value {
    match by {
        BookedBy::Assistant => json!("assistant"),
        BookedBy::Api => json!("api"),
        BookedBy::User { user_id, name } => json!({"userId": user_id, "name": name}),
    }
}

/// What the webhooks and the `MEETING` event carry.
fn payload(m: &MeetingRecord) -> Value {
    json!({
        "meetingId": m.id,
        "leadId": m.lead_id,
        "calendar": m.calendar,
        "start": time::format(m.start),
        "end": time::format(m.end),
        "status": m.status.as_str(),
        "bookedBy": booked_by_view(&m.booked_by),
    })
}

/// Records the change on the lead (the `MEETING` event and `nextMeetingAt`) and queues
/// the webhook, in this transaction.
fn record_change(
    tx: &mut WriteTx,
    org: &str,
    meeting: &MeetingRecord,
    action: &str,
    webhook: Option<WebhookEvent>,
) -> Result<Written<()>> {
    let lead = tx
        .lead(org, &meeting.lead_id)?
        .ok_or_else(|| Error::lead_not_found(&meeting.lead_id))?;
    let next = tx.next_meeting(org, &meeting.lead_id, time::now_micros())?;
    let mut data = payload(meeting);
    data["action"] = json!(action);
    let id = crate::ids::generate("mev");
    let written = events::record(tx, org, lead, MEETING_EVENT, &id, data, |l| {
        l.next_meeting_at = next;
    })?;
    if let Some(event) = webhook {
        webhooks::emit(tx, org, event, payload(meeting))?;
    }
    Ok(written.map(|_| ()))
}

/// The lead's confirmation of `change`, owed by every booking, move and cancellation.
fn confirmation(org: &str, meeting: &MeetingRecord, change: MeetingChange) -> Reaction {
    Reaction::MeetingChanged {
        org: org.to_string(),
        lead: meeting.lead_id.clone(),
        meeting: meeting.id.clone(),
        change,
    }
}

/// Books `input` for the lead: 409 `Time not available` unless the slot is open in this
/// transaction. Owes the cadence's stop.
pub fn book(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    input: &BookInput,
    booked_by: BookedBy,
    external: &[(Micros, Micros)],
) -> Result<Written<MeetingRecord>> {
    let org = caller.org_id.as_str();
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let calendar = tx
        .calendar(org, &input.calendar)?
        .ok_or_else(|| Error::field("calendar", "Calendar not found"))?;
    check_slot(tx, org, &calendar, input.start, None, external)?;
    let now = tx.tick();
    let meeting = MeetingRecord {
        id: crate::ids::generate("mtg"),
        lead_id: lead.id.clone(),
        calendar: calendar.name.clone(),
        start: input.start,
        end: input.start + i64::from(calendar.meeting_minutes) * MINUTE,
        time_zone: zone_of(tx, org, &lead.time_zone)?,
        status: MeetingStatus::Booked,
        booked_by,
        location: calendar.location.clone(),
        calendar_sync: meeting_sync::initial(&calendar),
        sync_error: String::new(),
        sequence: 0,
        created_at: now,
        updated_at: now,
        etag: String::new(),
        etag_collection: String::new(),
    };
    tx.put_meeting(org, &meeting, None)?;
    meeting_sync::queue(tx, org, &calendar, &meeting)?;
    let written = record_change(
        tx,
        org,
        &meeting,
        "booked",
        Some(WebhookEvent::MeetingBooked),
    )?;
    Ok(written
        .and_owing(Reaction::MeetingBooked {
            org: org.to_string(),
            lead: lead.id,
        })
        .and_owing(Reaction::MeetingTimed {
            org: org.to_string(),
            meeting: meeting.id.clone(),
        })
        .and_owing(confirmation(org, &meeting, MeetingChange::Booked))
        .map(|()| meeting))
}

fn booked_meeting(tx: &WriteTx, org: &str, id: &str) -> Result<MeetingRecord> {
    let meeting = tx.meeting(org, id)?.ok_or_else(not_found)?;
    if meeting.status != MeetingStatus::Booked {
        return Err(Error::Conflict(format!(
            "Meeting is {}, not booked",
            meeting.status.as_str()
        )));
    }
    Ok(meeting)
}

/// Moves a booked meeting to `start` (re-checked like a booking, the meeting itself
/// left out of the busy times).
pub fn reschedule(
    tx: &mut WriteTx,
    caller: &Caller,
    id: &str,
    start: Micros,
    external: &[(Micros, Micros)],
) -> Result<Written<MeetingRecord>> {
    let org = caller.org_id.as_str();
    let old = booked_meeting(tx, org, id)?;
    let calendar = tx
        .calendar(org, &old.calendar)?
        .ok_or_else(calendars::not_found)?;
    // The collection's copy of this meeting is not another meeting in the way.
    let external: Vec<(Micros, Micros)> = external
        .iter()
        .filter(|&&busy| busy != (old.start, old.end))
        .copied()
        .collect();
    check_slot(tx, org, &calendar, start, Some(id), &external)?;
    let mut meeting = old.clone();
    meeting.start = start;
    meeting.end = start + i64::from(calendar.meeting_minutes) * MINUTE;
    meeting.sequence += 1;
    meeting.updated_at = tx.tick();
    meeting_sync::mark_pending(&calendar, &mut meeting);
    tx.put_meeting(org, &meeting, Some(&old))?;
    meeting_sync::queue(tx, org, &calendar, &meeting)?;
    let written = record_change(
        tx,
        org,
        &meeting,
        "rescheduled",
        Some(WebhookEvent::MeetingRescheduled),
    )?;
    Ok(written
        .and_owing(Reaction::MeetingTimed {
            org: org.to_string(),
            meeting: meeting.id.clone(),
        })
        .and_owing(confirmation(org, &meeting, MeetingChange::Moved))
        .map(|()| meeting))
}

/// Cancels a booked meeting.
pub fn cancel(tx: &mut WriteTx, caller: &Caller, id: &str) -> Result<Written<MeetingRecord>> {
    let org = caller.org_id.as_str();
    let old = booked_meeting(tx, org, id)?;
    let mut meeting = old.clone();
    meeting.status = MeetingStatus::Canceled;
    meeting.sequence += 1;
    meeting.updated_at = tx.tick();
    let calendar = tx.calendar(org, &meeting.calendar)?;
    if let Some(calendar) = &calendar {
        meeting_sync::mark_pending(calendar, &mut meeting);
    }
    tx.put_meeting(org, &meeting, Some(&old))?;
    if let Some(calendar) = &calendar {
        meeting_sync::queue(tx, org, calendar, &meeting)?;
    }
    let written = record_change(
        tx,
        org,
        &meeting,
        "canceled",
        Some(WebhookEvent::MeetingCanceled),
    )?;
    Ok(written
        .and_owing(confirmation(org, &meeting, MeetingChange::Canceled))
        .map(|()| meeting))
}

/// What the `MEETING` event says of a change made in the owner's calendar.
pub const CHANGED_IN_CALENDAR: &str = "changed in the owner's calendar";

/// Takes in the owner's change of meeting `old` (the owner's version wins): a deleted
/// event cancels a booked meeting, a moved one moves it (no slot check: the owner chose
/// the time), another edit keeps the times; each with a `MEETING` event whose `note` is
/// [`CHANGED_IN_CALENDAR`] (`source: "calendar"`), the webhook and the lead's
/// confirmation when the time or status changed. `SEQUENCE` never goes down; the
/// meeting ends `synced` with the event's `ETag`.
pub fn take_owner_version(
    tx: &mut WriteTx,
    org: &str,
    old: &MeetingRecord,
    version: &OwnerVersion,
    collection: &str,
) -> Result<Written<MeetingRecord>> {
    let mut meeting = old.clone();
    meeting.etag_collection = collection.to_string();
    meeting.calendar_sync = CalendarSync::Synced;
    meeting.sync_error.clear();
    let (action, webhook, change) = match version {
        OwnerVersion::Deleted if old.status == MeetingStatus::Booked => {
            meeting.status = MeetingStatus::Canceled;
            meeting.sequence += 1;
            meeting.etag.clear();
            (
                "canceled",
                Some(WebhookEvent::MeetingCanceled),
                Some(MeetingChange::Canceled),
            )
        }
        OwnerVersion::Deleted => {
            meeting.etag.clear();
            ("changed", None, None)
        }
        OwnerVersion::Held {
            start,
            end,
            sequence,
            etag,
        } => {
            meeting.sequence = meeting.sequence.max(*sequence);
            meeting.etag = etag.clone();
            let moved = old.status == MeetingStatus::Booked
                && (*start, *end) != (old.start, old.end)
                && start < end;
            if moved {
                meeting.start = *start;
                meeting.end = *end;
                (
                    "rescheduled",
                    Some(WebhookEvent::MeetingRescheduled),
                    Some(MeetingChange::Moved),
                )
            } else {
                ("changed", None, None)
            }
        }
    };
    meeting.updated_at = tx.tick();
    tx.put_meeting(org, &meeting, Some(old))?;
    // A person looks when the lead's meeting moved or went, or when the owner's
    // version overrode a change engaged had not yet written (the lead's own request).
    let overrode = old.calendar_sync == CalendarSync::Pending
        && (meeting.start, meeting.end, meeting.status) != (old.start, old.end, old.status);
    if change.is_some() || overrode {
        let mut handling = tx.handling(org, &meeting.lead_id)?;
        handling.calendar_change = Some(CalendarChange {
            meeting_id: meeting.id.clone(),
            at: time::now_micros(),
            overrode,
        });
        tx.put_handling(org, &meeting.lead_id, &handling)?;
    }
    let lead = tx
        .lead(org, &meeting.lead_id)?
        .ok_or_else(|| Error::lead_not_found(&meeting.lead_id))?;
    let next = tx.next_meeting(org, &meeting.lead_id, time::now_micros())?;
    let mut data = payload(&meeting);
    data["action"] = json!(action);
    data["source"] = json!("calendar");
    data["note"] = json!(CHANGED_IN_CALENDAR);
    let id = crate::ids::generate("mev");
    let written = events::record(tx, org, lead, MEETING_EVENT, &id, data, |l| {
        l.next_meeting_at = next;
    })?;
    if let Some(event) = webhook {
        webhooks::emit(tx, org, event, payload(&meeting))?;
    }
    let mut written = written.map(|_| ());
    if let Some(change) = change {
        if change == MeetingChange::Moved {
            written = written.and_owing(Reaction::MeetingTimed {
                org: org.to_string(),
                meeting: meeting.id.clone(),
            });
        }
        written = written.and_owing(confirmation(org, &meeting, change));
    }
    Ok(written.map(|()| meeting))
}

/// Closes a meeting as `completed` or `no_show` (a booked one, or one closed before),
/// once it has started (409 before).
pub fn set_status(
    tx: &mut WriteTx,
    caller: &Caller,
    id: &str,
    status: MeetingStatus,
) -> Result<Written<MeetingRecord>> {
    let org = caller.org_id.as_str();
    let old = tx.meeting(org, id)?.ok_or_else(not_found)?;
    if old.status == MeetingStatus::Canceled {
        return Err(Error::Conflict("Meeting is canceled".into()));
    }
    if old.status == status {
        return Ok(Written::owing_nothing(old));
    }
    // A meeting is kept or missed once it has begun, not before.
    if old.start > crate::time::now_micros() {
        return Err(Error::Conflict(format!(
            "The meeting has not started yet: it can be marked {} from {}",
            if status == MeetingStatus::NoShow {
                "a no-show"
            } else {
                "completed"
            },
            crate::time::format(old.start)
        )));
    }
    let mut meeting = old.clone();
    meeting.status = status;
    meeting.updated_at = tx.tick();
    tx.put_meeting(org, &meeting, Some(&old))?;
    let written = record_change(tx, org, &meeting, status.as_str(), None)?;
    Ok(written.map(|()| meeting))
}

pub fn find(read: &ReadTx, caller: &Caller, id: &str) -> Result<MeetingRecord> {
    read.meeting(&caller.org_id, id)?.ok_or_else(not_found)
}

/// The wire shape of a meeting.
pub fn view(m: &MeetingRecord) -> Value {
    json!({
        "id": m.id,
        "leadId": m.lead_id,
        "calendar": m.calendar,
        "start": time::format(m.start),
        "end": time::format(m.end),
        "timeZone": m.time_zone,
        "status": m.status.as_str(),
        "bookedBy": booked_by_view(&m.booked_by),
        "location": m.location,
        "calendarSync": m.calendar_sync.as_str(),
        "syncError": (!m.sync_error.is_empty()).then_some(m.sync_error.as_str()),
        "createdAt": time::format(m.created_at),
        "updatedAt": time::format(m.updated_at),
    })
}

/// `GET /v1/meetings`: its filters.
#[derive(Debug, Clone, Default)]
pub struct MeetingQuery {
    pub since: Option<Micros>,
    pub calendar: Option<String>,
    pub status: Option<MeetingStatus>,
    pub limit: usize,
    pub next_token: Option<String>,
}

/// `GET /v1/meetings`: `updatedAt` ascending from `since` (inclusive), keyset pages
/// bound to the filters, `nextToken` null on the last page.
pub fn list(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    q: &MeetingQuery,
) -> Result<Page<MeetingRecord>> {
    let since = q.since.map(time::format).unwrap_or_default();
    let calendar = q.calendar.clone().unwrap_or_default();
    let status = q.status.map_or("", MeetingStatus::as_str);
    let query = [
        "meetings",
        caller.org_id.as_str(),
        &since,
        &calendar,
        status,
    ];
    let from = match &q.next_token {
        Some(token) => Start::After(key.open::<(Micros, String)>(&query, token)?),
        None => Start::AtOrAfter((q.since.unwrap_or(i64::MIN), String::new())),
    };
    let wanted = |m: &MeetingRecord| {
        q.calendar.as_ref().is_none_or(|c| &m.calendar == c)
            && q.status.is_none_or(|s| m.status == s)
    };
    let position = |last: &MeetingRecord| (last.updated_at, last.id.clone());
    let sealed = Cursor {
        key,
        query: &query,
        position,
    };
    paginate(
        q.limit,
        |visit| read.scan_meetings(&caller.org_id, from, visit),
        wanted,
        sealed,
    )
}

/// `GET /v1/calendars/{name}/times`: the open slots in [`from`, `to`) (defaults: now and
/// `daysAhead` on), at most [`MAX_TIMES`]; `external` the calendar's other busy times.
pub fn open_times(
    read: &ReadTx,
    caller: &Caller,
    name: &str,
    from: Option<Micros>,
    to: Option<Micros>,
    external: &[(Micros, Micros)],
) -> Result<(CalendarRecord, Vec<Micros>)> {
    let org = caller.org_id.as_str();
    let calendar = calendars::find(read, org, name)?;
    let holidays = calendars::holidays(read, org)?;
    let rules = calendars::rules(&calendar, &holidays)?;
    let now = time::now_micros();
    let (earliest, latest) = rules.bounds(now);
    let from = from.unwrap_or(earliest).max(earliest);
    let to = to.unwrap_or(latest).min(latest);
    if from > to {
        return Ok((calendar, Vec::new()));
    }
    let length = i64::from(calendar.meeting_minutes) * MINUTE;
    let mut busy = read.booked_meetings(
        org,
        name,
        from.saturating_sub(REACH),
        to.saturating_add(length + REACH),
    )?;
    busy.extend_from_slice(external);
    let window = Window {
        now,
        from,
        to,
        max: MAX_TIMES,
    };
    let times = availability::open_times(&rules, window, &busy);
    Ok((calendar, times))
}

/// `GET /v1/calendars/{name}/feed.ics?token=`: the calendar's booked meetings from
/// [`FEED_DAYS_BACK`] days ago to `daysAhead` on, as iCalendar (404 for a wrong token).
pub fn feed(read: &ReadTx, name: &str, token: &str) -> Result<String> {
    let (org, calendar) = calendars::by_feed_token(read, name, token)?;
    let now = time::now_micros();
    let from = now - FEED_DAYS_BACK * 24 * 60 * MINUTE;
    let to = now + i64::from(calendar.days_ahead) * 24 * 60 * MINUTE;
    let business = crate::domain::settings::org::business_name(read, &org)?;
    let meetings = read.booked_meeting_records(&org, name, from, to, FEED_MAX)?;
    let sender = invitation_sender(read, &org)?;
    let mut events = Vec::with_capacity(meetings.len());
    for m in &meetings {
        let lead = read.lead(&org, &m.lead_id)?.unwrap_or_default();
        events.push(document(&calendar, m, &lead, &business, sender.as_ref()));
    }
    Ok(ics::feed(&calendar.name, &events))
}

/// The address the organization's invitations are sent from (its SMTP `from`, name
/// and address), if email goes through SMTP.
pub fn invitation_sender(read: &impl Reader, org: &str) -> Result<Option<Person>> {
    let settings = read.engine_settings(org)?;
    let crate::store::rows::ProviderSettings::Smtp(smtp) = &settings.email else {
        return Ok(None);
    };
    Ok(smtp
        .from
        .parse::<lettre::message::Mailbox>()
        .ok()
        .map(|mailbox| Person {
            name: mailbox.name.unwrap_or_default(),
            email: mailbox.email.to_string(),
        }))
}

/// A meeting as an iCalendar event: its calendar's title for the lead, the lead as
/// attendee when it has an email. The organizer is the calendar's owner, else `sender`
/// (the organization's sender, [`invitation_sender`]); `SENT-BY` the sender when it is
/// not the organizer. The attendee is marked `SCHEDULE-AGENT=CLIENT` unless the
/// calendar lets its CalDAV server send the invitations.
pub fn document(
    calendar: &CalendarRecord,
    m: &MeetingRecord,
    lead: &crate::store::rows::LeadRecord,
    business: &str,
    sender: Option<&Person>,
) -> MeetingIcs {
    let summary = if calendar.title.is_empty() {
        format!("Meeting with {}", lead.display_name())
    } else {
        templates::render(&calendar.title, lead, business)
    };
    let organizer = if calendar.owner_email.is_empty() {
        sender.cloned()
    } else {
        Some(Person {
            name: calendar.owner_name.clone(),
            email: calendar.owner_email.clone(),
        })
    };
    let sent_by = sender
        .filter(|s| {
            organizer
                .as_ref()
                .is_some_and(|o| !o.email.eq_ignore_ascii_case(&s.email))
        })
        .map(|s| s.email.clone());
    let attendees = if lead.email.is_empty() {
        Vec::new()
    } else {
        vec![Person {
            name: lead.display_name(),
            email: lead.email.clone(),
        }]
    };
    MeetingIcs {
        uid: format!("{}@engaged", m.id),
        start: m.start,
        end: m.end,
        // One line, cleaned: it is also an email's subject.
        summary: crate::carrier_text::line(&summary),
        location: m.location.clone(),
        description: format!("Lead: {} ({})", lead.display_name(), m.lead_id),
        canceled: m.status == MeetingStatus::Canceled,
        sequence: m.sequence,
        stamp: m.updated_at,
        organizer,
        sent_by,
        attendees,
        schedule_agent_client: !calendar.server_schedules,
    }
}

/// The assistant's `find_times` answers at most this many open times.
pub const ASSISTANT_TIMES: usize = 5;

/// `zone` as a time zone, UTC when it is none.
fn tz_of(zone: &str) -> chrono_tz::Tz {
    zone.parse().unwrap_or(chrono_tz::UTC)
}

/// A meeting time as a person reads it in `zone`: `Tue Dec 2, 3:00 PM CST`.
pub fn words(t: Micros, zone: &str) -> String {
    let tz = tz_of(zone);
    chrono::DateTime::from_timestamp_micros(t)
        .unwrap_or_default()
        .with_timezone(&tz)
        .format("%a %b %-d, %-I:%M %p %Z")
        .to_string()
}

/// A meeting time as RFC 3339 with `zone`'s offset (`2025-12-02T15:00:00-06:00`).
pub fn local_rfc3339(t: Micros, zone: &str) -> String {
    let tz = tz_of(zone);
    chrono::DateTime::from_timestamp_micros(t)
        .unwrap_or_default()
        .with_timezone(&tz)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// The assistant's `find_times`: up to [`ASSISTANT_TIMES`] open times of `calendar`, on
/// `day` in `zone` (the lead's) or from now.
pub fn assistant_times(
    read: &ReadTx,
    caller: &Caller,
    calendar: &str,
    zone: &str,
    day: Option<chrono::NaiveDate>,
    external: &[(Micros, Micros)],
) -> Result<Vec<Micros>> {
    use chrono::TimeZone;
    let (from, to) = match day {
        None => (None, None),
        Some(day) => {
            let tz = tz_of(zone);
            let start_of = |d: chrono::NaiveDate| {
                tz.from_local_datetime(&d.and_time(chrono::NaiveTime::MIN))
                    .earliest()
                    .map(|t| t.timestamp_micros())
            };
            let next = day.succ_opt().unwrap_or(day);
            (start_of(day), start_of(next))
        }
    };
    if day.is_some() && (from.is_none() || to.is_none()) {
        return Ok(Vec::new());
    }
    let (_, mut times) = open_times(read, caller, calendar, from, to, external)?;
    times.truncate(ASSISTANT_TIMES);
    Ok(times)
}

/// The lead's next booked meeting (starting now or later).
pub fn next_booked(tx: &WriteTx, org: &str, lead: &str) -> Result<Option<MeetingRecord>> {
    tx.next_booked_meeting(org, lead, time::now_micros())
}

/// The lead's confirmation of `change` of the meeting at `start`, in `zone`:
/// `You're booked: Tue Dec 2, 3:00 PM CST with Acme Solar (Phone call). Reply R to
/// reschedule or C to cancel.`, `Your meeting moved to …`, `Your meeting on … is canceled.`
pub fn confirmation_text(
    change: MeetingChange,
    start: Micros,
    zone: &str,
    business: &str,
    location: &str,
) -> String {
    let when = words(start, zone);
    let with = match (business.is_empty(), location.is_empty()) {
        (false, false) => format!(" with {business} ({location})"),
        (false, true) => format!(" with {business}"),
        (true, false) => format!(" ({location})"),
        (true, true) => String::new(),
    };
    match change {
        MeetingChange::Booked => {
            format!("You're booked: {when}{with}. Reply R to reschedule or C to cancel.")
        }
        MeetingChange::Moved => {
            format!("Your meeting moved to {when}{with}. Reply R to reschedule or C to cancel.")
        }
        MeetingChange::Canceled => format!("Your meeting on {when} is canceled."),
    }
}
