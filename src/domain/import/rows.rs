//! One import row becoming a lead: its cells read into the lead's fields (a phone
//! without `+` read in the organization's `defaultCountry`), its profile and the DNC
//! list checked, then matched against the live leads and the file's earlier rows.
//!
//! **An import never makes a duplicate.** A row whose `externalLeadId`, phone or email
//! matches a live lead updates that lead with the row's fields only (its tags added to
//! the lead's); rows of one file that match each other merge into the first; with
//! `create_only` both are refused instead. What a match writes is the import's
//! [`OnMatch`] choice: the row's fields, only those empty on the lead, or nothing; each
//! match says which fields it changed, from and to (`changes::diff`). Every write goes
//! through `records::leads`, so the API's rules (bounds, unique contacts, enrolment) hold
//! for imported leads too.
//!
//! A row with a `consent` cell adds one consent ledger entry per channel to the lead it
//! wrote, in the same write (`records::consent::record`); a bad consent cell refuses
//! the row.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::changes::{self, FieldChange};
use super::mapping::Field;
use crate::channel::Channel;
use crate::domain::engagement::reactions::React;
use crate::domain::records::consent::{self, ConsentInput, ProofPart};
use crate::domain::records::leads::{self, LeadInput, LeadPatch, LeadText};
use crate::domain::records::tags::tag_id;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::phone::{self, Country, Unreadable};
use crate::store::facet::Facet;
use crate::store::rows::{
    email_key, ConsentSource, ConsentStatus, LeadRecord, Proof, Purpose, TagRecord,
};
use crate::store::{Reader, WriteTx};
use crate::time::Micros;

/// One row of a file: its number as a person finds it (a CSV's spreadsheet row, the
/// header being row 1; an NDJSON file's line) and its cells with their fields.
#[derive(Debug, Clone)]
pub struct Row {
    pub number: u64,
    pub cells: Vec<(Field, Value)>,
}

/// What became of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created(String),
    /// It matched this live lead, which it updated.
    Updated(String),
    /// It matched an earlier row of the file (that row's number), whose lead it updated.
    Merged(String, u64),
    /// It matched this lead (live, or an earlier row's), left untouched ([`OnMatch::Skip`]).
    Skipped(String),
    /// It matched this live lead and would change nothing on it (its fields already
    /// hold the row's, an email differing only in case included): the lead is not
    /// written, and the row is not counted as updated.
    Unchanged(String),
    Refused(String),
}

/// What a row matching a lead (live, or an earlier row's) does to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnMatch {
    /// The row's fields replace the lead's (its tags added).
    #[default]
    Update,
    /// Only the lead's empty fields take the row's values (its tags when it has none).
    Fill,
    /// The lead is left untouched.
    Skip,
}

impl OnMatch {
    /// The choice a wire value (`update`, `fill`, `skip`) names.
    pub fn parse(value: &str) -> Option<OnMatch> {
        match value {
            "update" => Some(OnMatch::Update),
            "fill" => Some(OnMatch::Fill),
            "skip" => Some(OnMatch::Skip),
            _ => None,
        }
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            OnMatch::Update => "update",
            OnMatch::Fill => "fill",
            OnMatch::Skip => "skip",
        }
    }
}

/// How the rows of a part are applied.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Refuse a row matching a lead instead of writing it.
    pub create_only: bool,
    /// The caller throws the transaction away (`Store::trial`).
    pub dry_run: bool,
    pub on_match: OnMatch,
    /// The profile of rows that name none (checked to exist before the import starts).
    pub profile: Option<String>,
}

/// What a matched row did to its lead: the lead's name and the fields it changed.
#[derive(Debug, Clone)]
pub struct Matched {
    pub name: String,
    pub changes: Vec<FieldChange>,
}

/// The file's rows so far: each match key (`ext:`, `phone:`, `email:` and the value) →
/// the lead its row made or updated, and that row's number. It lives as long as the
/// import, so it is kept small: a key as the first 16 bytes of its SHA-256 (two keys
/// of one file alike in 128 bits do not happen), a lead's id once for all its keys.
#[derive(Debug, Default)]
pub struct FileIndex {
    keys: HashMap<[u8; 16], (usize, u64)>,
    leads: Vec<Box<str>>,
}

