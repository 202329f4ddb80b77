//! `/console/meetings`: the organization's meetings by day in its zone ("Past", "Today",
//! "Tomorrow", "This week", "Later"), filtered by calendar and status, each with its
//! lead, time, calendar, status and who booked it; a past booked meeting is closed as
//! "Completed" or "No-show" and a booked one canceled
//! (`POST /console/meetings/{id}/{action}`, through `records::meetings`).
//!
//! Reads are bounded: booked meetings come from the calendars' start index (the last
//! [`PAST_DAYS`] days on), the other statuses from the `updatedAt` listing of the same
//! days; at most [`MAX_ROWS`] rows, and the page says when there are more.

use chrono::{Datelike, NaiveDate, TimeZone};
use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout::{self, csrf_field};
use super::respond;
use super::routes::MeetingAction;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::engagement::reactions::React;
use crate::domain::records::meetings;
use crate::error::{Error, Result};
use crate::store::calendars::{BookedBy, MeetingRecord, MeetingStatus};
use crate::store::rows::Role;
use crate::store::{Flow, ReadTx, Reader, Start};
use crate::time::{self, Micros};

/// At most this many meetings on the page.
pub const MAX_ROWS: usize = 200;
/// Past meetings shown from this many days back.
pub const PAST_DAYS: i64 = 30;
/// The `updatedAt` listing visits at most this many meetings for one page.
const MAX_SCAN: usize = 5_000;
const DAY: Micros = 86_400_000_000;

/// A meeting's status in words.
pub fn status_words(status: MeetingStatus) -> &'static str {
    match status {
        MeetingStatus::Booked => "Booked",
        MeetingStatus::Canceled => "Canceled",
        MeetingStatus::Completed => "Completed",
        MeetingStatus::NoShow => "No-show",
    }
}

/// Who booked a meeting, in words.
pub fn booked_by_words(by: &BookedBy) -> &str {
    match by {
        BookedBy::Assistant => "Assistant",
        BookedBy::Api => "API",
        BookedBy::User { name, .. } => name,
    }
}

/// The day groups of the page, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Past,
    Today,
    Tomorrow,
    ThisWeek,
    Later,
}

impl Group {
    fn title(self) -> &'static str {
        match self {
            Group::Past => "Past",
            Group::Today => "Today",
            Group::Tomorrow => "Tomorrow",
            Group::ThisWeek => "This week",
            Group::Later => "Later",
        }
    }

    /// The group of a meeting on `day`, seen on `today` (weeks end on Sunday).
    fn of(day: NaiveDate, today: NaiveDate) -> Group {
        let days = (day - today).num_days();
        let to_sunday = 6 - i64::from(today.weekday().num_days_from_monday());
        match days {
            d if d < 0 => Group::Past,
            0 => Group::Today,
            1 => Group::Tomorrow,
            d if d <= to_sunday => Group::ThisWeek,
            _ => Group::Later,
        }
    }
}

/// The local date of `micros` in `zone` (UTC when unknown).
fn local_date(micros: Micros, zone: &str) -> NaiveDate {
    let utc = chrono::Utc
        .timestamp_micros(micros)
        .single()
        .unwrap_or_default();
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => utc.with_timezone(&tz).date_naive(),
        Err(_) => utc.date_naive(),
    }
}

/// The page's filters, from its query.
#[derive(Debug, Clone)]
struct Filters {
    calendar: Option<String>,
    status: MeetingStatus,
    done: Option<String>,
}

impl Filters {
    fn parse(query: &str) -> Result<Filters> {
        let form = Form::parse(query.as_bytes())?;
        let status = match form.text("status") {
            "" => MeetingStatus::Booked,
            text => MeetingStatus::parse(text).ok_or_else(|| Error::invalid_field("status"))?,
        };
        Ok(Filters {
            calendar: Some(form.text("calendar"))
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            status,
            done: Some(form.text("done"))
                .filter(|d| !d.is_empty())
                .map(str::to_string),
        })
    }
}

/// One row: the meeting and its lead's name.
struct Row {
    meeting: MeetingRecord,
    lead: String,
}

/// What the Meetings page shows, read from one snapshot.
struct MeetingsPageView {
    calendars: Vec<String>,
    filters: Filters,
    rows: Vec<(Group, Row)>,
    more: bool,
    zone: String,
    now: Micros,
    can_act: bool,
}

