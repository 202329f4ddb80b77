//! The lead search's index: each live lead's facets (filter values and search terms),
//! their counts, and its sort keys, kept in the write transaction that changes the
//! lead, its engagement or its handling.
//!
//! A write marks the lead (`WriteTx::mark_lead`); before the batch commits,
//! `WriteTx::refresh_marked_leads` derives each marked lead's facets from its three
//! records and moves only the rows that changed. So a console page or
//! `GET /v1/leads/search` reads a few ranges instead of scanning every lead, and no
//! writer can forget the index: the `put_*` of each record marks it.
//!
//! An event on a lead moves only its `lastActivityAt` and `updatedAt`, which no facet
//! depends on: `WriteTx::put_lead` sees that and notes the lead's new activity instead
//! of marking it, and only its activity rows move (from its `lead_order` row), without
//! its three records read again. A lead noted and marked in one transaction is
//! re-derived whole. (Under a stream of events the batch's end fell from 22 % of the
//! writer's samples to 10 %: docs/performance.md.)

use std::collections::{BTreeMap, BTreeSet};

use redb::ReadableTable;

use super::codec::{decode, encode};
use super::facet::{Facet, Flag, Metric, Rate, COUNTED_ONLY};
use super::read::ReadTx;
use super::reader::Reader;
use super::rows::{
    EngagementRecord, EngagementState, HandlingRecord, LeadOrder, LeadRecord, StopReason,
};
use super::tables::*;
use super::write::{Logged, WriteTx};
use crate::attention::{Attention, Signals};
use crate::error::Result;
use crate::time::Micros;

/// A term is cut to this many characters.
const TERM_CHARS: usize = 64;

/// The facts "Needs attention" looks at (`attention::Signals`), read off a lead's
/// records and whether its organization has an assistant connected (`assistant`).
pub fn signals(
    lead: &LeadRecord,
    engagement: Option<&EngagementRecord>,
    handling: &HandlingRecord,
    assistant: bool,
) -> Signals {
    Signals {
        handed_off: handling.handed_off_at.is_some(),
        handoff_answered: handling.handoff_answered,
        awaiting_reply: handling.awaiting_reply,
        ai_on: lead.is_ai_on,
        assistant_connected: assistant,
        failed_send_at: handling.failed_send.as_ref().map(|f| f.at),
        assistant_error: engagement.is_some_and(|e| !e.last_error.is_empty()),
        possible_opt_out: engagement.is_some_and(|e| e.state == EngagementState::Held),
        meeting_message: handling.meeting_message,
        next_meeting_at: lead.next_meeting_at,
        calendar_changed: handling.calendar_change.is_some(),
        call_back: handling.call_back.is_some(),
    }
}

