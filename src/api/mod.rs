//! The HTTP interface: one function per operation, each thin.
//!
//! [`handle`] routes a request (`router`), checks its key (`domain::auth`), and calls
//! the operation's handler, which parses the request (`request`), calls one `domain`
//! function, and renders the result (`views`, `response`). Every error becomes a
//! `{"message"}` body through `error::Error`.

mod ops;
pub mod rate_limit;
pub mod recordings;
pub mod request;
pub mod response;
pub mod router;
pub mod views;
mod webhooks;

use std::sync::Arc;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use serde_json::json;
use tracing::Instrument;

use crate::domain::listing::{self, EventQuery, LeadQuery};
use crate::domain::{auth, calls, events, leads, messages, Caller};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::store::Store;
use request::{json_object, read_body, Query};
use response::{json as reply, Body};
use router::Route;
use views::{EventView, LeadView, MessageView};

/// What every request handler shares.
pub struct AppState {
    pub store: Arc<Store>,
    pub max_body_bytes: usize,
    pub metrics: Arc<Metrics>,
    pub recordings: recordings::Settings,
    /// Per-key request rate limit, when configured.
    pub rate_limiter: Option<rate_limit::RateLimiter>,
}

pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
) -> Result<Response<Body>, std::convert::Infallible> {
    let started = Instant::now();
    let request_id = request_id(&req);
    let span = tracing::info_span!("request", id = %request_id);
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let mut route_name = "unmatched";
    let result = dispatch(&state, req, &mut route_name)
        .instrument(span.clone())
        .await;
    let mut response = result.unwrap_or_else(|e| span.in_scope(|| response::error(&e)));
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    let status = response.status().as_u16();
    state.metrics.record(route_name, status, started.elapsed());
    span.in_scope(|| {
        tracing::debug!(%method, %path, status, micros = started.elapsed().as_micros() as u64, "request")
    });
    Ok(response)
}

/// The caller's `x-request-id` when it is a sane token, else a new one.
fn request_id(req: &Request<Incoming>) -> String {
    let given = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok());
    match given {
        Some(id) if crate::ids::is_valid_client_id(id) && id.len() <= 64 => id.to_string(),
        _ => crate::ids::generate("req"),
    }
}

async fn dispatch(
    state: &AppState,
    req: Request<Incoming>,
    route_name: &mut &'static str,
) -> Result<Response<Body>> {
    let (parts, body) = req.into_parts();
    let segments = router::segments(parts.uri.path())?;
    let route = router::route(&parts.method, &segments)?;
    *route_name = route.name();
    // Routes open without a key.
    match route {
        Route::Healthz => return Ok(reply(StatusCode::OK, &json!({"status": "ok"}))),
        Route::Readyz => return ops::readyz(&state.store),
        Route::RecordingFile(org, call) => return recordings::download(state, &parts, org, call),
        _ => {}
    }
    let scope = route
        .scope()
        .ok_or_else(|| Error::Internal(format!("open route {} has no handler", route.name())))?;
    let key = parts.headers.get("x-api-key").and_then(|v| v.to_str().ok());
    let caller = auth::authenticate(&state.store, key, scope)?;
    if let Some(limiter) = &state.rate_limiter {
        limiter.check(&caller.key_id)?;
    }
    let query = Query::parse(parts.uri.query())?;
    let store = &state.store;
    match route {
        Route::Healthz | Route::Readyz | Route::RecordingFile(_, _) => {
            Err(Error::Internal("open route reached auth".into()))
        }
        Route::Metrics => ops::metrics(state),
        Route::ListLeads => list_leads(store, &caller, &query),
        Route::GetLead(id) => get_lead(store, &caller, id),
        Route::ListEvents(id) => list_events(store, &caller, id, &query),
        Route::ListMessages(id) => list_messages(store, &caller, id, &query),
        Route::GetCall(id) => get_call(store, &caller, id),
        Route::CreateLead => {
            let body = json_object(&read_body(body, state.max_body_bytes).await?)?;
            let lead = store
                .write(move |tx| leads::create(tx, &caller, body))
                .await?;
            Ok(reply(StatusCode::CREATED, &LeadView::of(&lead)))
        }
        Route::UpdateLead(id) => {
            let body = json_object(&read_body(body, state.max_body_bytes).await?)?;
            let id = id.to_string();
            let lead = store
                .write(move |tx| leads::update(tx, &caller, &id, body))
                .await?;
            Ok(reply(StatusCode::OK, &LeadView::of(&lead)))
        }
        Route::DeleteLead(id) => {
            let id = id.to_string();
            let lead = store
                .write(move |tx| leads::delete(tx, &caller, &id))
                .await?;
            Ok(reply(StatusCode::OK, &LeadView::of(&lead)))
        }
        Route::PostEvent(id) => {
            let input = events::EventInput::from_json(json_object(
                &read_body(body, state.max_body_bytes).await?,
            )?)?;
            let id = id.to_string();
            let row = store
                .write(move |tx| events::upsert(tx, &caller, &id, input))
                .await?;
            Ok(reply(StatusCode::OK, &EventView::of(&row)))
        }
        Route::PostMessage(id) => {
            let input = messages::MessageInput::from_json(json_object(
                &read_body(body, state.max_body_bytes).await?,
            )?)?;
            let id = id.to_string();
            let row = store
                .write(move |tx| messages::record(tx, &caller, &id, input))
                .await?;
            let view = MessageView::of(&row)
                .ok_or_else(|| Error::Internal("a new message is not message-shaped".into()))?;
            Ok(reply(StatusCode::CREATED, &view))
        }
        Route::PutCall(id) => {
            let changes = calls::parse_details(
                id,
                json_object(&read_body(body, state.max_body_bytes).await?)?,
            )?;
            let id = id.to_string();
            let (call, created) = store
                .write(move |tx| calls::put(tx, &caller, &id, changes))
                .await?;
            let status = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(reply(status, &views::call(&call)))
        }
        Route::CreateWebhook => {
            let body = json_object(&read_body(body, state.max_body_bytes).await?)?;
            webhooks::create(store, caller, body).await
        }
        Route::ListWebhooks => webhooks::list(store, &caller),
        Route::DeleteWebhook(id) => webhooks::delete(store, caller, id).await,
        Route::ListDeliveries(id) => webhooks::deliveries(store, &caller, id, &query),
        Route::RetryDelivery(id, delivery) => webhooks::retry(store, caller, id, delivery).await,
        Route::PutRecording(id) => recordings::upload(state, caller, id, &parts.headers, body).await,
        Route::GetRecording(id) => recordings::link(state, &caller, id, &parts),
        Route::DeleteRecording(id) => recordings::delete(store, caller, id).await,
    }
}