impl MeetingsPageView {
    fn read(state: &AppState, visitor: &Visitor, filters: Filters) -> Result<MeetingsPageView> {
        let org = visitor.org();
        let read = state.store.read()?;
        let zone = read.engine_settings(org)?.time_zone;
        let calendars: Vec<String> = read.calendars(org)?.into_iter().map(|c| c.name).collect();
        let now = time::now_micros();
        let since = now - PAST_DAYS * DAY;
        let (mut found, more) = match filters.status {
            MeetingStatus::Booked => booked(&read, org, &calendars, &filters, since)?,
            _ => by_update(&read, org, &filters, since)?,
        };
        found.sort_by(|a, b| (a.start, &a.id).cmp(&(b.start, &b.id)));
        let today = local_date(now, &zone);
        let mut rows = Vec::with_capacity(found.len());
        for meeting in found {
            let lead = read
                .lead(org, &meeting.lead_id)?
                .map_or_else(|| meeting.lead_id.clone(), |l| layout::lead_name(&l));
            let group = Group::of(local_date(meeting.start, &zone), today);
            rows.push((group, Row { meeting, lead }));
        }
        rows.sort_by_key(|(g, _)| *g);
        Ok(MeetingsPageView {
            calendars,
            filters,
            rows,
            more,
            zone,
            now,
            can_act: visitor.user.role.at_least(Role::Agent),
        })
    }

