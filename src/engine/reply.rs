//! The assistant's turn: one reply to a burst of the lead's messages.
//!
//! The model is asked with the profile's instructions and the last 50 messages; each
//! tool call it makes is applied (`tools`) and recorded, and it is asked again with the
//! results, at most four rounds. Its final text is sent like any other message, through
//! the gate, cut to the channel's limit. A failure (after two retries) is the
//! engagement's `lastError`, a log line and a metric; never a message to the lead.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::Value;

use super::assistant::{self, Answer, Context, Turn, MAX_HISTORY, SMS_MAX_CHARS};
use super::tools::Effect;
use super::Engine;
use crate::channel::{Channel, Owner};
use crate::domain::agenda::{self, JobKey};
use crate::domain::compliance;
use crate::domain::engagement;
use crate::domain::events::MessageShape;
use crate::error::Result;
use crate::store::records::LeadRecord;
use crate::store::{Flow, ReadTx, Reader, Start};

/// Rounds of tool calls before the model must have answered.
pub const MAX_ROUNDS: usize = 4;
/// The longest emailed reply, in characters.
const EMAIL_MAX_CHARS: usize = 10_000;

impl Engine {
    pub(super) async fn reply(
        &self,
        key: JobKey,
        org: &str,
        lead_id: &str,
        channel: Channel,
    ) -> Result<()> {
        let prepared = {
            let read = self.store.read()?;
            self.prepare(&read, &key, org, lead_id, channel)?
        };
        let (settings, instructions, lead, history) = match prepared {
            Prepared::Drop => return self.drop_reply(&key, org, lead_id, None).await,
            Prepared::Defer(until) => {
                let (key, org, lead) = (key.clone(), org.to_string(), lead_id.to_string());
                return self
                    .store
                    .write(move |tx| agenda::defer_reply(tx, &key, &org, &lead, channel, until))
                    .await;
            }
            Prepared::Ask(conversation) => {
                let Conversation {
                    settings,
                    instructions,
                    lead,
                    history,
                } = *conversation;
                (settings, instructions, lead, history)
            }
        };
        let name = format!("{} {}", lead.first_name, lead.last_name);
        let local_time = self.local_time(org, &lead)?;
        let context = Context {
            instructions: &instructions,
            lead_name: name.trim(),
            channel,
            local_time: &local_time,
            history: &history,
        };
        let (said, _) = self
            .converse(org, lead_id, channel, &settings, &context, false)
            .await?;
        let text = match said {
            Said::Text(text) => text,
            Said::Nothing => String::new(),
            // After an opt-out or a handoff the assistant says nothing more.
            Said::Ended(_) => return self.drop_reply(&key, org, lead_id, None).await,
            Said::Failed(error) => {
                tracing::warn!(org, lead = lead_id, %error, "the assistant did not answer; no reply sent");
                let error = format!("assistant: {error}");
                return self.drop_reply(&key, org, lead_id, Some(error)).await;
            }
        };
        let limit = match channel {
            Channel::Email => EMAIL_MAX_CHARS,
            Channel::Sms | Channel::Voice => SMS_MAX_CHARS,
        };
        let text = assistant::cut_to(text.trim(), limit);
        if text.is_empty() {
            return self.drop_reply(&key, org, lead_id, None).await;
        }
        let early = self.ask_service(org, lead_id, channel).await?;
        self.pace(org, channel).await?;
        let (org, lead) = (org.to_string(), lead_id.to_string());
        let claim = self
            .store
            .write(move |tx| {
                agenda::claim_reply(tx, &key, &org, &lead, channel, &text, early.clone())
            })
            .await?;
        self.carry_out(claim).await
    }

