//! `/console/settings/{section}` (admins): one page per section, reached by the
//! settings' sub-navigation (`/console/settings` shows the first); the page's frame (a
//! notice, a secret shown once, a refusal) around the section, one file each: the organization (saved exactly as
//! `PATCH /v1/org` saves it, each refusal shown beside its field), the consent policy
//! and opt-out keywords, the assistant, the
//! providers, the people (added with a password shown once, a role changed, disabled),
//! the API keys (created with the key shown once, revoked), the webhook endpoints (added
//! with their signing secret shown once, removed; their recent deliveries retried) and
//! the notification emails sent. Each section has a view built from one snapshot and
//! its own handlers of the `SettingsAction`s it owns (the calendars, one edited at a
//! time by `?calendar=`, have theirs too); `act` routes them, and each
//! returns to its own section's page.

mod assistant;
mod calendars;
mod consent;
mod keys;
mod notifications;
mod organization;
mod people;
mod providers;
mod webchat;
mod webhooks;

use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout;
use super::respond;
use super::routes::{SettingsAction, SettingsSection};
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::engagement::reactions::React;
use crate::domain::settings::org::{self, OrgPatch};
use crate::error::{Error, Result};
use crate::store::Reader;

/// What the page shows besides the settings: a notice, a secret shown once, or a
/// refusal beside a field of a settings form (with what was typed).
#[derive(Debug, Default)]
struct Shown {
    notice: Option<String>,
    secret: Option<(String, String)>,
    /// Every refusal of the form posted: (the interface's field, words), each shown
    /// beside its field.
    field_errors: Vec<(String, String)>,
    typed: Option<Form>,
    /// The calendar whose form the "Calendars" section shows (`?calendar=`).
    editing: Option<String>,
}

impl Shown {
    fn notice(notice: impl Into<String>) -> Shown {
        Shown {
            notice: Some(notice.into()),
            ..Shown::default()
        }
    }

    fn secret(what: String, secret: String) -> Shown {
        Shown {
            secret: Some((what, secret)),
            ..Shown::default()
        }
    }

    /// The refusal of `field` (the interface's name for it), if it is one refused.
    fn error_for(&self, field: &str) -> Option<&str> {
        self.field_errors
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    }

    /// A refusal of a form posted (`typed`), in words.
    fn refused(e: &Error, typed: Form) -> Shown {
        Shown::refusals(std::slice::from_ref(e), typed)
    }

    /// Every refusal of a form posted (`typed`), each in words beside its field.
    fn refusals(errors: &[Error], typed: Form) -> Shown {
        let field_errors = errors
            .iter()
            .map(|e| {
                let field = e.refused_field().unwrap_or_default().to_string();
                let words = in_words(&field, e.to_string());
                (field, words)
            })
            .collect();
        Shown {
            field_errors,
            typed: Some(typed),
            ..Shown::default()
        }
    }

    /// What a form field shows: what was typed after a refusal, else what is saved.
    fn value(&self, name: &str, saved: &str) -> String {
        // Another section's fields (not in the form posted) keep what is saved.
        match self.typed.as_ref().and_then(|form| form.get(name)) {
            Some(typed) => typed.to_string(),
            None => saved.to_string(),
        }
    }

    /// A labelled text input named `id`, its refusal (`api`, the interface's name of the
    /// field) or its hint below it.
    fn field(&self, id: &str, label: &str, api: &str, current: String, hint: &str) -> Markup {
        self.listed_field(id, label, api, current, hint, None)
    }

    /// As [`Shown::field`], offering the choices of the `<datalist>` named `list`.
    fn listed_field(
        &self,
        id: &str,
        label: &str,
        api: &str,
        current: String,
        hint: &str,
        list: Option<&str>,
    ) -> Markup {
        let error = self.error_for(api);
        html! {
            div {
                label for=(id) { (label) }
                input id=(id) type="text" name=(id) value=(current) list=[list] autocomplete="off"
                    aria-invalid=[error.map(|_| "true")] aria-describedby=[error.map(|_| format!("{id}-error"))];
                @if let Some(message) = error { p.field-error id={ (id) "-error" } { (message) } }
                @else if !hint.is_empty() { p.muted { (hint) } }
            }
        }
    }
}

/// What an action leads to: back to the page saved, or the page showing something.
enum Outcome {
    Saved,
    Show(Shown),
}

impl Outcome {
    fn shown(shown: Shown) -> Outcome {
        Outcome::Show(shown)
    }
}