impl FileIndex {
    fn digest(key: &str) -> [u8; 16] {
        let mut digest = [0; 16];
        digest.copy_from_slice(&Sha256::digest(key.as_bytes())[..16]);
        digest
    }

    /// The lead an earlier row with `key` made or updated, and that row's number.
    pub fn get(&self, key: &str) -> Option<(&str, u64)> {
        let (slot, row) = self.keys.get(&Self::digest(key))?;
        Some((self.leads.get(*slot)?, *row))
    }

    pub fn contains(&self, key: &str) -> bool {
        self.keys.contains_key(&Self::digest(key))
    }

    /// Adds `keys` of row `row`, which made or updated `lead` (a key already held keeps
    /// its first row).
    pub fn add<'k>(&mut self, lead: &str, row: u64, keys: impl IntoIterator<Item = &'k String>) {
        let slot = self.leads.len();
        let mut used = false;
        for key in keys {
            if let std::collections::hash_map::Entry::Vacant(entry) =
                self.keys.entry(Self::digest(key))
            {
                entry.insert((slot, row));
                used = true;
            }
        }
        if used {
            self.leads.push(lead.into());
        }
    }
}

/// A row's outcome and the keys it adds to the file's index.
#[derive(Debug, Clone)]
pub struct Applied {
    pub row: u64,
    pub outcome: Outcome,
    /// The row's match keys the file's index does not hold yet.
    pub keys: Vec<String>,
    /// A row that matched a lead: what it changed.
    pub matched: Option<Matched>,
}

impl Applied {
    /// The lead the row made or updated (none when it was refused).
    pub fn lead(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Created(id)
            | Outcome::Updated(id)
            | Outcome::Merged(id, _)
            | Outcome::Skipped(id)
            | Outcome::Unchanged(id) => Some(id),
            Outcome::Refused(_) => None,
        }
    }
}

/// Applies `rows` in `tx` as `rules` say, the file's earlier rows in `known`. In a dry
/// run a row merging into a lead an earlier, thrown-away part of the file made is
/// checked as a new lead (and lists no changes).
pub fn apply(
    tx: &mut WriteTx,
    caller: &Caller,
    rows: &[Row],
    rules: &Rules,
    known: &FileIndex,
) -> Result<Vec<Applied>> {
    let country = Country::parse(&tx.engine_settings(&caller.org_id)?.default_country);
    let mut here = FileIndex::default();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let (outcome, keys, matched) = match one(tx, caller, row, country, rules, known, &here) {
            Ok(done) => done,
            // Only a storage failure ends the part; a row's refusal is its outcome.
            Err(e @ Error::Internal(_)) => return Err(e),
            Err(e) => (Outcome::Refused(e.to_string()), Vec::new(), None),
        };
        let mut applied = Applied {
            row: row.number,
            outcome,
            keys: Vec::new(),
            matched,
        };
        if let Some(lead) = applied.lead() {
            let added: Vec<String> = keys
                .into_iter()
                .filter(|key| !known.contains(key) && !here.contains(key))
                .collect();
            here.add(lead, row.number, &added);
            applied.keys = added;
        }
        out.push(applied);
    }
    Ok(out)
}

/// A row's outcome, its match keys and, when it matched a lead, what it changed.
type Done = (Outcome, Vec<String>, Option<Matched>);

