//! The settings' "Calendars" section (admins): the organization's calendars, one created
//! or edited at a time (`?calendar=NAME`) through `settings::calendars::put` with the
//! `CalendarInput` the API reads (the form's fields made into the `PUT` body, so every
//! rule and refusal is the API's, shown beside its field): the time zone, one line of
//! hours per day (`09:00-12:00, 13:00-17:00`), the numbers, title, location, owner,
//! reminders and the CalDAV connection (the password write-only). "Test connection"
//! reads the saved collection outside the writer (`CalDav::test_connection`); "Rotate
//! feed link" and "Delete calendar" (refused in words while a profile uses it).

use maud::{html, Markup};
use serde_json::{json, Map, Value};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::{SettingsAction, SettingsSection};
use crate::console::session::Visitor;
use crate::domain::settings::calendars::{self, CalendarInput};
use crate::domain::settings::clock::{read_span, WEEKDAYS};
use crate::error::{Error, Result};
use crate::providers::caldav::CalDav;
use crate::store::calendars::CalendarRecord;
use crate::store::ReadTx;

/// The days' names, Monday first, as `WEEKDAYS` orders them.
const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The numbers' form fields: (member, label).
const NUMBER_FIELDS: [(&str, &str); 4] = [
    ("meetingMinutes", "Meeting length (minutes)"),
    ("bufferMinutes", "Buffer (minutes)"),
    ("minNoticeMinutes", "Notice (minutes)"),
    ("daysAhead", "Days ahead"),
];

/// What the section shows: the calendars, and the one edited (none: a new one).
pub(super) struct CalendarsSectionView {
    calendars: Vec<CalendarRecord>,
    editing: Option<CalendarRecord>,
    /// The organization's zone, a new calendar's first.
    org_zone: String,
    base: Option<String>,
}

impl CalendarsSectionView {
    pub(super) fn of(
        read: &ReadTx,
        org_id: &str,
        org_zone: &str,
        base: Option<&str>,
        editing: Option<&str>,
    ) -> Result<CalendarsSectionView> {
        let calendars = read.calendars(org_id)?;
        let editing = editing.and_then(|name| calendars.iter().find(|c| c.name == name).cloned());
        Ok(CalendarsSectionView {
            calendars,
            editing,
            org_zone: org_zone.to_string(),
            base: base.map(str::to_string),
        })
    }

