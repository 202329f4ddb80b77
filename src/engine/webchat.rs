//! Web chat's live side: the visitors' streams ([`Hub`]) and the assistant's turn in a
//! web chat (`Engine::webchat_turn`), plus the hourly purge of sessions that never
//! became leads (30 days after they began).
//!
//! A committed line (the visitor's, the assistant's, a person's, "Dana joined the
//! chat") is published to the session's stream after its write; nobody listening, it
//! is dropped (the widget replays the transcript when it connects). The assistant's
//! turn runs outside the writer like an SMS reply: the model is asked with the
//! campaign's instructions (`webchat.profile`, or the lead's profile once there is a
//! lead) and the transcript; before the visitor is a lead it has one tool,
//! `capture_contact`, which makes them one; once they are, the lead's tools
//! (`reply::converse`). One turn of a session runs at a time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};

use super::guard::guard;
use super::reply::{lead_data, Said, BUSY_LEAD_RECHECK, MAX_ROUNDS};
use super::{model_server, Engine};
use crate::channel::Channel;
use crate::domain::conversation::webchat::{self as chat, ContactForm};
use crate::error::Result;
use crate::providers::model::protocol::{self as assistant, Answer, Context, Turn};
use crate::providers::model::{self, tools::ToolCallRequest};
use crate::store::webchat::{Speaker, WebchatLine};
use crate::store::Reader;
use crate::time::now_micros;

/// Lines a slow stream may fall behind before it is told to reload.
const STREAM_BUFFER: usize = 32;
/// How often sessions past their 30 days are looked for, and how many go per write.
const PURGE_EVERY: Duration = Duration::from_secs(3_600);
const PURGE_BATCH: usize = 500;
/// A session that never became a lead is kept this long.
pub const PURGE_AFTER_DAYS: i64 = 30;

/// What the instructions say about the channel, before the campaign's own.
const CHANNEL_NOTE: &str = "You are chatting with a visitor of the company's website in its chat window. Keep answers short. If they want to be contacted or to book, ask for their name and a phone number or email and call capture_contact.";

/// The open streams of web chat sessions: (org, session) → its channel.
#[derive(Debug, Default)]
pub struct Hub(Mutex<HashMap<(String, String), broadcast::Sender<WebchatLine>>>);

impl Hub {
    /// The session's stream of lines from now on.
    pub fn subscribe(&self, org: &str, session: &str) -> broadcast::Receiver<WebchatLine> {
        let mut streams = self.0.lock().unwrap_or_else(|p| p.into_inner());
        streams
            .entry((org.to_string(), session.to_string()))
            .or_insert_with(|| broadcast::channel(STREAM_BUFFER).0)
            .subscribe()
    }

