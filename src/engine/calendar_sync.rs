//! CalDAV wired in: a calendar's busy times read outside the writer into a bounded
//! `BusyCache` ([`Engine::external_busy`], at most 60 s old), and the sync worker
//! ([`run`]) that writes the meetings' bookings, moves and cancellations to the
//! collection from the durable `calendar_sync` queue and commits each answer
//! (`domain::records::meeting_sync::record`).
//!
//! The worker has the webhook dispatcher's shape: the writer wakes it after a commit that
//! queued a write; it reads the due rows from a snapshot, leases them in memory while
//! their attempt runs, and sleeps until the next retry falls due.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::Engine;
use crate::domain::engagement::reactions::React;
use crate::domain::records::meeting_sync::{self, Action, Outcome, OwnerVersion, Work};
use crate::domain::records::meetings;
use crate::error::{Error, Result};
use crate::ics;
use crate::providers::caldav::{BusyCache, CalDav, CalDavError, Held, PutMode, Window};
use crate::store::calendar_sync::DueSync;
use crate::store::calendars::{CaldavRecord, CalendarReader, CalendarRecord, MeetingStatus};
use crate::store::{ReadTx, Reader};
use crate::time::{now_micros, Micros};

/// At most this many calendars' busy times are cached.
pub const CACHE_CALENDARS: usize = 1_000;
/// Longest sleep when nothing is due (a safety net; commits wake the worker).
const IDLE_PASS: Duration = Duration::from_secs(30);
/// At most this many writes in flight at once.
const MAX_IN_FLIGHT: usize = 16;
/// The webhooks' default schedule, until the server sets its own.
const DEFAULT_SCHEDULE: [u64; 6] = [5, 30, 120, 600, 1800, 3600];

/// A cached calendar: its organization, name and collection (a changed `caldav` is
/// another key).
pub type BusyKey = (String, String, String, String);

/// The engine's CalDAV state: the busy cache, what the last reads warned of, the retry
/// schedule, the leases.
pub struct Calendars {
    pub cache: BusyCache<BusyKey>,
    pub schedule: Vec<Duration>,
    leased: Arc<Mutex<HashSet<(String, String)>>>,
    /// The last read of each calendar's collection: its events whose time zone could
    /// not be read (`GET /v1/calendars/{name}`'s `caldavStatus`).
    unreadable_zones: Mutex<HashMap<(String, String), Vec<String>>>,
    /// The last read of each calendar's collection: its events whose recurrence was too
    /// much to expand (`caldavStatus.tooManyOccurrences`).
    too_many: Mutex<HashMap<(String, String), Vec<String>>>,
}

impl Default for Calendars {
    fn default() -> Calendars {
        Calendars {
            cache: BusyCache::new(CACHE_CALENDARS),
            schedule: DEFAULT_SCHEDULE
                .iter()
                .map(|s| Duration::from_secs(*s))
                .collect(),
            leased: Arc::default(),
            unreadable_zones: Mutex::default(),
            too_many: Mutex::default(),
        }
    }
}

/// The span read from a collection for `calendar`: from the start of yesterday (UTC) to
/// `daysAhead` + 2 days after today, so every check of the day reads one cached entry.
pub fn span(calendar: &CalendarRecord, now: Micros) -> (DateTime<Utc>, DateTime<Utc>) {
    const DAY: i64 = 86_400_000_000;
    let today = now.div_euclid(DAY) * DAY;
    let from = today - DAY;
    let to = today + (i64::from(calendar.days_ahead) + 2) * DAY;
    (utc(from), utc(to))
}

fn utc(t: Micros) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(t).unwrap_or_default()
}

/// 424 in the words an organization reads (`CalDavError::public_text`); the detail
/// goes to the log.
fn unavailable(e: CalDavError) -> Error {
    tracing::warn!(error = %e, "a CalDAV server could not be read");
    Error::CalendarUnavailable(e.public_text())
}

fn client_of(caldav: &CaldavRecord) -> std::result::Result<CalDav, CalDavError> {
    CalDav::new(&caldav.url, &caldav.username, &caldav.password)
}