    /// One turn of the conversation: the model is asked, each tool it calls is applied
    /// and recorded, and it is asked again with the results, at most [`MAX_ROUNDS`]
    /// rounds. Answers what it said and how long the model took in all.
    pub(super) async fn converse(
        &self,
        org: &str,
        lead_id: &str,
        channel: Channel,
        settings: &assistant::AssistantSettings,
        context: &Context<'_>,
        transfer_available: bool,
    ) -> Result<(Said, Duration)> {
        let mut extra: Vec<Value> = Vec::new();
        let mut model_time = Duration::ZERO;
        for round in 0..=MAX_ROUNDS {
            let body = assistant::request_body(&settings.model, context, &extra);
            let started = Instant::now();
            let answer = assistant::complete(&self.client, settings, &body).await;
            let took = started.elapsed();
            model_time += took;
            self.metrics.assistant(answer.is_ok(), took.as_secs_f64());
            match answer {
                Err(error) => return Ok((Said::Failed(error), model_time)),
                Ok(Answer::Text(text)) => return Ok((Said::Text(text), model_time)),
                Ok(Answer::ToolCalls { .. }) if round == MAX_ROUNDS => {
                    tracing::warn!(org, lead = lead_id, "the assistant was still calling tools after {MAX_ROUNDS} rounds; nothing said");
                }
                Ok(Answer::ToolCalls { message, calls }) => {
                    extra.push(message);
                    let mut ended = None;
                    for call in &calls {
                        let (result, effect) = self
                            .apply_tool(org, lead_id, channel, call, transfer_available)
                            .await?;
                        extra.push(assistant::tool_result_message(&call.id, &result));
                        if effect.ends_conversation() {
                            ended = Some(effect);
                        }
                    }
                    if let Some(effect) = ended {
                        return Ok((Said::Ended(effect), model_time));
                    }
                }
            }
        }
        Ok((Said::Nothing, model_time))
    }

    fn prepare(
        &self,
        read: &ReadTx,
        key: &JobKey,
        org: &str,
        lead_id: &str,
        channel: Channel,
    ) -> Result<Prepared> {
        if !agenda::reply_wanted(read, key, org, lead_id)? {
            return Ok(Prepared::Drop);
        }
        let Some(lead) = read.lead(org, lead_id)? else {
            return Ok(Prepared::Drop);
        };
        let Some(settings) = read.engine_settings(org)?.assistant else {
            return Ok(Prepared::Drop);
        };
        if channel.is_unsubscribed(&lead.subscriptions) {
            return Ok(Prepared::Drop);
        }
        if let Some(until) = engagement::outside_quiet_hours(read, org, &lead, Utc::now())? {
            return Ok(Prepared::Defer(until));
        }
        let instructions = read
            .profile(org, &lead.customer_profile)?
            .map(|p| p.instructions)
            .unwrap_or_default();
        let history = conversation(read, org, lead_id)?;
        Ok(Prepared::Ask(Box::new(Conversation {
            settings,
            instructions,
            lead,
            history,
        })))
    }

    async fn drop_reply(
        &self,
        key: &JobKey,
        org: &str,
        lead: &str,
        error: Option<String>,
    ) -> Result<()> {
        let (key, org, lead) = (key.clone(), org.to_string(), lead.to_string());
        self.store
            .write(move |tx| agenda::drop_reply(tx, &key, &org, &lead, error.as_deref()))
            .await
    }

    /// The lead's local time for the system message, in its zone (or the
    /// organization's, or UTC).
    pub(super) fn local_time(&self, org: &str, lead: &LeadRecord) -> Result<String> {
        let org_zone = self.store.read()?.engine_settings(org)?.time_zone;
        let zone = compliance::zone_of(lead, &org_zone);
        let now = Utc::now();
        Ok(match zone.parse::<chrono_tz::Tz>() {
            Ok(tz) => now
                .with_timezone(&tz)
                .format("%A %Y-%m-%d %H:%M %Z")
                .to_string(),
            Err(_) => now.format("%A %Y-%m-%d %H:%M UTC").to_string(),
        })
    }
}

/// What one turn of the conversation came to.
#[derive(Debug)]
pub(super) enum Said {
    /// The assistant's words (empty: nothing to say).
    Text(String),
    /// Nothing: the model was still calling tools after the last round.
    Nothing,
    /// A tool ended the assistant's side (an opt-out, a handoff, a transfer).
    Ended(Effect),
    /// The model did not answer (after retries): why.
    Failed(String),
}

enum Prepared {
    Drop,
    Defer(chrono::DateTime<Utc>),
    Ask(Box<Conversation>),
}

/// What the model is asked with.
struct Conversation {
    settings: assistant::AssistantSettings,
    instructions: String,
    lead: LeadRecord,
    history: Vec<Turn>,
}

/// The lead's last messages, oldest first.
fn conversation(read: &ReadTx, org: &str, lead: &str) -> Result<Vec<Turn>> {
    let mut turns = VecDeque::with_capacity(MAX_HISTORY + 1);
    let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
    read.scan_messages(org, lead, start, |row| {
        if let Some(shape) = MessageShape::of(&row.kind, &row.record.data.0) {
            let text = shape
                .content
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            turns.push_back(Turn {
                from_lead: shape.owner == Owner::Lead,
                text: text.to_string(),
            });
            if turns.len() > MAX_HISTORY {
                turns.pop_front();
            }
        }
        Ok(Flow::Continue)
    })?;
    Ok(turns.into())
}
