//! The relay: one live call's conversation over Twilio's ConversationRelay WebSocket.
//!
//! Twilio turns the lead's speech into `prompt` messages and speaks the `text` we send
//! back. Each last prompt is one assistant turn (the same conversation loop as texts,
//! `reply::converse`, with the voice tools and `transfer`); its answer goes back as one
//! text frame. A newer prompt while the model thinks replaces the turn in flight.
//!
//! Every turn is committed to the call's transcript as it happens, by one writer task
//! per call fed in order, so the relay never waits on the store: the lead's words are
//! written while the model thinks, the agent's after they are sent. An interruption
//! cuts the agent's last turn to what was spoken; a keypad digit is a turn of its own.
//! A tool that ends the assistant's side (transfer, handoff, opt-out) sends `end` with
//! the reason as `handoffData`; Twilio then calls the transfer path (`api::voice`).
//!
//! The call opt-out (`voice::CallOptOut`): the organization's keypad digit, or a lead's
//! turn that reads as a definite opt-out, drops the turn in flight, queues the opt-out
//! to the transcript writer (after the digit or the words, so in order), says
//! `voice::OPT_OUT_GOODBYE` and ends the session (`opt_out`); what Twilio sends after
//! that is recorded and never answered.
//!
//! Call screeners (`voice::screening`): on an outbound AI call the lead's first turns
//! are read for a screener; one is answered once with the profile's `screeningReply`
//! without the model (`hitCallScreening`), the screener's further words are recorded
//! and not answered, and the first turn that is not a screener's is the person
//! (`reachedHumanAfterScreening`), whom the assistant answers. Silence for
//! `screening::SILENCE_SECONDS` after the reply, or the end of the call, means nobody
//! came (`false`); the silence ends the session.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::guard::guard;
use super::reply::Said;
use super::tools::Effect;
use super::Engine;
use crate::channel::Channel;
use crate::domain::voice::screening::{Heard, Screening};
use crate::domain::voice::transcript::{self, Role};
use crate::domain::voice::voice;
use crate::error::{Error, Result};
use crate::providers::model::protocol::{Context, Turn};
use crate::providers::relay::{self, FromTwilio};
use crate::providers::twilio::Twilio;
use crate::providers::twiml;
use crate::store::rows::AssistantSettings;
use crate::store::rows::ProviderSettings;
use crate::store::rows::{LeadRecord, TransferStage, VoiceOptOut};
use crate::store::{Reader, Store};
use crate::time::now_micros;

/// What a call's turns need, read once when the relay opens.
struct CallContext {
    org: String,
    /// Empty for a caller no live lead has.
    lead_id: String,
    /// The lead's fields, as data for the system message (`{}` for an unknown caller).
    lead_data: serde_json::Value,
    local_time: String,
    instructions: String,
    /// `None`: no assistant any more; prompts are recorded, nothing is said.
    settings: Option<AssistantSettings>,
    /// The profile has a transfer number.
    transfer_available: bool,
    /// A known lead whose profile has a calendar: the booking tools are offered.
    booking: bool,
    greeting: String,
    /// The transcript had no turn yet (the greeting is recorded once).
    fresh: bool,
    /// The organization's call opt-out (its keypad digit).
    opt_out: VoiceOptOut,
    /// The organization's own opt-out words (`optOutKeywords`), read in a lead's turn.
    own_keywords: Vec<String>,
    /// On an outbound call to a lead: what a call screener hears (`voice::screening`).
    screening_reply: Option<String>,
}

/// One change to the transcript, applied in order by the call's writer task.
enum TranscriptOp {
    Said(Role, String, i64),
    Dtmf(String, i64),
    Interrupted(String),
    /// The lead opted out on the call (`voice::opt_out`).
    OptedOut(voice::CallOptOut),
    /// A call screener answered, or a person after it (`voice::screened`).
    Screened(voice::Screened),
}

type TurnFuture = Pin<Box<dyn Future<Output = Result<(Said, Duration)>> + Send>>;

/// What a live relay's handlers work on: its socket, the transcript's queue, the
/// conversation heard so far, the call.
struct Live<'a, S> {
    socket: &'a mut WebSocketStream<S>,
    ops: &'a mpsc::UnboundedSender<TranscriptOp>,
    heard: &'a mut Vec<Turn>,
    call: &'a Arc<CallContext>,
}

