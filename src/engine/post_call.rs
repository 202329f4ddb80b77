//! Post-call processing: a completed call's summary and disposition, from a durable
//! agenda row (`JobKind::PostCall`) the call's completion scheduled.
//!
//! The assistant is asked through `providers::model::call_outcome` (JSON-schema output, or a forced tool
//! call when the model server refuses `response_format`) with the call's spoken turns
//! and the profile's dispositions. An answer naming no known disposition is asked once
//! more with a correction; after that the call keeps its summary without a disposition
//! and the engagement's `lastError` says why. The outcome is committed by
//! `domain::voice::voice::classified`, which sends `call.dispositioned` once.

use super::model_server;
use super::Engine;
use crate::domain::engagement::agenda::JobKey;
use crate::domain::voice::transcript::{self, Role};
use crate::domain::voice::voice::{self, Classified};
use crate::error::Result;
use crate::providers::model::call_outcome::{self, Choice};
use crate::providers::model::protocol::Turn;
use crate::store::rows::DispositionRecord;
use crate::store::Reader;

/// Calls with fewer spoken turns are not sent to the model.
pub const MIN_TURNS: usize = 2;

impl Engine {
    pub(super) async fn post_call(&self, key: JobKey, org: &str, call_id: &str) -> Result<()> {
        let (settings, instructions, dispositions, turns) = {
            let read = self.store.read()?;
            let call = read.call(org, call_id)?;
            let session = read.voice_session(org, call_id)?;
            let settings = read.engine_settings(org)?.assistant;
            let profile = match session.as_ref().map(|s| s.profile.as_str()) {
                None | Some("") => None,
                Some(name) => read.profile(org, name)?,
            };
            let turns: Vec<Turn> = call
                .as_ref()
                .map(transcript::conversation)
                .unwrap_or_default()
                .into_iter()
                .map(|(role, text)| Turn {
                    from_lead: role == Role::Lead,
                    text,
                })
                .collect();
            let (instructions, dispositions) = profile
                .map(|p| (p.instructions, p.dispositions))
                .unwrap_or_default();
            (settings, instructions, dispositions, turns)
        };
        let outcome = match settings {
            Some(settings) if turns.len() >= MIN_TURNS => {
                self.classify(&settings, &instructions, &dispositions, &turns)
                    .await
            }
            // No assistant any more, or too little said: nothing to ask.
            _ => Classified::default(),
        };
        if let Some(error) = &outcome.error {
            tracing::warn!(org, call = call_id, %error, "post-call processing stopped short");
        }
        let (org, call) = (org.to_string(), call_id.to_string());
        self.store
            .write(move |tx| voice::classified(tx, &key, &org, &call, &outcome))
            .await
    }

    async fn classify(
        &self,
        settings: &crate::store::rows::AssistantSettings,
        instructions: &str,
        dispositions: &[DispositionRecord],
        turns: &[Turn],
    ) -> Classified {
        let choices: Vec<Choice> = dispositions
            .iter()
            .map(|d| Choice {
                id: &d.id,
                name: &d.name,
                description: &d.description,
            })
            .collect();
        let mut correction: Option<String> = None;
        let server = model_server(settings);
        loop {
            let asked = call_outcome::ask(
                &self.client,
                &server,
                instructions,
                turns,
                &choices,
                correction.as_deref(),
            )
            .await;
            let outcome = match asked {
                Ok(outcome) => outcome,
                Err(error) => {
                    return Classified {
                        error: Some(format!("assistant: {error}")),
                        ..Classified::default()
                    }
                }
            };
            let Some(id) = outcome.disposition_id else {
                return Classified {
                    summary: Some(outcome.summary),
                    ..Classified::default()
                };
            };
            if let Some(known) = dispositions.iter().find(|d| d.id == id) {
                return Classified {
                    summary: Some(outcome.summary),
                    disposition: Some((known.id.clone(), known.name.clone())),
                    error: None,
                };
            }
            let ids: Vec<&str> = dispositions.iter().map(|d| d.id.as_str()).collect();
            if correction.is_some() {
                return Classified {
                    summary: Some(outcome.summary),
                    disposition: None,
                    // The id is the model's words: not repeated in `lastError`.
                    error: Some("unknown disposition id (twice); the call has none".into()),
                };
            }
            correction = Some(format!(
                "dispositionId \"{id}\" is not one of: {}. Choose one of them.",
                ids.join(", ")
            ));
        }
    }
}
