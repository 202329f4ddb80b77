//! Meeting reminders: a calendar's `reminders` (e.g. `24h`, `1h`) before a booked
//! meeting's start, each an agenda row (`JobKind::Reminder`) scheduled in the write that
//! books or moves the meeting ([`schedule`], through `engagement::reactions`).
//!
//! A row names the meeting and the start it reminds of; when it falls due,
//! `claims::claim_reminder` sends nothing if the meeting is no longer booked at that start
//! (moved: the move scheduled its own rows; canceled: none), if the start has passed,
//! or while the assistant is off for the lead (nothing automated is sent then).
//! A reminder due in quiet hours goes at the window's end if that is still before the
//! meeting, else not at all. It goes through the gate (informational outreach), by SMS
//! when the lead has a phone, else by email, marked `origin: "meeting"` with its
//! `meetingId`, so that a reply to it can be told (`attention::Attention::MeetingReply`).

use chrono::{DateTime, Utc};

use crate::channel::Channel;
use crate::domain::engagement::agenda;
use crate::error::Result;
use crate::store::calendars::{CalendarReader, MeetingRecord, MeetingStatus};
use crate::store::rows::{JobKind, LeadRecord};
use crate::store::WriteTx;
use crate::time::Micros;

/// The channel a reminder goes on for `lead`: SMS when it has a phone, else email (none
/// without either).
pub fn channel_for(lead: &LeadRecord) -> Option<Channel> {
    if !lead.phone.is_empty() {
        Some(Channel::Sms)
    } else if !lead.email.is_empty() {
        Some(Channel::Email)
    } else {
        None
    }
}

/// `start` as the lead reads it in `zone`: `Tue Dec 2, 3:00 PM CST` (UTC for an
/// unknown zone).
pub fn when(start: Micros, zone: &str) -> String {
    let at = DateTime::<Utc>::from_timestamp_micros(start).unwrap_or_default();
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => at
            .with_timezone(&tz)
            .format("%a %b %-d, %-I:%M %p %Z")
            .to_string(),
        Err(_) => at.format("%a %b %-d, %-I:%M %p UTC").to_string(),
    }
}

/// The reminder's text: `Reminder: your meeting with Acme Solar is Tue Dec 2, 3:00 PM
/// CST (Phone call). Reply R to reschedule or C to cancel.`
pub fn text(business: &str, meeting: &MeetingRecord) -> String {
    let place = if meeting.location.is_empty() {
        String::new()
    } else {
        format!(" ({})", meeting.location)
    };
    format!(
        "Reminder: your meeting with {business} is {}{place}. Reply R to reschedule or C to cancel.",
        when(meeting.start, &meeting.time_zone)
    )
}

/// Schedules the reminders of meeting `id` (booked or just moved) by its calendar's
/// `reminders`; a reminder whose time has already passed is not scheduled. Rows of an
/// earlier start stay, and do nothing when due.
pub fn schedule(tx: &mut WriteTx, org: &str, id: &str, now: Micros) -> Result<()> {
    let Some(meeting) = tx.meeting(org, id)? else {
        return Ok(());
    };
    if meeting.status != MeetingStatus::Booked {
        return Ok(());
    }
    let Some(calendar) = tx.calendar(org, &meeting.calendar)? else {
        return Ok(());
    };
    for before in &calendar.reminders {
        let Ok(before) = crate::duration::parse(before) else {
            continue;
        };
        let before = i64::try_from(before.as_micros()).unwrap_or(i64::MAX);
        let due = meeting.start.saturating_sub(before);
        if due <= now {
            continue;
        }
        agenda::schedule(
            tx,
            org,
            &meeting.lead_id,
            due,
            JobKind::Reminder {
                meeting_id: meeting.id.clone(),
                start: meeting.start,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reminder_reads_in_the_meetings_zone() {
        let start = crate::time::parse("2025-12-02T21:00:00Z").unwrap_or_default();
        let meeting = MeetingRecord {
            id: "mtg_1".into(),
            lead_id: "lead_1".into(),
            calendar: "sales".into(),
            start,
            end: start,
            time_zone: "America/Chicago".into(),
            status: MeetingStatus::Booked,
            booked_by: crate::store::calendars::BookedBy::Api,
            location: "Phone call".into(),
            calendar_sync: crate::store::calendars::CalendarSync::None,
            sync_error: String::new(),
            sequence: 0,
            created_at: 0,
            updated_at: 0,
            etag: String::new(),
            etag_collection: String::new(),
        };
        assert_eq!(
            text("Acme Solar", &meeting),
            "Reminder: your meeting with Acme Solar is Tue Dec 2, 3:00 PM CST (Phone call). Reply R to reschedule or C to cancel."
        );
        let nowhere = MeetingRecord {
            location: String::new(),
            ..meeting
        };
        assert!(text("Acme Solar", &nowhere).contains("3:00 PM CST. Reply R"));
    }
}
