//! The lead search: filters, a search text, a sort and pages with the total, for the
//! console's lead list and `GET /v1/leads/search`, one query for both.
//!
//! It reads the index `store::lead_index` keeps in the write transaction, never every
//! lead: with no filter, a page walks the activity (or creation) index from its cursor;
//! with filters, it walks the smallest filter's range (or a search word's prefix range)
//! and checks each lead against the other filters by point lookups, so a page costs
//! the size of the most selective filter, not of the organization.

use std::collections::HashSet;

use crate::cursor::CursorKey;
use crate::error::{Error, Result};
use crate::store::facet::{Facet, Flag};
use crate::store::lead_index::{self, Index, Indexed};
use crate::store::rows::{EngagementState, StopReason};
use crate::store::ReadTx;
use crate::time::Micros;

/// The parameters a search takes by their wire names, besides the yes/no filters'
/// (`Flag::param`).
pub const PARAMETERS: [&str; 8] = [
    "profile",
    "state",
    "stoppedReason",
    "tag",
    "q",
    "sort",
    "limit",
    "nextToken",
];

/// The engagement states a search can ask for.
pub const STATES: [EngagementState; 6] = [
    EngagementState::None,
    EngagementState::Active,
    EngagementState::Paused,
    EngagementState::Stopped,
    EngagementState::Finished,
    EngagementState::Held,
];

/// The stop reasons a search can ask for: every one.
pub const STOP_REASONS: [StopReason; 9] = StopReason::ALL;

/// How a result is ordered: newest first by last activity (the default) or creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    #[default]
    Activity,
    Created,
}

impl Sort {
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Activity => "activity",
            Sort::Created => "created",
        }
    }
}

/// What a search asks for. Every member is optional; none lists every live lead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeadFilter {
    pub profile: Option<String>,
    pub state: Option<EngagementState>,
    pub stopped_reason: Option<StopReason>,
    /// The yes/no filters given, with the wanted value.
    pub flags: Vec<(Flag, bool)>,
    pub tag: Option<String>,
    /// The search text: every word must start a word of the lead's name, email,
    /// external id or phone.
    pub q: Option<String>,
    pub sort: Sort,
    /// Facets of the index every result must have besides the parameters' (the
    /// console's inbox tabs: `Facet::NeedsAttention`, `Facet::Owner`, ...); never read
    /// from a query.
    pub facets_extra: Vec<Facet>,
}

impl LeadFilter {
    /// Reads a filter from query parameters (`name`, `value`); `limit` and
    /// `nextToken` are the caller's. An unknown name is 400 `Unknown parameter: NAME`;
    /// an empty value counts as absent (an HTML form sends every field).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<LeadFilter> {
        let mut filter = LeadFilter::default();
        for (name, value) in params {
            let flag = Flag::from_param(name);
            if flag.is_none() && !PARAMETERS.contains(&name) {
                return Err(Error::BadRequest(format!("Unknown parameter: {name}")));
            }
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            let invalid = || Error::invalid_field(name);
            match name {
                "profile" => filter.profile = Some(value.to_string()),
                "state" => {
                    let state = STATES.iter().find(|s| s.as_str() == value);
                    filter.state = Some(*state.ok_or_else(invalid)?);
                }
                "stoppedReason" => {
                    let reason = STOP_REASONS.iter().find(|r| r.as_str() == value);
                    filter.stopped_reason = Some(*reason.ok_or_else(invalid)?);
                }
                "tag" => filter.tag = Some(value.to_string()),
                "q" => {
                    crate::domain::records::limits::text("q", value, 200)?;
                    filter.q = Some(value.to_string());
                }
                "sort" => {
                    filter.sort = match value {
                        "activity" => Sort::Activity,
                        "created" => Sort::Created,
                        _ => return Err(invalid()),
                    }
                }
                "limit" | "nextToken" => {}
                _ => {
                    let on = match value {
                        "true" => true,
                        "false" => false,
                        _ => return Err(invalid()),
                    };
                    if let Some(flag) = flag {
                        filter.flags.push((flag, on));
                    }
                }
            }
        }
        Ok(filter)
    }

    /// The filter as query parameters (wire names), for links and cursors.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(p) = &self.profile {
            out.push(("profile", p.clone()));
        }
        if let Some(s) = self.state {
            out.push(("state", s.as_str().to_string()));
        }
        if let Some(r) = self.stopped_reason {
            out.push(("stoppedReason", r.as_str().to_string()));
        }
        for flag in Flag::ALL {
            if let Some(on) = self.flag(flag) {
                out.push((flag.param(), on.to_string()));
            }
        }
        if let Some(t) = &self.tag {
            out.push(("tag", t.clone()));
        }
        if let Some(q) = &self.q {
            out.push(("q", q.clone()));
        }
        if self.sort != Sort::Activity {
            out.push(("sort", self.sort.as_str().to_string()));
        }
        out
    }

    /// The value of yes/no filter `flag`, when given.
    pub fn flag(&self, flag: Flag) -> Option<bool> {
        self.flags
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, on)| *on)
    }

    /// The exact facets every result must have.
    fn facets(&self) -> Vec<Facet> {
        let mut out = Vec::new();
        if let Some(p) = &self.profile {
            out.push(Facet::Profile(p.clone()));
        }
        if let Some(s) = self.state {
            out.push(Facet::State(s));
        }
        if let Some(r) = self.stopped_reason {
            out.push(Facet::Stop(r));
        }
        for (flag, on) in &self.flags {
            out.push(Facet::Flag(*flag, *on));
        }
        if let Some(t) = &self.tag {
            out.push(Facet::Tag(t.clone()));
        }
        out.extend(self.facets_extra.iter().cloned());
        out
    }

    /// The search terms each result must have one word starting with.
    fn terms(&self) -> Vec<String> {
        let Some(q) = &self.q else {
            return Vec::new();
        };
        // A whole query written like a phone number is one number, spaces and all.
        let compact: String = q.split_whitespace().collect();
        let phone_like = compact
            .chars()
            .all(|c| c.is_ascii_digit() || "+-().".contains(c));
        if phone_like && lead_index::phone_digits(&compact).len() >= 3 {
            return vec![lead_index::phone_digits(&compact)];
        }
        q.split_whitespace()
            .filter_map(lead_index::query_term)
            .collect()
    }
}