/// A refusal of a format as a person reads it beside the field, not the API's words.
fn in_words(field: &str, message: String) -> String {
    let unknown_zone = field == "timeZone" && message.starts_with("Unknown time zone");
    if !message.starts_with("Invalid format") && !unknown_zone {
        return message;
    }
    match field {
        "quietHours" => "Use a time like 9:00 PM.".to_string(),
        "timeZone" => {
            "Choose a time zone from the list, such as America/Chicago or Central Time.".to_string()
        }
        "defaultCountry" => "Use a country such as US or United States.".to_string(),
        "holidays" => "Use dates like 2026-12-25, separated by spaces.".to_string(),
        "voiceOptOutDigit" => "Use one key from 0 to 9.".to_string(),
        _ => message,
    }
}

/// Where a settings form posts `action`.
fn path(action: SettingsAction) -> String {
    format!("/console/settings/{}", action.segment())
}

/// `GET /console/settings/{section}` (`/console/settings`: the first).
pub fn page(
    state: &AppState,
    visitor: &Visitor,
    section: SettingsSection,
    query: &str,
) -> Result<Response<Body>> {
    let query = Form::parse(query.as_bytes()).unwrap_or_default();
    // What a refused save left for this page (its redirect), else what the query asks.
    let mut shown = state
        .flash
        .take::<Shown>(visitor.token_hash, &section.path())
        .unwrap_or_default();
    if query.get("saved") == Some("1") {
        shown.notice = Some("Saved.".to_string());
    }
    if shown.editing.is_none() {
        shown.editing = query.get("calendar").map(str::to_string);
    }
    render(state, visitor, section, shown, StatusCode::OK)
}

/// The settings' sub-navigation, `current` marked.
fn subnav(current: SettingsSection) -> Markup {
    html! {
        nav.subnav aria-label="Settings sections" {
            ul {
                @for (_, title, section) in SettingsSection::ALL {
                    li {
                        a href=(section.path()) aria-current=[(section == current).then_some("page")] { (title) }
                    }
                }
            }
        }
    }
}

/// The page of `section`: its view, from one snapshot.
fn render(
    state: &AppState,
    visitor: &Visitor,
    section: SettingsSection,
    shown: Shown,
    status: StatusCode,
) -> Result<Response<Body>> {
    let org_id = visitor.org();
    let read = state.store.read()?;
    let record = read
        .org(org_id)?
        .ok_or_else(|| Error::Internal("the visitor's organization is missing".into()))?;
    let engine = read.engine_settings(org_id)?;
    let zone = engine.time_zone.clone();
    let view = match section {
        SettingsSection::Organization => {
            organization::OrgSectionView::of(&record, &engine).view(visitor, &shown)
        }
        SettingsSection::Consent => consent::ConsentSectionView::of(&engine).view(visitor, &shown),
        SettingsSection::Assistant => {
            assistant::AssistantSectionView::of(&engine).view(visitor, &shown)
        }
        SettingsSection::Providers => {
            providers::ProvidersSectionView::of(&engine, read.browser_call_keys(org_id)?)
                .view(visitor, &shown)
        }
        SettingsSection::People => people::PeopleSectionView::of(&read, visitor)?.view(visitor),
        SettingsSection::Keys => keys::KeysSectionView::of(&read, org_id, &zone)?.view(visitor),
        SettingsSection::Webhooks => {
            webhooks::WebhooksSectionView::of(&read, org_id, &zone)?.view(visitor)
        }
        SettingsSection::Calendars => {
            // After a refusal, the calendar of the form posted.
            let editing = shown
                .editing
                .as_deref()
                .or_else(|| shown.typed.as_ref().and_then(|f| f.get("name")));
            calendars::CalendarsSectionView::of(
                &read,
                org_id,
                &zone,
                state.engine.public_url(),
                editing,
            )?
            .view(visitor, &shown)
        }
        SettingsSection::Notifications => {
            notifications::NotificationsSectionView::of(&read, org_id, &zone)?.view()
        }
        SettingsSection::Webchat => webchat::WebchatSectionView::of(
            read.webchat_settings(org_id)?,
            org_id,
            state.engine.public_url(),
        )
        .view(visitor, &shown),
    };
    let markup = layout::page(
        &format!("{} · Settings", section.title()),
        Some(visitor),
        html! {
            h1 { "Settings" }
            (subnav(section))
            @if let Some(notice) = &shown.notice { p.notice role="status" { (notice) } }
            @match shown.field_errors.as_slice() {
                [] => {}
                [(_, message)] => p.field-error role="alert" { "Not done: " (message) },
                several => div.field-error role="alert" {
                    p { "Not done: " (several.len()) " fields need a change." }
                    ul { @for (_, message) in several { li { (message) } } }
                },
            }
            @if let Some((what, secret)) = &shown.secret {
                div.notice role="status" {
                    p { (what) " It is shown only now: copy it." }
                    p { code.secret { (secret) } }
                }
            }
            (view)
        },
    );
    Ok(respond::html(status, markup))
}