/// What happens to the assistant's turn in flight after a lead's turn.
enum Next {
    /// It goes on.
    Keep,
    /// It is dropped: nothing more is said for now.
    Cancel,
    /// It is dropped and the session is ending (an opt-out).
    End,
    /// This turn replaces it.
    Start(TurnFuture),
}

impl Engine {
    /// Runs the relay of call `call_id` until Twilio closes it.
    pub async fn relay<S>(self: Arc<Self>, org: String, call_id: String, socket: WebSocketStream<S>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.metrics.relay_opened();
        if let Err(e) = self.run_relay(&org, &call_id, socket).await {
            tracing::warn!(org, call = call_id, error = %e.to_string_for_logs(), "a relay ended with an error");
        }
        self.metrics.relay_closed();
    }

    /// A person's "Transfer the call" on lead `lead_id`'s live call `call_id`: when
    /// `transfer::transferable` allows it, the call is redirected (Twilio's Calls API,
    /// new TwiML) to its transfer webhook, which ends the relay session and transfers
    /// as the assistant's `transfer` tool does (warm or cold, as the campaign says).
    /// Refused in words (409) when it may not; the provider's refusal likewise.
    pub async fn transfer_call(&self, org: &str, lead_id: &str, call_id: &str) -> Result<()> {
        let read = self.store.read()?;
        let sid = crate::domain::voice::transfer::transferable(&read, org, lead_id, call_id)?
            .map_err(|why| Error::Conflict(why.to_string()))?;
        let ProviderSettings::Twilio(settings) = read.engine_settings(org)?.voice else {
            return Err(Error::Conflict(
                "Calls go through the sandbox: there is no live call to transfer.".into(),
            ));
        };
        drop(read);
        let Some(public_url) = self.public_url() else {
            return Err(Error::Conflict(
                "The server has no public URL for the provider to reach.".into(),
            ));
        };
        let url = crate::providers::callbacks::transfer_by_person(public_url, org, call_id);
        let client = self.http_client();
        Twilio::new(settings)
            .update_call(client, &sid, &twiml::redirect(&url))
            .await
            .map_err(|why| {
                tracing::warn!(org, call = call_id, %why, "a person's transfer was not taken by the voice provider");
                Error::Conflict("The voice provider did not take the transfer: try again.".into())
            })?;
        tracing::info!(org, call = call_id, "a person transfers the call");
        Ok(())
    }

    /// A machine began its greeting on call `call_id` (`call_sid`): when its end has
    /// not come [`voice::MACHINE_END_WAIT`] later (`voice::machine_gave_no_end`), the
    /// call hangs up, as a profile's `hang_up` would. Runs on its own task; a restart
    /// meanwhile leaves the call to the provider's own end.
    pub async fn machine_started(self: Arc<Self>, org: String, call_id: String, call_sid: String) {
        tokio::time::sleep(voice::MACHINE_END_WAIT).await;
        let (o, c) = (org.clone(), call_id.clone());
        let hang_up = self
            .store
            .write(move |tx| voice::machine_gave_no_end(tx, &o, &c))
            .await;
        match hang_up {
            Ok(true) => {
                tracing::info!(
                    org,
                    call = call_id,
                    "a machine's greeting never ended: the call hangs up"
                );
                if let Err(e) = self
                    .answer_machine(&org, &call_id, &call_sid, voice::MachineAnswer::HangUp)
                    .await
                {
                    tracing::warn!(org, call = call_id, error = %e.to_string_for_logs(), "a call a machine answered could not be hung up");
                }
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(org, call = call_id, error = %e.to_string_for_logs(), "a machine's unended greeting could not be recorded");
            }
        }
    }

