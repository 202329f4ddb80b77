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
use crate::domain::settings::org::OrgPatch;
use crate::error::Result;
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
                    (shown.field("time-zone", "Time zone", "timeZone", shown.value("time-zone", &self.time_zone), "An IANA name such as America/Chicago."))
                    (shown.field("default-country", "Default country", "defaultCountry", shown.value("default-country", &self.default_country), "Imports read phones without + in this country (US, GB, ...)."))
                    (shown.field("quiet-start", "Quiet hours from", "quietHours", shown.value("quiet-start", &self.quiet_start), "HH:MM in the lead's time zone; both empty: none."))
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
    let patch = org_patch(&form);
    super::save(state, visitor, form, patch).await
}

/// The organization form as a patch: an empty field clears its setting.
fn org_patch(form: &Form) -> Result<OrgPatch> {
    let given = |name: &str| Some(form.text(name)).filter(|v| !v.is_empty());
    let mut patch = OrgPatch::default();
    patch.business(form.text("business-name"), form.text("help-text"))?;
    patch.time_zone(given("time-zone"))?;
    patch.default_country(given("default-country"))?;
    let (start, end) = (form.text("quiet-start"), form.text("quiet-end"));
    patch.quiet_hours((!start.is_empty() || !end.is_empty()).then_some((start, end)))?;
    patch.sms_voice_opt_out_coupled(form.get("coupled") == Some("on"));
    patch.voice_opt_out_digit(given("opt-out-digit"))?;
    patch.voice_opt_out_sentence(form.get("opt-out-sentence") == Some("on"));
    let days: Vec<&str> = form.all("day").collect();
    patch.follow_up_days((days.len() != WEEKDAY_LABELS.len()).then_some(&days[..]))?;
    let holidays: Vec<&str> = form
        .text("holidays")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|d| !d.is_empty())
        .collect();
    patch.holidays(Some(&holidays))?;
    Ok(patch)
}
