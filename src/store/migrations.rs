//! Schema migrations: how a file written by an older release is brought up to date.
//!
//! The file records its layout version in `meta.schema_version`. At start-up
//! `store::initialize` runs, in one write transaction, every step from the file's
//! version to [`SCHEMA_VERSION`]; a file from a newer release is refused with a clear
//! message rather than misread. A release that changes a table or a record format adds
//! one step here and bumps the version; the fixture test keeps the old files readable.

use redb::WriteTransaction;

use crate::error::{Error, Result};

/// The layout version this release writes.
pub const SCHEMA_VERSION: u32 = 1;

/// `STEPS[i]` upgrades a file from version `i + 1` to `i + 2`.
type Step = fn(&WriteTransaction) -> Result<()>;
const STEPS: &[Step] = &[];

// Every version below the current one has its step.
const _: () = assert!(STEPS.len() as u32 + 1 == SCHEMA_VERSION);

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
