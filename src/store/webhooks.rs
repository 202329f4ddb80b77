//! Typed access to the webhook tables: endpoints, deliveries and the outbox.
//!
//! A delivery's record and its outbox row move together: [`WriteTx::put_delivery`]
//! keeps the row at the record's `next_attempt_at` while the delivery is pending and
//! removes it once it is delivered or failed.

use std::collections::HashSet;
use std::ops::Bound;

use redb::ReadableTable;

use super::codec::{decode, encode};
use super::read::{Flow, ReadTx};
use super::rows::{DeliveryRecord, DeliveryState, EndpointRecord};
use super::tables::*;
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

impl WriteTx<'_> {
    pub fn webhook_endpoints(&self, org: &str) -> Result<Vec<EndpointRecord>> {
        super::codec::org_records(&*self.open_read(WEBHOOK_ENDPOINTS)?, org)
    }

    pub fn put_webhook_endpoint(&mut self, endpoint: &EndpointRecord) -> Result<()> {
        let bytes = encode(endpoint)?;
        let mut table = self.open_write(WEBHOOK_ENDPOINTS)?;
        table.insert(
            (endpoint.org_id.as_str(), endpoint.id.as_str()),
            bytes.as_slice(),
        )?;
        Ok(())
    }

    /// Removes an endpoint with its outbox rows and deliveries.
    pub fn delete_webhook_endpoint(&mut self, org: &str, id: &str) -> Result<()> {
        self.open_write(WEBHOOK_ENDPOINTS)?.remove((org, id))?;
        remove_prefix(self, OUTBOX, id)?;
        let removed = remove_prefix(self, DELIVERIES_BY_ENDPOINT, id)?;
        let mut deliveries = self.open_write(DELIVERIES)?;
        for delivery_id in removed {
            deliveries.remove(delivery_id.as_str())?;
        }
        Ok(())
    }

    /// Writes a delivery and keeps its outbox row in step; `previous_due` is where the
    /// row was (`None` for a new delivery or one that was not queued).
    pub fn put_delivery(
        &mut self,
        delivery: &DeliveryRecord,
        previous_due: Option<Micros>,
    ) -> Result<()> {
        let (endpoint, id) = (delivery.endpoint_id.as_str(), delivery.id.as_str());
        let bytes = encode(delivery)?;
        let mut deliveries = self.open_write(DELIVERIES)?;
        let is_new = deliveries.insert(id, bytes.as_slice())?.is_none();
        drop(deliveries);
        if is_new {
            let mut by_endpoint = self.open_write(DELIVERIES_BY_ENDPOINT)?;
            by_endpoint.insert((endpoint, delivery.created_at, id), ())?;
        }
        let mut outbox = self.open_write(OUTBOX)?;
        if let Some(due) = previous_due {
            outbox.remove((endpoint, due, id))?;
        }
        let queued = match (delivery.state, delivery.next_attempt_at) {
            (DeliveryState::Pending, Some(due)) => {
                outbox.insert((endpoint, due, id), ())?;
                true
            }
            _ => false,
        };
        drop(outbox);
        self.outbox_added |= queued;
        Ok(())
    }

    /// Deletes up to `max` finished deliveries of `endpoint` created before `before`;
    /// returns how many went.
    pub fn prune_deliveries(
        &mut self,
        endpoint: &str,
        before: Micros,
        max: usize,
    ) -> Result<usize> {
        let mut doomed = Vec::new();
        {
            let by_endpoint = self.open_write(DELIVERIES_BY_ENDPOINT)?;
            let deliveries = self.open_write(DELIVERIES)?;
            for row in by_endpoint.range((endpoint, i64::MIN, "")..(endpoint, before, ""))? {
                let (key, _) = row?;
                let (_, created, id) = key.value();
                let finished = match deliveries.get(id)? {
                    Some(v) => decode::<DeliveryRecord>(v.value())?.state != DeliveryState::Pending,
                    None => true,
                };
                if finished {
                    doomed.push((created, id.to_string()));
                }
                if doomed.len() >= max {
                    break;
                }
            }
        }
        let mut by_endpoint = self.open_write(DELIVERIES_BY_ENDPOINT)?;
        let mut deliveries = self.open_write(DELIVERIES)?;
        for (created, id) in &doomed {
            by_endpoint.remove((endpoint, *created, id.as_str()))?;
            deliveries.remove(id.as_str())?;
        }
        Ok(doomed.len())
    }
}

