//! Running a bulk "Add to campaign" from its agenda row: one batch per write in the
//! writer's bulk lane (`domain::conversation::bulk_enrolment::run_batch`), yielding
//! between batches, until the last one ran; then the row leaves the agenda. A failure
//! leaves the row, and the scheduler runs the job again from its next batch.

use super::Engine;
use crate::domain::conversation::bulk_enrolment;
use crate::domain::engagement::agenda::{self, JobKey};
use crate::error::Result;

impl Engine {
    /// Runs bulk enrolment `job` of `org` to its end, then removes its row `key`.
    pub(super) async fn enrol_in_bulk(&self, key: JobKey, org: &str, job: &str) -> Result<()> {
        loop {
            let (o, j) = (org.to_string(), job.to_string());
            let ran = self
                .store
                .write_bulk(org, move |tx| bulk_enrolment::run_batch(tx, &o, &j))
                .await?;
            match ran {
                Some(job) if job.finished_at.is_none() => {}
                _ => break,
            }
            // Whatever else waits (the scheduler's other rows, requests) goes first.
            tokio::task::yield_now().await;
        }
        self.store
            .write(move |tx| agenda::done(tx, &key).map(drop))
            .await
    }
}
