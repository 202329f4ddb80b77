//! Leads: creation, partial update and soft deletion, and the rules on their fields.
//!
//! Create and update share one path: a create applies its fields ([`LeadInput`]) to an
//! empty lead, an update applies a [`LeadPatch`] to the stored one. Each field is
//! validated as it is set (`LeadPatch::set_text`, `set_tags`), so a typed input holds
//! only well-formed values; the API reads its wire JSON with `from_json`, the import and
//! the console build the input directly. A live lead's phone and email are its own
//! within its organization (`unique_contacts`), and every lead write passes the bounds
//! on stored values (`limits::lead`, in `put`). A write returns a `Written` lead: the
//! reactions of its engagement are owed to `engagement::reactions`.

use serde_json::{Map, Value};

use crate::domain::records::written::{Reaction, Written};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{email_key, JsonBlob, LeadRecord, TagRecord};
use crate::store::Reader;
use crate::store::WriteTx;

/// Lead fields the server maintains; a body that sets one is refused.
const READ_ONLY: &[&str] = &[
    "createdAt",
    "updatedAt",
    "lastActivityAt",
    "hasReplied",
    "hasRepliedEmail",
    "hasAiCall",
    "hasTransferCall",
    "isUnsubscribed",
    "subscriptions",
    "deleted",
    "deletedAt",
];

/// The fixed segments of the paths under `/v1/leads/` (`GET /v1/leads/search`, `POST
/// /v1/leads/import`): never a lead's id, which would collide with them (400 `Invalid
/// format for field: id`). The router's test holds its fixed segments to this list.
pub const RESERVED_IDS: &[&str] = &["search", "import"];

/// A lead's text fields, by their wire names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadText {
    FirstName,
    LastName,
    CustomerProfile,
    Summary,
    ExternalLeadId,
    SecondaryCrmLeadId,
    /// An IANA zone name (`America/Chicago`), or empty.
    TimeZone,
    /// Normalised to E.164; blank clears it.
    Phone,
    /// Trimmed, and plausible (`is_plausible_email`); empty clears it.
    Email,
}

impl LeadText {
    /// The field's name in the interface (`firstName`).
    pub fn wire(self) -> &'static str {
        match self {
            LeadText::FirstName => "firstName",
            LeadText::LastName => "lastName",
            LeadText::CustomerProfile => "customerProfile",
            LeadText::Summary => "summary",
            LeadText::ExternalLeadId => "externalLeadId",
            LeadText::SecondaryCrmLeadId => "secondaryCrmLeadId",
            LeadText::TimeZone => "timeZone",
            LeadText::Phone => "phone",
            LeadText::Email => "email",
        }
    }

    /// Every text field, in the order of the interface's lead.
    pub const ALL: [LeadText; 9] = [
        LeadText::FirstName,
        LeadText::LastName,
        LeadText::CustomerProfile,
        LeadText::Summary,
        LeadText::ExternalLeadId,
        LeadText::SecondaryCrmLeadId,
        LeadText::TimeZone,
        LeadText::Phone,
        LeadText::Email,
    ];

    /// The text field a wire name names.
    pub fn from_wire(name: &str) -> Option<LeadText> {
        LeadText::ALL.into_iter().find(|field| field.wire() == name)
    }

    /// The field's value on `lead` (empty when unset).
    pub fn of(self, lead: &LeadRecord) -> &str {
        match self {
            LeadText::FirstName => &lead.first_name,
            LeadText::LastName => &lead.last_name,
            LeadText::CustomerProfile => &lead.customer_profile,
            LeadText::Summary => &lead.summary,
            LeadText::ExternalLeadId => &lead.external_lead_id,
            LeadText::SecondaryCrmLeadId => &lead.secondary_crm_lead_id,
            LeadText::TimeZone => &lead.time_zone,
            LeadText::Phone => &lead.phone,
            LeadText::Email => &lead.email,
        }
    }
}

