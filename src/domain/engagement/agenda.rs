//! The agenda: rows of work on a lead, each due at its time (a cadence step, a reply, a
//! keyword's notice, a call, post-call processing, a recording to fetch). A row's whole
//! life is here: [`schedule`] adds it (in the write job of its cause), quiet hours defer
//! it ([`schedule_deferred`], [`recompute_deferred`]), and `take` removes it in the
//! commit that records what running it did, which is what makes the work happen at most
//! once ([`done`] and [`retry_at`] for jobs that are not claims). The engine's
//! scheduler leases due rows; `claims` decides what a taken row becomes.

use chrono::{DateTime, Utc};

use crate::domain::contact::quiet_hours::outside_quiet_hours;
use crate::error::Result;
use crate::store::rows::{AgendaJob, JobKind};
use crate::store::{Reader, WriteTx};
use crate::time::{now_micros, Micros};

/// An agenda row's key: (due time, job id).
pub type JobKey = (Micros, String);

/// Proof that this write job took its row out of the agenda. Only `take` makes one,
/// and every claim (`engagement::claims`) requires one by value: a claim cannot be
/// written without taking its row, so the row leaves in the same commit that records
/// what the claim decided (at most once).
#[derive(Debug)]
#[must_use = "a taken row's outcome is recorded by the claim it is handed to"]
pub struct Taken {
    key: JobKey,
}

impl Taken {
    /// The key the row had.
    pub fn key(&self) -> &JobKey {
        &self.key
    }
}

/// Takes row `key` out of the agenda; `None` when it was gone already (it ran before).
pub(crate) fn take(tx: &mut WriteTx, key: &JobKey) -> Result<Option<Taken>> {
    Ok(tx
        .remove_agenda(key.0, &key.1)?
        .then(|| Taken { key: key.clone() }))
}

/// Adds an agenda row for `lead` due at `due`; answers its key.
pub fn schedule(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    due: Micros,
    kind: JobKind,
) -> Result<(Micros, String)> {
    let id = crate::ids::generate("job");
    let job = AgendaJob {
        org_id: org.to_string(),
        lead_id: lead.to_string(),
        kind,
    };
    tx.put_agenda(due, &id, &job)?;
    Ok((due, id))
}

/// Adds the agenda row of work that wanted to run at `wanted` but that quiet hours
/// defer to `due` (the window's end), and notes it, so that a change of the quiet
/// hours or of a time zone re-computes it ([`recompute_deferred`]).
pub fn schedule_deferred(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    due: Micros,
    wanted: Micros,
    kind: JobKind,
) -> Result<(Micros, String)> {
    let key = schedule(tx, org, lead, due, kind)?;
    tx.put_quiet_deferred(org, lead, key.0, &key.1, wanted)?;
    Ok(key)
}

/// The organization's quiet hours or time zone changed (`lead` None), or one lead's
/// time zone did: every agenda row quiet hours deferred (of the organization, or of
/// that lead) runs again when its work wanted to (or now, if that has passed), unless
/// the new quiet hours defer it still, to the new window's end. Called in the write
/// job of the change; it walks only the deferred rows (`quiet_deferred`), never the
/// organization's leads. A moved row keeps its job id; the engagement's pointer to it
/// follows.
pub fn recompute_deferred(tx: &mut WriteTx, org: &str, lead: Option<&str>) -> Result<()> {
    let now = now_micros();
    for (lead_id, due, id, wanted) in tx.quiet_deferred(org, lead)? {
        let Some(job) = tx.agenda_job(due, &id)? else {
            continue;
        };
        let Some(record) = tx.lead(org, &lead_id)?.filter(|l| l.deleted_at.is_none()) else {
            continue;
        };
        let at = wanted.max(now);
        let at_time = DateTime::<Utc>::from_timestamp_micros(at).unwrap_or_else(Utc::now);
        let still = outside_quiet_hours(tx, org, &record, at_time)?;
        let new_due = still.map_or(at, |end| end.timestamp_micros());
        if new_due == due {
            continue;
        }
        tx.remove_agenda(due, &id)?;
        tx.put_agenda(new_due, &id, &job)?;
        if still.is_some() {
            tx.put_quiet_deferred(org, &lead_id, new_due, &id, wanted)?;
        }
        if let Some(mut e) = tx.engagement(org, &lead_id)? {
            let old = Some((due, id.clone()));
            let mut moved = false;
            for pointer in [&mut e.step_job, &mut e.reply_job] {
                if *pointer == old {
                    *pointer = Some((new_due, id.clone()));
                    moved = true;
                }
            }
            if moved {
                tx.put_engagement(org, &lead_id, &e)?;
            }
        }
        tracing::info!(
            org,
            lead = lead_id,
            job = id,
            "work deferred by quiet hours re-computed"
        );
    }
    Ok(())
}

pub(crate) fn unschedule(tx: &mut WriteTx, job: &mut Option<(Micros, String)>) -> Result<()> {
    if let Some((due, id)) = job.take() {
        tx.remove_agenda(due, &id)?;
    }
    Ok(())
}

/// Removes row `key` whose job is over (a fetched recording, a given-up one); false
/// when it was gone already.
pub fn done(tx: &mut WriteTx, key: &JobKey) -> Result<bool> {
    Ok(take(tx, key)?.is_some())
}

/// Moves row `key` to `due`, as `kind` (its next attempt); nothing when it was gone.
pub fn retry_at(
    tx: &mut WriteTx,
    key: &JobKey,
    org: &str,
    lead: &str,
    due: Micros,
    kind: JobKind,
) -> Result<()> {
    if take(tx, key)?.is_some() {
        schedule(tx, org, lead, due, kind)?;
    }
    Ok(())
}
