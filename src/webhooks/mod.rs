//! Webhooks: registration, the transactional outbox, and signed, retried delivery.
//!
//! A change that causes a webhook calls [`emit`] inside its own write job, so the
//! delivery rows are committed in the same redb transaction as the change: an
//! acknowledged change cannot lose its webhook and a rolled-back one sends none. The
//! `dispatcher` then sends what the outbox holds (`crate::http_client` for HTTP, `signing` for the
//! Standard Webhooks signature) and records every attempt.

pub mod dispatcher;
mod event;
pub mod signing;

pub use event::WebhookEvent;

use serde_json::Value;

use crate::channel::{Channel, OptOutSource};
use crate::error::Result;
use crate::store::rows::{DeliveryRecord, DeliveryState, EndpointRecord, JsonBlob};
use crate::store::WriteTx;

/// Queues `event` with `data` for every enabled endpoint of `org` that wants it, in the
/// caller's transaction.
pub fn emit(tx: &mut WriteTx, org: &str, event: WebhookEvent, data: Value) -> Result<()> {
    for endpoint in tx.webhook_endpoints(org)? {
        if endpoint.disabled_at.is_some() || !wants(&endpoint, event) {
            continue;
        }
        // A tick, not the wall clock: deliveries list in the order they were emitted.
        let now = tx.tick();
        let delivery = DeliveryRecord {
            id: crate::ids::generate("msg"),
            org_id: org.to_string(),
            endpoint_id: endpoint.id.clone(),
            event: event.as_str().to_string(),
            data: JsonBlob(data.clone()),
            created_at: now,
            state: DeliveryState::Pending,
            attempts: Vec::new(),
            cycle_attempts: 0,
            next_attempt_at: Some(now),
        };
        tx.put_delivery(&delivery, None)?;
    }
    Ok(())
}

/// `lead.opted_out`: one per channel that became unsubscribed.
pub fn emit_opted_out(
    tx: &mut WriteTx,
    org: &str,
    lead_id: &str,
    channel: Channel,
    source: OptOutSource,
) -> Result<()> {
    let data = serde_json::json!({"leadId": lead_id, "channel": channel.as_str(), "source": source.as_str()});
    emit(tx, org, WebhookEvent::LeadOptedOut, data)
}

fn wants(endpoint: &EndpointRecord, event: WebhookEvent) -> bool {
    endpoint.events.is_empty() || endpoint.events.iter().any(|e| e == event.as_str())
}
