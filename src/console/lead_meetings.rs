//! A lead's meetings: the panel on the lead's page, and `/console/leads/{id}/meetings`
//! where "Book a meeting" shows a calendar's open times of a day as buttons
//! (`meetings::open_times`) and one click books it (`meetings::book`, booked by the
//! person); `/console/meetings/{id}/reschedule` shows the open times the same way and
//! moves the meeting (`meetings::reschedule`). A time taken meanwhile is refused
//! ("Time not available") on the page, with the fresh times.

use chrono::{NaiveDate, TimeZone};
use chrono_tz::Tz;
use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout::{self, csrf_field, lead_name};
use super::meetings::{action_path, booked_by_words, status_words};
use super::respond;
use super::routes::MeetingAction;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::engagement::reactions::React;
use crate::domain::records::meetings::{self, BookInput};
use crate::domain::settings::calendars;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::calendars::{BookedBy, CalendarRecord, MeetingRecord};
use crate::store::rows::{LeadRecord, Role};
use crate::store::{ReadTx, Reader};
use crate::time::{self, Micros};

/// At most this many of a lead's booked meetings are shown.
const MAX_SHOWN: usize = 50;

/// The day `text` (`YYYY-MM-DD`), refused beside the "Day" field.
fn parse_day(text: &str) -> Result<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| Error::field("day", "Choose a day"))
}

/// Today in `zone`.
fn today(zone: &Tz) -> NaiveDate {
    chrono::Utc::now().with_timezone(zone).date_naive()
}

/// Local midnight of `day` and of the day after, in `zone`.
fn day_bounds(zone: &Tz, day: NaiveDate) -> Option<(Micros, Micros)> {
    let midnight = |d: NaiveDate| {
        zone.from_local_datetime(&d.and_hms_opt(0, 0, 0)?)
            .earliest()
            .map(|t| t.timestamp_micros())
    };
    Some((midnight(day)?, midnight(day.succ_opt()?)?))
}

/// A calendar's open times on `day` (in the calendar's zone).
struct DayTimes {
    calendar: CalendarRecord,
    day: NaiveDate,
    times: Vec<Micros>,
}

fn day_times(
    read: &ReadTx,
    caller: &Caller,
    calendar: &str,
    day: &str,
    external: &[(i64, i64)],
) -> Result<DayTimes> {
    let record = calendars::find(read, &caller.org_id, calendar)
        .map_err(|_| Error::field("calendar", "Calendar not found"))?;
    let zone = calendars::zone(&record)?;
    let day = match day {
        "" => today(&zone),
        text => parse_day(text)?,
    };
    let (from, to) = day_bounds(&zone, day).ok_or_else(|| Error::field("day", "Choose a day"))?;
    // `external`: a CalDAV calendar's busy times, read before the snapshot.
    let (calendar, times) =
        meetings::open_times(read, caller, calendar, Some(from), Some(to), external)?;
    Ok(DayTimes {
        calendar,
        day,
        times,
    })
}

/// The open times as buttons, each posting its start to `action` (with the calendar
/// and day, to show fresh times if it was taken meanwhile).
fn times_form(visitor: &Visitor, action: &str, shown: &DayTimes) -> Markup {
    let zone = shown.calendar.time_zone.as_str();
    html! {
        h3 { "Open times on " (shown.day.format("%A %Y-%m-%d")) " (" (zone) ")" }
        @if shown.times.is_empty() {
            p.muted { "No open times on this day." }
        } @else {
            form.times method="post" action=(action) {
                (csrf_field(visitor))
                input type="hidden" name="calendar" value=(shown.calendar.name);
                input type="hidden" name="day" value=(shown.day.format("%Y-%m-%d"));
                div.actions {
                    @for start in &shown.times {
                        button.secondary type="submit" name="start" value=(time::format(*start)) {
                            (clock(*start, zone))
                        }
                    }
                }
            }
        }
    }
}

/// `micros` as `HH:MM` (or `h:MM AM` in a 12-hour zone, `layout::twelve_hour`) in `zone`.
fn clock(micros: Micros, zone: &str) -> String {
    let utc = chrono::Utc
        .timestamp_micros(micros)
        .single()
        .unwrap_or_default();
    match zone.parse::<Tz>() {
        Ok(tz) => utc
            .with_timezone(&tz)
            .format(super::layout::clock_format(zone))
            .to_string(),
        Err(_) => utc.format("%H:%M").to_string(),
    }
}

