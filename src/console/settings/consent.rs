//! The settings page's "Consent" section: the organization's consent policy
//! (`consentRequired`, a checkbox per channel and purpose), its own opt-out keywords
//! (one per line) and what a revocation unsubscribes (`revocationScope`), saved as an
//! `OrgPatch` like `PATCH /v1/org`.

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::channel::Channel;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::settings::org::OrgPatch;
use crate::error::Result;
use crate::store::rows::{ConsentRequirement, EngineSettings, Purpose, RevocationScope};

/// What the section shows: the policy as saved.
pub(super) struct ConsentSectionView {
    required: Vec<ConsentRequirement>,
    keywords: Vec<String>,
    scope: RevocationScope,
}

/// A checkbox's value: `voice:marketing`.
fn pair_value(channel: Channel, purpose: Purpose) -> String {
    format!("{}:{}", channel.as_str(), purpose.as_str())
}

impl ConsentSectionView {
    pub(super) fn of(engine: &EngineSettings) -> ConsentSectionView {
        ConsentSectionView {
            required: engine.consent_required.0.clone(),
            keywords: engine.opt_out_keywords.clone(),
            scope: engine.revocation_scope,
        }
    }

    /// The section, showing what was typed after a refusal.
    pub(super) fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let typed = shown
            .typed
            .as_ref()
            .filter(|f| f.get("consent-form").is_some());
        let keywords = match typed {
            Some(form) => form.text("opt-out-keywords").to_string(),
            None => self.keywords.join("\n"),
        };
        let scope = match typed {
            Some(form) => RevocationScope::parse(form.text("revocation-scope")).unwrap_or_default(),
            None => self.scope,
        };
        html! {
            section.panel #consent aria-labelledby="consent-heading" {
                h2 #consent-heading { "Consent" }
                form.stack method="post" action=(super::path(SettingsAction::SaveConsent)) {
                    (layout::csrf_field(visitor))
                    input type="hidden" name="consent-form" value="1";
                    fieldset.choice {
                        legend { "Outreach that needs recorded consent" }
                        @for channel in Channel::ALL {
                            @for purpose in Purpose::ALL {
                                @let value = pair_value(channel, purpose);
                                @let on = match typed {
                                    Some(form) => form.all("required").any(|v| v == value),
                                    None => self.required.iter().any(|r| r.channel == channel && r.purpose == purpose),
                                };
                                @let id = format!("consent-{}-{}", channel.as_str(), purpose.as_str());
                                span.pair {
                                    input id=(id) type="checkbox" name="required" value=(value) checked[on];
                                    label for=(id) { (channel.as_str()) " " (purpose.as_str()) }
                                }
                                " "
                            }
                        }
                        p.muted { "Calls with the assistant's voice need written consent for marketing." }
                    }
                    div {
                        label for="opt-out-keywords" { "Opt-out keywords" }
                        textarea #opt-out-keywords name="opt-out-keywords" rows="3"
                            aria-invalid=[shown.error_for("optOutKeywords").map(|_| "true")] { (keywords) }
                        @if let Some(message) = shown.error_for("optOutKeywords") { p.field-error { (message) } }
                        @else { p.muted { "The organization's own words that opt a lead out, like STOP: one per line, at most 20." } }
                    }
                    fieldset.choice {
                        legend { "A revocation unsubscribes" }
                        @for (value, label) in [(RevocationScope::All, "Every channel of the lead"), (RevocationScope::Channel, "Only the channel it came on")] {
                            @let id = format!("scope-{}", value.as_str());
                            span.pair {
                                input id=(id) type="radio" name="revocation-scope" value=(value.as_str()) checked[scope == value];
                                label for=(id) { (label) }
                            }
                            " "
                        }
                    }
                    div.actions { button type="submit" { "Save consent" } }
                }
            }
        }
    }
}

/// `POST /console/settings/consent`.
pub(super) async fn save(state: &AppState, visitor: &Visitor, form: Form) -> Result<Outcome> {
    let patch = consent_patch(&form);
    super::save(state, visitor, form, patch).await
}

/// The consent form as a patch: the checked pairs, the non-empty lines, the scope.
fn consent_patch(form: &Form) -> Result<OrgPatch> {
    let mut patch = OrgPatch::default();
    let mut required = Vec::new();
    for channel in Channel::ALL {
        for purpose in Purpose::ALL {
            let value = pair_value(channel, purpose);
            if form.all("required").any(|v| v == value) {
                required.push(ConsentRequirement { channel, purpose });
            }
        }
    }
    patch.consent_required(required);
    let keywords: Vec<&str> = form
        .text("opt-out-keywords")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    patch.opt_out_keywords(&keywords)?;
    let scope = RevocationScope::parse(form.text("revocation-scope")).ok_or_else(|| {
        crate::error::Error::field("revocationScope", "Choose what a revocation unsubscribes")
    })?;
    patch.revocation_scope(scope);
    Ok(patch)
}
