//! The assistant's turn: one reply to a burst of the lead's messages.
//!
//! The model is asked with the profile's instructions, the lead's fields (as quoted
//! data) and the last 50 messages, keyword messages (STOP, START, HELP and their kin)
//! and their confirmations left out; each tool call it makes is applied (`tools`,
//! at most [`MAX_TOOL_CALLS`] of one answer, `handoff` and `opt_out` once) and
//! recorded, and it is asked again with the results, at most four rounds. Its final
//! text passes the output guard (`guard`) and is sent like any other message, through
//! the gate; empty after the guard, nothing is sent (a warning and the metric's
//! `empty`). A failure (after two retries) is the engagement's `lastError`, a log line
//! and a metric, each with the failure's class only; never a message to the lead.
//!
//! One reply of a lead asks the model at a time ([`Replying`]): a reply due while
//! another of the same lead is in flight is parked and looks again every
//! [`BUSY_LEAD_RECHECK`]; by then a newer message has usually replaced it, and the
//! newest answers every message that arrived meanwhile, in one model request.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::Value;

use super::guard::guard;
use super::model_server;
use super::tools::{self, Effect, ToolMode, MAX_TOOL_CALLS};
use super::Engine;
use crate::channel::{Channel, Owner};
use crate::domain::contact::keywords;
use crate::domain::contact::quiet_hours::{self, outside_quiet_hours};
use crate::domain::engagement::agenda::JobKey;
use crate::domain::engagement::claims;
use crate::domain::records::message_shape::MessageShape;
use crate::error::Result;
use crate::providers::model::protocol::{self as assistant, Answer, Context, Turn, MAX_HISTORY};
use crate::providers::model::{self, Failure};
use crate::store::rows::{AssistantSettings, LeadRecord};
use crate::store::{Flow, ReadTx, Reader, Start};

/// Rounds of tool calls before the model must have answered.
pub const MAX_ROUNDS: usize = 4;

/// How long a reply parked behind its lead's reply in flight waits before it looks
/// again.
pub const BUSY_LEAD_RECHECK: Duration = Duration::from_millis(250);

/// The (organization, lead) pairs whose reply is running now.
#[derive(Debug, Default)]
pub struct Replying(Arc<Mutex<HashSet<(String, String)>>>);

/// A lead's reply turn, given back when dropped.
pub struct ReplyTurn {
    replying: Arc<Mutex<HashSet<(String, String)>>>,
    lead: (String, String),
}

impl Replying {
    /// The lead's turn, unless another of its replies is running.
    pub fn start(&self, org: &str, lead: &str) -> Option<ReplyTurn> {
        let key = (org.to_string(), lead.to_string());
        let mut running = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !running.insert(key.clone()) {
            return None;
        }
        Some(ReplyTurn {
            replying: self.0.clone(),
            lead: key,
        })
    }
}