/// The facets of a live lead, from its records, as the index keys them; the reasons it
/// needs attention are the rule's (`attention::Attention::of`), now. `assistant`: its
/// organization has an assistant connected (without one, no lead is "Assisted").
pub fn facets(
    lead: &LeadRecord,
    engagement: Option<&EngagementRecord>,
    handling: &HandlingRecord,
    assistant: bool,
) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut add = |facet: Facet| {
        out.insert(facet.key());
    };
    add(Facet::All);
    if !lead.customer_profile.is_empty() {
        add(Facet::Profile(lead.customer_profile.clone()));
    }
    let state = engagement
        .filter(|e| !e.profile.is_empty())
        .map_or(EngagementState::None, |e| e.state);
    add(Facet::State(state));
    if let Some(reason) = engagement.and_then(|e| e.stopped_reason) {
        if state == EngagementState::Stopped {
            add(Facet::Stop(reason));
        }
    }
    let subs = &lead.subscriptions;
    let unsubscribed = subs.sms_unsubscribed || subs.voice_unsubscribed || subs.email_unsubscribed;
    let replied = lead.has_replied || lead.has_replied_email;
    for (flag, on) in [
        (Flag::Replied, replied),
        (Flag::Hot, lead.is_hot),
        (Flag::Qualified, lead.is_qualified),
        (Flag::HandedOff, handling.handed_off_at.is_some()),
        (Flag::AiOn, lead.is_ai_on),
        (Flag::Unsubscribed, unsubscribed),
    ] {
        add(Facet::Flag(flag, on));
    }
    for tag in &lead.tags {
        add(Facet::Tag(tag.id.clone()));
    }
    if !handling.owner.is_empty() {
        add(Facet::Owner(handling.owner.clone()));
    }
    if handling.conversation {
        add(Facet::Conversation);
    }
    let reasons = Attention::of(
        &signals(lead, engagement, handling, assistant),
        crate::time::now_micros(),
    );
    for reason in &reasons {
        add(Facet::Attention(*reason));
    }
    if !reasons.is_empty() {
        add(Facet::NeedsAttention);
    }
    let running = state == EngagementState::Active || handling.conversation;
    let assisted = assistant && lead.is_ai_on && handling.owner.is_empty() && running;
    if assisted {
        add(Facet::Assisted);
    }
    if handling.conversation {
        // The inbox's tabs, conversations only.
        if !reasons.is_empty() {
            add(Facet::Conversing(Box::new(Facet::NeedsAttention)));
        }
        if assisted {
            add(Facet::Conversing(Box::new(Facet::Assisted)));
        }
        if !handling.owner.is_empty() {
            add(Facet::Conversing(Box::new(Facet::Owner(
                handling.owner.clone(),
            ))));
        }
    }
    for term in terms(lead) {
        add(Facet::Term(term));
    }
    if let Some(e) = engagement.filter(|e| !e.profile.is_empty()) {
        let stopped =
            |reason| state == EngagementState::Stopped && e.stopped_reason == Some(reason);
        let mut metrics = vec![Metric::Enrolled, Metric::State(state)];
        if let (EngagementState::Stopped, Some(reason)) = (state, e.stopped_reason) {
            metrics.push(Metric::Stop(reason));
        }
        for (rate, on) in [
            (Rate::Replied, replied),
            (Rate::Hot, lead.is_hot),
            (Rate::Qualified, lead.is_qualified),
            (
                Rate::HandedOff,
                handling.handed_off_at.is_some() || stopped(StopReason::Handoff),
            ),
            (
                Rate::OptedOut,
                unsubscribed || stopped(StopReason::Unsubscribed),
            ),
        ] {
            if on {
                metrics.push(Metric::Rate(rate));
            }
        }
        for metric in metrics {
            add(Facet::Campaign {
                profile: e.profile.clone(),
                metric,
            });
        }
    }
    out.into_iter().collect()
}

/// A word as the index keeps it (a `Facet::Term`): lower case, cut to 64 characters.
pub fn term(word: &str) -> String {
    word.to_lowercase().chars().take(TERM_CHARS).collect()
}

/// The words a search finds a lead by: its names' words, its email (whole and the
/// part before `@`), its external id, and its phone's digits (whole, and the last 10,
/// 7 and 4, so a national or local number finds it too). Lower case, cut to 64 chars.
fn terms(lead: &LeadRecord) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |word: &str| {
        let word = term(word);
        if !word.is_empty() {
            out.insert(word);
        }
    };
    for name in [&lead.first_name, &lead.last_name] {
        for word in name.split(|c: char| !c.is_alphanumeric()) {
            add(word);
        }
    }
    let email = lead.email.trim();
    if !email.is_empty() {
        add(email);
        if let Some((local, _)) = email.split_once('@') {
            add(local);
        }
    }
    add(lead.external_lead_id.trim());
    let digits = phone_digits(&lead.phone);
    for keep in [digits.len(), 10, 7, 4] {
        if digits.len() >= keep {
            add(&digits[digits.len() - keep..]);
        }
    }
    out
}

/// The digits of a phone number, or of a search word written like one.
pub fn phone_digits(text: &str) -> String {
    text.chars().filter(char::is_ascii_digit).collect()
}

/// The search term a word of a query looks up (as a prefix): a word written like a
/// phone number (digits and `+ -().` only, at least 3 digits) by its digits, any other
/// in lower case. `None` for a word with nothing to look up.
pub fn query_term(word: &str) -> Option<String> {
    let phone_like = word
        .chars()
        .all(|c| c.is_ascii_digit() || "+-().".contains(c))
        && phone_digits(word).len() >= 3;
    let looked_up = if phone_like {
        phone_digits(word)
    } else {
        term(word)
    };
    Some(looked_up).filter(|t| !t.is_empty())
}