    /// Sends a committed line to the session's streams, if any listens.
    pub fn publish(&self, org: &str, session: &str, line: &WebchatLine) {
        let mut streams = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = (org.to_string(), session.to_string());
        if let Some(sender) = streams.get(&key) {
            if sender.send(line.clone()).is_err() {
                streams.remove(&key);
            }
        }
        // Streams whose visitors left: their senders go with the next publish.
        streams.retain(|_, s| s.receiver_count() > 0);
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Engine {
    /// The web chats' streams.
    pub fn webchat(&self) -> &Hub {
        &self.webchat
    }

    /// Answers the session's newest messages with the assistant, in the background:
    /// the answer is committed and published to the visitor's stream.
    pub fn webchat_answer(self: &std::sync::Arc<Self>, org: String, session: String) {
        let engine = self.clone();
        tokio::spawn(async move {
            if let Err(e) = engine.webchat_turn(&org, &session).await {
                tracing::warn!(org, session, error = %e.to_string_for_logs(), "the web chat's assistant did not answer");
            }
        });
    }

    /// One assistant turn of a web chat.
    async fn webchat_turn(&self, org: &str, session_id: &str) -> Result<()> {
        let key = format!("webchat:{session_id}");
        let _turn = loop {
            match self.replying.start(org, &key) {
                Some(turn) => break turn,
                None => tokio::time::sleep(BUSY_LEAD_RECHECK).await,
            }
        };
        let (settings, session, instructions, lead, booking) = {
            let read = self.store.read()?;
            let Some(session) = read.webchat_session(org, session_id)? else {
                return Ok(());
            };
            // Answered already (a turn before this one saw the newest message), or a
            // person took over.
            let last_is_visitor = session
                .transcript
                .last()
                .is_some_and(|l| l.speaker == Speaker::Visitor);
            if !last_is_visitor || session.taken_over_by.is_some() {
                return Ok(());
            }
            let Some(settings) = read.engine_settings(org)?.assistant else {
                return Ok(());
            };
            let chat_settings = read.webchat_settings(org)?;
            // Messages that came while the last allowed turn ran spend no more.
            if session.assistant_turns >= chat_settings.max_assistant_turns_per_session {
                return Ok(());
            }
            let lead = match &session.lead_id {
                Some(id) => read.lead(org, id)?.filter(|l| l.deleted_at.is_none()),
                None => None,
            };
            let profile_name = lead
                .as_ref()
                .map(|l| l.customer_profile.clone())
                .filter(|p| !p.is_empty())
                .unwrap_or(chat_settings.profile);
            let profile = read.profile(org, &profile_name)?;
            let booking =
                lead.is_some() && profile.as_ref().is_some_and(|p| !p.calendar.is_empty());
            let instructions = format!(
                "{CHANNEL_NOTE}\n\n{}",
                profile.map(|p| p.instructions).unwrap_or_default()
            );
            (settings, session, instructions, lead, booking)
        };
        let history: Vec<Turn> = session
            .transcript
            .iter()
            .filter(|l| l.speaker != Speaker::Notice)
            .map(|l| Turn {
                from_lead: l.speaker == Speaker::Visitor,
                text: l.text.clone(),
            })
            .collect();
        let data = match &lead {
            Some(lead) => lead_data(lead),
            None => json!({"source": "webchat"}),
        };
        let local_time = match &lead {
            Some(lead) => self.local_time(org, lead)?,
            None => chrono::Utc::now()
                .format("%A %Y-%m-%d %H:%M UTC")
                .to_string(),
        };
        let context = Context {
            instructions: &instructions,
            lead: &data,
            channel: Channel::Sms,
            local_time: &local_time,
            history: &history,
            booking,
        };
        let said = match &lead {
            Some(lead) => {
                self.converse(
                    org,
                    &lead.id,
                    Channel::Sms,
                    &settings,
                    &context,
                    super::tools::ToolMode::Live {
                        transfer_available: false,
                    },
                )
                .await?
                .0
            }
            None => {
                self.converse_visitor(org, session_id, &settings, &context)
                    .await?
            }
        };
        let text = match said {
            Said::Text(text) => guard(&text, Channel::Sms),
            Said::Failed(failure) => {
                tracing::warn!(org, session = session_id, %failure, "the assistant did not answer a web chat");
                return Ok(());
            }
            Said::Nothing | Said::Ended(_) => String::new(),
        };
        if text.is_empty() {
            return Ok(());
        }
        let (o, s) = (org.to_string(), session_id.to_string());
        let line = self
            .store
            .write(move |tx| chat::answer(tx, &o, &s, Speaker::Assistant, &text, now_micros()))
            .await?;
        self.webchat.publish(org, session_id, &line);
        Ok(())
    }

    /// The model's turn before the visitor is a lead: its one tool is
    /// `capture_contact`, which makes them one.
    async fn converse_visitor(
        &self,
        org: &str,
        session_id: &str,
        settings: &crate::store::rows::AssistantSettings,
        context: &Context<'_>,
    ) -> Result<Said> {
        let server = model_server(settings);
        let max_tokens = assistant::max_tokens(&server, Channel::Sms);
        let mut extra: Vec<Value> = Vec::new();
        for _ in 0..=MAX_ROUNDS {
            let mut body = assistant::request_body(&settings.model, max_tokens, context, &extra);
            body["tools"] = json!([capture_contact_tool()]);
            let started = std::time::Instant::now();
            let answer = model::complete(&self.client, &server, &body).await;
            self.metrics
                .assistant(answer.is_ok(), started.elapsed().as_secs_f64());
            match answer {
                Err(failure) => return Ok(Said::Failed(failure)),
                Ok(Answer::Text(text)) => return Ok(Said::Text(text)),
                Ok(Answer::ToolCalls { message, calls }) => {
                    extra.push(message);
                    for call in &calls {
                        let result = self.capture_contact(org, session_id, call).await;
                        extra.push(assistant::tool_result_message(&call.id, &result));
                    }
                }
            }
        }
        Ok(Said::Nothing)
    }

    /// `capture_contact`: the visitor's name and phone or email; they become a lead.
    async fn capture_contact(&self, org: &str, session_id: &str, call: &ToolCallRequest) -> Value {
        if call.name != CAPTURE_CONTACT {
            return json!({"ok": false, "error": "Only capture_contact is available before the visitor gives a phone or email."});
        }
        let arguments: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let text = |k: &str| {
            arguments
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .chars()
                .take(200)
                .collect::<String>()
        };
        let form = ContactForm {
            name: text("name"),
            phone: text("phone"),
            email: text("email"),
            consent: false,
        };
        if form.phone.is_empty() && form.email.is_empty() {
            return json!({"ok": false, "error": "Ask for a phone number or an email address."});
        }
        let (o, s) = (org.to_string(), session_id.to_string());
        let written = self
            .store
            .write(move |tx| chat::become_lead(tx, &o, &s, &form, None, now_micros()))
            .await;
        match written {
            Ok(lead) => json!({"ok": true, "leadId": lead.id}),
            Err(e) if e.status().is_client_error() => json!({"ok": false, "error": e.to_string()}),
            Err(e) => {
                tracing::warn!(org, session = session_id, error = %e.to_string_for_logs(), "capture_contact failed");
                json!({"ok": false, "error": "The contact could not be saved."})
            }
        }
    }

    /// Removes sessions that never became leads, [`PURGE_AFTER_DAYS`] after they
    /// began, every hour until `stop`.
    pub(super) async fn purge_webchats(&self, mut stop: watch::Receiver<bool>) {
        loop {
            let cutoff = now_micros() - PURGE_AFTER_DAYS * 86_400_000_000;
            loop {
                match self
                    .store
                    .write(move |tx| tx.purge_webchat_sessions(cutoff, PURGE_BATCH))
                    .await
                {
                    Ok(n) if n == PURGE_BATCH => continue,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e.to_string_for_logs(), "could not purge old web chats");
                        break;
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(PURGE_EVERY) => {}
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
        }
    }
}

/// The tool a web chat's assistant has before the visitor is a lead.
pub const CAPTURE_CONTACT: &str = "capture_contact";

fn capture_contact_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": CAPTURE_CONTACT,
            "description": "Save the visitor's contact once they give a phone number or an email address (and their name if they gave it), so the team can follow up.",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The visitor's name"},
                    "phone": {"type": "string", "description": "Phone number as the visitor wrote it"},
                    "email": {"type": "string", "description": "Email address"}
                },
                "additionalProperties": false
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_gets_lines_published_after_it_subscribed() {
        let hub = Hub::default();
        let mut rx = hub.subscribe("acme", "wcs_1");
        let line = WebchatLine {
            seq: 1,
            at: 0,
            speaker: Speaker::Assistant,
            text: "Hi".into(),
        };
        hub.publish("acme", "wcs_2", &line);
        hub.publish("acme", "wcs_1", &line);
        assert_eq!(rx.try_recv().ok(), Some(line.clone()));
        drop(rx);
        hub.publish("acme", "wcs_1", &line);
        assert_eq!(hub.open(), 0, "a stream nobody reads goes");
    }
}