/// Where a page starts: just after this lead in the sort order.
pub type After = (Micros, String);

/// What a page token of `filter`'s search in `org` is bound to: the organization and
/// every parameter, so a token opens only for the same search.
fn bound(org: &str, filter: &LeadFilter) -> Vec<String> {
    let mut bound = vec!["leads-search".to_string(), org.to_string()];
    for (name, value) in filter.params() {
        bound.push(name.to_string());
        bound.push(value);
    }
    bound
}

/// The `nextToken` of a page ending at `next`, sealed for `filter`'s search in `org`
/// (`GET /v1/leads/search` and the console's lead list alike).
pub fn seal_next(key: &CursorKey, org: &str, filter: &LeadFilter, next: &After) -> Result<String> {
    let bound = bound(org, filter);
    let parts: Vec<&str> = bound.iter().map(String::as_str).collect();
    key.seal(&parts, next)
}

/// Where the page of `token` starts; 400 `Invalid nextToken` for a token changed, or
/// made for another search or organization.
pub fn open_token(key: &CursorKey, org: &str, filter: &LeadFilter, token: &str) -> Result<After> {
    let bound = bound(org, filter);
    let parts: Vec<&str> = bound.iter().map(String::as_str).collect();
    key.open(&parts, token)
}

/// One page of a search.
#[derive(Debug)]
pub struct SearchPage {
    pub leads: Vec<Indexed>,
    /// How many live leads match, over every page.
    pub total: u64,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<After>,
}

/// A smallest filter with more leads than this is "broad": its page is found by
/// walking the leads newest first (most of them match, so a page fills at once) and its
/// total by merging the filters' ranges; a narrower one starts from its own range.
const BROAD: u64 = 10_000;

/// Runs `filter` over `org`'s live leads: up to `limit` of them after `after`.
pub fn search(
    read: &ReadTx,
    org: &str,
    filter: &LeadFilter,
    limit: usize,
    after: Option<&After>,
) -> Result<SearchPage> {
    search_with(read, org, filter, limit, after, BROAD)
}

