//! The settings page's "Assistant" section: the model server (saved as an
//! `AssistantPatch`, the key kept when left empty for the same URL, or removed) and "Test connection",
//! a one-line exchange through `Engine::try_assistant`.

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::channel::Channel;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::settings::org::{AssistantPatch, OrgPatch};
use crate::error::{Error, Result};
use crate::store::rows::EngineSettings;

/// The assistant as the section shows it (its key only as set or not).
struct Assistant {
    base_url: String,
    model: String,
    key_set: bool,
    timeout_ms: u64,
}

/// What the section shows: the assistant, if there is one.
pub(super) struct AssistantSectionView {
    assistant: Option<Assistant>,
}

impl AssistantSectionView {
    pub(super) fn of(engine: &EngineSettings) -> AssistantSectionView {
        AssistantSectionView {
            assistant: engine.assistant.as_ref().map(|a| Assistant {
                base_url: a.base_url.clone(),
                model: a.model.clone(),
                key_set: a.api_key.is_some(),
                timeout_ms: a.timeout_ms,
            }),
        }
    }

    pub(super) fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let a = self.assistant.as_ref();
        html! {
            section.panel aria-labelledby="assistant-heading" {
                h2 #assistant-heading { "Assistant" }
                form.stack method="post" action=(super::path(SettingsAction::SaveAssistant)) {
                    (layout::csrf_field(visitor))
                    (shown.field("assistant-url", "Model server URL", "assistant.baseUrl", shown.value("assistant-url", a.map_or("", |a| a.base_url.as_str())), "An OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."))
                    (shown.field("assistant-model", "Model", "assistant.model", shown.value("assistant-model", a.map_or("", |a| a.model.as_str())), ""))
                    div {
                        label for="assistant-key" { "API key" }
                        input #assistant-key type="password" name="assistant-key" autocomplete="off";
                        p.muted { @if a.is_some_and(|a| a.key_set) { "Set; leave empty to keep it." } @else { "None." } }
                    }
                    (shown.field("assistant-timeout", "Timeout (ms)", "assistant.timeoutMs", shown.value("assistant-timeout", &a.map_or(String::new(), |a| a.timeout_ms.to_string())), ""))
                    div.actions {
                        button type="submit" name="op" value="save" { "Save assistant" }
                        @if a.is_some() { button.danger type="submit" name="op" value="remove" { "Remove the assistant" } }
                    }
                }
                @if a.is_some() {
                    form method="post" action=(super::path(SettingsAction::TestAssistant)) {
                        (layout::csrf_field(visitor))
                        button.secondary type="submit" { "Test connection" }
                    }
                }
            }
        }
    }
}

/// `POST /console/settings/assistant`: saved (`op=save`) or removed (`op=remove`).
pub(super) async fn save(state: &AppState, visitor: &Visitor, form: Form) -> Result<Outcome> {
    let patch = if form.text("op") == "remove" {
        let mut patch = OrgPatch::default();
        patch.assistant(None);
        Ok(patch)
    } else {
        assistant_patch(&form).map(|assistant| {
            let mut patch = OrgPatch::default();
            patch.assistant(Some(assistant));
            patch
        })
    };
    super::save(state, visitor, form, patch).await
}

/// The assistant form: its members (the key and the timeout only when given).
fn assistant_patch(form: &Form) -> Result<AssistantPatch> {
    let mut assistant = AssistantPatch::default();
    assistant.base_url(form.text("assistant-url"))?;
    assistant.model(form.text("assistant-model"))?;
    if !form.text("assistant-key").is_empty() {
        assistant.api_key(Some(form.text("assistant-key")));
    }
    let timeout = form.text("assistant-timeout");
    if !timeout.is_empty() {
        let ms = timeout
            .parse::<u64>()
            .map_err(|_| Error::invalid_field("assistant.timeoutMs"))?;
        assistant.timeout_ms(Some(ms))?;
    }
    Ok(assistant)
}

/// `POST /console/settings/assistant-test`: the assistant's answer (and how long it
/// took), or why there was none.
pub(super) async fn test(state: &AppState, visitor: &Visitor) -> Result<Outcome> {
    let turns = [crate::providers::model::protocol::Turn {
        from_lead: true,
        text: "Hello, is anyone there?".into(),
    }];
    let tried = state
        .engine
        .try_assistant(
            visitor.org(),
            "Answer in one short sentence.",
            &turns,
            Channel::Sms,
        )
        .await?;
    Ok(Outcome::shown(Shown::notice(match tried {
        Ok(tried) => format!(
            "The assistant answered in {} ms: \"{}\"",
            tried.took.as_millis(),
            tried.reply
        ),
        Err(reason) => reason,
    })))
}