/// The fields one write sets on a lead, each validated as it was set; a field left
/// `None` keeps its value (`PATCH /v1/leads/{id}`, and the fields of a [`LeadInput`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeadPatch {
    /// Set through [`LeadPatch::set_text`], in the order they were set.
    texts: Vec<(LeadText, String)>,
    pub is_hot: Option<bool>,
    pub is_qualified: Option<bool>,
    pub is_ai_on: Option<bool>,
    /// Merged into `additionalInfo`: a `null` value removes its key.
    pub additional_info: Option<Map<String, Value>>,
    /// Replaces the lead's tags; set through [`LeadPatch::set_tags`].
    tags: Option<Vec<TagRecord>>,
}

impl LeadPatch {
    /// Reads a `PATCH` body: `id` is read-only.
    pub fn from_json(body: &Map<String, Value>) -> Result<LeadPatch> {
        let mut patch = LeadPatch::default();
        for (name, value) in body {
            if name == "id" {
                return Err(read_only("id"));
            }
            patch.set_json(name, value)?;
        }
        Ok(patch)
    }

    /// Sets one member of a wire body (not `id`), with the interface's messages.
    fn set_json(&mut self, name: &str, value: &Value) -> Result<()> {
        if let Some(field) = LeadText::from_wire(name) {
            return self.set_text(field, &text(name, value)?);
        }
        match name {
            "isHot" => self.is_hot = Some(flag(name, value)?),
            "isQualified" => self.is_qualified = Some(flag(name, value)?),
            "isAiOn" => self.is_ai_on = Some(flag(name, value)?),
            "additionalInfo" => match value {
                Value::Object(changes) => self.additional_info = Some(changes.clone()),
                _ => return Err(Error::invalid_field("additionalInfo")),
            },
            "tags" => self.tags = Some(tags(value)?),
            other if READ_ONLY.contains(&other) => return Err(read_only(other)),
            other => return Err(Error::unknown_field(other)),
        }
        Ok(())
    }

    /// Sets a text field (empty clears it), refusing a malformed phone, email or time
    /// zone with `Invalid format for field: NAME`. Setting a field again replaces its
    /// value.
    pub fn set_text(&mut self, field: LeadText, value: &str) -> Result<()> {
        let value = match field {
            LeadText::TimeZone => {
                if !value.is_empty() && value.parse::<chrono_tz::Tz>().is_err() {
                    return Err(Error::invalid_field(field.wire()));
                }
                value.to_string()
            }
            LeadText::Phone if value.trim().is_empty() => String::new(),
            LeadText::Phone => {
                crate::phone::normalize(value).ok_or_else(|| Error::invalid_field(field.wire()))?
            }
            LeadText::Email => {
                let value = value.trim();
                if !value.is_empty() && !is_plausible_email(value) {
                    return Err(Error::invalid_field(field.wire()));
                }
                value.to_string()
            }
            _ => value.to_string(),
        };
        match self.texts.iter_mut().find(|(f, _)| *f == field) {
            Some(slot) => slot.1 = value,
            None => self.texts.push((field, value)),
        }
        Ok(())
    }

