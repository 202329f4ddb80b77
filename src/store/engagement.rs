//! Typed access to the engine's tables: its organization settings, profiles, lead
//! engagements and their holds for a possible opt-out, the agenda, and messages still
//! being sent.
//!
//! An agenda row and the engagement that points at it move together: callers write the
//! row and the engagement's `step_job`/`reply_job` in the same job. Adding a row sets
//! the flag that wakes the scheduler after the commit.

use std::collections::HashSet;

use redb::ReadableTable;

use super::codec::{decode, encode};
use super::read::ReadTx;
use super::rows::{
    AgendaJob, CampaignName, EngagementRecord, EngineSettings, HoldRecord, MessageKind,
    ProfileRecord, ProviderMessageRef, SendingRow,
};
use super::tables::*;
use super::write::WriteTx;
use crate::error::{Error, Result};
use crate::time::Micros;

/// Due agenda rows, and when the next one not taken falls due.
pub struct DueJobs {
    pub due: Vec<(Micros, String, AgendaJob)>,
    pub next_due: Option<Micros>,
}

impl WriteTx<'_> {
    /// Saves `org`'s settings. Connecting or removing its assistant re-derives the
    /// index rows of its leads with a conversation: whether a reply waits for a person
    /// ("Replied — no assistant connected") and who is "Assisted" depend on it.
    pub fn put_engine_settings(&mut self, org: &str, settings: &EngineSettings) -> Result<()> {
        let bytes = encode(settings)?;
        let before = self
            .open_write(ENGINE_SETTINGS)?
            .insert(org, bytes.as_slice())?
            .map(|old| decode::<EngineSettings>(old.value()))
            .transpose()?
            .is_some_and(|old| old.assistant.is_some());
        if before != settings.assistant.is_some() {
            let conversing = self.lead_ids_with_facet(org, &super::facet::Facet::Conversation)?;
            for lead in conversing {
                self.mark_lead(org, &lead);
            }
        }
        Ok(())
    }

    pub fn put_profile(&mut self, org: &str, profile: &ProfileRecord) -> Result<()> {
        let bytes = encode(profile)?;
        self.open_write(PROFILES)?
            .insert((org, profile.name.as_str()), bytes.as_slice())?;
        Ok(())
    }

    /// How many profiles `org` has (keys only: no profile is decoded).
    pub fn profile_count(&mut self, org: &str) -> Result<usize> {
        let table = self.open_write(PROFILES)?;
        let mut count = 0;
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, _) = row?;
            if key.value().0 != org {
                break;
            }
            count += 1;
        }
        Ok(count)
    }

    pub fn delete_profile(&mut self, org: &str, name: &str) -> Result<()> {
        self.open_write(PROFILES)?.remove((org, name))?;
        self.open_write(PROFILE_LABELS)?.remove((org, name))?;
        Ok(())
    }

    /// Sets the display name of `org`'s campaign `name`; none (or the name itself)
    /// leaves it named by its id.
    pub fn put_profile_label(&mut self, org: &str, name: &str, label: Option<&str>) -> Result<()> {
        let mut table = self.open_write(PROFILE_LABELS)?;
        match label {
            Some(label) if label != name => {
                table.insert((org, name), label)?;
            }
            _ => {
                table.remove((org, name))?;
            }
        }
        Ok(())
    }

    pub fn put_engagement(
        &mut self,
        org: &str,
        lead: &str,
        engagement: &EngagementRecord,
    ) -> Result<()> {
        let bytes = encode(engagement)?;
        self.open_write(ENGAGEMENTS)?
            .insert((org, lead), bytes.as_slice())?;
        self.mark_lead(org, lead);
        Ok(())
    }

    /// Holds a lead for a possible opt-out (`consent_holds`).
    pub fn put_hold(&mut self, org: &str, lead: &str, hold: &HoldRecord) -> Result<()> {
        let bytes = encode(hold)?;
        self.open_write(CONSENT_HOLDS)?
            .insert((org, lead), bytes.as_slice())?;
        self.mark_lead(org, lead);
        Ok(())
    }

    /// Ends a lead's hold; answers it, if there was one.
    pub fn remove_hold(&mut self, org: &str, lead: &str) -> Result<Option<HoldRecord>> {
        let old = self
            .open_write(CONSENT_HOLDS)?
            .remove((org, lead))?
            .map(|v| decode::<HoldRecord>(v.value()))
            .transpose()?;
        self.mark_lead(org, lead);
        Ok(old)
    }

    /// The ids of an organization's leads whose engagement follows `profile`.
    pub fn leads_following(&self, org: &str, profile: &str) -> Result<Vec<String>> {
        let table = self.open_read(ENGAGEMENTS)?;
        let following = engagements_following(&*table, org, profile)?;
        Ok(following.into_iter().map(|(lead, _)| lead).collect())
    }

    pub fn put_agenda(&mut self, due: Micros, id: &str, job: &AgendaJob) -> Result<()> {
        let bytes = encode(job)?;
        self.open_write(AGENDA)?
            .insert((due, id), bytes.as_slice())?;
        self.agenda_added = true;
        Ok(())
    }

    /// Removes an agenda row, and its quiet-hours entry when quiet hours deferred it;
    /// whether it was there (a job run twice finds it gone).
    pub fn remove_agenda(&mut self, due: Micros, id: &str) -> Result<bool> {
        let removed = {
            let mut agenda = self.open_write(AGENDA)?;
            let removed = agenda.remove((due, id))?;
            match removed {
                Some(value) => Some(decode::<AgendaJob>(value.value())?),
                None => None,
            }
        };
        let Some(job) = removed else {
            return Ok(false);
        };
        self.open_write(QUIET_DEFERRED)?.remove((
            job.org_id.as_str(),
            job.lead_id.as_str(),
            due,
            id,
        ))?;
        Ok(true)
    }

    /// The agenda row (due, id), if it is there.
    pub fn agenda_job(&self, due: Micros, id: &str) -> Result<Option<AgendaJob>> {
        let table = self.open_read(AGENDA)?;
        let found = table.get((due, id))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// Notes that quiet hours deferred the agenda row (due, id) of `lead`, whose work
    /// wanted to run at `wanted`.
    pub fn put_quiet_deferred(
        &mut self,
        org: &str,
        lead: &str,
        due: Micros,
        id: &str,
        wanted: Micros,
    ) -> Result<()> {
        self.open_write(QUIET_DEFERRED)?
            .insert((org, lead, due, id), wanted)?;
        Ok(())
    }

    /// The rows quiet hours deferred, of one lead or of the whole organization:
    /// (lead, due, job id, wanted).
    pub fn quiet_deferred(
        &self,
        org: &str,
        lead: Option<&str>,
    ) -> Result<Vec<(String, Micros, String, Micros)>> {
        let table = self.open_read(QUIET_DEFERRED)?;
        let mut out = Vec::new();
        let start = (org, lead.unwrap_or(""), i64::MIN, "");
        for row in table.range::<(&str, &str, i64, &str)>(start..)? {
            let (key, wanted) = row?;
            let (row_org, row_lead, due, id) = key.value();
            if row_org != org || lead.is_some_and(|l| l != row_lead) {
                break;
            }
            out.push((row_lead.to_string(), due, id.to_string(), wanted.value()));
        }
        Ok(out)
    }

    pub fn agenda_contains(&self, due: Micros, id: &str) -> Result<bool> {
        Ok(self.open_read(AGENDA)?.get((due, id))?.is_some())
    }

    pub fn put_provider_message(
        &mut self,
        org: &str,
        provider_id: &str,
        message: &ProviderMessageRef,
    ) -> Result<()> {
        let bytes = encode(message)?;
        self.open_write(PROVIDER_MESSAGES)?
            .insert((org, provider_id), bytes.as_slice())?;
        Ok(())
    }

    pub fn provider_message(
        &self,
        org: &str,
        provider_id: &str,
    ) -> Result<Option<ProviderMessageRef>> {
        let table = self.open_read(PROVIDER_MESSAGES)?;
        let found = table.get((org, provider_id))?;
        found.map(|v| decode(v.value())).transpose()
    }

    pub fn remove_provider_message(&mut self, org: &str, provider_id: &str) -> Result<()> {
        self.open_write(PROVIDER_MESSAGES)?
            .remove((org, provider_id))?;
        Ok(())
    }

    /// Whether an inbound message id was recorded before.
    pub fn inbound_seen(&self, org: &str, provider_id: &str) -> Result<bool> {
        Ok(self
            .open_read(PROVIDER_INBOUND)?
            .get((org, provider_id))?
            .is_some())
    }

    /// Whether Mailgun's `token` for `org`, remembered until `until` (Unix seconds),
    /// was accepted before.
    pub fn mailgun_token_seen(&self, org: &str, token: &str, until: i64) -> Result<bool> {
        Ok(self
            .open_read(MAILGUN_TOKENS)?
            .get((until, org, token))?
            .is_some())
    }

    /// Remembers Mailgun's `token` for `org` until `until` (Unix seconds), and forgets
    /// every token whose window ended before `now`.
    pub fn remember_mailgun_token(
        &mut self,
        org: &str,
        token: &str,
        until: i64,
        now: i64,
    ) -> Result<()> {
        let mut table = self.open_write(MAILGUN_TOKENS)?;
        table.remove_range((i64::MIN, "", "")..(now, "", ""))?;
        table.insert((until, org, token), ())?;
        Ok(())
    }

    /// Notes an inbound message id; false when it was seen before.
    pub fn first_inbound(&mut self, org: &str, provider_id: &str, at: Micros) -> Result<bool> {
        let mut table = self.open_write(PROVIDER_INBOUND)?;
        if table.get((org, provider_id))?.is_some() {
            return Ok(false);
        }
        table.insert((org, provider_id), at)?;
        Ok(true)
    }

    pub fn set_sending(&mut self, row: &SendingRow, present: bool) -> Result<()> {
        let mut table = self.open_write(SENDING)?;
        let key = (
            row.org_id.as_str(),
            row.lead_id.as_str(),
            row.kind.as_str(),
            row.event_id.as_str(),
        );
        if present {
            table.insert(key, ())?;
        } else {
            table.remove(key)?;
        }
        Ok(())
    }
}