fn one(
    tx: &mut WriteTx,
    caller: &Caller,
    row: &Row,
    country: Option<Country>,
    rules: &Rules,
    known: &FileIndex,
    here: &FileIndex,
) -> Result<Done> {
    let org = caller.org_id.as_str();
    let (create_only, dry_run) = (rules.create_only, rules.dry_run);
    let (mut body, keys) = body(row, country)?;
    if let Some(profile) = &rules.profile {
        if body.text(LeadText::CustomerProfile).is_none() {
            body.set(LeadText::CustomerProfile, profile.clone());
        }
    }
    if let Some(profile) = body.text(LeadText::CustomerProfile) {
        if tx.profile(org, profile)?.is_none() {
            return Err(Error::BadRequest(format!("Unknown profile: {profile}")));
        }
    }
    if let Some(phone) = body.text(LeadText::Phone) {
        if tx.dnc_contains(org, phone)? {
            return Err(Error::Conflict(
                "Phone number is on the Do Not Contact list".into(),
            ));
        }
    }
    let earlier = keys
        .iter()
        .find_map(|k| known.get(k).or_else(|| here.get(k)));
    if let Some((lead, first)) = earlier {
        let lead = lead.to_string();
        let lead = &lead;
        if create_only {
            return Err(Error::Conflict(format!("Same lead as row {first}")));
        }
        if dry_run && tx.lead(org, lead)?.is_none() {
            // Made by an earlier part of this dry run, thrown away since: check the
            // row as the lead it would have been.
            let name = body.name();
            let outcome = if rules.on_match == OnMatch::Skip {
                Outcome::Skipped(lead.clone())
            } else {
                let written = leads::create(tx, caller, body.input()?).react(tx)?;
                body.consent.record(tx, caller, written)?;
                Outcome::Merged(lead.clone(), first)
            };
            let matched = Matched {
                name,
                changes: Vec::new(),
            };
            return Ok((outcome, keys, Some(matched)));
        }
        let (wrote, matched) = write_match(tx, caller, lead, &body, rules.on_match)?;
        let outcome = match wrote {
            Wrote::Changed | Wrote::Unchanged => Outcome::Merged(lead.clone(), first),
            Wrote::Skipped => Outcome::Skipped(lead.clone()),
        };
        return Ok((outcome, keys, Some(matched)));
    }
    if let Some(lead) = live_match(tx, org, &body)? {
        if create_only {
            return Err(Error::Conflict(format!("Lead exists: {lead}")));
        }
        let (wrote, matched) = write_match(tx, caller, &lead, &body, rules.on_match)?;
        let outcome = match wrote {
            Wrote::Changed => Outcome::Updated(lead),
            Wrote::Unchanged => Outcome::Unchanged(lead),
            Wrote::Skipped => Outcome::Skipped(lead),
        };
        return Ok((outcome, keys, Some(matched)));
    }
    let lead = leads::create(tx, caller, body.input()?).react(tx)?;
    let id = lead.id.clone();
    body.consent.record(tx, caller, lead)?;
    Ok((Outcome::Created(id), keys, None))
}

/// What a row did to the lead it matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrote {
    /// It changed at least one of the lead's fields.
    Changed,
    /// The lead already held what the row says: nothing was written.
    Unchanged,
    /// [`OnMatch::Skip`]: the lead was left untouched.
    Skipped,
}

/// Writes a row onto the lead it matched as `on_match` says: what it did (a skip, or a
/// row that would change nothing, does not write), and what changed.
fn write_match(
    tx: &mut WriteTx,
    caller: &Caller,
    lead: &str,
    body: &RowLead,
    on_match: OnMatch,
) -> Result<(Wrote, Matched)> {
    let old = leads::live_lead(tx, caller, lead)?;
    let name = changes::display_name(&old);
    let mut patch = match on_match {
        OnMatch::Skip => {
            return Ok((
                Wrote::Skipped,
                Matched {
                    name,
                    changes: Vec::new(),
                },
            ))
        }
        OnMatch::Update => body.patch(add_tags(tx, &caller.org_id, lead, &body.tags)?)?,
        OnMatch::Fill => body.fill(&old)?,
    };
    // The same email in another case is the same email: the lead keeps its own.
    patch.keep_email(&old.email);
    let (wrote, written) = if patch == LeadPatch::default() || patch.applied_to(&old)? == old {
        // Nothing would change: the lead is not written.
        (Wrote::Unchanged, old.clone())
    } else {
        let written = leads::update(tx, caller, lead, patch).react(tx)?;
        (Wrote::Changed, written)
    };
    let changes = changes::diff(&old, &written);
    body.consent.record(tx, caller, written)?;
    Ok((wrote, Matched { name, changes }))
}

/// A row's consent columns: an entry per channel when `consent` is set.
#[derive(Debug, Default)]
struct RowConsent {
    status: Option<ConsentStatus>,
    /// `None`: every channel the lead can receive.
    channels: Option<Vec<Channel>>,
    at: Option<Micros>,
    source: Option<ConsentSource>,
    proof: Proof,
}

