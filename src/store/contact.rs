//! Typed access for the contact controls: the Do Not Contact list, and finding the lead
//! an inbound message comes from (by phone, by email).

use std::ops::Bound;

use redb::ReadableTable;

use super::codec::decode;
use super::read::{Flow, ReadTx};
use super::records::LeadRecord;
use super::tables::{DNC, LEADS, LEADS_BY_PHONE};
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

impl WriteTx {
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

    /// Ids of the leads with this phone.
    pub fn lead_ids_by_phone(&self, org: &str, phone: &str) -> Result<Vec<String>> {
        let table = self.open_read(LEADS_BY_PHONE)?;
        let mut ids = Vec::new();
        for row in table.range((org, phone, "")..)? {
            let (key, _) = row?;
            let (o, p, id) = key.value();
            if o != org || p != phone {
                break;
            }
            ids.push(id.to_string());
        }
        Ok(ids)
    }

    /// The live leads whose email is `email` (any case). A scan of the organization's
    /// leads: inbound email is rare next to everything else a lead write pays for, so no
    /// index is kept for it.
    pub fn live_leads_by_email(&self, org: &str, email: &str) -> Result<Vec<LeadRecord>> {
        let table = self.open_read(LEADS)?;
        let mut out = Vec::new();
        for row in table.range((org, "")..)? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            let lead: LeadRecord = decode(value.value())?;
            if lead.deleted_at.is_none() && lead.email.eq_ignore_ascii_case(email) {
                out.push(lead);
            }
        }
        Ok(out)
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
}