impl WriteTx<'_> {
    /// Re-derives the index rows of every lead marked in this transaction. Each table
    /// is opened once for all of them (opening a table costs more than a row in it).
    pub(crate) fn refresh_marked_leads(&mut self) -> Result<()> {
        let marked = std::mem::take(&mut self.marked_leads);
        // A lead also marked is re-derived whole below.
        let moved: Vec<_> = std::mem::take(&mut self.activity_moved)
            .into_iter()
            .filter(|(lead, _)| !marked.contains(lead))
            .collect();
        if !moved.is_empty() {
            self.move_activity(moved)?;
        }
        if marked.is_empty() {
            return Ok(());
        }
        let moves = self.index_moves(&marked)?;
        if moves.is_empty() {
            return Ok(());
        }
        let needs = |order: &Option<LeadOrder>| {
            order
                .as_ref()
                .is_some_and(|o| o.facets.contains(&Facet::NeedsAttention.key()))
        };
        let now = crate::time::now_micros();
        for m in moves.iter().filter(|m| needs(&m.new) && !needs(&m.old)) {
            self.attention_entered(m.org, m.id, now)?;
        }
        let mut tables = IndexTables {
            facets: self.open_write(LEAD_FACETS)?,
            counts: self.open_write(LEAD_FACET_COUNTS)?,
            by_activity: self.open_write(LEADS_BY_ACTIVITY)?,
            order: self.open_write(LEAD_ORDER)?,
            lists: self.open_write(LEAD_FACET_LIST)?,
            replied: self.open_write(LEAD_REPLIED)?,
            by_reply: self.open_write(LEADS_BY_REPLY)?,
        };
        // A facet's count changes once per batch, however many of its leads moved (an
        // import part's leads share most of theirs).
        let mut counts = BTreeMap::new();
        for m in &moves {
            tables.move_rows_counted(m.org, m.id, m.old.as_ref(), m.new.as_ref(), &mut counts)?;
        }
        tables.add_counts(counts)
    }

    /// Moves the activity rows of leads whose only change was their activity time
    /// (`activity_moved`, none of them marked), from what `lead_order` says: their
    /// facets, and so every other index row, stand. A lead without an order row is not
    /// live, so it has no rows to move.
    fn move_activity(&mut self, moved: Vec<((String, String), Micros)>) -> Result<()> {
        let mut order = self.open_write(LEAD_ORDER)?;
        let mut by_activity = self.open_write(LEADS_BY_ACTIVITY)?;
        for ((org, id), at) in &moved {
            let key = (org.as_str(), id.as_str());
            let Some((created_at, old_at)) = order.get(key)?.map(|v| v.value()) else {
                continue;
            };
            if old_at == *at {
                continue;
            }
            by_activity.remove((key.0, old_at, key.1))?;
            by_activity.insert((key.0, *at, key.1), ())?;
            order.insert(key, (created_at, *at))?;
        }
        Ok(())
    }

    /// For each marked lead whose index rows are out of date: what the index says
    /// (`old`) and what its three records say now (`new`).
    fn index_moves<'m>(&self, marked: &'m BTreeSet<(String, String)>) -> Result<Vec<Move<'m>>> {
        let orders = self.open_read(LEAD_ORDER)?;
        let lists = self.open_read(LEAD_FACET_LIST)?;
        let replied = self.open_read(LEAD_REPLIED)?;
        let leads = self.open_read(LEADS)?;
        let engagements = self.open_read(ENGAGEMENTS)?;
        let handlings = self.open_read(LEAD_HANDLING)?;
        let settings = self.open_read(ENGINE_SETTINGS)?;
        let mut connected: std::collections::BTreeMap<&str, bool> = Default::default();
        let mut out = Vec::new();
        for (org, id) in marked {
            let assistant = match connected.get(org.as_str()) {
                Some(known) => *known,
                None => {
                    let known = settings
                        .get(org.as_str())?
                        .map(|v| decode::<crate::store::rows::EngineSettings>(v.value()))
                        .transpose()?
                        .is_some_and(|s| s.assistant.is_some());
                    connected.insert(org.as_str(), known);
                    known
                }
            };
            let key = (org.as_str(), id.as_str());
            let old = match orders.get(key)?.map(|v| v.value()) {
                Some((created_at, last_activity_at)) => Some(LeadOrder {
                    created_at,
                    last_activity_at,
                    facets: match lists.get(key)? {
                        Some(list) => decode(list.value())?,
                        None => Vec::new(),
                    },
                    last_inbound_at: replied.get(key)?.map(|v| v.value()),
                }),
                None => None,
            };
            let lead = leads
                .get(key)?
                .map(|v| decode::<LeadRecord>(v.value()))
                .transpose()?
                .filter(|l| l.deleted_at.is_none());
            let new = match &lead {
                Some(lead) => {
                    let engagement: Option<EngagementRecord> = engagements
                        .get(key)?
                        .map(|v| decode(v.value()))
                        .transpose()?;
                    let handling: HandlingRecord = handlings
                        .get(key)?
                        .map(|v| decode(v.value()))
                        .transpose()?
                        .unwrap_or_default();
                    Some(LeadOrder {
                        created_at: lead.created_at,
                        last_activity_at: lead.last_activity_at,
                        facets: facets(lead, engagement.as_ref(), &handling, assistant),
                        last_inbound_at: handling.last_inbound_at,
                    })
                }
                None => None,
            };
            if old != new {
                out.push(Move { org, id, old, new });
            }
        }
        Ok(out)
    }

    /// The live leads with `facet` (a filter value or a search term): one range.
    pub fn lead_ids_with_facet(&self, org: &str, facet: &Facet) -> Result<Vec<String>> {
        let facet = facet.key();
        let facet = facet.as_str();
        let table = self.open_read(LEAD_FACETS)?;
        let mut out = Vec::new();
        for row in table.range((org, facet, "")..)? {
            let (key, _) = row?;
            let (o, f, id) = key.value();
            if o != org || f != facet {
                break;
            }
            out.push(id.to_string());
        }
        Ok(out)
    }

    /// Re-derives a lead's index rows at this commit (facets that depend on time: a
    /// failed send leaves "Needs attention" after 7 days; `ReadTx::attention_expired`
    /// finds those).
    pub fn reindex_lead(&mut self, org: &str, lead: &str) {
        self.mark_lead(org, lead);
    }

    /// Records that `user` has seen lead `lead`'s own messages up to `upto` (its
    /// page was opened); answers whether that moved anything. Never moves back.
    pub fn put_seen(&mut self, org: &str, user: &str, lead: &str, upto: Micros) -> Result<bool> {
        let mut table = self.open_write(LEAD_SEEN)?;
        let seen = table.get((org, user, lead))?.map(|v| v.value());
        if seen.is_some_and(|seen| seen >= upto) {
            return Ok(false);
        }
        table.insert((org, user, lead), upto)?;
        Ok(true)
    }

    /// Records who handles a lead (and marks the lead for the index).
    pub fn put_handling(&mut self, org: &str, lead: &str, handling: &HandlingRecord) -> Result<()> {
        let mut table = self.open_write(LEAD_HANDLING)?;
        if handling == &HandlingRecord::default() {
            table.remove((org, lead))?;
        } else {
            table.insert((org, lead), encode(handling)?.as_slice())?;
        }
        drop(table);
        self.mark_lead(org, lead);
        Ok(())
    }
}

