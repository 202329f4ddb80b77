//! Calendars and meetings: their records and typed access (`calendars`, `meetings` and
//! the meetings' three indexes).
//!
//! A meeting's index rows move in `put_meeting`, with its record: `meetings_by_start`
//! and `meetings_by_lead` hold booked meetings only (the calendar's busy times, the
//! lead's next meeting), `meetings_by_updated` every meeting (the listing).

use std::ops::Bound;

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::read::{Flow, ReadTx, Start};
use super::reader::Reader;
use super::rows::ProfileRecord;
use super::tables::{
    CALENDARS, MEETINGS, MEETINGS_BY_LEAD, MEETINGS_BY_START, MEETINGS_BY_UPDATED, PROFILES,
};
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

/// A calendar: weekly hours in its zone and the rules of its meetings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CalendarRecord {
    pub name: String,
    /// IANA zone name.
    pub time_zone: String,
    /// Monday first: each day's intervals as minutes after local midnight (start, end).
    pub hours: [Vec<(u16, u16)>; 7],
    pub meeting_minutes: u32,
    pub buffer_minutes: u32,
    pub min_notice_minutes: u32,
    pub days_ahead: u32,
    pub title: String,
    pub location: String,
    pub owner_name: String,
    pub owner_email: String,
    /// Durations before the start, as written (`24h`).
    pub reminders: Vec<String>,
    pub caldav: Option<CaldavRecord>,
    /// The secret of the calendar's iCalendar feed.
    pub feed_token: String,
    pub created_at: Micros,
    pub updated_at: Micros,
    /// The CalDAV server sends the invitations (`invitations: "server"`): engaged sends
    /// none by email and leaves the attendee's `SCHEDULE-AGENT` to the server.
    pub server_schedules: bool,
}

/// A CalDAV collection the calendar mirrors (the client is `providers::caldav`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaldavRecord {
    pub url: String,
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MeetingStatus {
    Booked,
    Canceled,
    Completed,
    NoShow,
}

impl MeetingStatus {
    pub const ALL: [MeetingStatus; 4] = [
        MeetingStatus::Booked,
        MeetingStatus::Canceled,
        MeetingStatus::Completed,
        MeetingStatus::NoShow,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MeetingStatus::Booked => "booked",
            MeetingStatus::Canceled => "canceled",
            MeetingStatus::Completed => "completed",
            MeetingStatus::NoShow => "no_show",
        }
    }

    pub fn parse(text: &str) -> Option<MeetingStatus> {
        MeetingStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// Who booked a meeting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BookedBy {
    Assistant,
    User { user_id: String, name: String },
    Api,
}

/// Where the meeting stands in the calendar's CalDAV collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CalendarSync {
    None,
    Pending,
    Synced,
    Failed,
}

