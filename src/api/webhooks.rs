//! Handlers of the webhook administration endpoints (admin scope).

use hyper::{Response, StatusCode};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::request::Query;
use super::response::{json as reply, Body};
use crate::domain::records::webhook_endpoints;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::outbound_address::OutboundPolicy;
use crate::store::rows::{DeliveryRecord, DeliveryState, EndpointRecord};
use crate::store::Store;
use crate::time::Timestamp;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EndpointView<'a> {
    id: &'a str,
    url: &'a str,
    events: &'a [String],
    created_at: Timestamp,
    disabled: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    disabled_reason: &'a str,
}

impl<'a> EndpointView<'a> {
    fn of(e: &'a EndpointRecord) -> Self {
        EndpointView {
            id: &e.id,
            url: &e.url,
            events: &e.events,
            created_at: Timestamp(e.created_at),
            disabled: e.disabled_at.is_some(),
            disabled_reason: &e.disabled_reason,
        }
    }
}

fn delivery_view(d: &DeliveryRecord) -> Value {
    let attempts: Vec<Value> = d
        .attempts
        .iter()
        .map(|a| {
            let mut v = json!({"at": crate::time::format(a.at), "latencyMs": a.latency_micros as f64 / 1000.0});
            if let Some(status) = a.status {
                v["status"] = json!(status);
            }
            if !a.error.is_empty() {
                v["error"] = json!(a.error);
            }
            v
        })
        .collect();
    let state = match d.state {
        DeliveryState::Pending => "pending",
        DeliveryState::Delivered => "delivered",
        DeliveryState::Failed => "failed",
    };
    let mut v = json!({
        "id": d.id,
        "event": d.event,
        "data": d.data.0,
        "state": state,
        "createdAt": crate::time::format(d.created_at),
        "attempts": attempts,
    });
    if let Some(next) = d.next_attempt_at {
        v["nextAttemptAt"] = json!(crate::time::format(next));
    }
    v
}

/// `POST /v1/webhooks` → 201 with the secret, shown this once.
pub async fn create(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
    policy: OutboundPolicy,
) -> Result<Response<Body>> {
    let input = webhook_endpoints::EndpointInput::from_json(&body)?;
    let endpoint = store
        .write(move |tx| webhook_endpoints::create_endpoint(tx, &caller, input.clone(), policy))
        .await?;
    let mut view = serde_json::to_value(EndpointView::of(&endpoint))
        .map_err(|e| Error::Internal(e.to_string()))?;
    view["secret"] = json!(endpoint.secret);
    Ok(reply(StatusCode::CREATED, &view))
}

pub fn list(store: &Store, caller: &Caller) -> Result<Response<Body>> {
    let all = store.read()?.all_webhook_endpoints()?;
    let mine: Vec<EndpointView> = all
        .iter()
        .filter(|e| e.org_id == caller.org_id)
        .map(EndpointView::of)
        .collect();
    Ok(reply(StatusCode::OK, &json!({ "webhooks": mine })))
}

pub async fn delete(store: &Store, caller: Caller, id: &str) -> Result<Response<Body>> {
    let id = id.to_string();
    store
        .write(move |tx| webhook_endpoints::delete_endpoint(tx, &caller, &id))
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"message": "Webhook deleted."}),
    ))
}

pub fn deliveries(
    store: &Store,
    caller: &Caller,
    id: &str,
    query: &Query,
) -> Result<Response<Body>> {
    let token = query.next_token();
    let (items, next) = webhook_endpoints::deliveries(
        &store.read()?,
        store.cursor_key(),
        caller,
        id,
        query.limit_or_default()?,
        token.as_deref(),
    )?;
    let views: Vec<Value> = items.iter().map(delivery_view).collect();
    Ok(reply(
        StatusCode::OK,
        &json!({"deliveries": views, "nextToken": next}),
    ))
}

pub async fn retry(
    store: &Store,
    caller: Caller,
    id: &str,
    delivery: &str,
) -> Result<Response<Body>> {
    let (id, delivery) = (id.to_string(), delivery.to_string());
    let d = store
        .write(move |tx| webhook_endpoints::retry_delivery(tx, &caller, &id, &delivery))
        .await?;
    Ok(reply(StatusCode::ACCEPTED, &delivery_view(&d)))
}