impl Engine {
    /// The busy intervals of calendar `name`'s CalDAV collection over its [`span`] (none
    /// without `caldav`, or for a calendar not found: the domain answers that), from
    /// the cache when read within 60 s, else read now (outside the writer). 424
    /// `Calendar unavailable: ...` when the server cannot be read.
    pub async fn external_busy(&self, org: &str, name: &str) -> Result<Vec<(Micros, Micros)>> {
        let Some(calendar) = self.store.read()?.calendar(org, name)? else {
            return Ok(Vec::new());
        };
        let Some(caldav) = &calendar.caldav else {
            return Ok(Vec::new());
        };
        let key: BusyKey = (
            org.to_string(),
            name.to_string(),
            caldav.url.clone(),
            caldav.username.clone(),
        );
        let (from, to) = span(&calendar, now_micros());
        let cache = &self.calendars.cache;
        let busy = match cache.get(&key, from, to) {
            Some(cached) => cached.busy.to_vec(),
            None => {
                let zone: Tz = calendar.time_zone.parse().unwrap_or(Tz::UTC);
                let sent_at = now_micros();
                let read = client_of(caldav)
                    .map_err(unavailable)?
                    .read_busy(&self.client, &Window { from, to, zone })
                    .await
                    .map_err(unavailable)?;
                let span = (from.timestamp_micros(), to.timestamp_micros());
                let collection = client_of(caldav).map(|c| c.identity()).unwrap_or_default();
                if let Err(e) = self
                    .take_in_owner_changes(
                        org,
                        name,
                        &collection,
                        sent_at,
                        span,
                        &read.engaged_events,
                    )
                    .await
                {
                    tracing::warn!(error = %e.to_string_for_logs(), org, calendar = name, "cannot take in the owner's calendar changes");
                }
                if let Ok(mut unreadable) = self.calendars.unreadable_zones.lock() {
                    if read.unreadable_zones.is_empty() {
                        unreadable.remove(&(org.to_string(), name.to_string()));
                    } else {
                        unreadable.insert(
                            (org.to_string(), name.to_string()),
                            read.unreadable_zones.clone(),
                        );
                    }
                }
                self.set_too_many(org, name, read.too_many.clone());
                cache.put(key, from, to, read.busy.clone());
                read.busy
            }
        };
        Ok(busy
            .iter()
            .map(|b| (b.start.timestamp_micros(), b.end.timestamp_micros()))
            .collect())
    }