/// One lead's index rows to move: from what the index says to what its records say
/// (`None`: not a live lead).
struct Move<'m> {
    org: &'m str,
    id: &'m str,
    old: Option<LeadOrder>,
    new: Option<LeadOrder>,
}

/// The index's tables, open to be changed.
pub(super) struct IndexTables<'a, 't> {
    pub facets: Logged<'a, 't, (&'static str, &'static str, &'static str), ()>,
    pub counts: Logged<'a, 't, (&'static str, &'static str), u64>,
    pub by_activity: Logged<'a, 't, (&'static str, i64, &'static str), ()>,
    pub order: Logged<'a, 't, (&'static str, &'static str), (i64, i64)>,
    pub lists: Logged<'a, 't, (&'static str, &'static str), &'static [u8]>,
    pub replied: Logged<'a, 't, (&'static str, &'static str), i64>,
    pub by_reply: Logged<'a, 't, (&'static str, i64, &'static str), ()>,
}

impl IndexTables<'_, '_> {
    /// Applies a batch's facet count changes (`move_rows` collects them): a count that
    /// reaches zero leaves the table.
    pub fn add_counts(&mut self, counts: BTreeMap<(&str, &str), i64>) -> Result<()> {
        for ((org, facet), delta) in counts {
            if delta == 0 {
                continue;
            }
            let count = self.counts.get((org, facet))?.map_or(0, |c| c.value());
            let count = count.saturating_add_signed(delta);
            if count == 0 {
                self.counts.remove((org, facet))?;
            } else {
                self.counts.insert((org, facet), count)?;
            }
        }
        Ok(())
    }

    /// Moves lead `id`'s rows from what `old` says to what `new` says (`None`: not a
    /// live lead): only the facets that differ, their counts, the activity row.
    pub fn move_rows(
        &mut self,
        org: &str,
        id: &str,
        old: Option<&LeadOrder>,
        new: Option<&LeadOrder>,
    ) -> Result<()> {
        let mut counts = BTreeMap::new();
        self.move_rows_counted(org, id, old, new, &mut counts)?;
        self.add_counts(counts)
    }

