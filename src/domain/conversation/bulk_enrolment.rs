//! The bulk "Add to campaign" of the console's leads list: one job for a filtered set.
//! [`start`] captures the set's lead ids when the job is created (its batches stored
//! beside the job's record, `EnrolmentJob`) and schedules one agenda row
//! (`JobKind::Enrolment`); the engine runs it batch by batch ([`run_batch`]: at most
//! [`BATCH`] leads, each batch its own short write in the writer's bulk lane, so every
//! single write of any organization goes first), and the record keeps the progress and
//! the result (added, skipped by reason). Each lead goes through
//! `conversation::handling::add_to_campaign`, the rules and the `USER_ACTION` of one lead's
//! "Add to campaign". A restart resumes the job at its next batch (the row stays in the
//! agenda until the last batch ran).

use std::sync::Arc;

use crate::domain::conversation::handling;
use crate::domain::engagement::add_to_campaign::{campaign_ready, Skip};
use crate::domain::engagement::agenda;
use crate::domain::records::search::{self, LeadFilter};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::enrolments::{enrolment_job, EnrolmentJob};
use crate::store::rows::{JobKind, Person};
use crate::store::{Store, WriteTx};
use crate::time::now_micros;

/// Leads per batch: a batch's write holds the writer some 10 ms (about 0.45 ms a lead:
/// the lead write, its enrolment and its `USER_ACTION`), so another organization's
/// write waits at most that long behind it.
pub const BATCH: usize = 20;
/// Batches of lead ids stored per write while a job is created.
const PREPARE_PART: usize = 50;
/// The most leads one job takes.
pub const MAX_LEADS: usize = 1_000_000;
/// At most this many bulk enrolments of one organization run at once (each holds its
/// captured ids on disk until it is done).
pub const MAX_RUNNING: usize = 3;

/// The ids of the live leads `filter` matches now, from one snapshot (the set a bulk
/// enrolment captures), on a blocking thread; at most `MAX_LEADS` + 1.
pub async fn matching(store: &Arc<Store>, org: &str, filter: &LeadFilter) -> Result<Vec<String>> {
    let (store, org, filter) = (store.clone(), org.to_string(), filter.clone());
    let task = tokio::task::spawn_blocking(move || {
        let read = store.read()?;
        let mut ids = Vec::new();
        let mut after = None;
        loop {
            let page = search::search(&read, &org, &filter, CAPTURE_PAGE, after.as_ref())?;
            ids.extend(page.leads.into_iter().map(|l| l.id));
            match page.next {
                Some(next) if ids.len() <= MAX_LEADS => after = Some(next),
                _ => return Ok(ids),
            }
        }
    });
    task.await
        .map_err(|e| Error::Internal(format!("capturing a filtered set: {e}")))?
}

/// Leads read per search page while a filtered set is captured.
const CAPTURE_PAGE: usize = 5_000;

/// Creates the bulk enrolment of the leads `filter` matches now (`matching`) into
/// `profile`, asked by `person`; answers the job's id. The campaign must exist and have
/// steps (a refusal beside the form's `profile`); an empty set is refused.
pub async fn start(
    store: &Arc<Store>,
    caller: &Caller,
    person: &Person,
    profile: &str,
    filter: &LeadFilter,
) -> Result<String> {
    let org = caller.org_id.clone();
    if let Err(skip) = campaign_ready(&store.read()?, &org, profile) {
        return Err(skip.error("", profile));
    }
    if store.read()?.unfinished_enrolments(&org)? >= MAX_RUNNING {
        return Err(Error::Conflict(format!(
            "{MAX_RUNNING} additions to campaigns are still running: wait until one is done."
        )));
    }
    let leads = matching(store, &org, filter).await?;
    if leads.is_empty() {
        return Err(Error::BadRequest("No lead matches this filter.".into()));
    }
    if leads.len() > MAX_LEADS {
        return Err(Error::BadRequest(format!(
            "At most {MAX_LEADS} leads can be added at once: narrow the filter."
        )));
    }
    let id = crate::ids::generate("enr");
    let batches: Vec<Vec<String>> = leads.chunks(BATCH).map(<[String]>::to_vec).collect();
    let count = batches.len() as u32;
    for (part_no, part) in batches.chunks(PREPARE_PART).enumerate() {
        let (org, id, part) = (org.clone(), id.clone(), part.to_vec());
        let first = (part_no * PREPARE_PART) as u32;
        store
            .write_bulk(&caller.org_id, move |tx| {
                for (i, batch) in part.iter().enumerate() {
                    tx.put_enrolment_batch(&org, &id, first + i as u32, batch)?;
                }
                Ok(())
            })
            .await?;
    }
    let job = EnrolmentJob {
        id: id.clone(),
        profile: profile.to_string(),
        user_id: person.user_id.clone(),
        user_name: person.name.clone(),
        total: leads.len() as u64,
        batches: count,
        created_at: now_micros(),
        ..EnrolmentJob::default()
    };
    store
        .write(move |tx| {
            tx.put_enrolment_job(&org, &job)?;
            let kind = JobKind::Enrolment {
                job: job.id.clone(),
            };
            agenda::schedule(tx, &org, "", now_micros(), kind).map(drop)
        })
        .await?;
    Ok(id)
}

/// Runs the next batch of job `id` of `org`: each lead added or skipped, the counts and
/// the next batch kept in the job's record. Answers the record as it now is (`None`:
/// no such job); a finished job runs nothing more.
pub fn run_batch(tx: &mut WriteTx, org: &str, id: &str) -> Result<Option<EnrolmentJob>> {
    let Some(mut job) = enrolment_job(tx, org, id)? else {
        return Ok(None);
    };
    if job.finished_at.is_some() {
        return Ok(Some(job));
    }
    let caller = Caller::system(org);
    let person = Person {
        user_id: job.user_id.clone(),
        name: job.user_name.clone(),
    };
    for lead in tx.take_enrolment_batch(org, id, job.next_batch)? {
        match handling::add_to_campaign(tx, &caller, &person, &lead, &job.profile, Some(id))? {
            Ok(()) => job.added += 1,
            Err(skip) => job.skipped[skip.index()] += 1,
        }
    }
    job.next_batch += 1;
    if job.next_batch >= job.batches {
        job.finished_at = Some(now_micros());
    }
    tx.put_enrolment_job(org, &job)?;
    Ok(Some(job))
}

/// A finished job's result in words: "Added 1,200, skipped 34 (30 already in a
/// campaign, 4 on the Do Not Contact list)."
pub fn result_words(job: &EnrolmentJob) -> String {
    let skipped: u64 = job.skipped.iter().sum();
    let mut out = format!(
        "Added {}, skipped {}",
        thousands(job.added),
        thousands(skipped)
    );
    let reasons: Vec<String> = Skip::ALL
        .iter()
        .filter(|s| job.skipped[s.index()] > 0)
        .map(|s| format!("{} {}", thousands(job.skipped[s.index()]), s.words()))
        .collect();
    if !reasons.is_empty() {
        out.push_str(&format!(" ({})", reasons.join(", ")));
    }
    out.push('.');
    out
}

/// `n` with a comma between thousands: 1,234.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_thousands_commas_and_results_their_reasons() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234), "1,234");
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        let mut job = EnrolmentJob {
            added: 1_200,
            ..EnrolmentJob::default()
        };
        job.skipped[Skip::AlreadyInCampaign.index()] = 30;
        job.skipped[Skip::Dnc.index()] = 4;
        assert_eq!(
            result_words(&job),
            "Added 1,200, skipped 34 (30 already in a campaign, 4 on the Do Not Contact list)."
        );
    }
}
