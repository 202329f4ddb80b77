//! The organization's Do Not Contact list: numbers that are never contacted and whose
//! leads cannot be imported.

use crate::cursor::CursorKey;
use crate::domain::records::listing;
use crate::domain::records::written::{Reaction, Written};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::{ReadTx, WriteTx};
use crate::time::Micros;

/// Normalises `raw` as the interface's phone input.
pub fn phone(raw: &str) -> Result<String> {
    crate::phone::normalize(raw).ok_or_else(|| Error::invalid_field("phone"))
}

/// Idempotent: listing a listed number again changes nothing. Owes engagement's
/// reaction (the leads with that phone and no email stop).
pub fn register(tx: &mut WriteTx, caller: &Caller, phone: &str) -> Result<Written<()>> {
    let at = tx.tick();
    tx.dnc_add(&caller.org_id, phone, at)?;
    Ok(Written::owing(
        (),
        Reaction::Dnc {
            org: caller.org_id.clone(),
            phone: phone.to_string(),
        },
    ))
}

pub fn remove(tx: &mut WriteTx, caller: &Caller, phone: &str) -> Result<()> {
    if tx.dnc_remove(&caller.org_id, phone)? {
        Ok(())
    } else {
        Err(Error::NotFound("Phone number not found".into()))
    }
}

/// A page of listed numbers in number order.
pub fn list(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    limit: usize,
    token: Option<&str>,
) -> Result<listing::Page<(String, Micros)>> {
    let query = ["dnc", caller.org_id.as_str()];
    let after = token.map(|t| key.open::<String>(&query, t)).transpose()?;
    let position = |last: &(String, Micros)| last.0.clone();
    let cursor = listing::Cursor {
        key,
        query: &query,
        position,
    };
    let scan = |visit: &mut dyn FnMut((String, Micros)) -> Result<crate::store::Flow>| {
        read.scan_dnc(&caller.org_id, after.as_deref(), |phone, at| {
            visit((phone, at))
        })
    };
    listing::paginate(limit, scan, |_| true, cursor)
}
