//! Typed access to the tables inside a read transaction.
//!
//! A `ReadTx` is a consistent snapshot: a page is computed from one committed state,
//! never from half a batch. Reads never wait for the writer. Scans hand rows to a
//! visitor that says whether to go on, so callers can stop after a page without the
//! store knowing what a page is.

use std::borrow::Cow;
use std::ops::Bound;

use redb::{ReadTransaction, ReadableTable};

use super::codec::decode;
use super::lead_view;
use super::rows::{EventRecord, KeyRecord, LeadRecord, OrgRecord};
use super::tables::*;
use crate::error::{Error, Result};
use crate::time::Micros;

/// Whether a scan goes on after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Where a scan starts: at a sort key (inclusive) or just after one (a cursor).
#[derive(Debug, Clone)]
pub enum Start<K> {
    AtOrAfter(K),
    After(K),
}

impl<K> Start<K> {
    /// The scan's lower bound: the table key that `key` builds from the sort key,
    /// included or excluded.
    pub(super) fn bound<'a, B>(&'a self, key: impl FnOnce(&'a K) -> B) -> Bound<B> {
        match self {
            Start::AtOrAfter(k) => Bound::Included(key(k)),
            Start::After(k) => Bound::Excluded(key(k)),
        }
    }
}

/// A lead as a listing reads it: where it sorts (`updatedAt` or `createdAt`), and its
/// wire JSON (`lead_view`), borrowed from the index row when it holds it, so that a page
/// copies each lead once, into its answer.
#[derive(Debug, Clone)]
pub struct LeadRow<'a> {
    pub sort_time: Micros,
    pub id: &'a str,
    pub created_at: Micros,
    pub json: Cow<'a, [u8]>,
}

/// An event row as a scan yields it.
#[derive(Debug, Clone)]
pub struct EventRow {
    pub updated_at: Micros,
    pub kind: String,
    pub id: String,
    pub record: EventRecord,
}

/// Messages looked back over for a lead's newest email ([`ReadTx::last_lead_email`]).
const EMAIL_LOOK_BACK: usize = 200;

/// The newest `EMAIL` event with owner `lead` among a lead's last [`EMAIL_LOOK_BACK`]
/// messages: what a reply threads to. Shared by the snapshot and the writer's
/// transaction, which open their tables differently.
pub(super) fn last_lead_email_in(
    messages: &impl ReadableTable<(&'static str, &'static str, i64, &'static str, &'static str), ()>,
    keys: &impl ReadableTable<(&'static str, &'static str, &'static str, &'static str), i64>,
    events: &impl ReadableTable<
        (&'static str, &'static str, i64, &'static str, &'static str),
        &'static [u8],
    >,
    org: &str,
    lead: &str,
) -> Result<Option<EventRecord>> {
    let from = (org, lead, i64::MIN, "", "");
    let to = (org, lead, i64::MAX, "\u{10FFFF}", "\u{10FFFF}");
    let rows = messages.range::<(&str, &str, i64, &str, &str)>(from..=to)?;
    for row in rows.rev().take(EMAIL_LOOK_BACK) {
        let (key, _) = row?;
        let (_, _, _, kind, id) = key.value();
        if kind != "EMAIL" {
            continue;
        }
        let Some(updated_at) = keys.get((org, lead, kind, id))?.map(|v| v.value()) else {
            continue;
        };
        let Some(found) = events.get((org, lead, updated_at, kind, id))? else {
            continue;
        };
        let record: EventRecord = decode(found.value())?;
        if record
            .data
            .0
            .get("owner")
            .and_then(serde_json::Value::as_str)
            == Some("lead")
        {
            return Ok(Some(record));
        }
    }
    Ok(None)
}

pub struct ReadTx {
    pub(super) txn: ReadTransaction,
}

impl ReadTx {
    pub(crate) fn new(txn: ReadTransaction) -> Self {
        ReadTx { txn }
    }

