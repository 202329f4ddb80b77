//! The notifier: turns each queued "Needs attention" notice (`store::notices`) into one
//! email to every person of the organization who asked for them
//! (`domain::people::notifications`), through the organization's email provider, then
//! removes the notice with the log of what it sent (Settings → Notifications).
//!
//! It wakes after every commit that changed a lead (`Store::changes`) and once a minute.
//! Sends run here, on the workers' floor: **no network call on the writer thread.** A
//! notice about a lead that no longer needs attention (or is gone) sends nothing.
//!
//! Its tick also keeps "Needs attention" true over time: a reason that ends with time
//! alone (a failed send past its window, `attention::Attention::expires`) changes no
//! record, so once a minute [`repair_expired`] finds such leads in the index and
//! re-derives them in one write job. No page view writes for it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::Engine;
use crate::channel::Channel;
use crate::domain::people::notifications;
use crate::error::Result;
use crate::providers::{Outgoing, Provider, SendOutcome};
use crate::store::notices::Notice;
use crate::store::rows::NotificationRecord;
use crate::store::{Reader, Store};
use crate::time::now_micros;

/// Notices handled per pass.
const BATCH: usize = 50;
/// How often the queue is read without a commit to wake the notifier, and how often
/// reasons that ended with time are repaired.
const SWEEP: Duration = Duration::from_secs(60);

/// Runs until `stop` turns true.
pub async fn run(engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    let mut commits = engine.store.changes().subscribe();
    let mut repaired_at: Option<tokio::time::Instant> = None;
    loop {
        if *stop.borrow() {
            break;
        }
        if repaired_at.is_none_or(|at| at.elapsed() >= SWEEP) {
            repaired_at = Some(tokio::time::Instant::now());
            if let Err(e) = repair_expired(&engine.store).await {
                tracing::error!(cause = %e.to_string_for_logs(), "needs attention: expired reasons");
            }
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

/// Re-derives the index rows of the leads whose "Needs attention" reason ended with
/// time alone (`ReadTx::attention_expired`), in one write job; answers how many. A
/// snapshot finds them, so nothing is written when none did.
pub async fn repair_expired(store: &Store) -> Result<usize> {
    let expired = store.read()?.attention_expired(now_micros())?;
    if expired.is_empty() {
        return Ok(0);
    }
    let count = expired.len();
    store
        .write(move |tx| {
            for (org, lead) in &expired {
                tx.reindex_lead(org, lead);
            }
            Ok(())
        })
        .await?;
    Ok(count)
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
        // As the index keeps them: computed in the write that changed the lead.
        let reasons = read.lead_index(org)?.attention(lead_id)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::{Attention, FAILED_SEND_WINDOW};
    use crate::store::facet::Facet;
    use crate::store::rows::{
        FailedSend, HandlingRecord, LeadRecord, MessageKind, OrgRecord, OrgSettings,
    };

    /// A failed send leaves "Needs attention" when its window ends, by the notifier's
    /// tick alone: no page is read, no record changes.
    #[tokio::test]
    async fn the_tick_repairs_a_failed_send_past_its_window_without_any_page_view() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        // Two seconds short of the window's end when written.
        let at = now_micros() - FAILED_SEND_WINDOW + 2_000_000;
        store
            .write(move |tx| {
                tx.put_org(&OrgRecord {
                    id: "o".into(),
                    name: "o".into(),
                    created_at: 0,
                    settings: OrgSettings::default(),
                })?;
                let lead = LeadRecord {
                    id: "l1".into(),
                    ..LeadRecord::default()
                };
                tx.put_lead("o", &lead, None)?;
                let failed = FailedSend {
                    kind: MessageKind::Sms,
                    event_id: "e1".into(),
                    at,
                };
                let handling = HandlingRecord {
                    failed_send: Some(failed),
                    ..HandlingRecord::default()
                };
                tx.put_handling("o", "l1", &handling)
            })
            .await
            .unwrap();
        let count = |facet: Facet| store.read().unwrap().facet_count("o", &facet).unwrap();
        assert_eq!(count(Facet::Attention(Attention::SendFailed)), 1);
        assert_eq!(count(Facet::NeedsAttention), 1);
        while now_micros() <= at + FAILED_SEND_WINDOW {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Time alone wrote nothing: the index still says so until the tick.
        assert_eq!(count(Facet::NeedsAttention), 1);
        assert_eq!(repair_expired(&store).await.unwrap(), 1);
        assert_eq!(count(Facet::NeedsAttention), 0);
        assert_eq!(count(Facet::Attention(Attention::SendFailed)), 0);
        let reasons = store.read().unwrap().lead_index("o").unwrap();
        assert!(reasons.attention("l1").unwrap().is_empty());
        assert_eq!(repair_expired(&store).await.unwrap(), 0);
    }
}
