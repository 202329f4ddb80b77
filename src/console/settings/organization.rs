//! The settings page's "Organization" section: the business, time zone, default
//! country, quiet hours, follow-up days, holidays, the SMS/voice opt-out coupling and
//! the call opt-out (its keypad digit, whether the greeting says so), saved as an
//! `OrgPatch` built from the form (an empty field clears its setting).

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::settings::clock::read_time_of_day;
use crate::domain::settings::org::OrgPatch;
use crate::error::{Error, Result};
use crate::store::rows::{EngineSettings, OrgRecord};

/// The days of the week as the form shows them.
const WEEKDAY_LABELS: [(&str, &str); 7] = [
    ("mon", "Mon"),
    ("tue", "Tue"),
    ("wed", "Wed"),
    ("thu", "Thu"),
    ("fri", "Fri"),
    ("sat", "Sat"),
    ("sun", "Sun"),
];

/// What the section shows: the organization's settings as saved.
pub(super) struct OrgSectionView {
    name: String,
    business_name: String,
    help_text: String,
    time_zone: String,
    default_country: String,
    quiet_start: String,
    quiet_end: String,
    coupled: bool,
    /// Empty: every day.
    follow_up_days: Vec<String>,
    holidays: Vec<String>,
    voice_opt_out_digit: String,
    voice_opt_out_sentence: bool,
}

impl OrgSectionView {
    pub(super) fn of(record: &OrgRecord, engine: &EngineSettings) -> OrgSectionView {
        let (quiet_start, quiet_end) = record.settings.quiet_hours.clone().unwrap_or_default();
        OrgSectionView {
            name: record.name.clone(),
            business_name: engine.business_name.clone(),
            help_text: engine.help_text.clone(),
            time_zone: engine.time_zone.clone(),
            default_country: engine.default_country.clone(),
            quiet_start,
            quiet_end,
            coupled: record.settings.sms_voice_opt_out_coupled,
            follow_up_days: engine.follow_up_days.clone(),
            holidays: engine.holidays.clone(),
            voice_opt_out_digit: engine.voice_opt_out.digit.to_string(),
            voice_opt_out_sentence: engine.voice_opt_out.sentence,
        }
    }

    /// The section, showing what was typed after a refusal.
    pub(super) fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let coupled = match &shown.typed {
            Some(form) => form.get("coupled") == Some("on"),
            None => self.coupled,
        };
        let sentence = match &shown.typed {
            Some(form) => form.get("opt-out-sentence") == Some("on"),
            None => self.voice_opt_out_sentence,
        };
        html! {
            section.panel aria-labelledby="org-heading" {
                h2 #org-heading { "Organization" }
                p.muted { "Name: " (self.name) }
                form.stack method="post" action=(super::path(SettingsAction::SaveOrg)) {
                    (layout::csrf_field(visitor))
                    (shown.field("business-name", "Business name", "business.name", shown.value("business-name", &self.business_name), "How texts name the business."))
                    (shown.field("help-text", "Help text", "business.helpText", shown.value("help-text", &self.help_text), "The answer to HELP."))
                    (shown.listed_field("time-zone", "Time zone", "timeZone", shown.value("time-zone", &self.time_zone), "Type to search: a city or a name such as Central Time.", Some("zones")))
                    (zones_list())
                    (shown.listed_field("default-country", "Default country", "defaultCountry", shown.value("default-country", &self.default_country), "Imports read phones without + in this country (US, United States, ...).", Some("countries")))
                    datalist #countries {
                        @for (_, code) in COUNTRY_NAMES { option value=(code) {} }
                    }
                    (shown.field("quiet-start", "Quiet hours from", "quietHours", shown.value("quiet-start", &self.quiet_start), "A time like 9:00 PM in the lead's time zone; both empty: none."))
                    (shown.field("quiet-end", "Quiet hours until", "quietHours.end", shown.value("quiet-end", &self.quiet_end), ""))
                    fieldset.choice {
                        legend { "Days follow-ups run" }
                        @for (day, label) in WEEKDAY_LABELS {
                            @let on = match &shown.typed {
                                Some(form) => form.all("day").any(|d| d == day),
                                None => self.follow_up_days.is_empty() || self.follow_up_days.iter().any(|d| d == day),
                            };
                            span.pair {
                                input id={ "day-" (day) } type="checkbox" name="day" value=(day) checked[on];
                                label for={ "day-" (day) } { (label) }
                            }
                            " "
                        }
                        @if let Some(message) = shown.error_for("followUpDays") { p.field-error { (message) } }
                    }
                    (shown.field("holidays", "Holidays", "holidays", shown.value("holidays", &self.holidays.join(" ")), "Dates without follow-ups, YYYY-MM-DD, separated by spaces."))
                    div {
                        input #coupled type="checkbox" name="coupled" value="on" checked[coupled];
                        " "
                        label for="coupled" { "An SMS opt-out also opts out of calls, and the reverse" }
                    }
                    (shown.field("opt-out-digit", "Call opt-out digit", "voiceOptOutDigit", shown.value("opt-out-digit", &self.voice_opt_out_digit), "The key (0 to 9) that opts a lead out of calls; empty: 9."))
                    div {
                        input #opt-out-sentence type="checkbox" name="opt-out-sentence" value="on" checked[sentence];
                        " "
                        label for="opt-out-sentence" { "Calls say how to opt out" }
                    }
                    div.actions { button type="submit" { "Save" } }
                }
            }
        }
    }
}