    fn view(&self, visitor: &Visitor) -> Markup {
        let notice = self.filters.done.as_deref().and_then(|done| match done {
            "completed" => Some("Marked completed."),
            "no_show" => Some("Marked no-show."),
            "canceled" => Some("Meeting canceled."),
            _ => None,
        });
        let groups = [
            Group::Past,
            Group::Today,
            Group::Tomorrow,
            Group::ThisWeek,
            Group::Later,
        ];
        html! {
            h1 { "Meetings" }
            @if let Some(notice) = notice { p.notice role="status" { (notice) } }
            form.filters method="get" action="/console/meetings" {
                div {
                    label for="meetings-calendar" { "Calendar" }
                    select #meetings-calendar name="calendar" {
                        option value="" { "All calendars" }
                        @for name in &self.calendars {
                            option value=(name) selected[self.filters.calendar.as_deref() == Some(name.as_str())] { (name) }
                        }
                    }
                }
                div {
                    label for="meetings-status" { "Status" }
                    select #meetings-status name="status" {
                        @for status in MeetingStatus::ALL {
                            option value=(status.as_str()) selected[self.filters.status == status] { (status_words(status)) }
                        }
                    }
                }
                div.actions { button type="submit" { "Filter" } }
            }
            p.muted { "Times in " (self.zone) ". Past meetings from the last " (PAST_DAYS) " days." }
            @if self.rows.is_empty() { p.muted { "No meetings." } }
            @for group in groups {
                @let rows: Vec<&Row> = self.rows.iter().filter(|(g, _)| *g == group).map(|(_, r)| r).collect();
                @if !rows.is_empty() {
                    section aria-label=(group.title()) {
                        h2 { (group.title()) }
                        div.table-wrap {
                            table.cards {
                                thead { tr {
                                    th scope="col" { "Lead" } th scope="col" { "Time" } th scope="col" { "Calendar" }
                                    th scope="col" { "Status" } th scope="col" { "Booked by" } th scope="col" { "Actions" }
                                } }
                                tbody {
                                    @for row in rows { (self.row(visitor, row)) }
                                }
                            }
                        }
                    }
                }
            }
            @if self.more {
                p.muted { "Showing the first " (MAX_ROWS) " meetings: filter by calendar to see the others." }
            }
        }
    }

    fn row(&self, visitor: &Visitor, row: &Row) -> Markup {
        let m = &row.meeting;
        let closable = self.can_act && m.status == MeetingStatus::Booked && m.start < self.now;
        html! {
            tr {
                td data-label="Lead" { a href={ "/console/leads/" (m.lead_id) } { (row.lead) } }
                td data-label="Time" { (layout::time(m.start, &self.zone)) }
                td data-label="Calendar" { (m.calendar) }
                td data-label="Status" { (status_words(m.status)) }
                td data-label="Booked by" { (booked_by_words(&m.booked_by)) }
                td data-label="Actions" {
                    @if closable {
                        div.actions {
                            @for (action, words) in [(MeetingAction::Completed, "Completed"), (MeetingAction::NoShow, "No-show")] {
                                form.inline method="post" action=(action_path(&m.id, action)) {
                                    (csrf_field(visitor))
                                    button.secondary type="submit" { (words) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Where a meeting's action posts.
pub fn action_path(id: &str, action: MeetingAction) -> String {
    format!("/console/meetings/{id}/{}", action.segment())
}

/// Booked meetings from `since` on, by the calendars' start index: at most
/// [`MAX_ROWS`] (and whether there are more).
fn booked(
    read: &ReadTx,
    org: &str,
    calendars: &[String],
    filters: &Filters,
    since: Micros,
) -> Result<(Vec<MeetingRecord>, bool)> {
    let mut found = Vec::new();
    for name in calendars {
        if filters.calendar.as_ref().is_some_and(|c| c != name) {
            continue;
        }
        found.extend(read.booked_meeting_records(org, name, since, Micros::MAX, MAX_ROWS + 1)?);
    }
    found.sort_by(|a, b| (a.start, &a.id).cmp(&(b.start, &b.id)));
    let more = found.len() > MAX_ROWS;
    found.truncate(MAX_ROWS);
    Ok((found, more))
}

/// Meetings of another status updated from `since` on, by the `updatedAt` listing: at
/// most [`MAX_ROWS`] of at most `MAX_SCAN` visited.
fn by_update(
    read: &ReadTx,
    org: &str,
    filters: &Filters,
    since: Micros,
) -> Result<(Vec<MeetingRecord>, bool)> {
    let mut found = Vec::new();
    let mut visited = 0;
    let mut more = false;
    read.scan_meetings(org, Start::AtOrAfter((since, String::new())), |m| {
        visited += 1;
        let wanted = m.status == filters.status
            && filters.calendar.as_ref().is_none_or(|c| *c == m.calendar);
        if wanted {
            if found.len() == MAX_ROWS {
                more = true;
                return Ok(Flow::Stop);
            }
            found.push(m);
        }
        if visited >= MAX_SCAN {
            more = true;
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    })?;
    Ok((found, more))
}

/// `GET /console/meetings?calendar=&status=`.
pub fn page(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let filters = Filters::parse(query)?;
    let view = MeetingsPageView::read(state, visitor, filters)?;
    let markup = layout::page("Meetings", Some(visitor), view.view(visitor));
    Ok(respond::html(StatusCode::OK, markup))
}

/// `POST /console/meetings/{id}/{action}`: "Completed" and "No-show" return to the
/// Meetings page, "Cancel meeting" to the lead's meetings.
pub async fn act(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    action: MeetingAction,
) -> Result<Response<Body>> {
    let caller = visitor.caller();
    let meeting_id = id.to_string();
    let meeting = state
        .store
        .write(move |tx| {
            let id = meeting_id.as_str();
            match action {
                MeetingAction::Cancel => meetings::cancel(tx, &caller, id).react(tx),
                MeetingAction::Completed => {
                    meetings::set_status(tx, &caller, id, MeetingStatus::Completed).react(tx)
                }
                MeetingAction::NoShow => {
                    meetings::set_status(tx, &caller, id, MeetingStatus::NoShow).react(tx)
                }
            }
        })
        .await;
    // Closed or canceled meanwhile: a 409 page says so in words.
    let meeting = meeting?;
    Ok(respond::redirect(&match action {
        MeetingAction::Cancel => {
            format!("/console/leads/{}/meetings?done=canceled", meeting.lead_id)
        }
        MeetingAction::Completed => "/console/meetings?done=completed".to_string(),
        MeetingAction::NoShow => "/console/meetings?done=no_show".to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meetings_fall_into_day_groups() {
        // A Wednesday.
        let today = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
        assert_eq!(Group::of(day(24), today), Group::Past);
        assert_eq!(Group::of(day(25), today), Group::Today);
        assert_eq!(Group::of(day(26), today), Group::Tomorrow);
        assert_eq!(Group::of(day(29), today), Group::ThisWeek);
        assert_eq!(Group::of(day(30), today), Group::Later);
    }
}
