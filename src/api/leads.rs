//! Handlers of `/v1/leads` and `/v1/leads/{id}`.

use hyper::{Response, StatusCode};
use serde_json::{Map, Value};

use super::request::Query;
use super::response::{json as reply, json_bytes, Body};
use super::views;
use crate::domain::records::leads;
use crate::domain::records::listing::{self, LeadQuery};
use crate::domain::records::search::{self, After, LeadFilter};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::Reader;
use crate::store::Store;

pub fn list(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let q = LeadQuery {
        updated_since: query.timestamp("updatedSince")?,
        created_since: query.timestamp("createdSince")?,
        limit: query.limit_or_default()?,
        next_token: query.next_token(),
    };
    let page = listing::leads(&store.read()?, store.cursor_key(), caller, &q)?;
    let body = views::leads_page(&page.items, page.next_token.as_deref())?;
    Ok(json_bytes(StatusCode::OK, body))
}

/// `GET /v1/leads/search`: the console's lead query for integrators.
pub fn search(store: &Store, caller: &Caller, query: &Query) -> Result<Response<Body>> {
    let filter = LeadFilter::from_params(query.pairs())?;
    let limit = query.limit_or_default()?;
    let params = filter.params();
    let mut bound: Vec<&str> = vec!["leads-search", caller.org_id.as_str()];
    for (name, value) in &params {
        bound.push(name);
        bound.push(value);
    }
    let after: Option<After> = match query.next_token() {
        Some(token) => Some(store.cursor_key().open(&bound, &token)?),
        None => None,
    };
    let read = store.read()?;
    let page = search::search(&read, &caller.org_id, &filter, limit, after.as_ref())?;
    let mut leads = Vec::with_capacity(page.leads.len());
    for found in &page.leads {
        let Some(lead) = read.lead(&caller.org_id, &found.id)? else {
            continue;
        };
        let engagement = read.engagement(&caller.org_id, &found.id)?;
        leads.push(views::lead_with_engagement(&lead, engagement.as_ref())?);
    }
    let next_token = match &page.next {
        Some(next) => Some(store.cursor_key().seal(&bound, next)?),
        None => None,
    };
    Ok(reply(
        StatusCode::OK,
        &serde_json::json!({"leads": leads, "total": page.total, "nextToken": next_token}),
    ))
}

pub fn get(store: &Store, caller: &Caller, id: &str) -> Result<Response<Body>> {
    let lead = store
        .read()?
        .lead(&caller.org_id, id)?
        .ok_or_else(|| Error::lead_not_found(id))?;
    Ok(json_bytes(StatusCode::OK, views::lead(&lead)?))
}

pub async fn create(
    store: &Store,
    caller: Caller,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let lead = store
        .write(move |tx| leads::create(tx, &caller, body.clone()))
        .await?;
    Ok(json_bytes(StatusCode::CREATED, views::lead(&lead)?))
}

pub async fn update(
    store: &Store,
    caller: Caller,
    id: &str,
    body: Map<String, Value>,
) -> Result<Response<Body>> {
    let id = id.to_string();
    let lead = store
        .write(move |tx| leads::update(tx, &caller, &id, body.clone()))
        .await?;
    Ok(json_bytes(StatusCode::OK, views::lead(&lead)?))
}

pub async fn delete(store: &Store, caller: Caller, id: &str) -> Result<Response<Body>> {
    let id = id.to_string();
    let lead = store
        .write(move |tx| leads::delete(tx, &caller, &id))
        .await?;
    Ok(json_bytes(StatusCode::OK, views::lead(&lead)?))
}