impl Drop for ReplyTurn {
    fn drop(&mut self) {
        self.replying
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.lead);
    }
}

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
        let (settings, instructions, lead, history, booking) = match prepared {
            Prepared::Drop => return self.drop_reply(&key, org, lead_id, None).await,
            Prepared::Defer(until) => {
                let (key, org, lead) = (key.clone(), org.to_string(), lead_id.to_string());
                return self
                    .store
                    .write(move |tx| claims::defer_reply(tx, &key, &org, &lead, channel, until))
                    .await;
            }
            Prepared::Ask(conversation) => {
                let Conversation {
                    settings,
                    instructions,
                    lead,
                    history,
                    booking,
                } = *conversation;
                (settings, instructions, lead, history, booking)
            }
        };
        let data = lead_data(&lead);
        let local_time = self.local_time(org, &lead)?;
        let context = Context {
            instructions: &instructions,
            lead: &data,
            channel,
            local_time: &local_time,
            history: &history,
            booking,
        };
        let (said, _) = self
            .converse(
                org,
                lead_id,
                channel,
                &settings,
                &context,
                ToolMode::Live {
                    transfer_available: false,
                },
            )
            .await?;
        let text = match said {
            Said::Text(text) => text,
            Said::Nothing => String::new(),
            // After an opt-out or a handoff the assistant says nothing more.
            Said::Ended(_) => return self.drop_reply(&key, org, lead_id, None).await,
            Said::Failed(failure) => {
                tracing::warn!(org, lead = lead_id, %failure, "the assistant did not answer; no reply sent");
                let error = format!("assistant: {failure}");
                return self.drop_reply(&key, org, lead_id, Some(error)).await;
            }
        };
        let text = guard(&text, channel);
        if text.is_empty() {
            self.nothing_to_say(org, lead_id, channel);
            return self.drop_reply(&key, org, lead_id, None).await;
        }
        let early = self.ask_service(org, lead_id, channel).await?;
        self.pace(org, channel).await?;
        let (org, lead) = (org.to_string(), lead_id.to_string());
        let claim = self
            .store
            .write(move |tx| {
                claims::taking(tx, &key, |tx, row| {
                    claims::claim_reply(tx, row, &org, &lead, channel, &text, early.clone())
                })
            })
            .await?;
        self.carry_out(claim).await
    }

    /// One turn of the conversation: the model is asked, each tool it calls is applied
    /// and recorded, and it is asked again with the results, at most [`MAX_ROUNDS`]
    /// rounds. Answers what it said and how long the model took in all. Under
    /// [`ToolMode::Dry`] (a replay) no tool is applied or recorded in the store: each
    /// call is recorded in the dry run, with the tokens the answers used.
    pub(super) async fn converse(
        &self,
        org: &str,
        lead_id: &str,
        channel: Channel,
        settings: &AssistantSettings,
        context: &Context<'_>,
        tools: ToolMode<'_>,
    ) -> Result<(Said, Duration)> {
        let mut extra: Vec<Value> = Vec::new();
        let mut model_time = Duration::ZERO;
        let server = model_server(settings);
        let max_tokens = assistant::max_tokens(&server, channel);
        for round in 0..=MAX_ROUNDS {
            let body = assistant::request_body(&settings.model, max_tokens, context, &extra);
            let started = Instant::now();
            let answer = match tools {
                ToolMode::Live { .. } => model::complete(&self.client, &server, &body).await,
                ToolMode::Dry(dry) => model::complete_counted(&self.client, &server, &body)
                    .await
                    .map(|(answer, tokens)| {
                        dry.add_tokens(tokens);
                        answer
                    }),
            };
            let took = started.elapsed();
            model_time += took;
            self.metrics.assistant(answer.is_ok(), took.as_secs_f64());
            match answer {
                Err(failure) => return Ok((Said::Failed(failure), model_time)),
                Ok(Answer::Text(text)) => return Ok((Said::Text(text), model_time)),
                Ok(Answer::ToolCalls { .. }) if round == MAX_ROUNDS => {
                    tracing::warn!(org, lead = lead_id, "the assistant was still calling tools after {MAX_ROUNDS} rounds; nothing said");
                }
                Ok(Answer::ToolCalls { message, calls }) => {
                    extra.push(message);
                    let (results, ended) = match tools {
                        ToolMode::Live { transfer_available } => {
                            self.apply_answer(org, lead_id, channel, &calls, transfer_available)
                                .await?
                        }
                        ToolMode::Dry(dry) => self.dry_answer(org, channel, &calls, dry).await?,
                    };
                    for (call, result) in calls.iter().zip(&results) {
                        extra.push(assistant::tool_result_message(&call.id, result));
                    }
                    if let Some(effect) = ended {
                        return Ok((Said::Ended(effect), model_time));
                    }
                }
            }
        }
        Ok((Said::Nothing, model_time))
    }

    /// Applies the tool calls of one answer, in order: the first [`MAX_TOOL_CALLS`]
    /// (a second `handoff` or `opt_out` refused), the rest recorded as too many in one
    /// write. Answers each call's result, in the calls' order, and the effect that ended
    /// the conversation, if one did.
    async fn apply_answer(
        &self,
        org: &str,
        lead_id: &str,
        channel: Channel,
        calls: &[crate::providers::model::tools::ToolCallRequest],
        transfer_available: bool,
    ) -> Result<(Vec<Value>, Option<Effect>)> {
        let mut results = Vec::with_capacity(calls.len());
        let mut ended = None;
        let mut applied_once: Vec<&str> = Vec::new();
        let (applied, over) = calls.split_at(calls.len().min(MAX_TOOL_CALLS));
        for call in applied {
            let name = call.name.as_str();
            if tools::once_per_answer(name) && applied_once.contains(&name) {
                let result = self
                    .record_refused(org, lead_id, channel, vec![call.clone()], tools::ONCE)
                    .await?;
                results.push(result);
                continue;
            }
            let (result, effect) = self
                .apply_tool(org, lead_id, channel, call, transfer_available)
                .await?;
            if result["ok"] == Value::Bool(true) && tools::once_per_answer(name) {
                applied_once.push(name);
            }
            if effect.ends_conversation() {
                ended = Some(effect);
            }
            results.push(result);
        }
        if !over.is_empty() {
            tracing::warn!(
                org,
                lead = lead_id,
                calls = calls.len(),
                "the assistant asked for more than {MAX_TOOL_CALLS} tool calls in one answer; the rest were not applied"
            );
            let result = self
                .record_refused(org, lead_id, channel, over.to_vec(), tools::TOO_MANY)
                .await?;
            results.extend(std::iter::repeat_n(result, over.len()));
        }
        Ok((results, ended))
    }

    /// "Suggest a reply": a draft of the next message to the lead on `channel` from the
    /// conversation so far, with the lead's profile's instructions. Nothing is sent,
    /// no tool is applied (a tool call's answer yields only its text), nothing is
    /// stored. `Ok(Err(reason))` when there is no draft to show.
    pub async fn suggest(
        &self,
        org: &str,
        lead_id: &str,
        channel: Channel,
    ) -> Result<std::result::Result<String, String>> {
        let (settings, instructions, lead, history) = {
            let read = self.store.read()?;
            let Some(lead) = read.lead(org, lead_id)? else {
                return Err(crate::error::Error::lead_not_found(lead_id));
            };
            let Some(settings) = read.engine_settings(org)?.assistant else {
                return Ok(Err(
                    "No assistant is configured (Settings, or PATCH /v1/org).".into(),
                ));
            };
            let instructions = read
                .profile(org, &lead.customer_profile)?
                .map(|p| p.instructions)
                .unwrap_or_default();
            (
                settings,
                instructions,
                lead.clone(),
                conversation(&read, org, lead_id)?,
            )
        };
        let data = lead_data(&lead);
        let local_time = self.local_time(org, &lead)?;
        let context = Context {
            instructions: &instructions,
            lead: &data,
            channel,
            local_time: &local_time,
            history: &history,
            booking: false,
        };
        let server = model_server(&settings);
        let max_tokens = assistant::max_tokens(&server, channel);
        let body = assistant::request_body(&settings.model, max_tokens, &context, &[]);
        let text = match model::complete(&self.client, &server, &body).await {
            Err(failure) => return Ok(Err(format!("The assistant did not answer: {failure}"))),
            Ok(Answer::Text(text)) => text,
            Ok(Answer::ToolCalls { message, .. }) => message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        };
        let draft = guard(&text, channel);
        if draft.is_empty() {
            return Ok(Err("The assistant had no draft to suggest.".into()));
        }
        Ok(Ok(draft))
    }

    /// The profile editor's playground: one answer of the configured assistant to a
    /// conversation typed by a person (`turns`, oldest first, the lead's last) with
    /// `instructions` (saved or not), on `channel`, for a sample lead. Tool calls come
    /// back as what they would do; nothing is applied, sent or stored.
    pub async fn try_assistant(
        &self,
        org: &str,
        instructions: &str,
        turns: &[Turn],
        channel: Channel,
    ) -> Result<std::result::Result<Tried, String>> {
        let Some(settings) = self.store.read()?.engine_settings(org)?.assistant else {
            return Ok(Err(
                "No assistant is configured (Settings, or PATCH /v1/org).".into(),
            ));
        };
        let data =
            serde_json::json!({"firstName": "Sam", "lastName": "Sample", "phone": "+15125550100"});
        let context = Context {
            instructions,
            lead: &data,
            channel,
            local_time: "(a sample time)",
            history: turns,
            booking: false,
        };
        let server = model_server(&settings);
        let max_tokens = assistant::max_tokens(&server, channel);
        let body = assistant::request_body(&settings.model, max_tokens, &context, &[]);
        let started = Instant::now();
        let answer = model::complete(&self.client, &server, &body).await;
        let took = started.elapsed();
        Ok(match answer {
            Err(failure) => Err(format!("The assistant did not answer: {failure}")),
            Ok(Answer::Text(text)) => Ok(Tried {
                reply: guard(&text, channel),
                would: Vec::new(),
                took,
            }),
            Ok(Answer::ToolCalls { message, calls }) => Ok(Tried {
                reply: guard(
                    message
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                    channel,
                ),
                would: calls
                    .iter()
                    .map(|c| {
                        format!(
                            "would call {} with {}",
                            c.name,
                            if c.arguments.is_empty() {
                                "{}"
                            } else {
                                &c.arguments
                            }
                        )
                    })
                    .collect(),
                took,
            }),
        })
    }

    /// Settings' "Send test": `text` to `to` through the organization's provider of
    /// `channel` (SMS or email), outside any lead, the gate and the store: the
    /// provider's answer in words.
    pub async fn send_test(
        &self,
        org: &str,
        channel: Channel,
        to: &str,
    ) -> Result<std::result::Result<String, String>> {
        use crate::providers::{Outgoing, Provider, SendOutcome};
        let settings = self.store.read()?.engine_settings(org)?;
        let provider = Provider::for_channel(&settings, channel);
        let outgoing = Outgoing {
            to: to.to_string(),
            text: "A test from engaged: this provider works.".into(),
            subject: (channel == Channel::Email).then(|| "A test from engaged".to_string()),
            unsubscribe_url: None,
            status_callback: None,
            thread: None,
        };
        let started = Instant::now();
        let outcome = match channel {
            Channel::Email => provider.send_email(&self.client, &outgoing).await,
            Channel::Sms | Channel::Voice => {
                provider.send_text(&self.client, &outgoing, &|| {}).await
            }
        };
        let ms = started.elapsed().as_millis();
        Ok(match outcome {
            SendOutcome::Accepted {
                provider_message_id,
                status,
            } => Ok(format!(
                "{} took it in {ms} ms: {} ({}).",
                provider.kind(),
                status.as_str(),
                provider_message_id
            )),
            SendOutcome::Refused { code, .. } => {
                Err(format!("{} refused it: {code}.", provider.kind()))
            }
            SendOutcome::Rejected { code, reply } => {
                Err(format!("{} refused it: {code} {reply}", provider.kind()))
            }
            SendOutcome::Unknown { error } => {
                Err(format!("No answer from {}: {error}", provider.kind()))
            }
        })
    }

    /// A reply that is empty after the output guard: nothing is sent.
    pub(super) fn nothing_to_say(&self, org: &str, lead_id: &str, channel: Channel) {
        tracing::warn!(
            org,
            lead = lead_id,
            channel = channel.as_str(),
            "the assistant's reply is empty after the output guard; nothing sent"
        );
        self.metrics.assistant_empty();
    }

    fn prepare(
        &self,
        read: &ReadTx,
        key: &JobKey,
        org: &str,
        lead_id: &str,
        channel: Channel,
    ) -> Result<Prepared> {
        if !claims::reply_wanted(read, key, org, lead_id)? {
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
        if let Some(until) = outside_quiet_hours(read, org, &lead, Utc::now())? {
            return Ok(Prepared::Defer(until));
        }
        let profile = read.profile(org, &lead.customer_profile)?;
        let booking = profile.as_ref().is_some_and(|p| !p.calendar.is_empty());
        let instructions = profile.map(|p| p.instructions).unwrap_or_default();
        let history = conversation(read, org, lead_id)?;
        Ok(Prepared::Ask(Box::new(Conversation {
            settings,
            instructions,
            lead,
            history,
            booking,
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
            .write(move |tx| claims::drop_reply(tx, &key, &org, &lead, error.as_deref()))
            .await
    }

    /// The lead's local time for the system message, in its zone (or the
    /// organization's, or UTC).
    pub(super) fn local_time(&self, org: &str, lead: &LeadRecord) -> Result<String> {
        let org_zone = self.store.read()?.engine_settings(org)?.time_zone;
        Ok(local_time_at(lead, &org_zone, Utc::now()))
    }
}

/// The lead's local time at `now`, in its zone (or `org_zone`, or UTC), as the system
/// message writes it.
pub(super) fn local_time_at(
    lead: &LeadRecord,
    org_zone: &str,
    now: chrono::DateTime<Utc>,
) -> String {
    let zone = quiet_hours::zone_of(lead, org_zone);
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => now
            .with_timezone(&tz)
            .format("%A %Y-%m-%d %H:%M %Z")
            .to_string(),
        Err(_) => now.format("%A %Y-%m-%d %H:%M UTC").to_string(),
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
    /// The model did not answer (after retries): the failure's class.
    Failed(Failure),
}

enum Prepared {
    Drop,
    Defer(chrono::DateTime<Utc>),
    Ask(Box<Conversation>),
}

/// What the model is asked with.
struct Conversation {
    settings: AssistantSettings,
    instructions: String,
    lead: LeadRecord,
    history: Vec<Turn>,
    /// The lead's profile has a calendar: the booking tools are offered.
    booking: bool,
}

/// The lead's fields the model may know, as data (the system message quotes it as
/// JSON; nothing in it is an instruction); with a booked meeting ahead, `nextMeeting`
/// (in the lead's zone, as a reminder writes it) so that a reply to a confirmation or
/// reminder can be answered, moved or canceled.
pub(super) fn lead_data(lead: &LeadRecord) -> Value {
    let tags: Vec<&str> = lead.tags.iter().map(|t| t.name.as_str()).collect();
    let next_meeting = lead.next_meeting_at.map(|at| {
        let zone = if lead.time_zone.is_empty() {
            "UTC"
        } else {
            &lead.time_zone
        };
        crate::domain::engagement::reminders::when(at, zone)
    });
    serde_json::json!({
        "nextMeeting": next_meeting,
        "firstName": lead.first_name,
        "lastName": lead.last_name,
        "phone": lead.phone,
        "email": lead.email,
        "timeZone": lead.time_zone,
        "summary": lead.summary,
        "tags": tags,
        "additionalInfo": lead.additional_info.0,
    })
}

/// The lead's last messages, oldest first, without keyword messages (STOP, START,
/// HELP and their kin) and the texts that answer them (`origin: keyword`): they are
/// compliance traffic, not conversation.
/// What the playground's assistant answered: its reply after the output guard, the
/// tool calls it would have made, and how long the model took.
#[derive(Debug, Clone)]
pub struct Tried {
    pub reply: String,
    pub would: Vec<String>,
    pub took: Duration,
}

fn conversation(read: &ReadTx, org: &str, lead: &str) -> Result<Vec<Turn>> {
    let mut turns = VecDeque::with_capacity(MAX_HISTORY + 1);
    let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
    let own = read.engine_settings(org)?.opt_out_keywords;
    read.scan_messages(org, lead, start, |row| {
        let data = &row.record.data.0;
        if let Some(shape) = MessageShape::of(&row.kind, data) {
            let text = shape.text();
            if keywords::is_keyword_traffic(&shape, data, &own) {
                return Ok(Flow::Continue);
            }
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

#[cfg(test)]
mod replying_tests {
    use super::Replying;

    #[test]
    fn one_reply_turn_per_lead_at_a_time() {
        let replying = Replying::default();
        let turn = replying.start("acme", "L1").expect("the first turn");
        assert!(replying.start("acme", "L1").is_none(), "one at a time");
        assert!(replying.start("acme", "L2").is_some(), "another lead");
        assert!(
            replying.start("globex", "L1").is_some(),
            "another organization"
        );
        drop(turn);
        assert!(replying.start("acme", "L1").is_some(), "free once it ends");
    }
}
