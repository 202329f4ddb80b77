//! A meeting's `calendarSync`: what its calendar's CalDAV collection is owed and what the
//! last attempt said. A booking, move or cancellation on a calendar with `caldav` marks
//! the meeting `pending` and queues its write (`store::calendar_sync`) in the same
//! transaction; the sync worker (`engine::calendar_sync`) reads what is owed ([`Work`]), talks to the
//! server outside the writer, and commits the answer with [`record`]: `synced`, or
//! `failed` with the error in words, retried on the webhook schedule until it runs out.

use std::time::Duration;

use rand::Rng;

use crate::error::Result;
use crate::store::calendar_sync::{DueSync, SyncRow};
use crate::store::calendars::{
    CaldavRecord, CalendarReader, CalendarRecord, CalendarSync, MeetingRecord,
};
use crate::store::WriteTx;
use crate::time::{now_micros, Micros};

/// A new meeting's state: `pending` on a calendar with `caldav`, else `none`.
pub fn initial(calendar: &CalendarRecord) -> CalendarSync {
    if calendar.caldav.is_some() {
        CalendarSync::Pending
    } else {
        CalendarSync::None
    }
}

/// A changed meeting owes its calendar's collection a write: `pending`, no error yet.
pub fn mark_pending(calendar: &CalendarRecord, meeting: &mut MeetingRecord) {
    if calendar.caldav.is_some() {
        meeting.calendar_sync = CalendarSync::Pending;
        meeting.sync_error.clear();
    }
}

/// Queues the meeting's write (due now), when its calendar has `caldav`.
pub fn queue(
    tx: &mut WriteTx,
    org: &str,
    calendar: &CalendarRecord,
    meeting: &MeetingRecord,
) -> Result<()> {
    if calendar.caldav.is_some() {
        tx.queue_calendar_sync(org, &meeting.id, meeting.updated_at)?;
    }
    Ok(())
}

/// What one write to the collection does. `etag` is the event's as engaged last wrote
/// or read it (empty: none known): sent as `If-Match`, so that a change the owner made
/// in the calendar meanwhile is read and kept, never overwritten.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Writes the event (`create`: `If-None-Match: *`, the first version) at
    /// `sequence`.
    Put {
        ics: String,
        create: bool,
        sequence: u32,
        etag: String,
    },
    /// Deletes it (the meeting was canceled).
    Delete { etag: String },
}

/// What the owner's CalDAV calendar holds for a meeting's event when it is not what
/// engaged last wrote (its `ETag` changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerVersion {
    /// The owner deleted the event.
    Deleted,
    /// The event as it is now: its times, `SEQUENCE` and `ETag`.
    Held {
        start: Micros,
        end: Micros,
        sequence: u32,
        etag: String,
    },
}

/// What an attempt found.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Written (with the event's new `ETag` when the server gave one) or deleted.
    Done { etag: Option<String> },
    /// The server's error in words: retried.
    Failed(String),
    /// The owner changed the event in the calendar since engaged wrote it: their
    /// version is taken in (`meetings::take_owner_version`).
    Changed(OwnerVersion),
}

/// One owed write: to which collection, which file (`{meeting id}.ics`), what.
#[derive(Debug, Clone)]
pub struct Work {
    pub caldav: CaldavRecord,
    /// The collection's identity (`CalDav::identity`): what a new `ETag` is of.
    pub collection: String,
    /// The event's file name without `.ics`: the meeting's id.
    pub name: String,
    pub action: Action,
}

/// Commits an attempt's answer, unless a newer change of the meeting queued its row
/// again meanwhile (that one is attempted next). A failure is retried after
/// `schedule[attempts]` (±20 %), then rests in `failed`. A change the owner made in the
/// calendar clears the row and is answered, with the meeting as it stands, for the
/// caller to take in within this transaction (`meetings::take_owner_version`).
pub fn record(
    tx: &mut WriteTx,
    due: &DueSync,
    outcome: Outcome,
    collection: &str,
    schedule: &[Duration],
) -> Result<Option<(MeetingRecord, OwnerVersion)>> {
    if tx.calendar_sync_row(&due.org, &due.meeting)? != Some(due.row) {
        // A newer change is owed; the ETag of what this attempt wrote is still the
        // event's, and that write's `If-Match`.
        if let Outcome::Done { etag } = &outcome {
            if let Some(old) = tx.meeting(&due.org, &due.meeting)? {
                let etag = etag.clone().unwrap_or_default();
                if old.etag != etag {
                    let mut meeting = old.clone();
                    meeting.etag_collection = collection.to_string();
                    meeting.etag = etag;
                    meeting.updated_at = tx.tick();
                    tx.put_meeting(&due.org, &meeting, Some(&old))?;
                }
            }
        }
        return Ok(None);
    }
    let Some(old) = tx.meeting(&due.org, &due.meeting)? else {
        tx.remove_calendar_sync(&due.org, &due.meeting)?;
        return Ok(None);
    };
    let has_caldav = tx
        .calendar(&due.org, &old.calendar)?
        .is_some_and(|c| c.caldav.is_some());
    let mut meeting = old.clone();
    match (&outcome, has_caldav) {
        (_, false) => {
            meeting.calendar_sync = CalendarSync::None;
            meeting.sync_error.clear();
            tx.remove_calendar_sync(&due.org, &due.meeting)?;
        }
        (Outcome::Changed(version), true) => {
            tx.remove_calendar_sync(&due.org, &due.meeting)?;
            return Ok(Some((old, version.clone())));
        }
        (Outcome::Done { etag }, true) => {
            meeting.calendar_sync = CalendarSync::Synced;
            meeting.sync_error.clear();
            meeting.etag = etag.clone().unwrap_or_default();
            meeting.etag_collection = collection.to_string();
            tx.remove_calendar_sync(&due.org, &due.meeting)?;
        }
        (Outcome::Failed(error), true) => {
            meeting.calendar_sync = CalendarSync::Failed;
            meeting.sync_error = error.chars().take(300).collect();
            match schedule.get(due.row.attempts as usize) {
                Some(delay) => {
                    let row = SyncRow {
                        due: now_micros() + jitter(*delay).as_micros() as i64,
                        attempts: due.row.attempts + 1,
                        version: due.row.version,
                    };
                    tx.put_calendar_sync(&due.org, &due.meeting, row)?;
                }
                None => tx.remove_calendar_sync(&due.org, &due.meeting)?,
            }
        }
    }
    if meeting.calendar_sync != old.calendar_sync
        || meeting.sync_error != old.sync_error
        || meeting.etag != old.etag
        || meeting.etag_collection != old.etag_collection
    {
        meeting.updated_at = tx.tick();
        tx.put_meeting(&due.org, &meeting, Some(&old))?;
    }
    Ok(None)
}

/// ±20 %, so that meetings that failed together are not retried together.
fn jitter(delay: Duration) -> Duration {
    delay.mul_f64(rand::thread_rng().gen_range(0.8..1.2))
}