    /// The value this patch sets `field` to, if it sets it.
    pub fn text(&self, field: LeadText) -> Option<&str> {
        self.texts
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.as_str())
    }

    /// Replaces the lead's tags with `tags`: at most `limits::TAGS` (repeated ids
    /// counted), each within its bounds; a later duplicate of an id wins.
    pub fn set_tags(&mut self, tags: Vec<TagRecord>) -> Result<()> {
        crate::domain::records::limits::tags_in_request(tags.len())?;
        let mut out: Vec<TagRecord> = Vec::with_capacity(tags.len());
        for tag in tags {
            crate::domain::records::limits::tag(&tag)?;
            out.retain(|t| t.id != tag.id);
            out.push(tag);
        }
        self.tags = Some(out);
        Ok(())
    }

    /// The tags this patch sets, if it sets them.
    pub fn tags(&self) -> Option<&[TagRecord]> {
        self.tags.as_deref()
    }

    /// `lead` as this patch would leave it (nothing written): an import compares it with
    /// the lead to count only rows that change something.
    pub fn applied_to(&self, lead: &LeadRecord) -> Result<LeadRecord> {
        let mut out = lead.clone();
        self.apply(&mut out)?;
        Ok(out)
    }

    /// Drops the email this patch sets when it is `current` but for case: an email that
    /// differs only in case is the same email, and never overwrites the one kept.
    pub fn keep_email(&mut self, current: &str) {
        let same = |v: &str| {
            !current.is_empty()
                && crate::store::rows::email_key(v) == crate::store::rows::email_key(current)
        };
        self.texts
            .retain(|(field, value)| *field != LeadText::Email || !same(value));
    }

    /// Writes the patch's fields onto `lead`.
    fn apply(&self, lead: &mut LeadRecord) -> Result<()> {
        for (field, value) in &self.texts {
            let slot = match field {
                LeadText::FirstName => &mut lead.first_name,
                LeadText::LastName => &mut lead.last_name,
                LeadText::CustomerProfile => &mut lead.customer_profile,
                LeadText::Summary => &mut lead.summary,
                LeadText::ExternalLeadId => &mut lead.external_lead_id,
                LeadText::SecondaryCrmLeadId => &mut lead.secondary_crm_lead_id,
                LeadText::TimeZone => &mut lead.time_zone,
                LeadText::Phone => &mut lead.phone,
                LeadText::Email => &mut lead.email,
            };
            slot.clone_from(value);
        }
        for (slot, value) in [
            (&mut lead.is_hot, self.is_hot),
            (&mut lead.is_qualified, self.is_qualified),
            (&mut lead.is_ai_on, self.is_ai_on),
        ] {
            if let Some(value) = value {
                *slot = value;
            }
        }
        if let Some(changes) = &self.additional_info {
            merge_additional_info(lead, changes)?;
        }
        if let Some(tags) = &self.tags {
            lead.tags.clone_from(tags);
        }
        Ok(())
    }
}

/// A new lead (`POST /v1/leads`): its id (none: one is generated) and its fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeadInput {
    pub id: Option<String>,
    pub fields: LeadPatch,
}

impl LeadInput {
    /// Reads a create body: the `id` is checked first, then the members in order.
    pub fn from_json(body: &Map<String, Value>) -> Result<LeadInput> {
        let id = match body.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(checked_id(id)?),
            Some(_) => return Err(Error::invalid_field("id")),
        };
        let mut fields = LeadPatch::default();
        for (name, value) in body {
            if name != "id" {
                fields.set_json(name, value)?;
            }
        }
        Ok(LeadInput { id, fields })
    }
}

/// A client's id for a new lead: a valid client id, not one of [`RESERVED_IDS`].
fn checked_id(id: &str) -> Result<String> {
    if crate::ids::is_valid_client_id(id) && !RESERVED_IDS.contains(&id) {
        Ok(id.to_string())
    } else {
        Err(Error::invalid_field("id"))
    }
}

/// `Field is read-only: NAME`.
fn read_only(name: &str) -> Error {
    Error::field(name, format!("Field is read-only: {name}"))
}

/// Creates a lead.
pub fn create(tx: &mut WriteTx, caller: &Caller, input: LeadInput) -> Result<Written<LeadRecord>> {
    let id = match &input.id {
        None => crate::ids::generate("lead"),
        Some(id) => checked_id(id)?,
    };
    let mut lead = LeadRecord {
        id,
        is_ai_on: true,
        additional_info: JsonBlob(Value::Object(Map::new())),
        ..LeadRecord::default()
    };
    input.fields.apply(&mut lead)?;
    if !lead.phone.is_empty() && tx.dnc_contains(&caller.org_id, &lead.phone)? {
        return Err(Error::Conflict(
            "Phone number is on the Do Not Contact list".into(),
        ));
    }
    if tx.lead(&caller.org_id, &lead.id)?.is_some() {
        return Err(Error::Conflict("Lead already exists".into()));
    }
    unique_contacts(tx, &caller.org_id, None, &lead)?;
    let now = tx.tick();
    lead.created_at = now;
    lead.updated_at = now;
    lead.last_activity_at = now;
    put(tx, &caller.org_id, lead, None)
}