/// Removes every row whose key starts with `prefix`; returns the keys' last elements.
fn remove_prefix(
    tx: &WriteTx,
    table: redb::TableDefinition<(&str, i64, &str), ()>,
    prefix: &str,
) -> Result<Vec<String>> {
    let mut table = tx.open_write(table)?;
    let mut keys = Vec::new();
    for row in table.range((prefix, i64::MIN, "")..)? {
        let (key, _) = row?;
        let (p, t, id) = key.value();
        if p != prefix {
            break;
        }
        keys.push((t, id.to_string()));
    }
    for (t, id) in &keys {
        table.remove((prefix, *t, id.as_str()))?;
    }
    Ok(keys.into_iter().map(|(_, id)| id).collect())
}

/// What the dispatcher should send next for one endpoint.
pub struct DueDeliveries {
    pub due: Vec<DeliveryRecord>,
    /// The earliest due time still in the future, if any.
    pub next_due: Option<Micros>,
}

impl ReadTx {
    /// Every endpoint of every organization (the dispatcher's view).
    pub fn all_webhook_endpoints(&self) -> Result<Vec<EndpointRecord>> {
        let table = self.open_read(WEBHOOK_ENDPOINTS)?;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (_, value) = row?;
            out.push(decode(value.value())?);
        }
        Ok(out)
    }

    /// Up to `max` deliveries of `endpoint` due at `now`, skipping those `in_flight`.
    pub fn due_deliveries(
        &self,
        endpoint: &str,
        now: Micros,
        in_flight: &HashSet<String>,
        max: usize,
    ) -> Result<DueDeliveries> {
        let outbox = self.open_read(OUTBOX)?;
        let deliveries = self.open_read(DELIVERIES)?;
        let mut due = Vec::new();
        let mut next_due = None;
        for row in outbox.range((endpoint, i64::MIN, "")..)? {
            let (key, _) = row?;
            let (row_endpoint, at, id) = key.value();
            if row_endpoint != endpoint {
                break;
            }
            if at > now {
                next_due = Some(at);
                break;
            }
            if due.len() >= max {
                next_due = Some(at);
                break;
            }
            if in_flight.contains(id) {
                continue;
            }
            if let Some(v) = deliveries.get(id)? {
                due.push(decode(v.value())?);
            }
        }
        Ok(DueDeliveries { due, next_due })
    }

    /// Visits an endpoint's deliveries, oldest first, after `after` (created, id).
    pub fn scan_deliveries(
        &self,
        endpoint: &str,
        after: Option<(Micros, String)>,
        mut visit: impl FnMut(DeliveryRecord) -> Result<Flow>,
    ) -> Result<()> {
        let by_endpoint = self.open_read(DELIVERIES_BY_ENDPOINT)?;
        let deliveries = self.open_read(DELIVERIES)?;
        let start = match &after {
            Some((t, id)) => Bound::Excluded((endpoint, *t, id.as_str())),
            None => Bound::Included((endpoint, i64::MIN, "")),
        };
        for row in by_endpoint.range::<(&str, i64, &str)>((start, Bound::Unbounded))? {
            let (key, _) = row?;
            let (row_endpoint, _, id) = key.value();
            if row_endpoint != endpoint {
                break;
            }
            if let Some(v) = deliveries.get(id)? {
                if visit(decode(v.value())?)? == Flow::Stop {
                    break;
                }
            }
        }
        Ok(())
    }

    /// An endpoint's newest `limit` deliveries, newest first.
    pub fn recent_deliveries(&self, endpoint: &str, limit: usize) -> Result<Vec<DeliveryRecord>> {
        let by_endpoint = self.open_read(DELIVERIES_BY_ENDPOINT)?;
        let deliveries = self.open_read(DELIVERIES)?;
        let mut out = Vec::with_capacity(limit);
        let range = (endpoint, i64::MIN, "")..=(endpoint, i64::MAX, "\u{10FFFF}");
        for row in by_endpoint
            .range::<(&str, i64, &str)>(range)?
            .rev()
            .take(limit)
        {
            let (key, _) = row?;
            let (_, _, id) = key.value();
            if let Some(v) = deliveries.get(id)? {
                out.push(decode(v.value())?);
            }
        }
        Ok(out)
    }

    /// Number of pending deliveries and the oldest due time, across all endpoints.
    pub fn outbox_depth(&self) -> Result<(u64, Option<Micros>)> {
        let outbox = self.open_read(OUTBOX)?;
        let mut depth = 0;
        let mut oldest: Option<Micros> = None;
        for row in outbox.iter()? {
            let (key, _) = row?;
            depth += 1;
            let at = key.value().1;
            oldest = Some(oldest.map_or(at, |o| o.min(at)));
        }
        Ok((depth, oldest))
    }
}