    /// Gives live call `call_id` (the provider's `call_sid`), answered by a machine,
    /// what the profile says (`voice::MachineAnswer`): the voicemail spoken once then a
    /// hang-up, or a hang-up, as new TwiML through Twilio's Calls API; `hasVoicemail`
    /// once the provider took a voicemail. A failure is logged: the call stays as it was.
    pub async fn answer_machine(
        &self,
        org: &str,
        call_id: &str,
        call_sid: &str,
        answer: voice::MachineAnswer,
    ) -> Result<()> {
        let ProviderSettings::Twilio(settings) = self.store.read()?.engine_settings(org)?.voice
        else {
            return Ok(());
        };
        let twiml = match &answer {
            voice::MachineAnswer::Leave(text) => {
                twiml::say_then_hangup(&guard(text, Channel::Voice), None)
            }
            voice::MachineAnswer::HangUp => twiml::hangup(),
        };
        let client = self.http_client();
        match Twilio::new(settings)
            .update_call(client, call_sid, &twiml)
            .await
        {
            Ok(()) => {
                tracing::info!(
                    org,
                    call = call_id,
                    left = matches!(answer, voice::MachineAnswer::Leave(_)),
                    "a machine answered the call"
                );
                if matches!(answer, voice::MachineAnswer::Leave(_)) {
                    let (o, c) = (org.to_string(), call_id.to_string());
                    self.store
                        .write(move |tx| voice::voicemail_left(tx, &o, &c))
                        .await?;
                }
            }
            Err(why) => {
                tracing::warn!(org, call = call_id, %why, "a call a machine answered could not be given its voicemail or hang-up");
            }
        }
        Ok(())
    }

    fn call_context(&self, org: &str, call_id: &str) -> Result<CallContext> {
        let read = self.store.read()?;
        let session = voice::session(&read, org, call_id)?;
        let lead = match session.lead() {
            None => None,
            Some(id) => read.lead(org, id)?.filter(|l| l.deleted_at.is_none()),
        };
        let profile = match session.profile.as_str() {
            "" => None,
            name => read.profile(org, name)?,
        };
        let record = read.call(org, call_id)?;
        let fresh = record
            .as_ref()
            .is_none_or(|c| transcript::turns(c).is_empty());
        let screening_reply = match &record {
            Some(record) if fresh => {
                voice::screening_reply(&read, org, record, lead.as_ref(), profile.as_ref())?
            }
            _ => None,
        };
        let engine_settings = read.engine_settings(org)?;
        let (settings, opt_out, own_keywords) = (
            engine_settings.assistant,
            engine_settings.voice_opt_out,
            engine_settings.opt_out_keywords,
        );
        drop(read);
        let lead_record = lead.clone().unwrap_or_default();
        Ok(CallContext {
            org: org.to_string(),
            lead_id: session.lead_id,
            lead_data: match &lead {
                Some(lead) => super::reply::lead_data(lead),
                None => serde_json::json!({}),
            },
            local_time: self.local_time(org, &lead_record)?,
            instructions: profile
                .as_ref()
                .map(|p| p.instructions.clone())
                .unwrap_or_default(),
            // The assistant talks to unknown callers and to leads whose assistant is on.
            settings: settings.filter(|_| lead.as_ref().is_none_or(|l: &LeadRecord| l.is_ai_on)),
            booking: lead.is_some() && profile.as_ref().is_some_and(|p| !p.calendar.is_empty()),
            // A transfer that was tried does not start again on this call.
            transfer_available: profile.is_some_and(|p| !p.transfer_number.is_empty())
                && session.transfer == TransferStage::None,
            greeting: session.greeting,
            fresh,
            opt_out,
            own_keywords,
            screening_reply,
        })
    }