/// Applies a partial update.
pub fn update(
    tx: &mut WriteTx,
    caller: &Caller,
    id: &str,
    patch: LeadPatch,
) -> Result<Written<LeadRecord>> {
    let old = live_lead(tx, caller, id)?;
    let mut lead = old.clone();
    patch.apply(&mut lead)?;
    if lead.phone != old.phone
        && !lead.phone.is_empty()
        && tx.dnc_contains(&caller.org_id, &lead.phone)?
    {
        return Err(Error::Conflict(
            "Phone number is on the Do Not Contact list".into(),
        ));
    }
    unique_contacts(tx, &caller.org_id, Some(&old), &lead)?;
    lead.updated_at = tx.tick();
    put(tx, &caller.org_id, lead, Some(old))
}

/// Soft-deletes: the lead stays readable and listed, with `deleted` true.
pub fn delete(tx: &mut WriteTx, caller: &Caller, id: &str) -> Result<Written<LeadRecord>> {
    let old = live_lead(tx, caller, id)?;
    let mut lead = old.clone();
    let now = tx.tick();
    lead.deleted_at = Some(now);
    lead.updated_at = now;
    put(tx, &caller.org_id, lead, Some(old))
}

/// A live lead's phone and email are its own within the organization: a create, or a
/// change of either, that another live lead already has is 409 `Lead exists: <id>`.
/// Two lookups in the contact indexes, which hold live leads only. Leads that shared a
/// value before this rule keep it while it does not change.
fn unique_contacts(
    tx: &WriteTx,
    org: &str,
    old: Option<&LeadRecord>,
    lead: &LeadRecord,
) -> Result<()> {
    let exists = |ids: Vec<String>| match ids.into_iter().find(|id| *id != lead.id) {
        Some(other) => Err(Error::Conflict(format!("Lead exists: {other}"))),
        None => Ok(()),
    };
    if !lead.phone.is_empty() && old.is_none_or(|o| o.phone != lead.phone) {
        exists(tx.lead_ids_by_phone(org, &lead.phone)?)?;
    }
    if !lead.email.is_empty() && old.is_none_or(|o| email_key(&o.email) != email_key(&lead.email)) {
        exists(tx.lead_ids_by_email(org, &lead.email)?)?;
    }
    Ok(())
}

/// The lead, if it exists and is not deleted: what every mutation requires.
pub fn live_lead(tx: &WriteTx, caller: &Caller, id: &str) -> Result<LeadRecord> {
    match tx.lead(&caller.org_id, id)? {
        Some(lead) if lead.deleted_at.is_none() => Ok(lead),
        _ => Err(Error::lead_not_found(id)),
    }
}

/// The one write of a lead: the record and its index rows; what the change means for
/// its engagement (enrolment, stop rules, pause) is owed to `engagement::reactions`.
/// Every lead write passes the bounds on stored values here, before it writes anything.
fn put(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    old: Option<LeadRecord>,
) -> Result<Written<LeadRecord>> {
    crate::domain::records::limits::lead(old.as_ref(), &lead)?;
    tx.put_lead(org, &lead, old.as_ref())?;
    let reaction = Reaction::Lead {
        org: org.to_string(),
        old: old.map(Box::new),
        new: Box::new(lead.clone()),
    };
    Ok(Written::owing(lead, reaction))
}

/// Writes `changed` over `old` with a fresh `updatedAt` when anything differs, so
/// syncing clients see the change; the lead as it now is.
pub fn save_if_changed(
    tx: &mut WriteTx,
    org: &str,
    old: LeadRecord,
    mut changed: LeadRecord,
) -> Result<Written<LeadRecord>> {
    if changed == old {
        return Ok(Written::owing_nothing(old));
    }
    changed.updated_at = tx.tick();
    put(tx, org, changed, Some(old))
}

/// Records activity on a lead: `lastActivityAt` becomes `activity_at` and `updatedAt`
/// moves forward so that syncing clients see the change. `change` sets flags.
pub fn touch(
    tx: &mut WriteTx,
    org: &str,
    mut lead: LeadRecord,
    activity_at: i64,
    change: impl FnOnce(&mut LeadRecord),
) -> Result<Written<LeadRecord>> {
    let old = lead.clone();
    change(&mut lead);
    lead.last_activity_at = lead.last_activity_at.max(activity_at);
    lead.updated_at = tx.tick();
    put(tx, org, lead, Some(old))
}