impl ReadTx {
    /// The rows quiet hours or the follow-up days deferred of one lead: (lead, due,
    /// job id, wanted). A lead's few rows, one range read.
    pub fn quiet_deferred(
        &self,
        org: &str,
        lead: Option<&str>,
    ) -> Result<Vec<(String, Micros, String, Micros)>> {
        let table = self.open_read(QUIET_DEFERRED)?;
        let mut out = Vec::new();
        let start = (org, lead.unwrap_or(""), i64::MIN, "");
        for row in table.range::<(&str, &str, i64, &str)>(start..)? {
            let (key, wanted) = row?;
            let (row_org, row_lead, due, id) = key.value();
            if row_org != org || lead.is_some_and(|l| l != row_lead) {
                break;
            }
            out.push((row_lead.to_string(), due, id.to_string(), wanted.value()));
        }
        Ok(out)
    }
}

impl ReadTx {
    /// An organization's profiles, by name.
    pub fn profiles(&self, org: &str) -> Result<Vec<ProfileRecord>> {
        super::codec::org_records(&self.open_read(PROFILES)?, org)
    }

    /// The names of `org`'s profiles in order (keys only: no profile is decoded, so a
    /// list of 200 large profiles costs 200 names).
    pub fn profile_names(&self, org: &str) -> Result<Vec<String>> {
        let table = self.open_read(PROFILES)?;
        let mut names = Vec::new();
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, _) = row?;
            let (o, name) = key.value();
            if o != org {
                break;
            }
            names.push(name.to_string());
        }
        Ok(names)
    }

    /// `org`'s campaigns in id order, each with the name people read (keys and display
    /// names only: no profile is decoded).
    pub fn campaign_names(&self, org: &str) -> Result<Vec<CampaignName>> {
        let labels = self.open_read(PROFILE_LABELS)?;
        let mut named = std::collections::HashMap::new();
        for row in labels.range::<(&str, &str)>((org, "")..)? {
            let (key, value) = row?;
            let (o, id) = key.value();
            if o != org {
                break;
            }
            named.insert(id.to_string(), value.value().to_string());
        }
        Ok(self
            .profile_names(org)?
            .into_iter()
            .map(|id| CampaignName {
                label: named.remove(&id).unwrap_or_else(|| id.clone()),
                id,
            })
            .collect())
    }

    /// `org`'s profiles in name order, after `after` when given, until `visit` stops.
    pub fn scan_profiles(
        &self,
        org: &str,
        after: Option<&str>,
        mut visit: impl FnMut(ProfileRecord) -> Result<super::Flow>,
    ) -> Result<()> {
        use std::ops::Bound;
        let table = self.open_read(PROFILES)?;
        let start = match after {
            Some(name) => Bound::Excluded((org, name)),
            None => Bound::Included((org, "")),
        };
        for row in table.range::<(&str, &str)>((start, Bound::Unbounded))? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            if visit(decode(value.value())?)? == super::Flow::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Up to `max` agenda rows due at `now`, skipping those `taken`, and the due time of
    /// the first row after them that is not taken.
    pub fn due_agenda(&self, now: Micros, taken: &HashSet<String>, max: usize) -> Result<DueJobs> {
        let table = self.open_read(AGENDA)?;
        let mut due = Vec::new();
        let mut next_due = None;
        for row in table.iter()? {
            let (key, value) = row?;
            let (at, id) = key.value();
            if taken.contains(id) {
                continue;
            }
            if at > now || due.len() >= max {
                next_due = Some(at);
                break;
            }
            due.push((at, id.to_string(), decode(value.value())?));
        }
        Ok(DueJobs { due, next_due })
    }

    /// How many agenda rows there are, how many are due at `now`, and the due time of
    /// the oldest due one.
    pub fn agenda_depth(&self, now: Micros) -> Result<(u64, u64, Option<Micros>)> {
        let table = self.open_read(AGENDA)?;
        let rows = redb::ReadableTableMetadata::len(&table)?;
        let first = table
            .first()?
            .map(|(key, _)| key.value().0)
            .filter(|at| *at <= now);
        let mut due = 0;
        for row in table.range::<(i64, &str)>(..(now.saturating_add(1), ""))? {
            row?;
            due += 1;
        }
        Ok((rows, due, first))
    }

    /// Every message a provider was handed without its answer being committed.
    pub fn sending(&self) -> Result<Vec<SendingRow>> {
        let table = self.open_read(SENDING)?;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (key, _) = row?;
            let (org, lead, kind, id) = key.value();
            let kind = MessageKind::parse(kind)
                .ok_or_else(|| Error::Internal(format!("a sending row of type {kind}")))?;
            out.push(SendingRow {
                org_id: org.to_string(),
                lead_id: lead.to_string(),
                kind,
                event_id: id.to_string(),
            });
        }
        Ok(out)
    }
}