    async fn run_relay<S>(
        self: &Arc<Self>,
        org: &str,
        call_id: &str,
        mut socket: WebSocketStream<S>,
    ) -> Result<()>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let call = Arc::new(self.call_context(org, call_id)?);
        let (ops, queue) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_transcript(
            self.store.clone(),
            org.to_string(),
            call_id.to_string(),
            queue,
        ));
        let mut heard = self.heard_so_far(&call, call_id)?;
        let mut partial = String::new();
        let mut turn: Option<TurnFuture> = None;
        let mut prompt_at = Instant::now();
        let mut greeted = !call.fresh;
        // The lead opted out: the session is ending, nothing more is answered.
        let mut ended = false;
        let mut screening = Screening::new(call.screening_reply.is_some());
        loop {
            let in_flight = async {
                match turn.as_mut() {
                    Some(t) => t.await,
                    None => std::future::pending().await,
                }
            };
            let silence = screening.silence_until();
            let silent = async {
                match silence {
                    Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                message = socket.next() => {
                    let text = match message {
                        None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                        Some(Ok(Message::Text(text))) => text,
                        Some(Ok(_)) => continue,
                    };
                    match relay::parse(text.as_str()) {
                        Ok(FromTwilio::Setup(_)) => {
                            if !greeted && !call.greeting.is_empty() {
                                let _ = ops.send(TranscriptOp::Said(Role::Agent, call.greeting.clone(), now_micros()));
                                heard.push(Turn { from_lead: false, text: call.greeting.clone() });
                            }
                            greeted = true;
                        }
                        Ok(FromTwilio::Prompt { voice_prompt, last }) => {
                            if !partial.is_empty() && !voice_prompt.is_empty() {
                                partial.push(' ');
                            }
                            partial.push_str(voice_prompt.trim());
                            if !last || partial.trim().is_empty() {
                                continue;
                            }
                            let said = std::mem::take(&mut partial);
                            prompt_at = Instant::now();
                            let _ = ops.send(TranscriptOp::Said(Role::Lead, said.clone(), now_micros()));
                            if ended {
                                continue;
                            }
                            let mut cx = Live { socket: &mut socket, ops: &ops, heard: &mut heard, call: &call };
                            match self.hear(&mut cx, &mut screening, said).await? {
                                Next::Keep => {}
                                Next::Cancel => turn = None,
                                Next::End => {
                                    turn = None;
                                    ended = true;
                                }
                                // A newer prompt replaces the turn in flight.
                                Next::Start(next) => turn = Some(next),
                            }
                        }
                        Ok(FromTwilio::Interrupt { utterance_until_interrupt, .. }) => {
                            interrupted(&mut heard, &ops, utterance_until_interrupt);
                        }
                        Ok(FromTwilio::Dtmf { digit }) => {
                            let _ = ops.send(TranscriptOp::Dtmf(digit.clone(), now_micros()));
                            if !ended && opted_out_by_digit(&mut socket, &ops, &call, &digit).await? {
                                turn = None;
                                ended = true;
                            }
                        }
                        unused => note_unused(org, call_id, unused),
                    }
                }
                () = silent => {
                    // Nobody came after the screener: the call ends.
                    screening.done();
                    turn = None;
                    ended = true;
                    end_unanswered_screening(&mut socket, &ops).await?;
                }
                outcome = in_flight => {
                    turn = None;
                    let (said, model_time) = outcome?;
                    let spoken_in = prompt_at.elapsed().saturating_sub(model_time);
                    let mut cx = Live { socket: &mut socket, ops: &ops, heard: &mut heard, call: &call };
                    self.speak(&mut cx, call_id, said, spoken_in).await?;
                }
            }
        }
        if screening.waiting_for_person() {
            // The call ended before a person spoke after the screener.
            let _ = ops.send(TranscriptOp::Screened(voice::Screened::Reached(false)));
        }
        drop(ops);
        if let Err(e) = writer.await {
            tracing::error!(org, call = call_id, error = %e, "the transcript writer stopped");
        }
        Ok(())
    }

    /// The conversation so far of a call whose relay opens again (none when fresh).
    fn heard_so_far(&self, call: &CallContext, call_id: &str) -> Result<Vec<Turn>> {
        if call.fresh {
            return Ok(Vec::new());
        }
        let read = self.store.read()?;
        Ok(match read.call(&call.org, call_id)? {
            Some(record) => transcript::conversation(&record)
                .into_iter()
                .map(|(role, text)| Turn {
                    from_lead: role == Role::Lead,
                    text,
                })
                .collect(),
            None => Vec::new(),
        })
    }

    /// A lead's whole turn `said` (already in the transcript): a definite opt-out ends
    /// the session; a call screener hears the reply, or is recorded only; otherwise the
    /// turn goes to the assistant, replacing the one in flight.
    async fn hear<S>(
        self: &Arc<Self>,
        cx: &mut Live<'_, S>,
        screening: &mut Screening,
        said: String,
    ) -> Result<Next>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if let Some(how) = voice::CallOptOut::of_words(&said, &cx.call.own_keywords) {
            end_opted_out(cx.socket, cx.ops, how).await?;
            return Ok(Next::End);
        }
        cx.heard.push(Turn {
            from_lead: true,
            text: said.clone(),
        });
        match screening.hear(&said, Instant::now()) {
            Heard::Screener => {
                answer_screener(cx.socket, cx.ops, cx.heard, cx.call).await?;
                return Ok(Next::Cancel);
            }
            Heard::ScreenerAgain => return Ok(Next::Keep),
            Heard::Person => {
                let _ = cx
                    .ops
                    .send(TranscriptOp::Screened(voice::Screened::Reached(true)));
            }
            Heard::Turn => {}
        }
        let (engine, call, history) = (self.clone(), cx.call.clone(), cx.heard.clone());
        Ok(Next::Start(Box::pin(async move {
            engine.voice_turn(&call, &history).await
        })))
    }

    /// Says what the assistant's turn came to: its text (through the output guard) as a
    /// text frame, recorded; the session's end with the reason the transfer path reads
    /// (`transfer::Reason`); or nothing. `spoken_in`: the relay's own share of the turn.
    async fn speak<S>(
        &self,
        cx: &mut Live<'_, S>,
        call_id: &str,
        said: Said,
        spoken_in: Duration,
    ) -> Result<()>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        match said {
            Said::Text(text) => {
                // Every spoken turn passes the output guard (600 characters).
                let text = guard(&text, Channel::Voice);
                if text.is_empty() {
                    self.nothing_to_say(&cx.call.org, &cx.call.lead_id, Channel::Voice);
                    return Ok(());
                }
                cx.socket
                    .send(Message::text(relay::text_frame(&text, true)))
                    .await
                    .map_err(ws_error)?;
                self.metrics.relay_turn(spoken_in);
                let _ = cx
                    .ops
                    .send(TranscriptOp::Said(Role::Agent, text.clone(), now_micros()));
                cx.heard.push(Turn {
                    from_lead: false,
                    text,
                });
            }
            Said::Ended(effect) => {
                let reason = match effect {
                    Effect::Transfer => "transfer",
                    Effect::HandedOff => "handoff",
                    Effect::OptedOut | Effect::Continue => "opt_out",
                };
                let data = serde_json::json!({ "reason": reason }).to_string();
                cx.socket
                    .send(Message::text(relay::end_frame(&data)))
                    .await
                    .map_err(ws_error)?;
            }
            Said::Nothing => {}
            Said::Failed(failure) => {
                tracing::warn!(org = cx.call.org, call = call_id, %failure, "the assistant did not answer on a call; nothing said");
            }
        }
        Ok(())
    }

    /// One assistant turn on a call, with the conversation so far.
    async fn voice_turn(&self, call: &CallContext, heard: &[Turn]) -> Result<(Said, Duration)> {
        let Some(settings) = &call.settings else {
            return Ok((Said::Nothing, Duration::ZERO));
        };
        let context = Context {
            instructions: &call.instructions,
            lead: &call.lead_data,
            channel: Channel::Voice,
            local_time: &call.local_time,
            history: heard,
            booking: call.booking,
        };
        self.converse(
            &call.org,
            &call.lead_id,
            Channel::Voice,
            settings,
            &context,
            super::tools::ToolMode::Live {
                transfer_available: call.transfer_available,
            },
        )
        .await
    }
}