/// `POST /console/settings/{action}`: the action's section handles it.
pub async fn act(
    state: &AppState,
    visitor: &Visitor,
    action: SettingsAction,
    form: Form,
) -> Result<Response<Body>> {
    let typed = form.clone();
    let outcome = match action {
        SettingsAction::SaveOrg => organization::save(state, visitor, form).await,
        SettingsAction::SaveConsent => consent::save(state, visitor, form).await,
        SettingsAction::SaveWebchat => webchat::save(state, visitor, form).await,
        SettingsAction::SaveAssistant => assistant::save(state, visitor, form).await,
        SettingsAction::TestAssistant => assistant::test(state, visitor).await,
        SettingsAction::SaveProviders => providers::save(state, visitor, form).await,
        SettingsAction::SendTest => providers::send_test(state, visitor, &form).await,
        SettingsAction::AddPerson => people::add(state, visitor, &form).await,
        SettingsAction::SetRole => people::set_role(state, visitor, &form).await,
        SettingsAction::DisablePerson => people::disable(state, visitor, &form).await,
        SettingsAction::CreateKey => keys::create(state, visitor, &form).await,
        SettingsAction::RevokeKey => keys::revoke(state, visitor, &form).await,
        SettingsAction::AddWebhook => webhooks::add(state, visitor, &form).await,
        SettingsAction::RemoveWebhook => webhooks::remove(state, visitor, &form).await,
        SettingsAction::RetryDelivery => webhooks::retry(state, visitor, &form).await,
        SettingsAction::SaveCalendar => calendars::save(state, visitor, &form).await,
        SettingsAction::DeleteCalendar => calendars::delete(state, visitor, &form).await,
        SettingsAction::TestCalendar => calendars::test(state, visitor, &form).await,
        SettingsAction::RotateFeed => calendars::rotate(state, visitor, &form).await,
    };
    // A refusal is shown on the settings page beside its field (or above the sections),
    // with what was typed, never on a bare error page.
    let outcome = match outcome {
        Ok(outcome) => outcome,
        // Another organization's (or a missing) record: the page at 404, saying so.
        Err(e @ Error::NotFound(_)) => {
            let shown = Shown::notice(e.to_string());
            return render(
                state,
                visitor,
                action.section(),
                shown,
                StatusCode::NOT_FOUND,
            );
        }
        Err(e) if e.is_bad_request() || matches!(e, Error::Conflict(_)) => {
            Outcome::Show(Shown::refused(&e, typed))
        }
        Err(e) => return Err(e),
    };
    let section = action.section();
    match outcome {
        Outcome::Saved => Ok(respond::redirect(&format!("{}?saved=1", section.path()))),
        // Post/Redirect/Get: what the page shows (a refusal with what was typed, a
        // notice, a secret shown once) waits for the GET the redirect leads to.
        Outcome::Show(shown) => {
            let path = section.path();
            let to = match &shown.editing {
                Some(calendar) => format!(
                    "{path}?{}",
                    serde_urlencoded::to_string([("calendar", calendar)]).unwrap_or_default()
                ),
                None => path.clone(),
            };
            state.flash.put(visitor.token_hash, &path, shown);
            Ok(respond::redirect(&to))
        }
    }
}

/// Saves a form's patch of the organization's settings exactly as `PATCH /v1/org` does;
/// a refusal (building the patch or saving it) is shown beside its field, with what was
/// typed.
async fn save(
    state: &AppState,
    visitor: &Visitor,
    form: Form,
    patch: Result<OrgPatch>,
) -> Result<Outcome> {
    let caller = visitor.caller();
    let public_url = state.engine.public_url().map(str::to_string);
    let policy = state.engine.http_client().policy();
    let saved = match patch {
        Ok(patch) => {
            state
                .store
                .write(move |tx| {
                    org::update(tx, &caller, patch.clone(), public_url.as_deref(), policy)
                        .react(tx)
                        .map(drop)
                })
                .await
        }
        Err(e) => Err(e),
    };
    match saved {
        Ok(()) => Ok(Outcome::Saved),
        Err(e) if e.is_bad_request() => Ok(Outcome::Show(Shown::refused(&e, form))),
        Err(e) => Err(e),
    }
}
