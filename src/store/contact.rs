//! Typed access for the contact controls: the Do Not Contact list, finding the lead
//! an inbound message comes from (by phone, by email), and the consent ledger.

use std::ops::Bound;

use redb::{ReadableTable, TableDefinition};

use super::codec::{decode, encode};
use super::read::{Flow, ReadTx};
use super::reader::Reader;
use super::rows::{email_key, ConsentEntry, ConsentState};
use super::tables::{CONSENT_LEDGER, CONSENT_STATE, DNC, LEADS_BY_EMAIL, LEADS_BY_PHONE};
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

impl WriteTx<'_> {
    /// Appends `entry` to the lead's consent ledger and applies it to the channel's
    /// state; answers the state after it.
    pub fn put_consent(
        &mut self,
        org: &str,
        lead: &str,
        entry: &ConsentEntry,
    ) -> Result<ConsentState> {
        let state = self.consent_state(org, lead, entry.channel)?.with(entry);
        self.open_write(CONSENT_LEDGER)?.insert(
            (org, lead, entry.at, entry.event_id.as_str()),
            encode(entry)?.as_slice(),
        )?;
        self.open_write(CONSENT_STATE)?.insert(
            (org, lead, entry.channel.as_str()),
            encode(&state)?.as_slice(),
        )?;
        Ok(state)
    }

    /// How many entries the lead's consent ledger holds, counting up to `limit`.
    pub fn consent_count(&self, org: &str, lead: &str, limit: usize) -> Result<usize> {
        let table = self.open_read(CONSENT_LEDGER)?;
        let mut n = 0;
        for row in table.range((org, lead, i64::MIN, "")..)? {
            let (key, _) = row?;
            let (o, l, _, _) = key.value();
            if o != org || l != lead || n >= limit {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// Adds a number; false when it was listed already (its first time is kept).
    pub fn dnc_add(&mut self, org: &str, phone: &str, at: Micros) -> Result<bool> {
        let mut table = self.open_write(DNC)?;
        if table.get((org, phone))?.is_some() {
            return Ok(false);
        }
        table.insert((org, phone), at)?;
        Ok(true)
    }

    /// Removes a listed number; answers false, having changed nothing, for one that is
    /// not listed (so that a job refusing on it is no half-write).
    pub fn dnc_remove(&mut self, org: &str, phone: &str) -> Result<bool> {
        if self.open_read(DNC)?.get((org, phone))?.is_none() {
            return Ok(false);
        }
        let mut table = self.open_write(DNC)?;
        let removed = table.remove((org, phone))?;
        Ok(removed.is_some())
    }

    /// Ids of the live leads with this phone: an index lookup.
    pub fn lead_ids_by_phone(&self, org: &str, phone: &str) -> Result<Vec<String>> {
        self.contact_ids(LEADS_BY_PHONE, org, phone)
    }

    /// Ids of the live leads with this email (compared case-insensitively): an index
    /// lookup.
    pub fn lead_ids_by_email(&self, org: &str, email: &str) -> Result<Vec<String>> {
        self.contact_ids(LEADS_BY_EMAIL, org, &email_key(email))
    }

    fn contact_ids(
        &self,
        table: TableDefinition<(&str, &str, &str), ()>,
        org: &str,
        value: &str,
    ) -> Result<Vec<String>> {
        let table = self.open_read(table)?;
        let mut ids = Vec::new();
        for row in table.range((org, value, "")..)? {
            let (key, _) = row?;
            let (o, v, id) = key.value();
            if o != org || v != value {
                break;
            }
            ids.push(id.to_string());
        }
        Ok(ids)
    }
}

impl ReadTx {
    /// Visits the organization's listed numbers in order, after `after` if given.
    pub fn scan_dnc(
        &self,
        org: &str,
        after: Option<&str>,
        mut visit: impl FnMut(String, Micros) -> Result<Flow>,
    ) -> Result<()> {
        let table = self.open_read(DNC)?;
        let start = match after {
            Some(phone) => Bound::Excluded((org, phone)),
            None => Bound::Included((org, "")),
        };
        for row in table.range::<(&str, &str)>((start, Bound::Unbounded))? {
            let (key, value) = row?;
            let (o, phone) = key.value();
            if o != org {
                break;
            }
            if visit(phone.to_string(), value.value())? == Flow::Stop {
                break;
            }
        }
        Ok(())
    }

    /// A lead's consent ledger in the order consent was given or revoked, at most
    /// `limit` entries from the oldest.
    pub fn consent_ledger(&self, org: &str, lead: &str, limit: usize) -> Result<Vec<ConsentEntry>> {
        let table = self.open_read(CONSENT_LEDGER)?;
        let mut entries = Vec::new();
        for row in table.range((org, lead, i64::MIN, "")..)? {
            let (key, value) = row?;
            let (o, l, _, _) = key.value();
            if o != org || l != lead || entries.len() >= limit {
                break;
            }
            entries.push(decode(value.value())?);
        }
        Ok(entries)
    }
}