/// The lead opted out on the call: the opt-out is queued behind the lead's digit or
/// words, the goodbye is said and recorded, and the session ends (`opt_out`, which the
/// transfer path answers with a hang-up).
async fn end_opted_out<S>(
    socket: &mut WebSocketStream<S>,
    ops: &mpsc::UnboundedSender<TranscriptOp>,
    how: voice::CallOptOut,
) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = ops.send(TranscriptOp::OptedOut(how));
    let goodbye = voice::OPT_OUT_GOODBYE;
    socket
        .send(Message::text(relay::text_frame(goodbye, true)))
        .await
        .map_err(ws_error)?;
    let _ = ops.send(TranscriptOp::Said(
        Role::Agent,
        goodbye.to_string(),
        now_micros(),
    ));
    let data = serde_json::json!({"reason": "opt_out"}).to_string();
    socket
        .send(Message::text(relay::end_frame(&data)))
        .await
        .map_err(ws_error)
}

/// Nobody came on the line after the reply to a call screener: `reachedHumanAfterScreening`
/// false, and the session ends (the transfer path hangs up: `transfer::Reason::Other`).
async fn end_unanswered_screening<S>(
    socket: &mut WebSocketStream<S>,
    ops: &mpsc::UnboundedSender<TranscriptOp>,
) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = ops.send(TranscriptOp::Screened(voice::Screened::Reached(false)));
    let data = serde_json::json!({"reason": "screening"}).to_string();
    socket
        .send(Message::text(relay::end_frame(&data)))
        .await
        .map_err(ws_error)
}