impl WriteTx<'_> {
    /// Pauses (at `at`) or resumes the campaign of profile `profile`.
    pub fn set_campaign_paused(
        &mut self,
        org: &str,
        profile: &str,
        at: Option<Micros>,
    ) -> Result<()> {
        let mut table = self.open_write(PAUSED_CAMPAIGNS)?;
        match at {
            Some(at) => table.insert((org, profile), at)?,
            None => table.remove((org, profile))?,
        };
        Ok(())
    }

    /// Marks `lead` counted for `step` of campaign `profile` (`tables::CAMPAIGN_REPLIERS`);
    /// false when it was already.
    pub fn mark_campaign_replier(
        &mut self,
        org: &str,
        profile: &str,
        lead: &str,
        step: u32,
    ) -> Result<bool> {
        let key = (org, profile, lead, step);
        if self.open_read(CAMPAIGN_REPLIERS)?.get(key)?.is_some() {
            return Ok(false);
        }
        self.open_write(CAMPAIGN_REPLIERS)?.insert(key, ())?;
        Ok(true)
    }

    /// Notes that campaign `profile` counted `lead`'s booked meeting
    /// (`tables::CAMPAIGN_MEETINGS`); false when it had already.
    pub fn mark_campaign_meeting(&mut self, org: &str, profile: &str, lead: &str) -> Result<bool> {
        let mut table = self.open_write(CAMPAIGN_MEETINGS)?;
        let new = table.insert((org, profile, lead), ())?.is_none();
        Ok(new)
    }

    /// Adds `delta` to a campaign counter (`tables::CAMPAIGN_COUNTS`); never below 0.
    pub fn add_campaign_count(
        &mut self,
        org: &str,
        profile: &str,
        counter: &str,
        delta: i64,
    ) -> Result<()> {
        let mut table = self.open_write(CAMPAIGN_COUNTS)?;
        let now = table.get((org, profile, counter))?.map_or(0, |v| v.value());
        let next = (now as i64 + delta).max(0) as u64;
        if next == 0 {
            table.remove((org, profile, counter))?;
        } else {
            table.insert((org, profile, counter), next)?;
        }
        Ok(())
    }
}