/// `POST /console/settings/organization`.
pub(super) async fn save(state: &AppState, visitor: &Visitor, form: Form) -> Result<Outcome> {
    match org_patch(&form) {
        Ok(patch) => super::save(state, visitor, form, Ok(patch)).await,
        // Every field refused at once, each beside its field; nothing saved.
        Err(refusals) => Ok(Outcome::Show(Shown::refusals(&refusals, form))),
    }
}

/// Time zones as people name them, to their IANA name.
const ZONE_NAMES: [(&[&str], &str); 8] = [
    (
        &["eastern", "eastern time", "et", "est", "edt"],
        "America/New_York",
    ),
    (
        &["central", "central time", "ct", "cst", "cdt"],
        "America/Chicago",
    ),
    (
        &["mountain", "mountain time", "mt", "mst", "mdt"],
        "America/Denver",
    ),
    (&["arizona", "arizona time"], "America/Phoenix"),
    (
        &["pacific", "pacific time", "pt", "pst", "pdt"],
        "America/Los_Angeles",
    ),
    (
        &["alaska", "alaska time", "akst", "akdt"],
        "America/Anchorage",
    ),
    (&["hawaii", "hawaii time", "hst"], "Pacific/Honolulu"),
    (
        &["uk", "uk time", "british time", "gmt", "bst"],
        "Europe/London",
    ),
];

/// A time zone as a person types it ("Central Time", "chicago", "america/chicago") as its
/// IANA name; `None` when no zone is meant.
pub(super) fn read_zone(typed: &str) -> Option<String> {
    let wanted = typed.trim().to_ascii_lowercase();
    let wanted = wanted.trim_end_matches(" (us)").trim();
    if let Some((_, zone)) = ZONE_NAMES.iter().find(|(names, _)| names.contains(&wanted)) {
        return Some((*zone).to_string());
    }
    let city = wanted.replace(' ', "_");
    chrono_tz::TZ_VARIANTS
        .iter()
        .map(|tz| tz.name())
        .find(|name| {
            let lower = name.to_ascii_lowercase();
            lower == city || lower.rsplit('/').next() == Some(city.as_str())
        })
        .map(str::to_string)
}

