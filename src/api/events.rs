//! Handlers of a lead's events and messages.

use hyper::{Response, StatusCode};
use serde_json::{Map, Value};

use super::request::Query;
use super::response::{json as reply, Body};
use super::views::{EventView, EventsPage, MessageView, MessagesPage};
use super::AppState;
use crate::channel::Owner;
use crate::domain::engagement::reactions::React;
use crate::domain::records::events;
use crate::domain::records::listing::{self, EventQuery};
use crate::domain::records::messages;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Store;

pub fn list(
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
    let events = page.items.iter().map(EventView::of).collect();
    Ok(reply(
        StatusCode::OK,
        &EventsPage {
            events,
            next_token: page.next_token,
        },
    ))
}

pub async fn post(
    store: &Store,
    caller: Caller,
    lead_id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let input = events::EventInput::from_json(body)?;
    let id = lead_id.to_string();
    let row = store
        .write(move |tx| events::upsert(tx, &caller, &id, input.clone()).react(tx))
        .await?;
    Ok(reply(StatusCode::OK, &EventView::of(&row)))
}

pub fn list_messages(
    store: &Store,
    caller: &Caller,
    lead_id: &str,
    query: &Query,
) -> Result<Response<Body>> {
    let token = query.next_token();
    let read = store.read()?;
    let page = listing::messages(
        &read,
        store.cursor_key(),
        caller,
        lead_id,
        query.limit()?,
        token.as_deref(),
    )?;
    let messages = page.items.iter().filter_map(MessageView::of).collect();
    Ok(reply(
        StatusCode::OK,
        &MessagesPage {
            messages,
            next_token: page.next_token,
        },
    ))
}

/// A lead's own message is recorded as is; one from the organization's side is
/// outreach and passes the compliance gate first.
pub async fn post_message(
    state: &AppState,
    caller: Caller,
    lead_id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let input = messages::MessageInput::from_json(body)?;
    if input.owner == Owner::User {
        return super::outreach::outbound_message(state, caller, lead_id, input).await;
    }
    let id = lead_id.to_string();
    let row = state
        .store
        .write(move |tx| messages::record(tx, &caller, &id, input.clone()).react(tx))
        .await?;
    let view = MessageView::of(&row)
        .ok_or_else(|| Error::Internal("a new message is not message-shaped".into()))?;
    Ok(reply(StatusCode::CREATED, &view))
}