/// The lead spoke over the agent: its last turn is cut to what was said before.
fn interrupted(heard: &mut [Turn], ops: &mpsc::UnboundedSender<TranscriptOp>, spoken: String) {
    if let Some(last) = heard.iter_mut().rev().find(|t| !t.from_lead) {
        last.text = spoken.trim().to_string();
    }
    let _ = ops.send(TranscriptOp::Interrupted(spoken));
}

/// A keypad digit: when it is the organization's opt-out digit, the goodbye and the
/// session's end (`end_opted_out`); whether it was.
async fn opted_out_by_digit<S>(
    socket: &mut WebSocketStream<S>,
    ops: &mpsc::UnboundedSender<TranscriptOp>,
    call: &CallContext,
    digit: &str,
) -> Result<bool>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match voice::CallOptOut::of_digit(&call.opt_out, digit) {
        Some(how) => end_opted_out(socket, ops, how).await.map(|()| true),
        None => Ok(false),
    }
}

/// Logs a relay message engaged does not act on: Twilio's error report, a kind it does
/// not use, or a malformed message.
fn note_unused(org: &str, call_id: &str, message: std::result::Result<FromTwilio, String>) {
    match message {
        Ok(FromTwilio::Error { description }) => {
            tracing::warn!(org, call = call_id, %description, "ConversationRelay reported an error");
        }
        Ok(FromTwilio::Other(kind)) => {
            tracing::debug!(org, call = call_id, %kind, "a relay message engaged does not use");
        }
        Err(reason) => {
            tracing::warn!(org, call = call_id, %reason, "a malformed relay message");
        }
        Ok(_) => {}
    }
}

/// A call screener answered: it hears, once and without the model, who calls and why
/// (the profile's `screeningReply`), and the call is `hitCallScreening`.
async fn answer_screener<S>(
    socket: &mut WebSocketStream<S>,
    ops: &mpsc::UnboundedSender<TranscriptOp>,
    heard: &mut Vec<Turn>,
    call: &CallContext,
) -> Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = ops.send(TranscriptOp::Screened(voice::Screened::Hit));
    let reply = guard(
        call.screening_reply.as_deref().unwrap_or_default(),
        Channel::Voice,
    );
    socket
        .send(Message::text(relay::text_frame(&reply, true)))
        .await
        .map_err(ws_error)?;
    let _ = ops.send(TranscriptOp::Said(Role::Agent, reply.clone(), now_micros()));
    heard.push(Turn {
        from_lead: false,
        text: reply,
    });
    Ok(())
}

fn ws_error(e: tokio_tungstenite::tungstenite::Error) -> crate::error::Error {
    crate::error::Error::Internal(format!("relay socket: {e}"))
}

/// Applies a call's transcript changes in order, each in its own write job.
async fn write_transcript(
    store: Arc<Store>,
    org: String,
    call_id: String,
    mut queue: mpsc::UnboundedReceiver<TranscriptOp>,
) {
    while let Some(op) = queue.recv().await {
        let (o, c) = (org.clone(), call_id.clone());
        let written = store
            .write(move |tx| match &op {
                TranscriptOp::Said(role, text, at) => {
                    transcript::append(tx, &o, &c, *role, text, *at)
                }
                TranscriptOp::Dtmf(digit, at) => transcript::append_dtmf(tx, &o, &c, digit, *at),
                TranscriptOp::Interrupted(spoken) => transcript::interrupted(tx, &o, &c, spoken),
                TranscriptOp::OptedOut(how) => voice::opt_out(tx, &o, &c, how),
                TranscriptOp::Screened(mark) => voice::screened(tx, &o, &c, *mark),
            })
            .await;
        if let Err(e) = written {
            tracing::error!(org, call = call_id, error = %e.to_string_for_logs(), "a transcript turn could not be written");
        }
    }
}
