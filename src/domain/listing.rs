//! The incremental listings: leads, a lead's events, a lead's messages.
//!
//! All three are keyset-paginated on their sort key. A page asks the store for rows from
//! the cursor on and takes `limit + 1` matches: the extra one only tells that another
//! page exists, so `nextToken` is null exactly on the last page, and filtered pages are
//! filled whenever enough matching rows exist. Each cursor is sealed for its query
//! (`cursor`), so it cannot be replayed against another.

use crate::error::{Error, Result};
use crate::store::records::LeadRecord;
use crate::store::{EventRow, Flow, From, ReadTx};
use crate::time::{self, Micros};
use crate::{cursor::CursorKey, domain::Caller};

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

pub struct Page<T> {
    pub items: Vec<T>,
    pub next_token: Option<String>,
}

pub struct LeadQuery {
    pub updated_since: Option<Micros>,
    pub created_since: Option<Micros>,
    pub limit: usize,
    pub next_token: Option<String>,
}

pub fn leads(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    q: &LeadQuery,
) -> Result<Page<LeadRecord>> {
    let (by_created, since) = match (q.updated_since, q.created_since) {
        (Some(u), _) => (false, u),
        (None, Some(c)) => (true, c),
        (None, None) => {
            return Err(Error::BadRequest(
                "updatedSince or createdSince is required".into(),
            ))
        }
    };
    let query = [
        "leads",
        caller.org_id.as_str(),
        &q.updated_since.map(time::format).unwrap_or_default(),
        &q.created_since.map(time::format).unwrap_or_default(),
    ];
    let from = match &q.next_token {
        Some(token) => From::After(key.open::<(Micros, String)>(&query, token)?),
        None => From::AtOrAfter((since, String::new())),
    };
    let created_since = q.created_since;
    let wanted = |lead: &LeadRecord| created_since.is_none_or(|c| lead.created_at >= c);
    let mut page = collect(
        q.limit,
        |visit| read.scan_leads(&caller.org_id, by_created, from, visit),
        wanted,
    )?;
    if page.next_token.is_some() {
        let last = page
            .items
            .last()
            .ok_or_else(|| Error::Internal("a page with more has no rows".into()))?;
        let t = if by_created {
            last.created_at
        } else {
            last.updated_at
        };
        page.next_token = Some(key.seal(&query, &(t, &last.id))?);
    }
    Ok(page)
}

pub struct EventQuery {
    pub since: Option<Micros>,
    /// Sorted and without duplicates; empty means every type.
    pub types: Vec<String>,
    pub limit: usize,
    pub next_token: Option<String>,
}

pub fn events(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    lead_id: &str,
    q: &EventQuery,
) -> Result<Page<EventRow>> {
    require_lead(read, caller, lead_id)?;
    let types = q.types.join(",");
    let since = q.since.map(time::format).unwrap_or_default();
    let query = ["events", caller.org_id.as_str(), lead_id, &since, &types];
    let from = match &q.next_token {
        Some(token) => From::After(key.open::<(Micros, String, String)>(&query, token)?),
        None => From::AtOrAfter((q.since.unwrap_or(i64::MIN), String::new(), String::new())),
    };
    let wanted = |row: &EventRow| q.types.is_empty() || q.types.binary_search(&row.kind).is_ok();
    let mut page = collect(
        q.limit,
        |visit| read.scan_events(&caller.org_id, lead_id, from, visit),
        wanted,
    )?;
    if page.next_token.is_some() {
        let last = page
            .items
            .last()
            .ok_or_else(|| Error::Internal("a page with more has no rows".into()))?;
        page.next_token = Some(key.seal(&query, &(last.updated_at, &last.kind, &last.id))?);
    }
    Ok(page)
}

/// Messages in conversation order; `limit` None returns them all.
pub fn messages(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    lead_id: &str,
    limit: Option<usize>,
    next_token: Option<&str>,
) -> Result<Page<EventRow>> {
    require_lead(read, caller, lead_id)?;
    let query = ["messages", caller.org_id.as_str(), lead_id];
    let from = match next_token {
        Some(token) => From::After(key.open::<(Micros, String, String)>(&query, token)?),
        None => From::AtOrAfter((i64::MIN, String::new(), String::new())),
    };
    let mut page = collect(
        limit.unwrap_or(usize::MAX),
        |visit| read.scan_messages(&caller.org_id, lead_id, from, visit),
        |_| true,
    )?;
    if page.next_token.is_some() {
        let last = page
            .items
            .last()
            .ok_or_else(|| Error::Internal("a page with more has no rows".into()))?;
        page.next_token = Some(key.seal(&query, &(last.record.created_at, &last.kind, &last.id))?);
    }
    Ok(page)
}

/// Takes up to `limit` rows that pass `wanted` from `scan`, and notes (with a
/// placeholder token the caller replaces) whether one more exists.
pub fn collect<T>(
    limit: usize,
    scan: impl FnOnce(&mut dyn FnMut(T) -> Result<Flow>) -> Result<()>,
    wanted: impl Fn(&T) -> bool,
) -> Result<Page<T>> {
    let mut items = Vec::new();
    let mut more = false;
    scan(&mut |row| {
        if !wanted(&row) {
            return Ok(Flow::Continue);
        }
        if items.len() == limit {
            more = true;
            return Ok(Flow::Stop);
        }
        items.push(row);
        Ok(Flow::Continue)
    })?;
    Ok(Page {
        items,
        next_token: more.then(String::new),
    })
}

fn require_lead(read: &ReadTx, caller: &Caller, lead_id: &str) -> Result<()> {
    match read.lead(&caller.org_id, lead_id)? {
        Some(_) => Ok(()),
        None => Err(Error::lead_not_found(lead_id)),
    }
}