    /// Opens `table` in this snapshot.
    pub(super) fn open_read<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        table: redb::TableDefinition<K, V>,
    ) -> Result<redb::ReadOnlyTable<K, V>> {
        Ok(self.txn.open_table(table)?)
    }

    /// The lead's newest email of its own (`last_lead_email_in`), if any.
    pub fn last_lead_email(&self, org: &str, lead: &str) -> Result<Option<EventRecord>> {
        last_lead_email_in(
            &self.open_read(MESSAGES_BY_CREATED)?,
            &self.open_read(EVENT_KEYS)?,
            &self.open_read(EVENTS)?,
            org,
            lead,
        )
    }

    pub fn keys(&self) -> Result<Vec<KeyRecord>> {
        let table = self.txn.open_table(API_KEYS)?;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (_, v) = row?;
            out.push(decode(v.value())?);
        }
        Ok(out)
    }

    pub fn orgs(&self) -> Result<Vec<OrgRecord>> {
        let table = self.txn.open_table(ORGS)?;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (_, v) = row?;
            out.push(decode(v.value())?);
        }
        Ok(out)
    }

    /// Visits an organization's leads in (`updatedAt`, id) order, or (`createdAt`, id)
    /// order when `by_created`, starting at `from`. By `updatedAt` the index row holds
    /// the lead's JSON; by `createdAt` each record is read and rendered.
    pub fn scan_leads(
        &self,
        org: &str,
        by_created: bool,
        from: Start<(Micros, String)>,
        mut visit: impl FnMut(LeadRow<'_>) -> Result<Flow>,
    ) -> Result<()> {
        let leads = self.txn.open_table(LEADS)?;
        // The lead's creation time and wire JSON, from its record.
        let rendered = |id: &str| -> Result<(Micros, Vec<u8>)> {
            let found = leads.get((org, id))?.ok_or_else(|| {
                Error::Internal(format!("lead index points at a missing lead {org}/{id}"))
            })?;
            let lead: LeadRecord = decode(found.value())?;
            Ok((lead.created_at, lead_view::render(&lead)?))
        };
        let start = from.bound(|(t, id)| (org, *t, id.as_str()));
        let range = (start, Bound::Unbounded);
        if by_created {
            let index = self.txn.open_table(LEADS_BY_CREATED)?;
            for row in index.range::<(&str, i64, &str)>(range)? {
                let (key, _) = row?;
                let (row_org, created_at, id) = key.value();
                if row_org != org {
                    break;
                }
                let (_, json) = rendered(id)?;
                let row = LeadRow {
                    sort_time: created_at,
                    id,
                    created_at,
                    json: Cow::Owned(json),
                };
                if visit(row)? == Flow::Stop {
                    break;
                }
            }
        } else {
            let index = self.txn.open_table(LEADS_BY_UPDATED)?;
            for row in index.range::<(&str, i64, &str)>(range)? {
                let (key, value) = row?;
                let (row_org, updated_at, id) = key.value();
                if row_org != org {
                    break;
                }
                let value = value.value();
                let row = match lead_view::parse(value) {
                    Some(indexed) => LeadRow {
                        sort_time: updated_at,
                        id,
                        created_at: indexed.created_at,
                        json: Cow::Borrowed(indexed.json),
                    },
                    None => {
                        let (created_at, json) = rendered(id)?;
                        LeadRow {
                            sort_time: updated_at,
                            id,
                            created_at,
                            json: Cow::Owned(json),
                        }
                    }
                };
                if visit(row)? == Flow::Stop {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Visits a lead's events in (`updatedAt`, type, id) order, starting at `from`.
    pub fn scan_events(
        &self,
        org: &str,
        lead: &str,
        from: Start<(Micros, String, String)>,
        mut visit: impl FnMut(EventRow) -> Result<Flow>,
    ) -> Result<()> {
        let events = self.txn.open_table(EVENTS)?;
        let start = from.bound(|(t, kind, id)| (org, lead, *t, kind.as_str(), id.as_str()));
        for row in events.range::<(&str, &str, i64, &str, &str)>((start, Bound::Unbounded))? {
            let (key, value) = row?;
            let (row_org, row_lead, updated_at, kind, id) = key.value();
            if row_org != org || row_lead != lead {
                break;
            }
            let event = EventRow {
                updated_at,
                kind: kind.to_string(),
                id: id.to_string(),
                record: decode(value.value())?,
            };
            if visit(event)? == Flow::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Visits a lead's message events in (`createdAt`, type, id) order from `from`.
    pub fn scan_messages(
        &self,
        org: &str,
        lead: &str,
        from: Start<(Micros, String, String)>,
        mut visit: impl FnMut(EventRow) -> Result<Flow>,
    ) -> Result<()> {
        let index = self.txn.open_table(MESSAGES_BY_CREATED)?;
        let keys = self.txn.open_table(EVENT_KEYS)?;
        let events = self.txn.open_table(EVENTS)?;
        let start = from.bound(|(t, kind, id)| (org, lead, *t, kind.as_str(), id.as_str()));
        for row in index.range::<(&str, &str, i64, &str, &str)>((start, Bound::Unbounded))? {
            let (key, _) = row?;
            let (row_org, row_lead, _, kind, id) = key.value();
            if row_org != org || row_lead != lead {
                break;
            }
            let missing = || {
                Error::Internal(format!(
                    "message index points at a missing event {org}/{lead}/{kind}/{id}"
                ))
            };
            let updated_at = keys
                .get((org, lead, kind, id))?
                .ok_or_else(missing)?
                .value();
            let value = events
                .get((org, lead, updated_at, kind, id))?
                .ok_or_else(missing)?;
            let event = EventRow {
                updated_at,
                kind: kind.to_string(),
                id: id.to_string(),
                record: decode(value.value())?,
            };
            if visit(event)? == Flow::Stop {
                break;
            }
        }
        Ok(())
    }
}