    /// The events of calendar `name`'s collection whose recurrence its last read found
    /// too much to expand (each busy from its start to the end of the range): their
    /// `SUMMARY` (else `UID`).
    pub fn too_many_occurrences(&self, org: &str, name: &str) -> Vec<String> {
        self.calendars
            .too_many
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(org.to_string(), name.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    fn set_too_many(&self, org: &str, name: &str, events: Vec<String>) {
        let mut all = self
            .calendars
            .too_many
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let key = (org.to_string(), name.to_string());
        if events.is_empty() {
            all.remove(&key);
        } else if all.len() < CACHE_CALENDARS || all.contains_key(&key) {
            all.insert(key, events);
        }
    }

    /// The events of calendar `name`'s collection whose time zone its last read could
    /// not read (each held busy for its whole days), in words.
    pub fn unreadable_zones(&self, org: &str, name: &str) -> Vec<String> {
        self.calendars
            .unreadable_zones
            .lock()
            .ok()
            .and_then(|u| u.get(&(org.to_string(), name.to_string())).cloned())
            .unwrap_or_default()
    }

    /// Takes in what a read of calendar `name`'s collection (`collection`, sent at
    /// `sent_at`, over `span`) says the owner did to engaged's events: a booked meeting
    /// still ahead and wholly inside the span, `synced` with a known ETag of this
    /// collection and unchanged since before the read, whose
    /// event is gone (deleted) or at other times (moved) gets the owner's version
    /// (`meetings::take_owner_version`), re-checked unchanged inside the write.
    async fn take_in_owner_changes(
        &self,
        org: &str,
        name: &str,
        collection: &str,
        sent_at: Micros,
        span: (Micros, Micros),
        engaged_events: &[(String, String)],
    ) -> Result<()> {
        let meetings = self
            .store
            .read()?
            .booked_meeting_records(org, name, span.0, span.1, 5_000)?;
        let mut changes = Vec::new();
        for meeting in meetings {
            let settled = meeting.calendar_sync == crate::store::calendars::CalendarSync::Synced
                && !meeting.etag.is_empty()
                && meeting.etag_collection == collection
                && meeting.updated_at < sent_at
                && meeting.start > now_micros()
                && meeting.end <= span.1;
            if !settled {
                continue;
            }
            let uid = format!("{}@engaged", meeting.id);
            let version = match engaged_events.iter().find(|(u, _)| *u == uid) {
                None => OwnerVersion::Deleted,
                Some((_, ics)) => match times_of(ics) {
                    Some((start, end, sequence))
                        if (start, end) != (meeting.start, meeting.end) =>
                    {
                        OwnerVersion::Held {
                            start,
                            end,
                            sequence,
                            // Read by the next write (`If-Match` needs the event's own).
                            etag: String::new(),
                        }
                    }
                    _ => continue,
                },
            };
            changes.push((meeting, version));
        }
        for (seen, version) in changes {
            let org = org.to_string();
            let collection = collection.to_string();
            self.store
                .write(move |tx| {
                    let Some(now) = tx.meeting(&org, &seen.id)? else {
                        return Ok(());
                    };
                    if now != seen {
                        return Ok(());
                    }
                    meetings::take_owner_version(tx, &org, &now, &version, &collection)
                        .react(tx)
                        .map(|_| ())
                })
                .await?;
        }
        Ok(())
    }

    /// Forgets the cached busy times of every calendar (a test's or an operator's
    /// "read it again now").
    pub fn forget_busy_times(&self, org: &str, name: &str, caldav: &CaldavRecord) {
        self.calendars.cache.remove(&(
            org.to_string(),
            name.to_string(),
            caldav.url.clone(),
            caldav.username.clone(),
        ));
    }
}

/// What a due row asks for now: `None` when nothing is owed any more (the meeting or
/// its calendar's `caldav` is gone); `meeting_sync::record` then clears the row.
fn work(read: &ReadTx, due: &DueSync) -> Result<Option<Work>> {
    let Some(meeting) = read.meeting(&due.org, &due.meeting)? else {
        return Ok(None);
    };
    let Some(calendar) = read.calendar(&due.org, &meeting.calendar)? else {
        return Ok(None);
    };
    let Some(caldav) = calendar.caldav.clone() else {
        return Ok(None);
    };
    // An ETag of another collection (the calendar's URL changed) is no ETag here.
    let collection = client_of(&caldav).map(|c| c.identity()).unwrap_or_default();
    let etag = if meeting.etag_collection == collection {
        meeting.etag.clone()
    } else {
        String::new()
    };
    let action = if meeting.status == MeetingStatus::Canceled {
        Action::Delete { etag }
    } else {
        let lead = read.lead(&due.org, &meeting.lead_id)?.unwrap_or_default();
        let business = crate::domain::settings::org::business_name(read, &due.org)?;
        let sender = meetings::invitation_sender(read, &due.org)?;
        let document = meetings::document(&calendar, &meeting, &lead, &business, sender.as_ref());
        Action::Put {
            ics: ics::object(&document),
            create: meeting.sequence == 0 && etag.is_empty(),
            sequence: meeting.sequence,
            etag,
        }
    };
    Ok(Some(Work {
        caldav,
        collection,
        name: meeting.id,
        action,
    }))
}

/// Runs the sync worker until `stop` turns true.
pub async fn run(engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    let wake = engine.store.calendar_sync_wake();
    let mut attempts = JoinSet::new();
    loop {
        if *stop.borrow() {
            break;
        }
        let next_due = match start_due(&engine, &mut attempts) {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e.to_string_for_logs(), "calendar sync pass failed");
                Some(now_micros() + 1_000_000)
            }
        };
        while attempts.try_join_next().is_some() {}
        let sleep = next_due.map_or(IDLE_PASS, |due| {
            Duration::from_micros((due - now_micros()).max(0) as u64).min(IDLE_PASS)
        });
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(sleep) => {}
            _ = stop.changed() => {}
            Some(_) = attempts.join_next(), if !attempts.is_empty() => {}
        }
    }
    attempts.abort_all();
}