impl CalendarSync {
    pub fn as_str(self) -> &'static str {
        match self {
            CalendarSync::None => "none",
            CalendarSync::Pending => "pending",
            CalendarSync::Synced => "synced",
            CalendarSync::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeetingRecord {
    pub id: String,
    pub lead_id: String,
    pub calendar: String,
    pub start: Micros,
    pub end: Micros,
    /// The lead's zone, else the organization's.
    pub time_zone: String,
    pub status: MeetingStatus,
    pub booked_by: BookedBy,
    pub location: String,
    pub calendar_sync: CalendarSync,
    /// The last CalDAV failure, in words.
    pub sync_error: String,
    /// iCalendar `SEQUENCE`: 0, one more at each move or cancellation.
    pub sequence: u32,
    pub created_at: Micros,
    pub updated_at: Micros,
    /// The `ETag` of the event as engaged last wrote or read it in the CalDAV
    /// collection (empty: none yet); every write after sends it as `If-Match`.
    pub etag: String,
    /// The collection that `etag` is of (`CalDav::identity`): another collection (the
    /// calendar's `caldav.url` changed) knows nothing of it.
    pub etag_collection: String,
}

/// Point reads of calendars and meetings, on a snapshot or the writer's transaction.
pub trait CalendarReader: Reader {
    fn calendar(&self, org: &str, name: &str) -> Result<Option<CalendarRecord>> {
        self.record(CALENDARS, (org, name))
    }

    fn meeting(&self, org: &str, id: &str) -> Result<Option<MeetingRecord>> {
        self.record(MEETINGS, (org, id))
    }
}

impl<T: Reader> CalendarReader for T {}

/// Booked meetings of `calendar` starting in [`from`, `to`): (start, end).
fn booked_in(
    table: &impl ReadableTable<(&'static str, &'static str, i64, &'static str), i64>,
    org: &str,
    calendar: &str,
    from: Micros,
    to: Micros,
    except: Option<&str>,
) -> Result<Vec<(Micros, Micros)>> {
    let mut out = Vec::new();
    if from >= to {
        return Ok(out);
    }
    for row in table
        .range::<(&str, &str, i64, &str)>((org, calendar, from, "")..(org, calendar, to, ""))?
    {
        let (key, end) = row?;
        let (_, _, start, id) = key.value();
        if except != Some(id) {
            out.push((start, end.value()));
        }
    }
    Ok(out)
}

/// A lead's first booked meeting starting at or after `after`.
fn first_booked(
    table: &impl ReadableTable<(&'static str, &'static str, i64, &'static str), ()>,
    org: &str,
    lead: &str,
    after: Micros,
) -> Result<Option<Micros>> {
    let mut range = table.range::<(&str, &str, i64, &str)>((org, lead, after, "")..)?;
    match range.next() {
        Some(row) => {
            let (key, _) = row?;
            let (row_org, row_lead, start, _) = key.value();
            Ok((row_org == org && row_lead == lead).then_some(start))
        }
        None => Ok(None),
    }
}

impl WriteTx<'_> {
    pub fn put_calendar(&mut self, org: &str, calendar: &CalendarRecord) -> Result<()> {
        let bytes = encode(calendar)?;
        self.open_write(CALENDARS)?
            .insert((org, calendar.name.as_str()), bytes.as_slice())?;
        Ok(())
    }

    pub fn delete_calendar(&mut self, org: &str, name: &str) -> Result<()> {
        self.open_write(CALENDARS)?.remove((org, name))?;
        Ok(())
    }

    /// How many calendars `org` has (keys only).
    pub fn calendar_count(&self, org: &str) -> Result<usize> {
        let table = self.open_read(CALENDARS)?;
        let mut count = 0;
        for row in table.range::<(&str, &str)>((org, "")..)? {
            if row?.0.value().0 != org {
                break;
            }
            count += 1;
        }
        Ok(count)
    }

    /// The first profile (by name) of `org` that names `calendar`.
    pub fn profile_using_calendar(&self, org: &str, calendar: &str) -> Result<Option<String>> {
        let table = self.open_read(PROFILES)?;
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            let profile: ProfileRecord = decode(value.value())?;
            if profile.calendar == calendar {
                return Ok(Some(profile.name));
            }
        }
        Ok(None)
    }

    /// Writes a meeting and moves its index rows from `old`.
    pub fn put_meeting(
        &mut self,
        org: &str,
        meeting: &MeetingRecord,
        old: Option<&MeetingRecord>,
    ) -> Result<()> {
        let id = meeting.id.as_str();
        let bytes = encode(meeting)?;
        self.open_write(MEETINGS)?
            .insert((org, id), bytes.as_slice())?;
        let mut by_updated = self.open_write(MEETINGS_BY_UPDATED)?;
        if let Some(old) = old {
            by_updated.remove((org, old.updated_at, id))?;
        }
        by_updated.insert((org, meeting.updated_at, id), ())?;
        drop(by_updated);
        let booked = |m: &&MeetingRecord| m.status == MeetingStatus::Booked;
        let mut by_start = self.open_write(MEETINGS_BY_START)?;
        if let Some(old) = old.filter(booked) {
            by_start.remove((org, old.calendar.as_str(), old.start, id))?;
        }
        if let Some(new) = Some(meeting).filter(booked) {
            by_start.insert((org, new.calendar.as_str(), new.start, id), new.end)?;
        }
        drop(by_start);
        let mut by_lead = self.open_write(MEETINGS_BY_LEAD)?;
        if let Some(old) = old.filter(booked) {
            by_lead.remove((org, old.lead_id.as_str(), old.start, id))?;
        }
        if let Some(new) = Some(meeting).filter(booked) {
            by_lead.insert((org, new.lead_id.as_str(), new.start, id), ())?;
        }
        Ok(())
    }

    /// Booked meetings of `calendar` starting in [`from`, `to`) but `except`, in this
    /// transaction.
    pub fn booked_meetings_except(
        &self,
        org: &str,
        calendar: &str,
        from: Micros,
        to: Micros,
        except: Option<&str>,
    ) -> Result<Vec<(Micros, Micros)>> {
        booked_in(
            &*self.open_read(MEETINGS_BY_START)?,
            org,
            calendar,
            from,
            to,
            except,
        )
    }

    /// The start of the lead's first booked meeting at or after `after`.
    pub fn next_meeting(&self, org: &str, lead: &str, after: Micros) -> Result<Option<Micros>> {
        first_booked(&*self.open_read(MEETINGS_BY_LEAD)?, org, lead, after)
    }

    /// The lead's first booked meeting starting at or after `after`, whole.
    pub fn next_booked_meeting(
        &self,
        org: &str,
        lead: &str,
        after: Micros,
    ) -> Result<Option<MeetingRecord>> {
        let by_lead = self.open_read(MEETINGS_BY_LEAD)?;
        let mut range = by_lead.range::<(&str, &str, i64, &str)>((org, lead, after, "")..)?;
        let Some(row) = range.next() else {
            return Ok(None);
        };
        let (key, _) = row?;
        let (row_org, row_lead, _, id) = key.value();
        if row_org != org || row_lead != lead {
            return Ok(None);
        }
        self.record(MEETINGS, (org, id))
    }
}

impl ReadTx {
    /// Booked meetings of `calendar` starting in [`from`, `to`), on this snapshot.
    pub fn booked_meetings(
        &self,
        org: &str,
        calendar: &str,
        from: Micros,
        to: Micros,
    ) -> Result<Vec<(Micros, Micros)>> {
        booked_in(
            &self.open_read(MEETINGS_BY_START)?,
            org,
            calendar,
            from,
            to,
            None,
        )
    }

    /// Booked meetings of `calendar` starting in [`from`, `to`), whole records.
    pub fn booked_meeting_records(
        &self,
        org: &str,
        calendar: &str,
        from: Micros,
        to: Micros,
        max: usize,
    ) -> Result<Vec<MeetingRecord>> {
        let by_start = self.open_read(MEETINGS_BY_START)?;
        let meetings = self.open_read(MEETINGS)?;
        let mut out = Vec::new();
        if from >= to {
            return Ok(out);
        }
        for row in by_start
            .range::<(&str, &str, i64, &str)>((org, calendar, from, "")..(org, calendar, to, ""))?
        {
            if out.len() == max {
                break;
            }
            let (key, _) = row?;
            if let Some(value) = meetings.get((org, key.value().3))? {
                out.push(decode(value.value())?);
            }
        }
        Ok(out)
    }

    /// A lead's booked meetings by start (at most `max`), whole records.
    pub fn lead_meetings(&self, org: &str, lead: &str, max: usize) -> Result<Vec<MeetingRecord>> {
        let by_lead = self.open_read(MEETINGS_BY_LEAD)?;
        let meetings = self.open_read(MEETINGS)?;
        let mut out = Vec::new();
        for row in by_lead.range::<(&str, &str, i64, &str)>((org, lead, i64::MIN, "")..)? {
            let (key, _) = row?;
            let (row_org, row_lead, _, id) = key.value();
            if row_org != org || row_lead != lead || out.len() == max {
                break;
            }
            if let Some(value) = meetings.get((org, id))? {
                out.push(decode(value.value())?);
            }
        }
        Ok(out)
    }

    /// An organization's calendars in name order.
    pub fn calendars(&self, org: &str) -> Result<Vec<CalendarRecord>> {
        let table = self.open_read(CALENDARS)?;
        let mut out = Vec::new();
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            out.push(decode(value.value())?);
        }
        Ok(out)
    }

    /// Visits an organization's meetings in (`updatedAt`, id) order from `from`.
    pub fn scan_meetings(
        &self,
        org: &str,
        from: Start<(Micros, String)>,
        mut visit: impl FnMut(MeetingRecord) -> Result<Flow>,
    ) -> Result<()> {
        let index = self.open_read(MEETINGS_BY_UPDATED)?;
        let meetings = self.open_read(MEETINGS)?;
        let start = from.bound(|(t, id)| (org, *t, id.as_str()));
        for row in index.range::<(&str, i64, &str)>((start, Bound::Unbounded))? {
            let (key, _) = row?;
            let (row_org, _, id) = key.value();
            if row_org != org {
                break;
            }
            let Some(value) = meetings.get((org, id))? else {
                continue;
            };
            if visit(decode(value.value())?)? == Flow::Stop {
                break;
            }
        }
        Ok(())
    }
}
