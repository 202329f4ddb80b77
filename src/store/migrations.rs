//! Schema migrations: how a file written by an older release is brought up to date.
//!
//! The file records its layout version in `meta.schema_version`. At start-up
//! `store::initialize` runs, in one write transaction, every step from the file's
//! version to [`SCHEMA_VERSION`]; a file from a newer release is refused with a clear
//! message rather than misread. A release that changes a table or a record format adds
//! one step here and bumps the version; the fixture test keeps the old files readable.

use std::ops::Bound;

use redb::{ReadableTable, WriteTransaction};

use super::lead_value;
use super::tables::LEADS;
use crate::error::{Error, Result};

/// The layout version this release writes.
pub const SCHEMA_VERSION: u32 = 2;

/// `STEPS[i]` upgrades a file from version `i + 1` to `i + 2`.
type Step = fn(&WriteTransaction) -> Result<()>;
const STEPS: &[Step] = &[leads_keep_their_wire_json];

// Every version below the current one has its step.
const _: () = assert!(STEPS.len() as u32 + 1 == SCHEMA_VERSION);

/// 1 → 2: every lead value gains its rendered wire JSON (`lead_value`). Rewritten a
/// slice of keys at a time, so a million leads do not sit in memory at once.
fn leads_keep_their_wire_json(txn: &WriteTransaction) -> Result<()> {
    rewrite_leads(txn, 10_000)
}

fn rewrite_leads(txn: &WriteTransaction, slice_len: usize) -> Result<()> {
    let mut leads = txn.open_table(LEADS)?;
    let mut after: Option<(String, String)> = None;
    let mut rewritten = 0u64;
    loop {
        let start = match &after {
            Some((org, id)) => Bound::Excluded((org.as_str(), id.as_str())),
            None => Bound::Unbounded,
        };
        let mut slice = Vec::with_capacity(slice_len);
        for row in leads.range::<(&str, &str)>((start, Bound::Unbounded))? {
            let (key, value) = row?;
            let (org, id) = key.value();
            let lead = lead_value::decode(value.value())?;
            slice.push((org.to_string(), id.to_string(), lead_value::encode(&lead)?));
            if slice.len() == slice_len {
                break;
            }
        }
        for (org, id, value) in &slice {
            leads.insert((org.as_str(), id.as_str()), value.as_slice())?;
        }
        rewritten += slice.len() as u64;
        match slice.pop() {
            Some((org, id, _)) if slice.len() + 1 == slice_len => after = Some((org, id)),
            _ => break,
        }
    }
    tracing::info!(leads = rewritten, "stored each lead's wire JSON");
    Ok(())
}

/// Brings a file at version `from` up to [`SCHEMA_VERSION`].
pub fn migrate(txn: &WriteTransaction, from: u32) -> Result<()> {
    if from > SCHEMA_VERSION {
        return Err(Error::Internal(format!(
            "the data was written by a newer release of engaged (schema {from}; this release reads up to {SCHEMA_VERSION}): upgrade engaged, or restore a backup made by this release"
        )));
    }
    if from == 0 {
        return Err(Error::Internal(
            "the data has an invalid schema version 0".into(),
        ));
    }
    for version in from..SCHEMA_VERSION {
        tracing::info!(from = version, to = version + 1, "migrating the database");
        let step = STEPS
            .get(version as usize - 1)
            .ok_or_else(|| Error::Internal(format!("no migration from schema {version}")))?;
        step(txn)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec;
    use crate::store::records::LeadRecord;
    use redb::ReadableTableMetadata;

    #[test]
    fn schema_1_leads_are_rewritten_with_their_view_across_slices() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("v1.redb")).unwrap();
        let lead = |i: usize| LeadRecord {
            id: format!("lead-{i}"),
            first_name: format!("Name {i}"),
            ..LeadRecord::default()
        };
        let txn = db.begin_write().unwrap();
        {
            let mut leads = txn.open_table(LEADS).unwrap();
            for i in 0..5 {
                let org = if i < 3 { "org-a" } else { "org-b" };
                let old = codec::encode(&lead(i)).unwrap();
                leads
                    .insert((org, lead(i).id.as_str()), old.as_slice())
                    .unwrap();
            }
        }
        rewrite_leads(&txn, 2).unwrap();
        let leads = txn.open_table(LEADS).unwrap();
        assert_eq!(leads.len().unwrap(), 5);
        for row in leads.iter().unwrap() {
            let (key, value) = row.unwrap();
            let value = value.value();
            assert_eq!(value[0], lead_value::LEAD_FORMAT, "{:?}", key.value());
            let decoded = lead_value::decode(value).unwrap();
            assert_eq!(decoded.id, key.value().1);
            let view: serde_json::Value =
                serde_json::from_slice(&lead_value::json(value).unwrap()).unwrap();
            assert_eq!(view["firstName"], decoded.first_name.as_str());
        }
    }
}
