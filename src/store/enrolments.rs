//! Typed access to the bulk enrolments of the console ("Add to campaign" on a filtered
//! set): the job's record (`enrolment_jobs`, its progress and result) and the lead ids
//! of each of its batches (`enrolment_batches`), captured when the job was created.

use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::read::ReadTx;
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

impl WriteTx<'_> {
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

impl ReadTx {
    /// How many of `org`'s bulk enrolments have not finished (their rows are read in
    /// id order; an organization's jobs are few).
    pub fn unfinished_enrolments(&self, org: &str) -> Result<usize> {
        let table = self.open_read(ENROLMENT_JOBS)?;
        let mut running = 0;
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            let job: EnrolmentJob = decode(value.value())?;
            if job.finished_at.is_none() {
                running += 1;
            }
        }
        Ok(running)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::EnrolmentJob;

    #[test]
    fn unfinished_enrolments_count_one_organizations_jobs_not_done() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        for (org, id, finished_at) in [
            ("o1", "a", None),
            ("o1", "b", Some(5)),
            ("o1", "c", None),
            ("o2", "d", None),
        ] {
            let job = EnrolmentJob {
                id: id.into(),
                finished_at,
                ..EnrolmentJob::default()
            };
            store
                .write_blocking(move |tx| tx.put_enrolment_job(org, &job))
                .unwrap();
        }
        let read = store.read().unwrap();
        assert_eq!(read.unfinished_enrolments("o1").unwrap(), 2);
        assert_eq!(read.unfinished_enrolments("o2").unwrap(), 1);
        assert_eq!(read.unfinished_enrolments("o").unwrap(), 0);
    }
}