    /// [`IndexTables::move_rows`] with the facet count changes added to `counts`, for
    /// [`IndexTables::add_counts`] once a batch's leads have all moved.
    fn move_rows_counted<'m>(
        &mut self,
        org: &'m str,
        id: &str,
        old: Option<&'m LeadOrder>,
        new: Option<&'m LeadOrder>,
        counts: &mut BTreeMap<(&'m str, &'m str), i64>,
    ) -> Result<()> {
        let (old_facets, new_facets) = (
            old.map_or(&[][..], |o| &o.facets[..]),
            new.map_or(&[][..], |n| &n.facets[..]),
        );
        for gone in old_facets.iter().filter(|f| !new_facets.contains(f)) {
            if !gone.starts_with(COUNTED_ONLY) {
                self.facets.remove((org, gone.as_str(), id))?;
            }
            *counts.entry((org, gone.as_str())).or_default() -= 1;
        }
        for added in new_facets.iter().filter(|f| !old_facets.contains(f)) {
            if !added.starts_with(COUNTED_ONLY) {
                self.facets.insert((org, added.as_str(), id), ())?;
            }
            *counts.entry((org, added.as_str())).or_default() += 1;
        }
        let old_activity = old.map(|o| o.last_activity_at);
        let new_activity = new.map(|n| n.last_activity_at);
        if old_activity != new_activity {
            if let Some(at) = old_activity {
                self.by_activity.remove((org, at, id))?;
            }
            if let Some(at) = new_activity {
                self.by_activity.insert((org, at, id), ())?;
            }
        }
        let old_reply = old.and_then(|o| o.last_inbound_at);
        let new_reply = new.and_then(|n| n.last_inbound_at);
        if old_reply != new_reply {
            if let Some(at) = old_reply {
                self.by_reply.remove((org, at, id))?;
                self.replied.remove((org, id))?;
            }
            if let Some(at) = new_reply {
                self.by_reply.insert((org, at, id), ())?;
                self.replied.insert((org, id), at)?;
            }
        }
        match new {
            Some(new) => {
                self.order
                    .insert((org, id), (new.created_at, new.last_activity_at))?;
                if old_facets != new_facets {
                    self.lists
                        .insert((org, id), encode(&new.facets)?.as_slice())?;
                }
            }
            None => {
                self.order.remove((org, id))?;
                self.lists.remove((org, id))?;
            }
        }
        Ok(())
    }
}

/// One lead of an index range with its sort keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    pub id: String,
    pub created_at: Micros,
    pub last_activity_at: Micros,
}

/// The index of one organization on a snapshot, its tables open once for a whole
/// search (opening a table per lookup would cost more than the lookup).
pub struct Index<'r> {
    org: &'r str,
    facets: redb::ReadOnlyTable<(&'static str, &'static str, &'static str), ()>,
    counts: redb::ReadOnlyTable<(&'static str, &'static str), u64>,
    order: redb::ReadOnlyTable<(&'static str, &'static str), (i64, i64)>,
    by_activity: redb::ReadOnlyTable<(&'static str, i64, &'static str), ()>,
    by_created: redb::ReadOnlyTable<(&'static str, i64, &'static str), ()>,
    by_reply: redb::ReadOnlyTable<(&'static str, i64, &'static str), ()>,
    seen: redb::ReadOnlyTable<(&'static str, &'static str, &'static str), i64>,
}

impl ReadTx {
    /// `org`'s lead search index on this snapshot.
    pub fn lead_index<'r>(&self, org: &'r str) -> Result<Index<'r>> {
        Ok(Index {
            org,
            facets: self.open_read(LEAD_FACETS)?,
            counts: self.open_read(LEAD_FACET_COUNTS)?,
            order: self.open_read(LEAD_ORDER)?,
            by_activity: self.open_read(LEADS_BY_ACTIVITY)?,
            by_created: self.open_read(LEADS_BY_CREATED)?,
            by_reply: self.open_read(LEADS_BY_REPLY)?,
            seen: self.open_read(LEAD_SEEN)?,
        })
    }

    /// How many live leads of `org` have `facet` (`Facet::All`: every live lead).
    pub fn facet_count(&self, org: &str, facet: &Facet) -> Result<u64> {
        self.lead_index(org)?.count(facet)
    }

    /// The (org, lead) pairs whose index says they need attention for a reason that
    /// has ended with time by `now` (a failed send past its window): what the notifier's
    /// tick re-derives (`WriteTx::reindex_lead`). One range per such reason and
    /// organization, a few point reads per lead in it.
    pub fn attention_expired(&self, now: Micros) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for org in self.orgs()? {
            let index = self.lead_index(&org.id)?;
            let assistant = self.engine_settings(&org.id)?.assistant.is_some();
            for reason in Attention::ALL.into_iter().filter(|r| r.expires()) {
                let mut ids = Vec::new();
                let key = Facet::Attention(reason).key();
                index.members(&key, |facet, lead| {
                    if facet == key {
                        ids.push(lead.to_string());
                    }
                })?;
                for id in ids {
                    let Some(lead) = self.lead(&org.id, &id)? else {
                        out.push((org.id.clone(), id));
                        continue;
                    };
                    let engagement = self.engagement(&org.id, &id)?;
                    let handling = self.handling(&org.id, &id)?;
                    let signals = signals(&lead, engagement.as_ref(), &handling, assistant);
                    if !reason.holds(&signals, now) {
                        out.push((org.id.clone(), id));
                    }
                }
            }
        }
        out.dedup();
        Ok(out)
    }
}

