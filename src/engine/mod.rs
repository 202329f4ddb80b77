//! The engagement engine: the scheduler over the agenda, and what runs a due row.
//!
//! The rules (enrolment, stop rules, what a due row becomes) live in the domain
//! (`domain::engagement::enrolment`, `domain::engagement::claims`) and run inside write jobs. This module is
//! the slow part around them, on the workers' floor beside the webhook dispatcher: it
//! leases due rows, asks the compliance service, the assistant's model server and the
//! channel providers (`crate::providers`), and commits each outcome through the domain.
//! **No network call runs on the writer thread.**
//!
//! - `scheduler`: one task; wakes on commits that add rows and at the earliest due time.
//! - `gate`: the compliance gate's orchestration (the service asked outside the
//!   writer), for the API's and the console's outreach and the scheduler's claims.
//! - `jobs`: running one claimed row (a cadence step, a notice, a call) and carrying out
//!   the claim through a provider.
//! - `pacing`: each provider's sending rate; a send waits for its slot before its claim.
//! - `reply`: the assistant's conversation turn, at most four rounds of tools (the
//!   model client, its protocol and post-call request are `providers::model`).
//! - `tools`: applying a tool call through the same domain functions the API uses.
//! - `replay`: a profile's draft tried on past conversations, tools dry.
//! - `guard`: the one output guard every reply passes before it is sent or spoken.
//! - `voice`: the relay, one live call's conversation over ConversationRelay.
//! - `post_call`: a completed call's summary and disposition.
//! - `recording_fetch`: a finished call's recording, streamed from the provider.
//! - `notices`: the emails to people about leads that need attention.

mod bulk_enrolment;
pub mod calendar_sync;
mod confirmations;
mod email;
mod gate;
pub mod guard;
mod jobs;
pub mod metrics;
mod notices;
mod pacing;
mod post_call;
mod recording_fetch;
mod replay;
mod reply;
mod scheduler;
mod tools;
mod voice;
mod warm;
pub mod webchat;

use std::sync::Arc;

use tokio::sync::watch;

use crate::domain::engagement::outbound;
use crate::error::Result;
use crate::http_client::HttpClient;
use crate::store::rows::AssistantSettings;
use crate::store::Store;
pub use metrics::EngineMetrics;
pub use replay::ReplayRequest;
pub use reply::Tried;

/// What every job of the engine shares.
pub struct Engine {
    store: Arc<Store>,
    client: HttpClient,
    metrics: Arc<EngineMetrics>,
    /// The server's `public_url` (no trailing `/`): the base of every URL handed to a
    /// provider (status callbacks, unsubscribe links).
    public_url: Option<String>,
    /// The largest recording fetched from a provider (`recording_max_bytes`).
    recording_max_bytes: u64,
    /// Signs one-click unsubscribe links; read from the store on first use.
    unsubscribe_key:
        tokio::sync::OnceCell<crate::domain::conversation::unsubscribe_links::UnsubscribeKey>,
    /// Each provider's sending rate, kept across the scheduler's sends.
    pacer: pacing::Pacer,
    /// The leads whose reply is asking the model now (`reply::ReplyTurn`): one at a time.
    replying: reply::Replying,
    /// CalDAV busy times read lately, and the retry schedule of CalDAV writes.
    calendars: calendar_sync::Calendars,
    /// The web chats' visitor streams.
    webchat: webchat::Hub,
    /// The replays running now, one per organization.
    replays: replay::Replays,
}

impl Engine {
    pub fn new(
        store: Arc<Store>,
        client: HttpClient,
        metrics: Arc<EngineMetrics>,
        public_url: Option<String>,
        recording_max_bytes: u64,
    ) -> Engine {
        Engine {
            store,
            client,
            metrics,
            public_url: public_url.map(|u| u.trim_end_matches('/').to_string()),
            recording_max_bytes,
            unsubscribe_key: tokio::sync::OnceCell::new(),
            pacer: pacing::Pacer::default(),
            replying: reply::Replying::default(),
            calendars: calendar_sync::Calendars::default(),
            webchat: webchat::Hub::default(),
            replays: replay::Replays::default(),
        }
    }

    /// Failed CalDAV writes are retried after these delays (the webhooks' schedule).
    pub fn with_calendar_retry_schedule(mut self, schedule: Vec<std::time::Duration>) -> Engine {
        self.calendars.schedule = schedule;
        self
    }

    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// The outbound HTTP client (its timeout and trusted roots), for a check a page runs
    /// outside the writer (the console's CalDAV "Test connection").
    pub fn http_client(&self) -> &HttpClient {
        &self.client
    }

    /// Runs the scheduler and the notifier until `stop` turns true.
    pub async fn run(self: Arc<Self>, stop: watch::Receiver<bool>) {
        tokio::join!(
            scheduler::run(self.clone(), stop.clone()),
            calendar_sync::run(self.clone(), stop.clone()),
            self.purge_webchats(stop.clone()),
            notices::run(self.clone(), stop)
        );
    }

    pub fn metrics(&self) -> &EngineMetrics {
        &self.metrics
    }

    /// Dials a call the API recorded as queued, through the voice provider, in the
    /// background: the answer says `QUEUED`, the call record follows the provider.
    pub fn dial(self: &Arc<Self>, org: String, call_id: String, to: String) {
        let engine = self.clone();
        tokio::spawn(async move {
            let claim = crate::domain::engagement::claims::Claim::Call {
                org,
                call_id: call_id.clone(),
                to,
            };
            if let Err(e) = engine.carry_out(claim).await {
                tracing::error!(call = %call_id, error = %e.to_string_for_logs(), "could not record the outcome of a dial");
            }
        });
    }

    /// Hands a message the API committed as `sending` to its provider and commits the
    /// answer. The work runs in its own task, so a client that goes away does not leave
    /// the message `sending`.
    pub async fn deliver(self: &Arc<Self>, attempt: outbound::Attempt) -> Result<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            engine
                .carry_out(crate::domain::engagement::claims::Claim::Send(Box::new(
                    attempt,
                )))
                .await
        })
        .await
        .map_err(|e| crate::error::Error::Internal(format!("delivery task: {e}")))?
    }
}

/// At start-up, before the scheduler: messages a crash left `sending` become `unknown`
/// (never sent again); answers how many.
pub async fn mark_interrupted_sends(store: &Store) -> Result<usize> {
    let rows = store.read()?.sending()?;
    let count = rows.len();
    if count > 0 {
        store
            .write(move |tx| outbound::interrupted(tx, &rows))
            .await?;
        tracing::warn!(
            messages = count,
            "messages were being sent when the process stopped: marked unknown, not sent again"
        );
    }
    Ok(count)
}

/// The model client's view of an organization's assistant settings.
fn model_server(settings: &AssistantSettings) -> crate::providers::model::Server {
    crate::providers::model::Server {
        base_url: settings.base_url.clone(),
        model: settings.model.clone(),
        api_key: settings.api_key.clone(),
        timeout_ms: settings.timeout_ms,
        max_tokens: settings.max_tokens,
    }
}