/// The `<datalist>` of every IANA zone (`zones`) a time zone field offers.
pub(super) fn zones_list() -> Markup {
    html! {
        datalist #zones {
            @for tz in chrono_tz::TZ_VARIANTS.iter() { option value=(tz.name()) {} }
        }
    }
}

/// Countries as people name them, to their ISO code.
const COUNTRY_NAMES: [(&[&str], &str); 8] = [
    (
        &[
            "usa",
            "u.s.",
            "u.s.a.",
            "united states",
            "united states of america",
            "america",
        ],
        "US",
    ),
    (&["canada"], "CA"),
    (
        &[
            "uk",
            "united kingdom",
            "great britain",
            "britain",
            "england",
        ],
        "GB",
    ),
    (&["australia"], "AU"),
    (&["ireland"], "IE"),
    (&["new zealand"], "NZ"),
    (&["mexico"], "MX"),
    (&["germany", "deutschland"], "DE"),
];

/// A country as a person types it ("USA", "United States") as its code; `None` when the
/// name is not one of the few known.
fn read_country(typed: &str) -> Option<&'static str> {
    let wanted = typed.trim().to_ascii_lowercase();
    COUNTRY_NAMES
        .iter()
        .find(|(names, _)| names.contains(&wanted.as_str()))
        .map(|(_, code)| *code)
}

/// The organization form as a patch: an empty field clears its setting. Every field is
/// read, so that the refusals of one save come at once.
fn org_patch(form: &Form) -> std::result::Result<OrgPatch, Vec<Error>> {
    let given = |name: &str| Some(form.text(name)).filter(|v| !v.is_empty());
    let mut patch = OrgPatch::default();
    let mut refusals = Vec::new();
    let mut keep = |read: Result<()>| {
        if let Err(e) = read {
            refusals.push(e);
        }
    };
    keep(patch.business(form.text("business-name"), form.text("help-text")));
    let zone = given("time-zone").map(|typed| read_zone(typed).unwrap_or(typed.to_string()));
    keep(patch.time_zone(zone.as_deref()));
    let country = given("default-country").map(|typed| read_country(typed).unwrap_or(typed));
    keep(patch.default_country(country));
    // A person may type "9pm" or "9:00 PM": read as `HH:MM`; what is not a time goes on
    // as typed, to be refused in words.
    let clock = |name: &str| {
        let typed = form.text(name);
        read_time_of_day(typed).unwrap_or_else(|| typed.to_string())
    };
    let (start, end) = (clock("quiet-start"), clock("quiet-end"));
    keep(patch.quiet_hours((!start.is_empty() || !end.is_empty()).then_some((&start, &end))));
    patch.sms_voice_opt_out_coupled(form.get("coupled") == Some("on"));
    keep(patch.voice_opt_out_digit(given("opt-out-digit")));
    patch.voice_opt_out_sentence(form.get("opt-out-sentence") == Some("on"));
    let days: Vec<&str> = form.all("day").collect();
    keep(patch.follow_up_days((days.len() != WEEKDAY_LABELS.len()).then_some(&days[..])));
    let holidays: Vec<&str> = form
        .text("holidays")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|d| !d.is_empty())
        .collect();
    keep(patch.holidays(Some(&holidays)));
    if refusals.is_empty() {
        Ok(patch)
    } else {
        Err(refusals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_and_countries_as_people_name_them() {
        assert_eq!(
            read_zone("Central Time").as_deref(),
            Some("America/Chicago")
        );
        assert_eq!(read_zone("chicago").as_deref(), Some("America/Chicago"));
        assert_eq!(
            read_zone("america/new_york").as_deref(),
            Some("America/New_York")
        );
        assert_eq!(
            read_zone("Los Angeles").as_deref(),
            Some("America/Los_Angeles")
        );
        assert_eq!(read_zone("Somewhere"), None);
        assert_eq!(read_country("USA"), Some("US"));
        assert_eq!(read_country("United Kingdom"), Some("GB"));
        assert_eq!(read_country("Atlantis"), None);
    }
}