impl RowConsent {
    /// Reads one consent cell of `field` (its text; `value`, an NDJSON array of channels).
    fn set(&mut self, field: &Field, text: &str, value: &Value) -> Result<()> {
        let bad = |column: &str, expected: &str| {
            Error::BadRequest(format!("Invalid {column}: {text} ({expected})"))
        };
        match field {
            Field::Consent if !text.is_empty() => {
                self.status = Some(match text.to_lowercase().as_str() {
                    "yes" | "true" | "granted" => ConsentStatus::Granted,
                    "no" | "false" | "revoked" => ConsentStatus::Revoked,
                    _ => return Err(bad("consent", "yes, true, granted, no, false or revoked")),
                })
            }
            Field::ConsentChannels => {
                let names: Vec<String> = match value {
                    Value::Array(items) => items
                        .iter()
                        .map(|v| v.as_str().unwrap_or_default().to_string())
                        .collect(),
                    _ => text.split([';', ',']).map(str::to_string).collect(),
                };
                let mut channels = Vec::new();
                for name in names {
                    let name = name.trim().to_lowercase();
                    if name.is_empty() {
                        continue;
                    }
                    let channel = Channel::parse(&name)
                        .ok_or_else(|| bad("consentChannels", "sms;voice;email"))?;
                    if !channels.contains(&channel) {
                        channels.push(channel);
                    }
                }
                self.channels = (!channels.is_empty()).then_some(channels);
            }
            Field::ConsentAt if !text.is_empty() => {
                self.at = Some(consent::given_at(text, "consentAt")?)
            }
            Field::ConsentSource if !text.is_empty() => {
                let source = ConsentSource::parse(&text.to_lowercase()).ok_or_else(|| {
                    let names: Vec<&str> = ConsentSource::ALL.iter().map(|s| s.as_str()).collect();
                    bad("consentSource", &format!("one of {}", names.join(", ")))
                })?;
                self.source = Some(source);
            }
            Field::ConsentText if !text.is_empty() => {
                self.proof.text = Some(ProofPart::Text.checked(text, "consentText")?)
            }
            Field::ConsentUrl if !text.is_empty() => {
                self.proof.url = Some(ProofPart::Url.checked(text, "consentUrl")?)
            }
            Field::ConsentIp if !text.is_empty() => {
                self.proof.ip = Some(ProofPart::Ip.checked(text, "consentIp")?)
            }
            _ => {}
        }
        Ok(())
    }

    /// The ledger entries of the row for `lead`, the lead the row wrote (nothing without
    /// a `consent` cell), recorded by whoever imports (a key, a person, the operator).
    fn record(&self, tx: &mut WriteTx, caller: &Caller, mut lead: LeadRecord) -> Result<()> {
        let Some(status) = self.status else {
            return Ok(());
        };
        let org = caller.org_id.as_str();
        let recorded_by = consent::Change::of_caller(tx, caller)?.proof.recorded_by;
        let channels: Vec<Channel> = match &self.channels {
            Some(channels) => channels.clone(),
            None => Channel::ALL
                .into_iter()
                .filter(|c| c.reachable(&lead))
                .collect(),
        };
        consent::room(tx, org, &lead.id, channels.len())?;
        for channel in channels {
            let input = ConsentInput {
                channel,
                status,
                purpose: Purpose::Marketing,
                source: self.source.unwrap_or(ConsentSource::Import),
                at: self.at,
                proof: Proof {
                    recorded_by: recorded_by.clone(),
                    ..self.proof.clone()
                },
            };
            lead = consent::record(tx, org, lead, input).react(tx)?.1;
        }
        Ok(())
    }
}

/// A row's lead as its cells say it, before the lead's rules are applied: its text
/// fields in the order of their first cell (a later cell of the same field replaces the
/// value, an empty cell sets nothing), its tags and its `additionalInfo`.
#[derive(Debug, Default)]
struct RowLead {
    texts: Vec<(LeadText, String)>,
    tags: Vec<TagRecord>,
    info: Map<String, Value>,
    consent: RowConsent,
}