/// A string field; `null` clears it.
fn text(name: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        _ => Err(Error::invalid_field(name)),
    }
}

fn flag(name: &str, value: &Value) -> Result<bool> {
    value.as_bool().ok_or_else(|| Error::invalid_field(name))
}

/// Merges an object into `additionalInfo`; a `null` value removes its key.
fn merge_additional_info(lead: &mut LeadRecord, changes: &Map<String, Value>) -> Result<()> {
    let info = match &mut lead.additional_info.0 {
        Value::Object(map) => map,
        other => {
            *other = Value::Object(Map::new());
            match other {
                Value::Object(map) => map,
                _ => return Err(Error::Internal("additionalInfo is not an object".into())),
            }
        }
    };
    for (k, v) in changes {
        if v.is_null() {
            info.remove(k);
        } else {
            info.insert(k.clone(), v.clone());
        }
    }
    Ok(())
}

/// Parses a list of tags `{id, name, condition?}`; later duplicates of an id win. At
/// most [`limits::TAGS`](crate::domain::records::limits::TAGS) items, repeated ids counted.
pub fn tags(value: &Value) -> Result<Vec<TagRecord>> {
    let Value::Array(items) = value else {
        return Err(Error::invalid_field("tags"));
    };
    crate::domain::records::limits::tags_in_request(items.len())?;
    let mut out: Vec<TagRecord> = Vec::with_capacity(items.len());
    for item in items {
        let tag = tag(item).ok_or_else(|| Error::invalid_field("tags"))?;
        crate::domain::records::limits::tag(&tag)?;
        out.retain(|t| t.id != tag.id);
        out.push(tag);
    }
    Ok(out)
}

fn tag(item: &Value) -> Option<TagRecord> {
    let obj = item.as_object()?;
    let id = obj.get("id")?.as_str().filter(|s| !s.is_empty())?;
    let name = obj.get("name")?.as_str()?;
    let condition = match obj.get("condition") {
        None | Some(Value::Null) => "",
        Some(v) => v.as_str()?,
    };
    if obj
        .keys()
        .any(|k| !matches!(k.as_str(), "id" | "name" | "condition"))
    {
        return None;
    }
    Some(TagRecord {
        id: id.into(),
        name: name.into(),
        condition: condition.into(),
    })
}

/// One `@` with something on both sides, a dot in the domain, no spaces: enough to
/// catch mistakes without refusing valid but unusual addresses.
pub fn is_plausible_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && !s.chars().any(char::is_whitespace)
}

/// The live lead an inbound message or call from `phone` belongs to: the most recently
/// updated one, when several share the number (from before duplicates were refused).
pub fn lead_by_phone(read: &WriteTx, org: &str, phone: &str) -> Result<Option<LeadRecord>> {
    most_recent(read, org, read.lead_ids_by_phone(org, phone)?)
}

/// The live lead an inbound email from `email` belongs to (any case), as
/// [`lead_by_phone`].
pub fn lead_by_email(read: &WriteTx, org: &str, email: &str) -> Result<Option<LeadRecord>> {
    most_recent(read, org, read.lead_ids_by_email(org, email)?)
}