/// [`search`] with the threshold above which a filter counts as broad.
fn search_with(
    read: &ReadTx,
    org: &str,
    filter: &LeadFilter,
    limit: usize,
    after: Option<&After>,
    broad: u64,
) -> Result<SearchPage> {
    let index = read.lead_index(org)?;
    let facets = filter.facets();
    let terms = filter.terms();
    let by_created = filter.sort == Sort::Created;
    let key = |l: &Indexed| {
        if by_created {
            l.created_at
        } else {
            l.last_activity_at
        }
    };
    let keys: Vec<String> = facets.iter().map(Facet::key).collect();
    let mut counted = Vec::with_capacity(keys.len());
    for key in &keys {
        counted.push((index.count_key(key)?, key.as_str()));
    }
    counted.sort_unstable();
    let smallest = counted.first().map(|(count, _)| *count);

    if terms.is_empty() && smallest.is_none_or(|count| count > broad) {
        let before = after.map(|(t, id)| (*t, id.as_str()));
        let mut leads = Vec::new();
        let mut more = false;
        index.walk(by_created, before, |lead| {
            for (_, facet) in &counted {
                if !index.has(facet, &lead.id)? {
                    return Ok(true);
                }
            }
            if leads.len() == limit {
                more = true;
                return Ok(false);
            }
            leads.push(lead);
            Ok(true)
        })?;
        let total = match counted.as_slice() {
            [] => index.count(&Facet::All)?,
            [(count, _)] => *count,
            _ => {
                let names: Vec<&str> = counted.iter().map(|(_, f)| *f).collect();
                index.count_all(&names)?
            }
        };
        let next = leads
            .last()
            .filter(|_| more)
            .map(|l| (key(l), l.id.clone()));
        return Ok(SearchPage { leads, total, next });
    }

    let mut term_sets = Vec::with_capacity(terms.len());
    for term in &terms {
        let mut set = HashSet::new();
        index.members(&Facet::Term(term.clone()).key(), |_, lead| {
            set.insert(lead.to_string());
        })?;
        term_sets.push(set);
    }
    term_sets.sort_by_key(HashSet::len);
    let matches = match term_sets.first() {
        // Start from the smallest term set when it is smaller than every filter.
        Some(first) if smallest.is_none_or(|count| first.len() as u64 <= count) => {
            let mut ids: Vec<String> = first.iter().cloned().collect();
            ids.sort_unstable();
            intersect(&index, &counted, Some(ids))?
        }
        _ => intersect(&index, &counted, None)?,
    };
    let mut found = Vec::with_capacity(matches.len());
    for id in matches {
        if term_sets.iter().any(|set| !set.contains(&id)) {
            continue;
        }
        if let Some((created_at, last_activity_at)) = index.order(&id)? {
            found.push(Indexed {
                id,
                created_at,
                last_activity_at,
            });
        }
    }
    let total = found.len() as u64;
    // Newest first; the id breaks ties, as the cursor does.
    found.sort_unstable_by(|a, b| (key(b), &b.id).cmp(&(key(a), &a.id)));
    let start = match after {
        Some((t, id)) => found.partition_point(|l| (key(l), l.id.as_str()) >= (*t, id.as_str())),
        None => 0,
    };
    let rest = &found[start..];
    let leads: Vec<Indexed> = rest.iter().take(limit).cloned().collect();
    let next = leads
        .last()
        .filter(|_| rest.len() > limit)
        .map(|l| (key(l), l.id.clone()));
    Ok(SearchPage { leads, total, next })
}

/// How far back the inbox's "Replied" tab reaches: 7 days.
pub const REPLIED_WINDOW: Micros = 7 * 24 * 3600 * 1_000_000;

/// The inbox's "Replied" tab: `org`'s live leads that wrote at or after `since`,
/// newest own message first, matching `q` as the search's text does; up to `limit` ids
/// and how many match. One range of `leads_by_reply`, never a scan of the leads.
pub fn replied(
    read: &ReadTx,
    org: &str,
    q: Option<String>,
    since: Micros,
    limit: usize,
) -> Result<(Vec<String>, u64)> {
    let index = read.lead_index(org)?;
    let filter = LeadFilter {
        q,
        ..LeadFilter::default()
    };
    let terms = filter.terms();
    if terms.is_empty() {
        let mut ids = Vec::with_capacity(limit);
        index.walk_replied(since, |_, id| {
            ids.push(id.to_string());
            Ok(ids.len() < limit)
        })?;
        return Ok((ids, index.count_replied(since)?));
    }
    let mut term_sets = Vec::with_capacity(terms.len());
    for term in &terms {
        let mut set = HashSet::new();
        index.members(&Facet::Term(term.clone()).key(), |_, lead| {
            set.insert(lead.to_string());
        })?;
        term_sets.push(set);
    }
    let mut ids = Vec::with_capacity(limit);
    let mut total = 0;
    index.walk_replied(since, |_, id| {
        if term_sets.iter().all(|set| set.contains(id)) {
            total += 1;
            if ids.len() < limit {
                ids.push(id.to_string());
            }
        }
        Ok(true)
    })?;
    Ok((ids, total))
}

