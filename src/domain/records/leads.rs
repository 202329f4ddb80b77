//! Leads: creation, partial update and soft deletion, and the rules on their fields.
//!
//! Create and update share one path: a create applies the body to an empty lead, an
//! update applies it to the stored one. Everything is validated before anything is
//! written, as the writer requires. A live lead's phone and email are its own within its
//! organization (`unique_contacts`), and every lead write passes the bounds on stored
//! values (`limits::lead`, in `put`).

use serde_json::{Map, Value};

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

/// Creates a lead from a JSON object body.
pub fn create(tx: &mut WriteTx, caller: &Caller, body: Map<String, Value>) -> Result<LeadRecord> {
    let id = match body.get("id") {
        None | Some(Value::Null) => crate::ids::generate("lead"),
        Some(Value::String(id))
            if crate::ids::is_valid_client_id(id) && !RESERVED_IDS.contains(&id.as_str()) =>
        {
            id.clone()
        }
        Some(_) => return Err(Error::invalid_field("id")),
    };
    let mut lead = LeadRecord {
        id,
        is_ai_on: true,
        additional_info: JsonBlob(Value::Object(Map::new())),
        ..LeadRecord::default()
    };
    apply_fields(&mut lead, &body, true)?;
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
    put(tx, &caller.org_id, &lead, None)?;
    Ok(lead)
}

/// Applies a partial update.
pub fn update(
    tx: &mut WriteTx,
    caller: &Caller,
    id: &str,
    body: Map<String, Value>,
) -> Result<LeadRecord> {
    let old = live_lead(tx, caller, id)?;
    let mut lead = old.clone();
    apply_fields(&mut lead, &body, false)?;
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
    put(tx, &caller.org_id, &lead, Some(&old))?;
    Ok(lead)
}

/// Soft-deletes: the lead stays readable and listed, with `deleted` true.
pub fn delete(tx: &mut WriteTx, caller: &Caller, id: &str) -> Result<LeadRecord> {
    let old = live_lead(tx, caller, id)?;
    let mut lead = old.clone();
    let now = tx.tick();
    lead.deleted_at = Some(now);
    lead.updated_at = now;
    put(tx, &caller.org_id, &lead, Some(&old))?;
    Ok(lead)
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

/// The one write of a lead: the record and its index rows, then what the change means
/// for its engagement (enrolment, stop rules, pause), in the same transaction.
/// Every lead write passes the bounds on stored values here, before it writes anything.
fn put(tx: &mut WriteTx, org: &str, lead: &LeadRecord, old: Option<&LeadRecord>) -> Result<()> {
    crate::domain::records::limits::lead(old, lead)?;
    tx.put_lead(org, lead, old)?;
    crate::domain::engagement::enrolment::on_lead_written(tx, org, old, lead)
}

/// Writes `changed` over `old` with a fresh `updatedAt` when anything differs, so
/// syncing clients see the change; returns the lead as it now is.
pub fn save_if_changed(
    tx: &mut WriteTx,
    org: &str,
    old: LeadRecord,
    mut changed: LeadRecord,
) -> Result<LeadRecord> {
    if changed == old {
        return Ok(old);
    }
    changed.updated_at = tx.tick();
    put(tx, org, &changed, Some(&old))?;
    Ok(changed)
}

/// Records activity on a lead: `lastActivityAt` becomes `activity_at` and `updatedAt`
/// moves forward so that syncing clients see the change. `change` sets flags.
pub fn touch(
    tx: &mut WriteTx,
    org: &str,
    mut lead: LeadRecord,
    activity_at: i64,
    change: impl FnOnce(&mut LeadRecord),
) -> Result<LeadRecord> {
    let old = lead.clone();
    change(&mut lead);
    lead.last_activity_at = lead.last_activity_at.max(activity_at);
    lead.updated_at = tx.tick();
    put(tx, org, &lead, Some(&old))?;
    Ok(lead)
}

fn apply_fields(lead: &mut LeadRecord, body: &Map<String, Value>, creating: bool) -> Result<()> {
    for (name, value) in body {
        match name.as_str() {
            "id" if creating => {}
            "id" => return Err(Error::BadRequest("Field is read-only: id".into())),
            "firstName" => lead.first_name = text(name, value)?,
            "lastName" => lead.last_name = text(name, value)?,
            "customerProfile" => lead.customer_profile = text(name, value)?,
            "summary" => lead.summary = text(name, value)?,
            "externalLeadId" => lead.external_lead_id = text(name, value)?,
            "secondaryCrmLeadId" => lead.secondary_crm_lead_id = text(name, value)?,
            "timeZone" => {
                let zone = text(name, value)?;
                if !zone.is_empty() && zone.parse::<chrono_tz::Tz>().is_err() {
                    return Err(Error::invalid_field("timeZone"));
                }
                lead.time_zone = zone;
            }
            "phone" => {
                let raw = text(name, value)?;
                lead.phone = if raw.trim().is_empty() {
                    String::new()
                } else {
                    crate::phone::normalize(&raw).ok_or_else(|| Error::invalid_field("phone"))?
                };
            }
            "email" => {
                let raw = text(name, value)?;
                let raw = raw.trim();
                if !raw.is_empty() && !is_plausible_email(raw) {
                    return Err(Error::invalid_field("email"));
                }
                lead.email = raw.to_string();
            }
            "isHot" => lead.is_hot = flag(name, value)?,
            "isQualified" => lead.is_qualified = flag(name, value)?,
            "isAiOn" => lead.is_ai_on = flag(name, value)?,
            "additionalInfo" => merge_additional_info(lead, value)?,
            "tags" => lead.tags = tags(value)?,
            other if READ_ONLY.contains(&other) => {
                return Err(Error::BadRequest(format!("Field is read-only: {other}")))
            }
            other => return Err(Error::unknown_field(other)),
        }
    }
    Ok(())
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
fn merge_additional_info(lead: &mut LeadRecord, value: &Value) -> Result<()> {
    let Value::Object(changes) = value else {
        return Err(Error::invalid_field("additionalInfo"));
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(body: Value, creating: bool) -> Result<LeadRecord> {
        let mut lead = LeadRecord {
            additional_info: JsonBlob(json!({"keep": 1, "drop": 2})),
            ..Default::default()
        };
        apply_fields(&mut lead, body.as_object().unwrap(), creating)?;
        Ok(lead)
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