fn most_recent(read: &WriteTx, org: &str, ids: Vec<String>) -> Result<Option<LeadRecord>> {
    let mut lead: Option<LeadRecord> = None;
    for id in ids {
        if let Some(candidate) = read.lead(org, &id)?.filter(|l| l.deleted_at.is_none()) {
            if lead
                .as_ref()
                .is_none_or(|l| candidate.updated_at > l.updated_at)
            {
                lead = Some(candidate);
            }
        }
    }
    Ok(lead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(body: Value, creating: bool) -> Result<LeadRecord> {
        let mut lead = LeadRecord {
            additional_info: JsonBlob(json!({"keep": 1, "drop": 2})),
            ..Default::default()
        };
        let body = body.as_object().unwrap();
        let fields = if creating {
            LeadInput::from_json(body)?.fields
        } else {
            LeadPatch::from_json(body)?
        };
        fields.apply(&mut lead)?;
        Ok(lead)
    }

    #[test]
    fn a_refusal_names_its_field_and_the_first_fault_in_body_order_wins() {
        let refused = |body: Value| LeadInput::from_json(body.as_object().unwrap()).unwrap_err();
        let e = refused(json!({"timeZone": "Mars/Base", "email": "nope"}));
        assert_eq!(e.refused_field(), Some("timeZone"));
        assert_eq!(e.to_string(), "Invalid format for field: timeZone");
        let e = refused(json!({"email": "nope", "timeZone": "Mars/Base"}));
        assert_eq!(e.refused_field(), Some("email"));
        // The id is checked before any other member.
        let e = refused(json!({"email": "nope", "id": "search"}));
        assert_eq!(e.to_string(), "Invalid format for field: id");
        let e = refused(json!({"firstName": 3}));
        assert_eq!(e.refused_field(), Some("firstName"));
        let e = LeadPatch::from_json(json!({"id": "x"}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.refused_field(), Some("id"));
        assert_eq!(e.to_string(), "Field is read-only: id");
    }

    #[test]
    fn a_patch_built_in_code_validates_as_the_wire_does() {
        let mut patch = LeadPatch::default();
        patch.set_text(LeadText::Email, "  a@b.example ").unwrap();
        patch
            .set_text(LeadText::Phone, "+1 (555) 123-4567")
            .unwrap();
        assert_eq!(patch.text(LeadText::Email), Some("a@b.example"));
        assert_eq!(patch.text(LeadText::Phone), Some("+15551234567"));
        let e = patch.set_text(LeadText::Phone, "555-1234").unwrap_err();
        assert_eq!(e.to_string(), "Invalid format for field: phone");
        let tag = |id: &str| TagRecord {
            id: id.into(),
            name: id.into(),
            condition: String::new(),
        };
        let too_many: Vec<TagRecord> = (0..=crate::domain::records::limits::TAGS)
            .map(|_| tag("a"))
            .collect();
        let e = patch.set_tags(too_many).unwrap_err();
        assert_eq!(e.to_string(), "Too many: tags (at most 100)");
        patch.set_tags(vec![tag("a"), tag("a")]).unwrap();
        assert_eq!(patch.tags(), Some(&[tag("a")][..]));
    }

    #[test]
    fn fields_are_validated_with_the_interface_messages() {
        let msg = |body: Value| apply(body, true).unwrap_err().to_string();
        assert_eq!(
            msg(json!({"phone": "555-1234"})),
            "Invalid format for field: phone"
        );
        assert_eq!(
            msg(json!({"email": "nope"})),
            "Invalid format for field: email"
        );
        assert_eq!(
            msg(json!({"isHot": "yes"})),
            "Invalid format for field: isHot"
        );
        assert_eq!(
            msg(json!({"hasReplied": true})),
            "Field is read-only: hasReplied"
        );
        assert_eq!(msg(json!({"colour": "red"})), "Unknown field: colour");
        assert_eq!(
            apply(json!({"id": "x"}), false).unwrap_err().to_string(),
            "Field is read-only: id"
        );
    }

    #[test]
    fn phones_normalise_and_nulls_clear() {
        let lead = apply(
            json!({"phone": "+1 (555) 123-4567", "firstName": null}),
            true,
        )
        .unwrap();
        assert_eq!(lead.phone, "+15551234567");
        assert_eq!(lead.first_name, "");
    }

    #[test]
    fn additional_info_merges_and_null_deletes() {
        let lead = apply(json!({"additionalInfo": {"drop": null, "new": "x"}}), false).unwrap();
        assert_eq!(lead.additional_info.0, json!({"keep": 1, "new": "x"}));
    }

    #[test]
    fn tags_keep_one_of_each_id() {
        let t =
            tags(&json!([{"id": "a", "name": "A"}, {"id": "a", "name": "A2", "condition": "c"}]))
                .unwrap();
        assert_eq!(
            t,
            vec![TagRecord {
                id: "a".into(),
                name: "A2".into(),
                condition: "c".into()
            }]
        );
        assert!(tags(&json!([{"id": "a"}])).is_err());
        assert!(tags(&json!({"id": "a"})).is_err());
    }
}
