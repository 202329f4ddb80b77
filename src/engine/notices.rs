//! The notifier: turns each queued "Needs attention" notice (`store::notices`) into one
//! email to every person of the organization who asked for them
//! (`domain::people::notifications`), through the organization's email provider, then
//! removes the notice with the log of what it sent (Settings → Notifications).
//!
//! It wakes after every commit that changed a lead (`Store::changes`) and once a minute.
//! Sends run here, on the workers' floor: **no network call on the writer thread.** A
//! notice about a lead that no longer needs attention (or is gone) sends nothing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::Engine;
use crate::channel::Channel;
use crate::domain::people::notifications;
use crate::error::Result;
use crate::providers::{Outgoing, Provider, SendOutcome};
use crate::store::lead_index::Attention;
use crate::store::notices::Notice;
use crate::store::rows::NotificationRecord;
use crate::store::Reader;
use crate::time::now_micros;

/// Notices handled per pass.
const BATCH: usize = 50;
/// How often the queue is read without a commit to wake the notifier.
const SWEEP: Duration = Duration::from_secs(60);

/// Runs until `stop` turns true.
pub async fn run(engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    let mut commits = engine.store.changes().subscribe();
    loop {
        if *stop.borrow() {
            break;
        }
        loop {
            match pass(&engine).await {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    tracing::error!(cause = %e.to_string_for_logs(), "notification emails");
                    break;
                }
            }
        }
        tokio::select! {
            _ = commits.recv() => {
                // Every commit queued so far is covered by the next pass.
                while commits.try_recv().is_ok() {}
            }
            _ = tokio::time::sleep(SWEEP) => {}
            _ = stop.changed() => {}
        }
    }
}

/// Handles up to [`BATCH`] notices; `true` when there may be more.
async fn pass(engine: &Engine) -> Result<bool> {
    let notices = engine.store.read()?.notices(BATCH)?;
    let more = notices.len() == BATCH;
    for notice in notices {
        let sent = notify(engine, &notice).await?;
        let done = notice.clone();
        engine
            .store
            .write(move |tx| tx.notice_done(&done, &sent))
            .await?;
    }
    Ok(more)
}

/// Emails one notice to its organization's people; answers what was sent.
async fn notify(engine: &Engine, notice: &Notice) -> Result<Vec<NotificationRecord>> {
    let (org, lead_id) = (notice.org.as_str(), notice.lead.as_str());
    let (lead, reasons, people, settings) = {
        let read = engine.store.read()?;
        let Some(lead) = read.lead(org, lead_id)?.filter(|l| l.deleted_at.is_none()) else {
            return Ok(Vec::new());
        };
        let engagement = read.engagement(org, lead_id)?;
        let handling = read.handling(org, lead_id)?;
        let reasons = Attention::of(&lead, engagement.as_ref(), &handling, now_micros());
        let people = notifications::recipients(&read, org)?;
        (lead, reasons, people, read.engine_settings(org)?)
    };
    if reasons.is_empty() || people.is_empty() {
        return Ok(Vec::new());
    }
    let path = format!("/console/leads/{lead_id}");
    let link = match engine.public_url() {
        Some(base) => format!("{base}{path}"),
        None => path,
    };
    let (subject, text) = notifications::compose(&lead, &reasons, &link);
    let provider = Provider::for_channel(&settings, Channel::Email);
    let mut sent = Vec::with_capacity(people.len());
    for person in people {
        let outgoing = Outgoing {
            to: person.email.clone(),
            text: text.clone(),
            subject: Some(subject.clone()),
            unsubscribe_url: None,
            status_callback: None,
            thread: None,
        };
        let outcome = match provider.send_email(&engine.client, &outgoing).await {
            SendOutcome::Accepted { .. } if matches!(provider, Provider::Sandbox(_)) => {
                tracing::info!(org, lead = lead_id, to = %person.email, subject = %subject, "notification email (sandbox: logged, not sent)");
                "logged".to_string()
            }
            SendOutcome::Accepted { .. } => "sent".to_string(),
            SendOutcome::Refused { code, .. } | SendOutcome::Rejected { code, .. } => {
                tracing::warn!(org, lead = lead_id, code = %code, "a notification email was refused");
                format!("failed: {code}")
            }
            SendOutcome::Unknown { error } => {
                tracing::warn!(org, lead = lead_id, error = %error, "a notification email's fate is unknown");
                "failed: unknown".to_string()
            }
        };
        sent.push(NotificationRecord {
            id: crate::ids::generate("ntf"),
            lead_id: lead_id.to_string(),
            to: person.email,
            subject: subject.clone(),
            text: text.clone(),
            sent_at: now_micros(),
            outcome,
        });
    }
    Ok(sent)
}
