//! The settings page's "Web chat" section: the organization's `webchat` setting (on or
//! off, the allowed origins one per line, the greeting, the campaign, the consent text,
//! the bounds), saved as an `OrgPatch` like `PATCH /v1/org`, and the snippet to copy
//! onto the website.

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::settings::org::OrgPatch;
use crate::domain::settings::webchat::WebchatPatch;
use crate::error::{Error, Result};
use crate::store::webchat::WebchatSettings;

/// What the section shows: the setting as saved, and where the widget is served from.
pub(super) struct WebchatSectionView {
    settings: WebchatSettings,
    org_id: String,
    /// The server's `public_url`, when set: the snippet's host.
    public_url: Option<String>,
}

impl WebchatSectionView {
    pub(super) fn of(
        settings: WebchatSettings,
        org_id: &str,
        public_url: Option<&str>,
    ) -> WebchatSectionView {
        WebchatSectionView {
            settings,
            org_id: org_id.to_string(),
            public_url: public_url.map(str::to_string),
        }
    }

    /// The snippet to put on the website's pages.
    pub fn snippet(&self) -> String {
        let host = self
            .public_url
            .as_deref()
            .unwrap_or("https://<this server>");
        format!(
            "<script src=\"{host}/webchat.js\" data-org=\"{}\" async></script>",
            self.org_id
        )
    }

    /// The section, showing what was typed after a refusal.
    pub(super) fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let typed = shown
            .typed
            .as_ref()
            .filter(|f| f.get("webchat-form").is_some());
        let s = &self.settings;
        let text = |name: &str, saved: String| match typed {
            Some(form) => form.text(name).to_string(),
            None => saved,
        };
        let enabled = typed.map_or(s.enabled, |f| f.get("enabled").is_some());
        let origins = text("allowed-origins", s.allowed_origins.join("\n"));
        let greeting = text("greeting", s.greeting.clone());
        let profile = text("profile", s.profile.clone());
        let consent = text("consent-text", s.consent_text.clone());
        let sessions = text("max-sessions", s.max_sessions_per_hour.to_string());
        let turns = text("max-turns", s.max_assistant_turns_per_session.to_string());
        let error = |field: &str| shown.error_for(&format!("webchat.{field}"));
        html! {
            section.panel #webchat aria-labelledby="webchat-heading" {
                h2 #webchat-heading { "Web chat" }
                p.muted { "Visitors of your website chat with the assistant of the campaign below; one who leaves a phone or email becomes a lead of that campaign. Chats show in the inbox, where you can take over." }
                div {
                    label for="webchat-snippet" { "Put this on your website's pages" }
                    textarea #webchat-snippet readonly rows="2" { (self.snippet()) }
                }
                form.stack method="post" action=(super::path(SettingsAction::SaveWebchat)) {
                    (layout::csrf_field(visitor))
                    input type="hidden" name="webchat-form" value="1";
                    span.pair {
                        input #webchat-enabled type="checkbox" name="enabled" value="1" checked[enabled];
                        label for="webchat-enabled" { "Web chat is on" }
                    }
                    div {
                        label for="allowed-origins" { "Websites allowed (one origin per line)" }
                        textarea #allowed-origins name="allowed-origins" rows="3"
                            aria-invalid=[error("allowedOrigins").map(|_| "true")] { (origins) }
                        @if let Some(m) = error("allowedOrigins") { p.field-error { (m) } }
                        @else { p.muted { "Such as https://www.example.com: no path. Other websites are refused." } }
                    }
                    div {
                        label for="greeting" { "Greeting" }
                        input #greeting type="text" name="greeting" value=(greeting) maxlength="500"
                            aria-invalid=[error("greeting").map(|_| "true")];
                        @if let Some(m) = error("greeting") { p.field-error { (m) } }
                    }
                    div {
                        label for="webchat-profile" { "Campaign for visitors" }
                        input #webchat-profile type="text" name="profile" value=(profile)
                            aria-invalid=[error("profile").map(|_| "true")];
                        @if let Some(m) = error("profile") { p.field-error { (m) } }
                        @else { p.muted { "Its instructions are the assistant's; leads from the chat join it." } }
                    }
                    div {
                        label for="consent-text" { "Consent text beside the box" }
                        textarea #consent-text name="consent-text" rows="3"
                            aria-invalid=[error("consentText").map(|_| "true")] { (consent) }
                        @if let Some(m) = error("consentText") { p.field-error { (m) } }
                        @else { p.muted { "Kept word for word as the proof of a visitor's consent." } }
                    }
                    div {
                        label for="max-sessions" { "New chats an hour, at most" }
                        input #max-sessions type="number" name="max-sessions" min="1" value=(sessions)
                            aria-invalid=[error("maxSessionsPerHour").map(|_| "true")];
                        @if let Some(m) = error("maxSessionsPerHour") { p.field-error { (m) } }
                    }
                    div {
                        label for="max-turns" { "Assistant answers per chat, at most" }
                        input #max-turns type="number" name="max-turns" min="0" value=(turns)
                            aria-invalid=[error("maxAssistantTurnsPerSession").map(|_| "true")];
                        @if let Some(m) = error("maxAssistantTurnsPerSession") { p.field-error { (m) } }
                    }
                    div.actions { button type="submit" { "Save web chat" } }
                }
            }
        }
    }
}

/// `POST /console/settings/webchat`.
pub(super) async fn save(state: &AppState, visitor: &Visitor, form: Form) -> Result<Outcome> {
    let patch = webchat_patch(&form);
    super::save(state, visitor, form, patch).await
}

fn number(form: &Form, name: &str, field: &str) -> Result<serde_json::Value> {
    form.text(name)
        .trim()
        .parse::<u64>()
        .map(serde_json::Value::from)
        .map_err(|_| Error::field(&format!("webchat.{field}"), "Write a whole number"))
}

/// The form as a patch of `webchat`.
fn webchat_patch(form: &Form) -> Result<OrgPatch> {
    let origins: Vec<&str> = form
        .text("allowed-origins")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let json = serde_json::json!({
        "enabled": form.get("enabled").is_some(),
        "allowedOrigins": origins,
        "greeting": form.text("greeting"),
        "profile": form.text("profile"),
        "consentText": form.text("consent-text"),
        "maxSessionsPerHour": number(form, "max-sessions", "maxSessionsPerHour")?,
        "maxAssistantTurnsPerSession": number(form, "max-turns", "maxAssistantTurnsPerSession")?,
    });
    let mut patch = OrgPatch::default();
    patch.webchat(WebchatPatch::from_json(&json)?);
    Ok(patch)
}
