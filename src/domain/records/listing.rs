//! The incremental listings: leads, a lead's events, a lead's messages.
//!
//! All three are keyset-paginated on their sort key. A page asks the store for rows from
//! the cursor on and takes `limit + 1` matches: the extra one only tells that another
//! page exists, so `nextToken` is null exactly on the last page, and filtered pages are
//! filled whenever enough matching rows exist. Each cursor is sealed for its query
//! (`cursor`), so it cannot be replayed against another.

use crate::error::{Error, Result};
use crate::store::Reader;
use crate::store::{EventRow, Flow, ReadTx, Start};
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

/// Writes the page's leads into `out`: each lead's wire JSON as the store keeps it,
/// comma-separated, copied once from the index row. Answers the page's `nextToken`.
/// Up to `limit` leads, and a token exactly when one more matches (as [`paginate`]).
pub fn leads(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    q: &LeadQuery,
    out: &mut Vec<u8>,
) -> Result<Option<String>> {
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
        Some(token) => Start::After(key.open::<(Micros, String)>(&query, token)?),
        None => Start::AtOrAfter((since, String::new())),
    };
    let created_since = q.created_since;
    let mut taken = 0;
    let mut more = false;
    // The last lead's sort key, for the cursor: one buffer for the whole page.
    let mut last: (Micros, String) = (0, String::new());
    read.scan_leads(&caller.org_id, by_created, from, |lead| {
        if created_since.is_some_and(|c| lead.created_at < c) {
            return Ok(Flow::Continue);
        }
        if taken == q.limit {
            more = true;
            return Ok(Flow::Stop);
        }
        if taken > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&lead.json);
        last.0 = lead.sort_time;
        last.1.clear();
        last.1.push_str(lead.id);
        taken += 1;
        Ok(Flow::Continue)
    })?;
    if more && taken > 0 {
        Ok(Some(key.seal(&query, &last)?))
    } else {
        Ok(None)
    }
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
        Some(token) => Start::After(key.open::<(Micros, String, String)>(&query, token)?),
        None => Start::AtOrAfter((q.since.unwrap_or(i64::MIN), String::new(), String::new())),
    };
    let wanted = |row: &EventRow| q.types.is_empty() || q.types.binary_search(&row.kind).is_ok();
    let position = |last: &EventRow| (last.updated_at, last.kind.clone(), last.id.clone());
    let sealed = Cursor {
        key,
        query: &query,
        position,
    };
    paginate(
        q.limit,
        |visit| read.scan_events(&caller.org_id, lead_id, from, visit),
        wanted,
        sealed,
    )
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
        Some(token) => Start::After(key.open::<(Micros, String, String)>(&query, token)?),
        None => Start::AtOrAfter((i64::MIN, String::new(), String::new())),
    };
    let position = |last: &EventRow| (last.record.created_at, last.kind.clone(), last.id.clone());
    let sealed = Cursor {
        key,
        query: &query,
        position,
    };
    let limit = limit.unwrap_or(usize::MAX);
    paginate(
        limit,
        |visit| read.scan_messages(&caller.org_id, lead_id, from, visit),
        |_| true,
        sealed,
    )
}

/// How a page's `nextToken` is made: the sort key of its last row, sealed for `query`.
pub struct Cursor<'a, F> {
    pub key: &'a CursorKey,
    pub query: &'a [&'a str],
    pub position: F,
}

/// Takes up to `limit` rows that pass `wanted` from `scan`; when one more exists, the
/// page's `nextToken` is the cursor after its last row.
pub fn paginate<T, P: serde::Serialize>(
    limit: usize,
    scan: impl FnOnce(&mut dyn FnMut(T) -> Result<Flow>) -> Result<()>,
    wanted: impl Fn(&T) -> bool,
    cursor: Cursor<'_, impl Fn(&T) -> P>,
) -> Result<Page<T>> {
    let (items, more) = collect(limit, scan, wanted)?;
    let next_token = match items.last() {
        Some(last) if more => Some(cursor.key.seal(cursor.query, &(cursor.position)(last))?),
        _ => None,
    };
    Ok(Page { items, next_token })
}

/// Up to `limit` rows that pass `wanted`, and whether one more exists.
fn collect<T>(
    limit: usize,
    scan: impl FnOnce(&mut dyn FnMut(T) -> Result<Flow>) -> Result<()>,
    wanted: impl Fn(&T) -> bool,
) -> Result<(Vec<T>, bool)> {
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
    Ok((items, more))
}

fn require_lead(read: &ReadTx, caller: &Caller, lead_id: &str) -> Result<()> {
    match read.lead(&caller.org_id, lead_id)? {
        Some(_) => Ok(()),
        None => Err(Error::lead_not_found(lead_id)),
    }
}