impl RowLead {
    fn set(&mut self, field: LeadText, text: String) {
        if text.is_empty() {
            return;
        }
        match self.texts.iter_mut().find(|(f, _)| *f == field) {
            Some(slot) => slot.1 = text,
            None => self.texts.push((field, text)),
        }
    }

    fn text(&self, field: LeadText) -> Option<&str> {
        self.texts
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.as_str())
    }

    /// The fields to write, checked by the lead's rules in the order of the row (its
    /// cells, then its tags, then `additionalInfo`), with `tags` (if any) as its tags.
    fn patch(&self, tags: Option<Vec<TagRecord>>) -> Result<LeadPatch> {
        let mut patch = LeadPatch::default();
        for (field, value) in &self.texts {
            patch.set_text(*field, value)?;
        }
        if let Some(tags) = tags {
            patch.set_tags(tags)?;
        }
        if !self.info.is_empty() {
            patch.additional_info = Some(self.info.clone());
        }
        Ok(patch)
    }

    /// The fields to write onto `lead` that it has empty: its empty text fields, its
    /// tags when it has none, the `additionalInfo` keys it lacks (or holds empty).
    fn fill(&self, lead: &LeadRecord) -> Result<LeadPatch> {
        let mut patch = LeadPatch::default();
        for (field, value) in &self.texts {
            if field.of(lead).is_empty() {
                patch.set_text(*field, value)?;
            }
        }
        if lead.tags.is_empty() && !self.tags.is_empty() {
            patch.set_tags(self.tags.clone())?;
        }
        let held = |key: &str| {
            lead.additional_info
                .0
                .get(key)
                .is_some_and(|v| !v.is_null() && v.as_str() != Some(""))
        };
        let info: Map<String, Value> = self
            .info
            .iter()
            .filter(|(key, _)| !held(key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !info.is_empty() {
            patch.additional_info = Some(info);
        }
        Ok(patch)
    }

    /// The row's name for a lead an earlier, thrown-away part of a dry run made.
    fn name(&self) -> String {
        let first = self.text(LeadText::FirstName).unwrap_or_default();
        let last = self.text(LeadText::LastName).unwrap_or_default();
        let name = format!("{first} {last}").trim().to_string();
        if !name.is_empty() {
            return name;
        }
        [LeadText::Email, LeadText::Phone]
            .into_iter()
            .find_map(|field| self.text(field))
            .unwrap_or_default()
            .to_string()
    }

    /// A new lead of the row's fields and its own tags.
    fn input(&self) -> Result<LeadInput> {
        let tags = (!self.tags.is_empty()).then(|| self.tags.clone());
        Ok(LeadInput {
            id: None,
            fields: self.patch(tags)?,
        })
    }
}

/// The lead of a row and its match keys.
fn body(row: &Row, country: Option<Country>) -> Result<(RowLead, Vec<String>)> {
    let mut body = RowLead::default();
    for (field, value) in &row.cells {
        let text = match value {
            Value::String(s) => s.trim().to_string(),
            Value::Null => String::new(),
            Value::Bool(_) | Value::Number(_) => value.to_string(),
            Value::Array(_) | Value::Object(_) => String::new(),
        };
        match field {
            Field::FirstName => body.set(LeadText::FirstName, text),
            Field::LastName => body.set(LeadText::LastName, text),
            Field::FullName => {
                let mut words = text.splitn(2, char::is_whitespace);
                let first = words.next().unwrap_or_default().to_string();
                body.set(LeadText::FirstName, first);
                let last = words.next().unwrap_or_default().trim().to_string();
                body.set(LeadText::LastName, last);
            }
            Field::Phone if !text.is_empty() => match phone::read(&text, country) {
                Ok(e164) => body.set(LeadText::Phone, e164),
                Err(Unreadable::NoCountry) => {
                    return Err(Error::BadRequest(format!(
                        "Phone without a country code and no defaultCountry set: {text}"
                    )))
                }
                Err(Unreadable::Invalid) => {
                    return Err(Error::BadRequest(format!("Unreadable phone: {text}")))
                }
            },
            Field::Phone => {}
            Field::Email => body.set(LeadText::Email, text),
            Field::Profile => body.set(LeadText::CustomerProfile, text),
            Field::ExternalLeadId => body.set(LeadText::ExternalLeadId, text),
            Field::SecondaryCrmLeadId => body.set(LeadText::SecondaryCrmLeadId, text),
            Field::Summary => body.set(LeadText::Summary, text),
            Field::TimeZone => body.set(LeadText::TimeZone, text),
            Field::Tags => {
                let names: Vec<String> = match value {
                    Value::Array(items) => items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                    _ => text.split(';').map(str::to_string).collect(),
                };
                for name in names {
                    let name = name.trim();
                    let id = tag_id(name);
                    if !id.is_empty() {
                        body.tags.push(TagRecord {
                            id,
                            name: name.to_string(),
                            condition: String::new(),
                        });
                    }
                }
            }
            Field::Info(name) => {
                let empty = value.is_null() || (value.is_string() && text.is_empty());
                if !empty {
                    body.info.insert(name.clone(), value.clone());
                }
            }
            Field::Consent
            | Field::ConsentChannels
            | Field::ConsentAt
            | Field::ConsentSource
            | Field::ConsentText
            | Field::ConsentUrl
            | Field::ConsentIp => body.consent.set(field, &text, value)?,
            Field::Skip => {}
        }
    }
    let mut keys = Vec::new();
    if let Some(ext) = body.text(LeadText::ExternalLeadId) {
        keys.push(format!("ext:{ext}"));
    }
    if let Some(phone) = body.text(LeadText::Phone) {
        keys.push(format!("phone:{phone}"));
    }
    if let Some(email) = body.text(LeadText::Email) {
        keys.push(format!("email:{}", email_key(email)));
    }
    Ok((body, keys))
}

/// The live lead a row matches: by `externalLeadId`, then phone, then email.
fn live_match(tx: &WriteTx, org: &str, body: &RowLead) -> Result<Option<String>> {
    if let Some(ext) = body.text(LeadText::ExternalLeadId) {
        let term = Facet::Term(crate::store::lead_index::term(ext));
        for id in tx.lead_ids_with_facet(org, &term)? {
            if tx
                .lead(org, &id)?
                .is_some_and(|l| l.deleted_at.is_none() && l.external_lead_id == ext)
            {
                return Ok(Some(id));
            }
        }
    }
    if let Some(phone) = body.text(LeadText::Phone) {
        if let Some(id) = tx.lead_ids_by_phone(org, phone)?.into_iter().next() {
            return Ok(Some(id));
        }
    }
    if let Some(email) = body.text(LeadText::Email) {
        if let Some(id) = tx.lead_ids_by_email(org, email)?.into_iter().next() {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// An update's tags are added to the lead's, never replacing them: the tags to write
/// (none when the row has none).
fn add_tags(
    tx: &WriteTx,
    org: &str,
    lead: &str,
    new: &[TagRecord],
) -> Result<Option<Vec<TagRecord>>> {
    if new.is_empty() {
        return Ok(None);
    }
    let Some(record) = tx.lead(org, lead)? else {
        return Ok(Some(new.to_vec()));
    };
    let mut all = record.tags.clone();
    for tag in new {
        if !record.tags.iter().any(|t| t.id == tag.id) {
            all.push(tag.clone());
        }
    }
    Ok(Some(all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_index_answers_each_key_s_first_row_and_its_lead() {
        let mut index = FileIndex::default();
        let keys = |list: &[&str]| list.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        index.add(
            "lead-a",
            2,
            &keys(&["phone:+15125550100", "email:a@x.example"]),
        );
        index.add(
            "lead-b",
            3,
            &keys(&["phone:+15125550100", "email:b@x.example"]),
        );
        assert_eq!(index.get("phone:+15125550100"), Some(("lead-a", 2)));
        assert_eq!(index.get("email:a@x.example"), Some(("lead-a", 2)));
        assert_eq!(index.get("email:b@x.example"), Some(("lead-b", 3)));
        assert!(index.contains("email:b@x.example"));
        assert!(!index.contains("email:c@x.example"));
        assert_eq!(index.get("phone:+15125550101"), None);
        // A row adding no new key keeps no copy of its lead's id.
        index.add("lead-c", 4, &keys(&["email:a@x.example"]));
        assert_eq!(index.leads.len(), 2);
    }
}