impl Index<'_> {
    /// How many live leads have `facet` (`Facet::All`: every live lead).
    pub fn count(&self, facet: &Facet) -> Result<u64> {
        self.count_key(&facet.key())
    }

    /// How many live leads have the facet keyed `key` (a `Facet::key`).
    pub fn count_key(&self, key: &str) -> Result<u64> {
        Ok(self.counts.get((self.org, key))?.map_or(0, |c| c.value()))
    }

    /// Why live lead `lead` needs attention, as the index keeps it (the rule was
    /// applied in the write that last changed the lead): one lookup per reason.
    pub fn attention(&self, lead: &str) -> Result<Vec<Attention>> {
        let mut out = Vec::new();
        for reason in Attention::ALL {
            if self.has(&Facet::Attention(reason).key(), lead)? {
                out.push(reason);
            }
        }
        Ok(out)
    }

    /// Whether live lead `lead` has the facet keyed `facet` (a `Facet::key`).
    pub fn has(&self, facet: &str, lead: &str) -> Result<bool> {
        Ok(self.facets.get((self.org, facet, lead))?.is_some())
    }

    /// A live lead's (createdAt, lastActivityAt); `None` for a deleted or unknown lead.
    pub fn order(&self, lead: &str) -> Result<Option<(Micros, Micros)>> {
        Ok(self.order.get((self.org, lead))?.map(|v| v.value()))
    }

    /// Visits the ids of the live leads with a facet starting with `prefix` (a whole
    /// facet, or a search term's beginning), in (facet, id) order; a lead may come more
    /// than once when several of its facets start so.
    pub fn members(&self, prefix: &str, mut visit: impl FnMut(&str, &str)) -> Result<()> {
        for row in self.facets.range((self.org, prefix, "")..)? {
            let (key, _) = row?;
            let (row_org, facet, lead) = key.value();
            if row_org != self.org || !facet.starts_with(prefix) {
                break;
            }
            visit(facet, lead);
        }
        Ok(())
    }

    /// Visits the ids of the live leads with exactly `facet` (a key), in id order, until
    /// `visit` says stop: a page that reads a bounded part of a large facet.
    pub fn members_until(
        &self,
        facet: &str,
        mut visit: impl FnMut(&str, &str) -> bool,
    ) -> Result<()> {
        for row in self.facets.range((self.org, facet, "")..)? {
            let (key, _) = row?;
            let (row_org, row_facet, lead) = key.value();
            if row_org != self.org || row_facet != facet || !visit(row_facet, lead) {
                break;
            }
        }
        Ok(())
    }

    /// The ids among `ids` (sorted, distinct) that have `facet`: one walk of the
    /// facet's range beside the list (a merge), not a lookup per id.
    pub fn keep_with(&self, ids: Vec<String>, facet: &str) -> Result<Vec<String>> {
        let mut kept = Vec::with_capacity(ids.len());
        let mut wanted = ids.into_iter().peekable();
        for row in self.facets.range((self.org, facet, "")..)? {
            let (key, _) = row?;
            let (row_org, row_facet, lead) = key.value();
            if row_org != self.org || row_facet != facet {
                break;
            }
            while wanted.next_if(|w| w.as_str() < lead).is_some() {}
            match wanted.next_if(|w| w == lead) {
                Some(id) => kept.push(id),
                None if wanted.peek().is_none() => break,
                None => {}
            }
        }
        Ok(kept)
    }

    /// How many live leads have every one of `facets`: their ranges walked side by
    /// side (each is in lead id order), no id copied and no lookup made.
    pub fn count_all(&self, facets: &[&str]) -> Result<u64> {
        type Row = redb::AccessGuard<'static, (&'static str, &'static str, &'static str)>;
        let org = self.org;
        let mut ranges = Vec::with_capacity(facets.len());
        for facet in facets {
            ranges.push((*facet, self.facets.range((org, *facet, "")..)?));
        }
        // The current row of each range; `None` when a range is done.
        let mut current: Vec<Option<Row>> = Vec::with_capacity(ranges.len());
        let next =
            |facet: &str,
             range: &mut redb::Range<'static, (&'static str, &'static str, &'static str), ()>|
             -> Result<Option<Row>> {
                match range.next() {
                    Some(row) => {
                        let (key, _) = row?;
                        let (row_org, row_facet, _) = key.value();
                        Ok((row_org == org && row_facet == facet).then_some(key))
                    }
                    None => Ok(None),
                }
            };
        for (facet, range) in ranges.iter_mut() {
            current.push(next(facet, range)?);
        }
        let mut count = 0;
        // The highest id among the current rows, copied into one reused buffer.
        let mut highest = String::new();
        loop {
            highest.clear();
            for row in &current {
                let Some(row) = row else { return Ok(count) };
                let lead = row.value().2;
                if lead > highest.as_str() {
                    highest.clear();
                    highest.push_str(lead);
                }
            }
            let mut all_equal = true;
            for (i, (facet, range)) in ranges.iter_mut().enumerate() {
                while current[i]
                    .as_ref()
                    .is_some_and(|row| row.value().2 < highest.as_str())
                {
                    current[i] = next(facet, range)?;
                }
                match &current[i] {
                    None => return Ok(count),
                    Some(row) => all_equal &= row.value().2 == highest.as_str(),
                }
            }
            if all_equal {
                count += 1;
                for (i, (facet, range)) in ranges.iter_mut().enumerate() {
                    current[i] = next(facet, range)?;
                }
            }
        }
    }

    /// Visits the live leads whose newest own message is at or after `since`, newest
    /// first, as (that time, lead id), until `visit` says stop: one range.
    pub fn walk_replied(
        &self,
        since: Micros,
        mut visit: impl FnMut(Micros, &str) -> Result<bool>,
    ) -> Result<()> {
        let org = self.org;
        let range = self
            .by_reply
            .range((org, since, "")..=(org, i64::MAX, "\u{10FFFF}"))?;
        for row in range.rev() {
            let (key, _) = row?;
            let (_, at, id) = key.value();
            if !visit(at, id)? {
                break;
            }
        }
        Ok(())
    }

    /// Up to when `user` has seen lead `lead`'s own messages (`None`: never opened
    /// its page since it wrote).
    pub fn seen(&self, user: &str, lead: &str) -> Result<Option<Micros>> {
        Ok(self.seen.get((self.org, user, lead))?.map(|v| v.value()))
    }

    /// How many live leads wrote at or after `since` (the range's rows, counted).
    pub fn count_replied(&self, since: Micros) -> Result<u64> {
        let org = self.org;
        let range = self
            .by_reply
            .range((org, since, "")..=(org, i64::MAX, "\u{10FFFF}"))?;
        let mut count = 0;
        for row in range {
            row?;
            count += 1;
        }
        Ok(count)
    }

    /// Visits live leads newest first (by activity, or by creation when `by_created`),
    /// from just below `before` (`None`: the newest), until `visit` says stop.
    pub fn walk(
        &self,
        by_created: bool,
        before: Option<(Micros, &str)>,
        mut visit: impl FnMut(Indexed) -> Result<bool>,
    ) -> Result<()> {
        let org = self.org;
        let table = if by_created {
            &self.by_created
        } else {
            &self.by_activity
        };
        let low = (org, i64::MIN, "");
        let range = match before {
            Some((at, id)) => table.range(low..(org, at, id))?,
            None => table.range(low..=(org, i64::MAX, "\u{10FFFF}"))?,
        };
        for row in range.rev() {
            let (key, _) = row?;
            let (_, at, id) = key.value();
            // Deleted leads stay in `leads_by_created`; only live ones have an order.
            let Some((created_at, last_activity_at)) = self.order(id)? else {
                continue;
            };
            let keep_going = visit(Indexed {
                id: id.to_string(),
                created_at: if by_created { at } else { created_at },
                last_activity_at,
            })?;
            if !keep_going {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::{StopReason, Subscriptions, TagRecord};

    fn lead() -> LeadRecord {
        LeadRecord {
            id: "l1".into(),
            first_name: "Ana María".into(),
            last_name: "Ruiz-Díaz".into(),
            phone: "+15125551099".into(),
            email: "Ana.Ruiz@Example.com".into(),
            customer_profile: "solar".into(),
            is_hot: true,
            is_ai_on: true,
            external_lead_id: "CRM-77".into(),
            tags: vec![TagRecord {
                id: "vip".into(),
                name: "VIP".into(),
                condition: String::new(),
            }],
            ..LeadRecord::default()
        }
    }

    #[test]
    fn a_leads_facets_name_its_filters_and_search_terms() {
        let engagement = EngagementRecord {
            profile: "solar".into(),
            state: EngagementState::Stopped,
            stopped_reason: Some(StopReason::Replied),
            ..EngagementRecord::default()
        };
        let handling = HandlingRecord {
            owner: "usr_1".into(),
            handed_off_at: Some(5),
            ..HandlingRecord::default()
        };
        let got = facets(&lead(), Some(&engagement), &handling, true);
        for want in [
            "all",
            "profile:solar",
            "state:stopped",
            "stop:replied",
            "hot:1",
            "qualified:0",
            "replied:0",
            "handedoff:1",
            "aion:1",
            "unsub:0",
            "tag:vip",
            "owner:usr_1",
            "t:ana",
            "t:maría",
            "t:ruiz",
            "t:díaz",
            "t:ana.ruiz@example.com",
            "t:ana.ruiz",
            "t:crm-77",
            "t:15125551099",
            "t:5125551099",
            "t:5551099",
            "t:1099",
        ] {
            assert!(
                got.contains(&want.to_string()),
                "{want} missing from {got:?}"
            );
        }
    }

    #[test]
    fn a_lead_without_engagement_is_state_none_and_unsubscribed_counts_any_channel() {
        let mut l = lead();
        l.subscriptions = Subscriptions {
            email_unsubscribed: true,
            ..Subscriptions::default()
        };
        let got = facets(&l, None, &HandlingRecord::default(), true);
        assert!(got.contains(&"state:none".to_string()));
        assert!(got.contains(&"unsub:1".to_string()));
        assert!(!got
            .iter()
            .any(|f| f.starts_with("stop:") || f.starts_with("owner:")));
    }

    #[tokio::test]
    async fn an_event_moves_only_the_activity_rows_and_a_change_beside_it_re_derives_all() {
        use crate::store::reader::Reader;
        use crate::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let first = LeadRecord {
            created_at: 10,
            updated_at: 10,
            last_activity_at: 10,
            ..lead()
        };
        let put = |old: Option<LeadRecord>, new: LeadRecord| {
            store.write(move |tx| tx.put_lead("o", &new, old.as_ref()))
        };
        put(None, first.clone()).await.unwrap();
        // An event: the times move, nothing else.
        let moved = LeadRecord {
            updated_at: 20,
            last_activity_at: 20,
            ..first.clone()
        };
        put(Some(first.clone()), moved.clone()).await.unwrap();
        assert_eq!(store.check().unwrap(), Vec::<String>::new());
        let read = store.read().unwrap();
        assert_eq!(
            read.lead_index("o").unwrap().order("l1").unwrap(),
            Some((10, 20))
        );
        assert_eq!(
            read.facet_count("o", &Facet::Flag(Flag::Hot, true))
                .unwrap(),
            1
        );

        // In one transaction an event and a change of a field, in both orders: the
        // index follows the lead's last record.
        for event_first in [true, false] {
            let before = store.read().unwrap().lead("o", "l1").unwrap().unwrap();
            store
                .write(move |tx| {
                    let mut lead = before.clone();
                    let step = |tx: &mut WriteTx, lead: &mut LeadRecord, event: bool| {
                        let old = lead.clone();
                        lead.updated_at += 1;
                        if event {
                            lead.last_activity_at = lead.updated_at;
                        } else {
                            lead.is_hot = !lead.is_hot;
                        }
                        tx.put_lead("o", lead, Some(&old))
                    };
                    step(tx, &mut lead, event_first)?;
                    step(tx, &mut lead, !event_first)
                })
                .await
                .unwrap();
            assert_eq!(store.check().unwrap(), Vec::<String>::new());
        }
        let read = store.read().unwrap();
        // Two flips of `is_hot`: hot again, its activity the last event's.
        assert_eq!(
            read.facet_count("o", &Facet::Flag(Flag::Hot, true))
                .unwrap(),
            1
        );
        assert_eq!(
            read.facet_count("o", &Facet::Flag(Flag::Hot, false))
                .unwrap(),
            0
        );
        let lead = read.lead("o", "l1").unwrap().unwrap();
        assert_eq!(
            read.lead_index("o").unwrap().order("l1").unwrap(),
            Some((10, lead.last_activity_at))
        );
    }

    #[test]
    fn a_query_word_like_a_phone_looks_up_its_digits() {
        assert_eq!(query_term("(512)555-1099").as_deref(), Some("5125551099"));
        assert_eq!(query_term("555-1099").as_deref(), Some("5551099"));
        assert_eq!(query_term("Ana").as_deref(), Some("ana"));
        assert_eq!(query_term("12").as_deref(), Some("12"));
        assert_eq!(query_term("").as_deref(), None);
    }
}