/// The ids (sorted) that have every facet of `counted` (smallest first), starting from
/// `start` (sorted ids) or else from the first facet's range. Each further facet is
/// checked by lookups when few ids are left, by a merge of its range when many are.
fn intersect(
    index: &Index<'_>,
    counted: &[(u64, &str)],
    start: Option<Vec<String>>,
) -> Result<Vec<String>> {
    let (mut ids, rest) = match start {
        Some(ids) => (ids, counted),
        None => {
            let Some(((_, first), rest)) = counted.split_first() else {
                return Ok(Vec::new());
            };
            let mut ids = Vec::new();
            index.members(first, |facet, lead| {
                if facet == *first {
                    ids.push(lead.to_string());
                }
            })?;
            (ids, rest)
        }
    };
    for (count, facet) in rest {
        if ids.is_empty() {
            break;
        }
        // A lookup costs about as much as reading a few rows of a range.
        ids = if (ids.len() as u64).saturating_mul(8) < *count {
            let mut kept = Vec::with_capacity(ids.len());
            for id in ids {
                if index.has(facet, &id)? {
                    kept.push(id);
                }
            }
            kept
        } else {
            index.keep_with(ids, facet)?
        };
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::engagement::reactions::React;

    #[test]
    fn parameters_are_read_by_their_wire_names_and_an_unknown_one_is_refused() {
        let f = LeadFilter::from_params([
            ("state", "active"),
            ("hot", "true"),
            ("aiOn", "false"),
            ("q", "Ana"),
            ("profile", ""),
            ("limit", "5"),
        ])
        .unwrap();
        assert_eq!(f.state, Some(EngagementState::Active));
        assert_eq!(f.flag(Flag::Hot), Some(true));
        assert_eq!(f.flag(Flag::AiOn), Some(false));
        assert_eq!(f.profile, None);
        assert_eq!(f.q.as_deref(), Some("Ana"));
        let e = LeadFilter::from_params([("isHot", "true")]).unwrap_err();
        assert_eq!(e.to_string(), "Unknown parameter: isHot");
        let e = LeadFilter::from_params([("hot", "yes")]).unwrap_err();
        assert_eq!(e.to_string(), "Invalid format for field: hot");
        let e = LeadFilter::from_params([("state", "running")]).unwrap_err();
        assert_eq!(e.to_string(), "Invalid format for field: state");
    }

    #[test]
    fn a_filter_goes_back_to_the_same_parameters() {
        let given = [
            ("hot", "false"),
            ("q", "ruiz"),
            ("sort", "created"),
            ("tag", "vip"),
        ];
        let f = LeadFilter::from_params(given).unwrap();
        let again: Vec<(&str, String)> = f.params();
        let g = LeadFilter::from_params(again.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(f, g);
    }

    /// Both ways of answering (walk and merge, or start from the smallest range) give
    /// the same pages and totals, page after page.
    #[test]
    fn broad_and_narrow_plans_agree() {
        use crate::domain::records::leads;
        use crate::store::rows::{OrgRecord, OrgSettings};
        use crate::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        store
            .write_blocking(|tx| {
                tx.put_org(&OrgRecord {
                    id: "o".into(),
                    name: "o".into(),
                    created_at: 0,
                    settings: OrgSettings::default(),
                })?;
                let caller = crate::domain::Caller::system("o");
                for i in 0..60 {
                    let body = serde_json::json!({
                        "id": format!("l{i:02}"),
                        "firstName": if i % 4 == 0 { "Ana" } else { "Bo" },
                        "customerProfile": format!("p{}", i % 3),
                        "isHot": i % 2 == 0,
                        "isQualified": i % 5 == 0,
                        "tags": if i % 7 == 0 { serde_json::json!([{"id": "vip", "name": "VIP"}]) } else { serde_json::json!([]) },
                    });
                    let serde_json::Value::Object(body) = body else { unreachable!() };
                    leads::create(tx, &caller, leads::LeadInput::from_json(&body)?).react(tx)?;
                }
                Ok(())
            })
            .unwrap();
        let read = store.read().unwrap();
        for query in [
            "hot=true",
            "hot=true&profile=p1",
            "hot=false&qualified=true",
            "profile=p2&tag=vip",
            "hot=true&qualified=false&profile=p0",
            "q=ana&hot=true",
            "sort=created&hot=true&profile=p1",
        ] {
            let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
            let filter =
                LeadFilter::from_params(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .unwrap();
            let walk = |broad: u64| {
                let mut ids = Vec::new();
                let mut after = None;
                let mut totals = Vec::new();
                loop {
                    let page = search_with(&read, "o", &filter, 4, after.as_ref(), broad).unwrap();
                    totals.push(page.total);
                    ids.extend(page.leads.iter().map(|l| l.id.clone()));
                    match page.next {
                        Some(next) => after = Some(next),
                        None => break,
                    }
                }
                (ids, totals)
            };
            let (narrow_ids, narrow_totals) = walk(u64::MAX);
            let (broad_ids, broad_totals) = walk(0);
            assert_eq!(narrow_ids, broad_ids, "{query}");
            assert_eq!(narrow_totals, broad_totals, "{query}");
            assert!(
                narrow_totals.iter().all(|t| *t == narrow_ids.len() as u64),
                "{query}"
            );
            let mut distinct = narrow_ids.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), narrow_ids.len(), "{query}: each lead once");
        }
    }

    #[test]
    fn a_query_like_a_phone_number_is_one_term_and_words_are_several() {
        let f = |q: &str| LeadFilter {
            q: Some(q.into()),
            ..LeadFilter::default()
        };
        assert_eq!(f("(512) 555-1099").terms(), vec!["5125551099"]);
        assert_eq!(f("Ana Ruiz").terms(), vec!["ana", "ruiz"]);
        assert_eq!(f("ana@example.com").terms(), vec!["ana@example.com"]);
    }

    /// "Replied" is the range of the last 7 days of lead messages, newest first, and
    /// follows a new message or a deletion; the inbox's tabs count conversations only.
    #[test]
    fn replied_is_the_last_7_days_of_lead_messages_and_tabs_count_conversations() {
        use crate::store::rows::{HandlingRecord, LeadRecord, OrgRecord, OrgSettings};
        use crate::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let now = crate::time::now_micros();
        let day = 24 * 3600 * 1_000_000;
        let lead = |id: &str, name: &str| LeadRecord {
            id: id.into(),
            first_name: name.into(),
            is_ai_on: true,
            ..LeadRecord::default()
        };
        store
            .write_blocking(move |tx| {
                tx.put_org(&OrgRecord {
                    id: "o".into(),
                    name: "o".into(),
                    created_at: 0,
                    settings: OrgSettings::default(),
                })?;
                for (id, name, wrote) in [
                    ("l1", "Old", Some(now - 8 * day)),
                    ("l2", "Bea", Some(now - day)),
                    ("l3", "Cy", Some(now - 1_000)),
                    ("l4", "Dee", None),
                ] {
                    tx.put_lead("o", &lead(id, name), None)?;
                    let handling = HandlingRecord {
                        conversation: wrote.is_some(),
                        last_inbound_at: wrote,
                        // Dee was taken over before any message: no conversation.
                        owner: if wrote.is_none() {
                            "u1".into()
                        } else {
                            String::new()
                        },
                        ..HandlingRecord::default()
                    };
                    tx.put_handling("o", id, &handling)?;
                }
                Ok(())
            })
            .unwrap();
        let since = now - REPLIED_WINDOW;
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let read = store.read().unwrap();
        assert_eq!(
            replied(&read, "o", None, since, 50).unwrap(),
            (ids(&["l3", "l2"]), 2)
        );
        assert_eq!(
            replied(&read, "o", None, since, 1).unwrap(),
            (ids(&["l3"]), 2)
        );
        assert_eq!(
            replied(&read, "o", Some("bea".into()), since, 50).unwrap(),
            (ids(&["l2"]), 1)
        );
        let index = read.lead_index("o").unwrap();
        assert_eq!(index.count(&Facet::Owner("u1".into())).unwrap(), 1);
        let mine = Facet::Conversing(Box::new(Facet::Owner("u1".into())));
        assert_eq!(index.count(&mine).unwrap(), 0);
        assert_eq!(index.count(&Facet::Conversation).unwrap(), 3);
        drop(index);
        drop(read);

        // Old writes again; Cy is deleted.
        store
            .write_blocking(move |tx| {
                let handling = HandlingRecord {
                    conversation: true,
                    last_inbound_at: Some(now),
                    ..HandlingRecord::default()
                };
                tx.put_handling("o", "l1", &handling)?;
                let old = lead("l3", "Cy");
                let gone = LeadRecord {
                    deleted_at: Some(now),
                    ..old.clone()
                };
                tx.put_lead("o", &gone, Some(&old))
            })
            .unwrap();
        let read = store.read().unwrap();
        assert_eq!(
            replied(&read, "o", None, since, 50).unwrap(),
            (ids(&["l1", "l2"]), 2)
        );
    }
}