    pub(super) fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let path = SettingsSection::Calendars.path();
        html! {
            section.panel aria-labelledby="calendars-heading" {
                h2 #calendars-heading { "Calendars" }
                @if self.calendars.is_empty() { p.muted { "No calendar yet." } } @else {
                    div.table-wrap {
                        table.cards {
                            thead { tr {
                                th scope="col" { "Name" } th scope="col" { "Time zone" }
                                th scope="col" { "Meeting length" } th scope="col" { "CalDAV" }
                            } }
                            tbody {
                                @for c in &self.calendars {
                                    tr {
                                        td data-label="Name" {
                                            a href={ (path) "?calendar=" (percent(&c.name)) } { (c.name) }
                                        }
                                        td data-label="Time zone" { (c.time_zone) }
                                        td data-label="Meeting length" { (c.meeting_minutes) " minutes" }
                                        td data-label="CalDAV" {
                                            @match &c.caldav { Some(d) => { (d.url) }, None => { "None" } }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                @if self.editing.is_some() { p { a href=(path) { "New calendar" } } }
                (self.editor(visitor, shown))
            }
        }
    }

    /// The form of the calendar edited, or of a new one.
    fn editor(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let saved = self.editing.clone().unwrap_or_else(|| CalendarRecord {
            time_zone: self.org_zone.clone(),
            meeting_minutes: 30,
            min_notice_minutes: 60,
            days_ahead: 14,
            ..CalendarRecord::default()
        });
        let password_set = saved
            .caldav
            .as_ref()
            .is_some_and(|d| !d.password.is_empty());
        let (url, username) = saved
            .caldav
            .as_ref()
            .map_or((String::new(), String::new()), |d| {
                (d.url.clone(), d.username.clone())
            });
        let numbers = [
            saved.meeting_minutes,
            saved.buffer_minutes,
            saved.min_notice_minutes,
            saved.days_ahead,
        ];
        let password_error = shown.error_for("caldav.password");
        html! {
            @match &self.editing {
                Some(c) => { h3 { "Edit calendar " (c.name) } }
                None => { h3 { "New calendar" } }
            }
            form.stack method="post" action=(super::path(SettingsAction::SaveCalendar)) {
                (layout::csrf_field(visitor))
                @match &self.editing {
                    Some(c) => { input type="hidden" name="name" value=(c.name); }
                    None => { (shown.field("name", "Name", "name", shown.value("name", ""), "Letters, digits and dashes, e.g. sales")) }
                }
                (shown.listed_field("timeZone", "Time zone", "timeZone", shown.value("timeZone", &saved.time_zone), "Type to search: a city or a name such as Central Time.", Some("zones")))
                (super::organization::zones_list())
                fieldset {
                    legend { "Weekly hours (empty: closed)" }
                    @for (i, day) in WEEKDAYS.iter().enumerate() {
                        @let id = format!("hours-{day}");
                        (shown.field(&id, DAY_NAMES[i], &format!("hours.{day}"), shown.value(&id, &hours_line(&saved.hours[i])), if i == 0 { "e.g. 09:00-12:00, 13:00-17:00 (at most 5)" } else { "" }))
                    }
                }
                @for ((member, label), number) in NUMBER_FIELDS.iter().zip(numbers) {
                    (shown.field(member, label, member, shown.value(member, &number.to_string()), ""))
                }
                (shown.field("title", "Title", "title", shown.value("title", &saved.title), "The meeting's title for the lead; placeholders like {{firstName}}"))
                (shown.field("location", "Location", "location", shown.value("location", &saved.location), ""))
                (shown.field("owner-name", "Owner name", "owner.name", shown.value("owner-name", &saved.owner_name), ""))
                (shown.field("owner-email", "Owner email", "owner.email", shown.value("owner-email", &saved.owner_email), ""))
                (shown.field("reminders", "Reminders", "reminders", shown.value("reminders", &saved.reminders.join(", ")), "Before the start, e.g. 24h, 1h"))
                fieldset {
                    legend { "CalDAV connection (optional)" }
                    (shown.field("caldav-url", "CalDAV URL", "caldav.url", shown.value("caldav-url", &url), "The calendar collection, e.g. https://dav.example/ana/sales/"))
                    (shown.field("caldav-username", "CalDAV username", "caldav.username", shown.value("caldav-username", &username), ""))
                    div {
                        label for="caldav-password" { "CalDAV password" }
                        input #caldav-password type="password" name="caldav-password" autocomplete="new-password"
                            aria-invalid=[password_error.map(|_| "true")];
                        @if let Some(message) = password_error { p.field-error { (message) } }
                        @else if password_set { p.muted { "A password is set: leave empty to keep it." } }
                    }
                }
                div.actions { button type="submit" { "Save calendar" } }
            }
            @if let Some(c) = &self.editing {
                h3 { "Feed" }
                p { "Subscribe to the booked meetings in a calendar app: " }
                p { code.secret { (self.base.as_deref().unwrap_or("").trim_end_matches('/')) (calendars::feed_path(c)) } }
                div.actions {
                    @for (action, words) in [(SettingsAction::RotateFeed, "Rotate feed link"), (SettingsAction::TestCalendar, "Test connection")] {
                        form.inline method="post" action=(super::path(action)) {
                            (layout::csrf_field(visitor))
                            input type="hidden" name="name" value=(c.name);
                            button.secondary type="submit" { (words) }
                        }
                    }
                    form.inline method="post" action=(super::path(SettingsAction::DeleteCalendar)) data-confirm={ "Delete the calendar " (c.name) "?" } {
                        (layout::csrf_field(visitor))
                        input type="hidden" name="name" value=(c.name);
                        button.secondary type="submit" { "Delete calendar" }
                    }
                }
            }
        }
    }
}

/// A day's intervals as the form writes them: `09:00-12:00, 13:00-17:00`.
fn hours_line(intervals: &[(u16, u16)]) -> String {
    let hhmm = |m: u16| format!("{:02}:{:02}", m / 60, m % 60);
    intervals
        .iter()
        .map(|&(s, e)| format!("{}-{}", hhmm(s), hhmm(e)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn percent(text: &str) -> String {
    serde_urlencoded::to_string([("", text)])
        .map(|s| s.trim_start_matches('=').to_string())
        .unwrap_or_default()
}

/// A day's line as the API's intervals: `["09:00", "12:00"]` each; a line that is not
/// `HH:MM-HH:MM, ...` refused beside the day's field.
fn hours_of(day: &str, name: &str, line: &str) -> Result<Value> {
    let mut intervals = Vec::new();
    for part in line.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        // As people write them ("9am-5pm", "9:00 AM to 5:00 PM"); anything else is
        // passed as written, for the API's refusal.
        let pair: Vec<&str> = part.split(['-', '–']).map(str::trim).collect();
        match (read_span(part), pair.as_slice()) {
            (Some((start, end)), _) => intervals.push(json!([start, end])),
            (None, [start, end]) if !start.is_empty() && !end.is_empty() => {
                intervals.push(json!([start, end]))
            }
            _ => {
                return Err(Error::field(
                    &format!("hours.{day}"),
                    format!("{name}: write the hours as 09:00-12:00, 13:00-17:00"),
                ))
            }
        }
    }
    Ok(Value::Array(intervals))
}

/// The form as the `PUT /v1/calendars/{name}` body, read by
/// `CalendarInput::from_json_all` (a number that is not one is passed as text, for the
/// API's refusal): the calendar, or every refusal at once, a day's line that is not
/// hours among them.
fn input_of(form: &Form) -> std::result::Result<CalendarInput, Vec<Error>> {
    let mut refusals = Vec::new();
    let mut body = Map::new();
    // As people name zones ("Central Time", "chicago"); else as typed, for the refusal.
    let zone = form.text("timeZone");
    let zone = super::organization::read_zone(zone).unwrap_or_else(|| zone.to_string());
    body.insert("timeZone".into(), json!(zone));
    let mut hours = Map::new();
    for (day, name) in WEEKDAYS.iter().zip(DAY_NAMES) {
        let line = form.text(&format!("hours-{day}"));
        match hours_of(day, name, line) {
            Ok(intervals) => {
                hours.insert((*day).to_string(), intervals);
            }
            Err(e) => refusals.push(e),
        }
    }
    body.insert("hours".into(), Value::Object(hours));
    for (member, _) in NUMBER_FIELDS {
        let text = form.text(member);
        if !text.is_empty() {
            let value = text
                .parse::<u64>()
                .map_or_else(|_| json!(text), |n| json!(n));
            body.insert(member.into(), value);
        }
    }
    body.insert("title".into(), json!(form.text("title")));
    body.insert("location".into(), json!(form.text("location")));
    let (owner_name, owner_email) = (form.text("owner-name"), form.text("owner-email"));
    if !owner_name.is_empty() || !owner_email.is_empty() {
        body.insert(
            "owner".into(),
            json!({"name": owner_name, "email": owner_email}),
        );
    }
    let reminders: Vec<&str> = form
        .text("reminders")
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    body.insert("reminders".into(), json!(reminders));
    let url = form.text("caldav-url");
    if !url.is_empty() {
        let mut caldav = json!({"url": url, "username": form.text("caldav-username")});
        let password = form.get("caldav-password").unwrap_or_default();
        if !password.is_empty() {
            caldav["password"] = json!(password);
        }
        body.insert("caldav".into(), caldav);
    }
    match CalendarInput::from_json_all(&body) {
        Ok(input) if refusals.is_empty() => Ok(input),
        Ok(_) => Err(refusals),
        Err(more) => {
            refusals.extend(more);
            Err(refusals)
        }
    }
}

/// A refusal of `hours.mon[1]` or `reminders[0]` shown beside its form field.
fn beside_field(e: Error) -> Error {
    match e {
        Error::InvalidField { field, message } => {
            let field = field.split('[').next().unwrap_or_default().to_string();
            Error::field(&field, message)
        }
        other => other,
    }
}

/// `POST /console/settings/calendar`: creates or replaces the calendar named in the
/// form, exactly as `PUT /v1/calendars/{name}` does.
pub(super) async fn save(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let caller = visitor.caller();
    let policy = state.engine.http_client().policy();
    let name = form.text("name").to_string();
    let mut refusals = Vec::new();
    if let Err(e) = calendars::check_name(&name) {
        refusals.push(e);
    }
    let input = match input_of(form) {
        Ok(input) if refusals.is_empty() => input,
        Ok(_) => return Ok(Outcome::Show(Shown::refusals(&refusals, form.clone()))),
        Err(more) => {
            refusals.extend(more.into_iter().map(beside_field));
            return Ok(Outcome::Show(Shown::refusals(&refusals, form.clone())));
        }
    };
    state
        .store
        .write(move |tx| calendars::put(tx, &caller, &name, &input, policy))
        .await
        .map_err(beside_field)?;
    Ok(Outcome::Saved)
}

/// `POST /console/settings/delete-calendar`: 409 in words while a profile uses it.
pub(super) async fn delete(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let caller = visitor.caller();
    let name = form.text("name").to_string();
    let deleted = name.clone();
    state
        .store
        .write(move |tx| calendars::delete(tx, &caller, &name))
        .await?;
    Ok(Outcome::shown(Shown::notice(format!(
        "The calendar {deleted} is deleted."
    ))))
}

/// `POST /console/settings/rotate-feed`: a new feed link; the old one stops working.
pub(super) async fn rotate(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let caller = visitor.caller();
    let name = form.text("name").to_string();
    let editing = name.clone();
    state
        .store
        .write(move |tx| calendars::rotate_feed_token(tx, &caller, &name).map(drop))
        .await?;
    Ok(Outcome::shown(Shown {
        editing: Some(editing),
        ..Shown::notice("A new feed link is made: the old one no longer works.")
    }))
}

/// `POST /console/settings/calendar-test`: reads the saved collection's coming week,
/// outside the writer, and says how many events it saw (and those whose time zone it
/// could not read) or what went wrong.
pub(super) async fn test(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let name = form.text("name").to_string();
    let calendar = calendars::find(&state.store.read()?, visitor.org(), &name)?;
    let notice = match &calendar.caldav {
        None => "This calendar has no CalDAV connection: add its URL, username and password and save first.".to_string(),
        Some(d) => match CalDav::new(&d.url, &d.username, &d.password) {
            Err(e) => format!("Not connected: {}", e.public_text()),
            Ok(dav) => match dav.test_read(state.engine.http_client()).await {
                Ok(read) => {
                    let mut words = match read.events {
                        1 => "Connected: 1 event in the next 7 days".to_string(),
                        n => format!("Connected: {n} events in the next 7 days"),
                    };
                    if !read.unreadable_zones.is_empty() {
                        words.push_str(&format!(
                            ". Held busy all day, their time zone unknown: {}",
                            read.unreadable_zones.join(", ")
                        ));
                    }
                    if !read.too_many.is_empty() {
                        words.push_str(&format!(
                            ". Held busy from their start on, they repeat too often to read: {}",
                            read.too_many.join(", ")
                        ));
                    }
                    words
                }
                Err(e) => {
                    // The detail to the log; the page says what a 424 says.
                    tracing::warn!(error = %e, calendar = %name, "CalDAV test failed");
                    format!("Not connected: {}", e.public_text())
                }
            },
        },
    };
    Ok(Outcome::shown(Shown {
        editing: Some(name),
        ..Shown::notice(notice)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_becomes_the_apis_calendar_input() {
        let form = Form::parse(
            b"name=sales&timeZone=America%2FChicago&hours-mon=09%3A00-12%3A00%2C+13%3A00-17%3A00&meetingMinutes=45&reminders=24h%2C+1h",
        )
        .unwrap();
        let input = input_of(&form).unwrap();
        assert_eq!(input.hours[0], vec![(540, 720), (780, 1020)]);
        assert_eq!(input.numbers[0], 45);
        assert_eq!(input.reminders, ["24h", "1h"]);
        assert_eq!(hours_line(&input.hours[0]), "09:00-12:00, 13:00-17:00");
        let typed = Form::parse(b"timeZone=UTC&hours-mon=9am-12pm%2C+1pm+to+5%3A30pm").unwrap();
        let input = input_of(&typed).unwrap();
        assert_eq!(input.hours[0], vec![(540, 720), (780, 1050)]);

        let bad = Form::parse(b"timeZone=UTC&hours-tue=nine+to+five").unwrap();
        let e = input_of(&bad).unwrap_err();
        assert_eq!(e[0].refused_field(), Some("hours.tue"));
        let late = Form::parse(b"timeZone=UTC&hours-mon=12%3A00-09%3A00").unwrap();
        let e = input_of(&late).unwrap_err().into_iter().map(beside_field);
        let fields: Vec<String> = e
            .map(|e| e.refused_field().unwrap_or_default().to_string())
            .collect();
        assert_eq!(fields, ["hours.mon"]);
        let words = Form::parse(b"timeZone=UTC&meetingMinutes=lots").unwrap();
        assert_eq!(
            input_of(&words).unwrap_err()[0].to_string(),
            "meetingMinutes must be a whole number from 5 to 480"
        );
    }

    #[test]
    fn one_save_finds_every_refusal_of_the_form() {
        let form = Form::parse(
            b"timeZone=Middle+Earth&hours-mon=9-25&hours-tue=nine+to+five&hours-wed=09%3A00-17%3A00\
              &meetingMinutes=lots&daysAhead=999&owner-email=not-an-email&reminders=soon",
        )
        .unwrap();
        let refusals = input_of(&form).unwrap_err();
        let fields: Vec<String> = refusals
            .into_iter()
            .map(beside_field)
            .map(|e| e.refused_field().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            fields,
            [
                "hours.tue",
                "timeZone",
                "hours.mon",
                "meetingMinutes",
                "daysAhead",
                "owner.email",
                "reminders"
            ]
        );
    }
}