/// The lead's booked meetings as a table: time, calendar, status, who booked it, and
/// for agents "Reschedule" and "Cancel meeting".
fn meetings_table(
    visitor: &Visitor,
    meetings: &[MeetingRecord],
    zone: &str,
    can_act: bool,
) -> Markup {
    html! {
        @if meetings.is_empty() { p.muted { "No meetings booked." } } @else {
            div.table-wrap {
                table.cards {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Calendar" } th scope="col" { "Status" }
                        th scope="col" { "Booked by" } th scope="col" { "Actions" }
                    } }
                    tbody {
                        @for m in meetings {
                            tr {
                                td data-label="Time" { (layout::time(m.start, zone)) }
                                td data-label="Calendar" { (m.calendar) }
                                td data-label="Status" { (status_words(m.status)) }
                                td data-label="Booked by" { (booked_by_words(&m.booked_by)) }
                                td data-label="Actions" {
                                    @if can_act {
                                        div.actions {
                                            a.button.secondary href={ "/console/meetings/" (m.id) "/reschedule" } { "Reschedule" }
                                            form.inline method="post" action=(action_path(&m.id, MeetingAction::Cancel)) data-confirm="Cancel this meeting?" {
                                                (csrf_field(visitor))
                                                button.secondary type="submit" { "Cancel meeting" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The "Book a meeting" form (GET): the calendar and the day.
fn choose_form(lead: &LeadRecord, calendars: &[String], calendar: &str, day: &str) -> Markup {
    html! {
        form.stack method="get" action={ "/console/leads/" (lead.id) "/meetings" } {
            div {
                label for="book-calendar" { "Calendar" }
                select #book-calendar name="calendar" {
                    @for name in calendars {
                        option value=(name) selected[name == calendar] { (name) }
                    }
                }
            }
            div {
                label for="book-day" { "Day" }
                input #book-day type="date" name="day" value=(day);
            }
            div.actions { button type="submit" { "Show open times" } }
        }
    }
}

/// The "Meetings" panel of a lead's page, read from the page's snapshot.
pub fn panel(read: &ReadTx, visitor: &Visitor, lead: &LeadRecord, zone: &str) -> Result<Markup> {
    let org = visitor.org();
    let meetings = read.lead_meetings(org, &lead.id, MAX_SHOWN)?;
    let calendars: Vec<String> = read.calendars(org)?.into_iter().map(|c| c.name).collect();
    let can_act = visitor.user.role.at_least(Role::Agent) && lead.deleted_at.is_none();
    Ok(html! {
        section.panel aria-labelledby="meetings" {
            h2 #meetings { "Meetings" }
            (meetings_table(visitor, &meetings, zone, can_act))
            @if can_act && !calendars.is_empty() {
                h3 { "Book a meeting" }
                (choose_form(lead, &calendars, "", ""))
            }
        }
    })
}

/// What `/console/leads/{id}/meetings` shows, from one snapshot.
struct LeadMeetingsView {
    lead: LeadRecord,
    meetings: Vec<MeetingRecord>,
    calendars: Vec<String>,
    zone: String,
    calendar: String,
    day: String,
    /// The chosen calendar's open times of the day, or why there are none.
    times: Option<Result<DayTimes>>,
    notice: Option<&'static str>,
    alert: Option<String>,
    can_act: bool,
}

impl LeadMeetingsView {
    fn read(
        state: &AppState,
        visitor: &Visitor,
        id: &str,
        form: &Form,
        alert: Option<String>,
        external: Result<Vec<(i64, i64)>>,
    ) -> Result<LeadMeetingsView> {
        let org = visitor.org();
        let read = state.store.read()?;
        let lead = read
            .lead(org, id)?
            .ok_or_else(|| Error::lead_not_found(id))?;
        let can_act = visitor.user.role.at_least(Role::Agent) && lead.deleted_at.is_none();
        let calendar = form.text("calendar").to_string();
        let day = form.text("day").to_string();
        let times = (can_act && !calendar.is_empty()).then(|| {
            external.and_then(|e| day_times(&read, &visitor.caller(), &calendar, &day, &e))
        });
        let notice = match form.text("done") {
            "booked" => Some("Meeting booked."),
            "rescheduled" => Some("Meeting rescheduled."),
            "canceled" => Some("Meeting canceled."),
            _ => None,
        };
        Ok(LeadMeetingsView {
            meetings: read.lead_meetings(org, id, MAX_SHOWN)?,
            calendars: read.calendars(org)?.into_iter().map(|c| c.name).collect(),
            zone: read.engine_settings(org)?.time_zone,
            lead,
            calendar,
            day,
            times,
            notice,
            alert,
            can_act,
        })
    }

    fn view(&self, visitor: &Visitor) -> Markup {
        let lead = &self.lead;
        let action = format!("/console/leads/{}/meetings", lead.id);
        html! {
            p { a href={ "/console/leads/" (lead.id) } { (lead_name(lead)) } }
            h1 { "Meetings with " (lead_name(lead)) }
            @if let Some(notice) = self.notice { p.notice role="status" { (notice) } }
            @if let Some(alert) = &self.alert { p.field-error role="alert" { (alert) } }
            (meetings_table(visitor, &self.meetings, &self.zone, self.can_act))
            @if self.can_act {
                section.panel aria-labelledby="book" {
                    h2 #book { "Book a meeting" }
                    @if self.calendars.is_empty() {
                        p.muted { "No calendar yet: an admin adds one in Settings → Calendars." }
                    } @else {
                        (choose_form(lead, &self.calendars, &self.calendar, &self.day))
                        @match &self.times {
                            Some(Ok(shown)) => { (times_form(visitor, &action, shown)) }
                            Some(Err(e)) => { p.field-error role="alert" { (e.to_string()) } }
                            None => {}
                        }
                    }
                }
            }
        }
    }
}

/// `GET /console/leads/{id}/meetings?calendar=&day=` (and the page again after a
/// refusal, `alert` saying why).
pub async fn page(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    query: &str,
    alert: Option<String>,
) -> Result<Response<Body>> {
    let form = Form::parse(query.as_bytes())?;
    page_of(state, visitor, id, &form, alert, StatusCode::OK).await
}

async fn page_of(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
    alert: Option<String>,
    status: StatusCode,
) -> Result<Response<Body>> {
    // A CalDAV calendar's busy times, read before the snapshot.
    let external = match form.text("calendar") {
        "" => Ok(Vec::new()),
        calendar => state.engine.external_busy(visitor.org(), calendar).await,
    };
    let view = LeadMeetingsView::read(state, visitor, id, form, alert, external)?;
    let title = format!("Meetings · {}", lead_name(&view.lead));
    let markup = layout::page(&title, Some(visitor), view.view(visitor));
    Ok(respond::html(status, markup))
}

/// The start a time button posted.
fn start_of(form: &Form) -> Result<Micros> {
    time::parse(form.text("start")).ok_or_else(|| Error::invalid_field("start"))
}

/// Whether a refusal is shown on the page (the input, or the time taken meanwhile).
fn shown_on_page(e: &Error) -> bool {
    e.is_bad_request() || matches!(e, Error::Conflict(_))
}

/// `POST /console/leads/{id}/meetings`: books the time clicked, by this person.
pub async fn book(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: Form,
) -> Result<Response<Body>> {
    let caller = visitor.caller();
    let booked_by = BookedBy::User {
        user_id: visitor.user.id.clone(),
        name: visitor.user.name.clone(),
    };
    let lead_id = id.to_string();
    let booked = match start_of(&form) {
        Ok(start) => {
            let input = BookInput {
                calendar: form.text("calendar").to_string(),
                start,
            };
            match state
                .engine
                .external_busy(visitor.org(), &input.calendar)
                .await
            {
                Ok(external) => {
                    state
                        .store
                        .write(move |tx| {
                            meetings::book(
                                tx,
                                &caller,
                                &lead_id,
                                &input,
                                booked_by.clone(),
                                &external,
                            )
                            .react(tx)
                        })
                        .await
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    match booked {
        Ok(_) => Ok(respond::redirect(&format!(
            "/console/leads/{id}/meetings?done=booked"
        ))),
        Err(e) if shown_on_page(&e) => {
            page_of(state, visitor, id, &form, Some(e.to_string()), e.status()).await
        }
        Err(e) => Err(e),
    }
}

/// What `/console/meetings/{id}/reschedule` shows.
struct RescheduleView {
    meeting: MeetingRecord,
    lead: String,
    zone: String,
    times: Result<DayTimes>,
    alert: Option<String>,
}

impl RescheduleView {
    fn read(
        state: &AppState,
        visitor: &Visitor,
        id: &str,
        form: &Form,
        alert: Option<String>,
        external: Result<Vec<(i64, i64)>>,
    ) -> Result<RescheduleView> {
        let caller = visitor.caller();
        let read = state.store.read()?;
        let meeting = meetings::find(&read, &caller, id)?;
        let lead = read
            .lead(&caller.org_id, &meeting.lead_id)?
            .map_or_else(|| meeting.lead_id.clone(), |l| lead_name(&l));
        let times = external
            .and_then(|e| day_times(&read, &caller, &meeting.calendar, form.text("day"), &e));
        Ok(RescheduleView {
            zone: read.engine_settings(&caller.org_id)?.time_zone,
            meeting,
            lead,
            times,
            alert,
        })
    }

    fn view(&self, visitor: &Visitor) -> Markup {
        let m = &self.meeting;
        let action = format!("/console/meetings/{}/reschedule", m.id);
        let day = match &self.times {
            Ok(shown) => shown.day.format("%Y-%m-%d").to_string(),
            Err(_) => String::new(),
        };
        html! {
            p { a href={ "/console/leads/" (m.lead_id) "/meetings" } { "Meetings with " (self.lead) } }
            h1 { "Reschedule the meeting with " (self.lead) }
            p { "Now: " (layout::time(m.start, &self.zone)) ", " (m.calendar) " (" (status_words(m.status)) ")" }
            @if let Some(alert) = &self.alert { p.field-error role="alert" { (alert) } }
            form.stack method="get" action=(action) {
                div {
                    label for="reschedule-day" { "Day" }
                    input #reschedule-day type="date" name="day" value=(day);
                }
                div.actions { button type="submit" { "Show open times" } }
            }
            @match &self.times {
                Ok(shown) => { (times_form(visitor, &action, shown)) }
                Err(e) => { p.field-error role="alert" { (e.to_string()) } }
            }
        }
    }
}

async fn reschedule_page_of(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
    alert: Option<String>,
    status: StatusCode,
) -> Result<Response<Body>> {
    let calendar = meetings::find(&state.store.read()?, &visitor.caller(), id)?.calendar;
    let external = state.engine.external_busy(visitor.org(), &calendar).await;
    let view = RescheduleView::read(state, visitor, id, form, alert, external)?;
    let markup = layout::page("Reschedule", Some(visitor), view.view(visitor));
    Ok(respond::html(status, markup))
}

/// `GET /console/meetings/{id}/reschedule?day=`.
pub async fn reschedule_page(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    query: &str,
) -> Result<Response<Body>> {
    let form = Form::parse(query.as_bytes())?;
    reschedule_page_of(state, visitor, id, &form, None, StatusCode::OK).await
}

/// `POST /console/meetings/{id}/reschedule`: moves the meeting to the time clicked.
pub async fn reschedule(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: Form,
) -> Result<Response<Body>> {
    let caller = visitor.caller();
    let meeting_id = id.to_string();
    let moved = match start_of(&form) {
        Ok(start) => {
            let calendar = meetings::find(&state.store.read()?, &caller, &meeting_id)?.calendar;
            match state.engine.external_busy(visitor.org(), &calendar).await {
                Ok(external) => {
                    state
                        .store
                        .write(move |tx| {
                            meetings::reschedule(tx, &caller, &meeting_id, start, &external)
                                .react(tx)
                        })
                        .await
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    match moved {
        Ok(meeting) => Ok(respond::redirect(&format!(
            "/console/leads/{}/meetings?done=rescheduled",
            meeting.lead_id
        ))),
        Err(e) if shown_on_page(&e) => {
            reschedule_page_of(state, visitor, id, &form, Some(e.to_string()), e.status()).await
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_runs_from_local_midnight_to_the_next() {
        let zone: Tz = "America/Chicago".parse().unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
        let (from, to) = day_bounds(&zone, day).unwrap();
        assert_eq!(time::format(from), "2026-11-25T06:00:00.000000Z");
        assert_eq!(to - from, 86_400_000_000);
        assert!(parse_day("25/11/2026").is_err());
    }
}