fn list_leads(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let q = LeadQuery {
        updated_since: query.timestamp("updatedSince")?,
        created_since: query.timestamp("createdSince")?,
        limit: query.limit_or_default()?,
        next_token: query.next_token(),
    };
    let page = listing::leads(&store.read()?, store.cursor_key(), caller, &q)?;
    let leads: Vec<LeadView> = page.items.iter().map(LeadView::of).collect();
    Ok(reply(
        StatusCode::OK,
        &views::LeadsPage {
            leads,
            next_token: page.next_token,
        },
    ))
}

fn get_lead(store: &Store, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let lead = store
        .read()?
        .lead(&caller.org_id, id)?
        .ok_or_else(|| Error::lead_not_found(id))?;
    Ok(reply(StatusCode::OK, &LeadView::of(&lead)))
}

fn list_events(
    store: &Store,
    caller: &Caller,
    lead_id: &str,
    query: &Query,
) -> Result<Response<Body>> {
    let mut types: Vec<String> = query
        .get("types")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    types.sort();
    types.dedup();
    let q = EventQuery {
        since: query.timestamp("since")?,
        types,
        limit: query.limit_or_default()?,
        next_token: query.next_token(),
    };
    let page = listing::events(&store.read()?, store.cursor_key(), caller, lead_id, &q)?;
    let events: Vec<EventView> = page.items.iter().map(EventView::of).collect();
    Ok(reply(
        StatusCode::OK,
        &views::EventsPage {
            events,
            next_token: page.next_token,
        },
    ))
}

fn list_messages(
    store: &Store,
    caller: &Caller,
    lead_id: &str,
    query: &Query,
) -> Result<Response<Body>> {
    let token = query.next_token();
    let page = listing::messages(
        &store.read()?,
        store.cursor_key(),
        caller,
        lead_id,
        query.limit()?,
        token.as_deref(),
    )?;
    let messages: Vec<MessageView> = page.items.iter().filter_map(MessageView::of).collect();
    Ok(reply(
        StatusCode::OK,
        &views::MessagesPage {
            messages,
            next_token: page.next_token,
        },
    ))
}

fn get_call(store: &Store, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let call = store
        .read()?
        .call(&caller.org_id, id)?
        .ok_or_else(|| Error::NotFound("Call not found".into()))?;
    Ok(reply(StatusCode::OK, &views::call(&call)))
}