impl ReadTx {
    /// The leads whose engagement follows `profile`, with its state (a walk over the
    /// organization's engagements, for the rare pause and resume of a campaign).
    pub fn engagements_following(
        &self,
        org: &str,
        profile: &str,
    ) -> Result<Vec<(String, super::rows::EngagementState)>> {
        engagements_following(&self.open_read(ENGAGEMENTS)?, org, profile)
    }

    /// A campaign's counters, by name.
    pub fn campaign_counts(
        &self,
        org: &str,
        profile: &str,
    ) -> Result<std::collections::BTreeMap<String, u64>> {
        let table = self.open_read(CAMPAIGN_COUNTS)?;
        let mut out = std::collections::BTreeMap::new();
        for row in table.range((org, profile, "")..)? {
            let (key, value) = row?;
            let (o, p, counter) = key.value();
            if o != org || p != profile {
                break;
            }
            out.insert(counter.to_string(), value.value());
        }
        Ok(out)
    }
}

/// The leads of `org` whose engagement in `engagements` follows `profile`, with its
/// state: a walk over the organization's engagements, shared by both transactions.
fn engagements_following(
    engagements: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    org: &str,
    profile: &str,
) -> Result<Vec<(String, super::rows::EngagementState)>> {
    let mut out = Vec::new();
    for row in engagements.range((org, "")..)? {
        let (key, value) = row?;
        let (row_org, lead) = key.value();
        if row_org != org {
            break;
        }
        let engagement: EngagementRecord = decode(value.value())?;
        if engagement.profile == profile {
            out.push((lead.to_string(), engagement.state));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::Store;

    #[test]
    fn mailgun_tokens_are_remembered_for_their_window_and_pruned_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let seen = |org: &'static str, token: &'static str, until: i64| {
            store
                .write_blocking(move |tx| tx.mailgun_token_seen(org, token, until))
                .unwrap()
        };
        let remember = |org: &'static str, token: &'static str, until: i64, now: i64| {
            store
                .write_blocking(move |tx| tx.remember_mailgun_token(org, token, until, now))
                .unwrap()
        };
        remember("o1", "a", 1_300, 1_000);
        assert!(seen("o1", "a", 1_300));
        assert!(!seen("o2", "a", 1_300), "tokens are per organization");
        // Still in its window at its last second; gone once a later write passes it.
        remember("o1", "b", 1_600, 1_300);
        assert!(seen("o1", "a", 1_300));
        remember("o1", "c", 1_700, 1_301);
        assert!(!seen("o1", "a", 1_300));
        assert!(seen("o1", "b", 1_600) && seen("o1", "c", 1_700));
    }
}
