//! Carries out a warm transfer's effects (`domain::voice::warm::Effect`) through
//! Twilio's Calls API, outside the writer: ringing a person (the first one after the
//! assistant's whisper summary came, or [`SUMMARY_WAIT`] passed; `Calls.json` with
//! `MachineDetection=Enable`, `Timeout` = `ringSeconds`, its answer, digit and status
//! webhooks under the call's `warm` path), taking the lead's call back from the
//! conference (`Calls/{sid}.json` with new TwiML: the assistant's relay, or a sorry and
//! a hang-up, the lead then handed off to a person), and ending a person's leg (told
//! "The caller hung up" in the whisper, or cancelled while it rings). The answer to a
//! ring is committed at once (`warm::dialed`), and whatever it asks next is carried out
//! in turn. A failure is logged; the call's own webhooks go on telling what happens.

use std::sync::Arc;

use super::guard::guard;
use super::Engine;
use crate::channel::Channel;
use crate::domain::conversation::handling;
use crate::domain::voice::transcript::{self, Role};
use crate::domain::voice::voice::Answer;
use crate::domain::voice::warm::{self, Effect};
use crate::providers::callbacks::{self, CallHook};
use crate::providers::model::{self, protocol::Turn, whisper};
use crate::providers::twilio::Twilio;
use crate::providers::twiml;
use crate::store::rows::ProviderSettings;
use crate::store::Reader;
use crate::time::now_micros;

/// How long the whisper's summary may take before the template is used instead.
pub const SUMMARY_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

impl Engine {
    /// Carries out `effects` of call `call_id`'s warm transfer, in order, with those
    /// they lead to.
    pub async fn warm_effects(self: Arc<Self>, org: String, call_id: String, effects: Vec<Effect>) {
        let mut queue: std::collections::VecDeque<Effect> = effects.into();
        while let Some(effect) = queue.pop_front() {
            match self.warm_effect(&org, &call_id, effect).await {
                Ok(next) => queue.extend(next),
                Err(e) => {
                    tracing::warn!(org, call = call_id, error = %e.to_string_for_logs(), "a warm transfer's step failed");
                }
            }
        }
    }

    /// Asks the assistant for the whisper's summary of call `call_id`, at most
    /// [`SUMMARY_WAIT`] (one attempt); kept when it came, else the whisper uses its
    /// template. Nothing without an assistant.
    async fn whisper_summary(&self, org: &str, call_id: &str) -> crate::error::Result<()> {
        let (settings, turns) = {
            let read = self.store.read()?;
            let turns: Vec<Turn> = read
                .call(org, call_id)?
                .as_ref()
                .map(transcript::conversation)
                .unwrap_or_default()
                .into_iter()
                .map(|(role, text)| Turn {
                    from_lead: role == Role::Lead,
                    text,
                })
                .collect();
            (read.engine_settings(org)?.assistant, turns)
        };
        let Some(settings) = settings else {
            return Ok(());
        };
        let server = super::model_server(&settings);
        let body = whisper::request_body(&server.model, &turns);
        let asked = model::complete_with_backoff(self.http_client(), &server, &body, &[]);
        let text = match tokio::time::timeout(SUMMARY_WAIT, asked).await {
            Ok(Ok(answer)) => whisper::summary(&answer),
            Ok(Err(failure)) => {
                tracing::info!(org, call = call_id, %failure, "no whisper summary from the assistant; the template is used");
                None
            }
            Err(_) => {
                tracing::info!(
                    org,
                    call = call_id,
                    "the whisper summary was slow; the template is used"
                );
                None
            }
        };
        if let Some(text) = text {
            let (o, c) = (org.to_string(), call_id.to_string());
            self.store
                .write(move |tx| warm::summarized(tx, &o, &c, &text))
                .await?;
        }
        Ok(())
    }

    async fn warm_effect(
        &self,
        org: &str,
        call_id: &str,
        effect: Effect,
    ) -> crate::error::Result<Vec<Effect>> {
        if let Effect::HandOff { lead_id } = effect {
            let org = org.to_string();
            self.store
                .write(move |tx| handling::call_back_wanted(tx, &org, &lead_id))
                .await?;
            return Ok(Vec::new());
        }
        let ProviderSettings::Twilio(settings) = self.store.read()?.engine_settings(org)?.voice
        else {
            return Ok(Vec::new());
        };
        let Some(base) = self.public_url().map(str::to_string) else {
            return Ok(Vec::new());
        };
        let twilio = Twilio::new(settings);
        let client = self.http_client();
        match effect {
            Effect::Ring(ring) => {
                if ring.attempt == 1 {
                    self.whisper_summary(org, call_id).await?;
                }
                let url = callbacks::warm(&base, org, call_id, "answer", Some(ring.attempt));
                let status = callbacks::warm(&base, org, call_id, "status", Some(ring.attempt));
                let outcome = twilio
                    .ring_person(client, &ring.number, &url, &status, ring.ring_seconds)
                    .await;
                let (o, c, attempt) = (org.to_string(), call_id.to_string(), ring.attempt);
                let now = now_micros();
                self.store
                    .write(move |tx| warm::dialed(tx, &o, &c, attempt, &outcome, now))
                    .await
            }
            Effect::TakeBack { lead_sid, answer } => {
                let document = match answer {
                    Answer::Relay { greeting } => twiml::relay(
                        &callbacks::call(&base, org, call_id, CallHook::Transfer),
                        &callbacks::relay(&base, org, call_id),
                        Some(&guard(&greeting, Channel::Voice)),
                        None,
                    ),
                    Answer::Say(text) => {
                        twiml::say_then_hangup(&guard(&text, Channel::Voice), None)
                    }
                    _ => twiml::hangup(),
                };
                if let Err(why) = twilio.update_call(client, &lead_sid, &document).await {
                    tracing::warn!(org, call = call_id, %why, "the lead's call could not be taken back from the conference");
                }
                Ok(Vec::new())
            }
            Effect::HandOff { .. } => Ok(Vec::new()),
            Effect::EndLeg { sid, told } => {
                let ended = if told {
                    let document = twiml::say_then_hangup(warm::CALLER_HUNG_UP, None);
                    twilio.update_call(client, &sid, &document).await
                } else {
                    twilio.cancel_call(client, &sid).await
                };
                if let Err(why) = ended {
                    tracing::warn!(org, call = call_id, %why, "a transfer's person leg could not be ended");
                }
                Ok(Vec::new())
            }
        }
    }
}