/// Starts every due write there is room for; returns the next due time.
fn start_due(engine: &Arc<Engine>, attempts: &mut JoinSet<()>) -> Result<Option<Micros>> {
    // Leases first, snapshot second (as the webhook dispatcher): a lease is dropped only
    // after its answer is committed, so the snapshot shows it.
    let leased = engine
        .calendars
        .leased
        .lock()
        .map_err(|_| Error::Internal("calendar sync lease lock poisoned".into()))?
        .clone();
    let room = MAX_IN_FLIGHT.saturating_sub(leased.len());
    let read = engine.store.read()?;
    let (due, next) = read.due_calendar_syncs(now_micros(), room, |org, id| {
        leased.contains(&(org.to_string(), id.to_string()))
    })?;
    for row in due {
        let work = work(&read, &row)?;
        if let Ok(mut leases) = engine.calendars.leased.lock() {
            leases.insert((row.org.clone(), row.meeting.clone()));
        }
        attempts.spawn(attempt(engine.clone(), row, work));
    }
    Ok(next)
}

/// One write to the collection, its answer committed, then the lease dropped.
async fn attempt(engine: Arc<Engine>, row: DueSync, work: Option<Work>) {
    let outcome = match &work {
        Some(work) => write(&engine, work).await,
        None => Outcome::Done { etag: None },
    };
    if let Outcome::Failed(error) = &outcome {
        tracing::warn!(meeting = %row.meeting, %error, "CalDAV write failed");
    }
    let schedule = engine.calendars.schedule.clone();
    let collection = work.map(|w| w.collection).unwrap_or_default();
    let committed = {
        let row = row.clone();
        engine
            .store
            .write(move |tx| {
                match meeting_sync::record(tx, &row, outcome.clone(), &collection, &schedule)? {
                    Some((meeting, version)) => {
                        meetings::take_owner_version(tx, &row.org, &meeting, &version, &collection)
                            .react(tx)
                            .map(|_| ())
                    }
                    None => Ok(()),
                }
            })
            .await
    };
    if let Err(e) = committed {
        tracing::error!(error = %e.to_string_for_logs(), meeting = %row.meeting, "cannot record a CalDAV write");
    }
    if let Ok(mut leases) = engine.calendars.leased.lock() {
        leases.remove(&(row.org, row.meeting));
    }
    engine.store.calendar_sync_wake().notify_one();
}

/// One write, conditional on the event's `ETag` (`If-Match`); a 412 reads the event:
/// still ours (our `SEQUENCE` and times: an attempt whose answer was not committed)
/// it is replaced on its new `ETag`, else the owner's version is the outcome.
async fn write(engine: &Engine, work: &Work) -> Outcome {
    match try_write(engine, work).await {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::warn!(error = %e, "CalDAV write failed");
            // What the organization reads (`syncError`): never the network's detail.
            Outcome::Failed(e.public_text())
        }
    }
}

