//! Typed access to the bulk enrolments of the console ("Add to campaign" on a filtered
//! set): the job's record (`enrolment_jobs`, its progress and result) and the lead ids
//! of each of its batches (`enrolment_batches`), captured when the job was created.

use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::reader::Reader;
use super::tables::{ENROLMENT_BATCHES, ENROLMENT_JOBS};
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

/// Why a lead of a bulk enrolment was not added (`domain::engagement::enrolment::Skip`
/// names them): counts in this order.
pub const SKIP_KINDS: usize = 6;

/// A bulk enrolment: who asked, into which campaign, how far it got, what it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnrolmentJob {
    pub id: String,
    pub profile: String,
    /// The person who asked (user id and name, for each lead's `USER_ACTION`).
    pub user_id: String,
    pub user_name: String,
    /// Leads captured when the job was created.
    pub total: u64,
    /// Batches in all; the next one to run.
    pub batches: u32,
    pub next_batch: u32,
    pub added: u64,
    /// Leads skipped, by reason (`Skip::index`).
    pub skipped: [u64; SKIP_KINDS],
    pub created_at: Micros,
    /// When the last batch ran.
    pub finished_at: Option<Micros>,
}

impl EnrolmentJob {
    /// Leads dealt with so far.
    pub fn done(&self) -> u64 {
        self.added + self.skipped.iter().sum::<u64>()
    }
}

impl WriteTx {
    pub fn put_enrolment_job(&mut self, org: &str, job: &EnrolmentJob) -> Result<()> {
        let bytes = encode(job)?;
        self.open_write(ENROLMENT_JOBS)?
            .insert((org, job.id.as_str()), bytes.as_slice())?;
        Ok(())
    }

    pub fn put_enrolment_batch(
        &mut self,
        org: &str,
        job: &str,
        batch: u32,
        leads: &[String],
    ) -> Result<()> {
        let bytes = encode(&leads)?;
        self.open_write(ENROLMENT_BATCHES)?
            .insert((org, job, batch), bytes.as_slice())?;
        Ok(())
    }

    /// Takes the lead ids of a batch out (empty when it is gone).
    pub fn take_enrolment_batch(
        &mut self,
        org: &str,
        job: &str,
        batch: u32,
    ) -> Result<Vec<String>> {
        let mut table = self.open_write(ENROLMENT_BATCHES)?;
        let removed = table.remove((org, job, batch))?;
        match removed {
            Some(v) => decode(v.value()),
            None => Ok(Vec::new()),
        }
    }
}

/// The bulk enrolment `id` of `org`, in a snapshot or the writer's transaction.
pub fn enrolment_job(read: &impl Reader, org: &str, id: &str) -> Result<Option<EnrolmentJob>> {
    read.record(ENROLMENT_JOBS, (org, id))
}
