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
use crate::time::now_micros;

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

/// What one write to the collection does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Writes the event (`create`: `If-None-Match: *`, the first version).
    Put { ics: String, create: bool },
    /// Deletes it (the meeting was canceled).
    Delete,
}

/// One owed write: to which collection, which file (`{meeting id}.ics`), what.
#[derive(Debug, Clone)]
pub struct Work {
    pub caldav: CaldavRecord,
    /// The event's file name without `.ics`: the meeting's id.
    pub name: String,
    pub action: Action,
}

/// Commits an attempt's answer (`Err`: the server's error in words), unless a newer
/// change of the meeting queued its row again meanwhile (that one is attempted next).
/// A failure is retried after `schedule[attempts]` (±20 %), then rests in `failed`.
pub fn record(
    tx: &mut WriteTx,
    due: &DueSync,
    outcome: std::result::Result<(), String>,
    schedule: &[Duration],
) -> Result<()> {
    if tx.calendar_sync_row(&due.org, &due.meeting)? != Some(due.row) {
        return Ok(());
    }
    let Some(old) = tx.meeting(&due.org, &due.meeting)? else {
        return tx.remove_calendar_sync(&due.org, &due.meeting);
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
        (Ok(()), true) => {
            meeting.calendar_sync = CalendarSync::Synced;
            meeting.sync_error.clear();
            tx.remove_calendar_sync(&due.org, &due.meeting)?;
        }
        (Err(error), true) => {
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
    if meeting.calendar_sync != old.calendar_sync || meeting.sync_error != old.sync_error {
        meeting.updated_at = tx.tick();
        tx.put_meeting(&due.org, &meeting, Some(&old))?;
    }
    Ok(())
}

/// ±20 %, so that meetings that failed together are not retried together.
fn jitter(delay: Duration) -> Duration {
    delay.mul_f64(rand::thread_rng().gen_range(0.8..1.2))
}