async fn try_write(engine: &Engine, work: &Work) -> std::result::Result<Outcome, CalDavError> {
    let caldav = client_of(&work.caldav)?;
    let client = &engine.client;
    let known = |etag: &str| (!etag.is_empty()).then(|| etag.to_string());
    match &work.action {
        Action::Delete { etag } => {
            match caldav
                .delete_if(client, &work.name, known(etag).as_deref())
                .await
            {
                Ok(()) => Ok(Outcome::Done { etag: None }),
                Err(CalDavError::ChangedOnServer) => owner_version(&caldav, engine, work).await,
                Err(e) => Err(e),
            }
        }
        Action::Put {
            ics,
            create,
            sequence,
            etag,
        } => {
            let mut if_match = known(etag);
            if *create {
                match caldav
                    .put_if(client, &work.name, ics, PutMode::Create, None)
                    .await
                {
                    Ok(etag) => return Ok(Outcome::Done { etag }),
                    // Written by an attempt whose answer was not committed, or put
                    // there by someone else: read it below.
                    Err(CalDavError::AlreadyExists) => {}
                    Err(e) => return Err(e),
                }
            } else if if_match.is_none() {
                // No ETag known (a server that gives none, or a meeting written before
                // engaged kept them): the event's own, or create it.
                match caldav.get_held(client, &work.name).await? {
                    Some(held) => if_match = held.etag,
                    None => {
                        let etag = caldav
                            .put_if(client, &work.name, ics, PutMode::Create, None)
                            .await?;
                        return Ok(Outcome::Done { etag });
                    }
                }
            }
            if if_match.is_some() {
                match caldav
                    .put_if(
                        client,
                        &work.name,
                        ics,
                        PutMode::Replace,
                        if_match.as_deref(),
                    )
                    .await
                {
                    Ok(etag) => return Ok(Outcome::Done { etag }),
                    Err(CalDavError::ChangedOnServer) => {}
                    Err(e) => return Err(e),
                }
            }
            // The event is not what engaged last wrote: ours after all, or the owner's.
            let Some(held) = caldav.get_held(client, &work.name).await? else {
                return Ok(Outcome::Changed(OwnerVersion::Deleted));
            };
            let ours = times_of(ics);
            let theirs = times_of(&held.ics);
            if theirs.is_some() && theirs == ours.map(|(s, e, _)| (s, e, *sequence)) {
                let etag = caldav
                    .put_if(
                        client,
                        &work.name,
                        ics,
                        PutMode::Replace,
                        held.etag.as_deref(),
                    )
                    .await?;
                return Ok(Outcome::Done { etag });
            }
            Ok(version_of(&held))
        }
    }
}

/// The owner's version of the event after a 412.
async fn owner_version(
    caldav: &CalDav,
    engine: &Engine,
    work: &Work,
) -> std::result::Result<Outcome, CalDavError> {
    Ok(match caldav.get_held(&engine.client, &work.name).await? {
        None => Outcome::Changed(OwnerVersion::Deleted),
        Some(held) => version_of(&held),
    })
}

fn version_of(held: &Held) -> Outcome {
    match times_of(&held.ics) {
        Some((start, end, sequence)) => Outcome::Changed(OwnerVersion::Held {
            start,
            end,
            sequence,
            etag: held.etag.clone().unwrap_or_default(),
        }),
        // An event engaged cannot read (no times, a zone it cannot read): its times
        // are left as they are in engaged, the owner's version kept.
        None => Outcome::Changed(OwnerVersion::Held {
            start: 0,
            end: 0,
            sequence: sequence_of(&held.ics),
            etag: held.etag.clone().unwrap_or_default(),
        }),
    }
}

/// An event's start and end (its first busy interval, its zones read as the busy
/// times are) and `SEQUENCE`.
fn times_of(ics: &str) -> Option<(Micros, Micros, u32)> {
    let window = Window {
        from: utc(now_micros() - 800 * 86_400_000_000),
        to: utc(now_micros() + 800 * 86_400_000_000),
        zone: Tz::UTC,
    };
    let report = crate::providers::caldav::busy::busy_report(
        ics,
        &window,
        &mut crate::providers::caldav::busy::Budget::new(),
    )
    .ok()?;
    if !report.unreadable_zones.is_empty() {
        return None;
    }
    let first = report.busy.first()?;
    Some((
        first.start.timestamp_micros(),
        first.end.timestamp_micros(),
        sequence_of(ics),
    ))
}

fn sequence_of(ics: &str) -> u32 {
    let unfolded = icalendar::parser::unfold(ics);
    icalendar::parser::read_calendar(&unfolded)
        .ok()
        .and_then(|calendar| {
            calendar
                .components
                .iter()
                .find(|c| c.name.as_str().eq_ignore_ascii_case("VEVENT"))
                .and_then(|event| event.find_prop("SEQUENCE"))
                .and_then(|p| p.val.as_str().trim().parse().ok())
        })
        .unwrap_or(0)
}
