//! A lead as the interface shows it, kept in the lead's `leads_by_updated` row.
//!
//! The incremental sync, `GET /v1/leads?updatedSince`, gives the interface's largest
//! answers: a page of a hundred leads is 64 KB of JSON. Decoding each record and writing
//! it out was most of what a page cost, and fetching each record by id most of the rest.
//! So every write of a lead also renders its wire JSON ([`write_json`]) and stores it as
//! the value of the lead's row in the `updatedAt` index: the index covers the query, and
//! a page is one range scan that copies text.
//!
//! Layout of a `leads_by_updated` value:
//! `[LEAD_VIEW_FORMAT] [createdAt: i64 LE] [JSON]`; `createdAt` serves `createdSince`
//! when it is combined with `updatedSince`. A release that changes the wire shape bumps
//! [`LEAD_VIEW_FORMAT`]; a row of another format is rendered from the lead's record when
//! read, so it is never served stale.

use super::rows::{LeadRecord, Subscriptions};
use crate::error::Result;
use crate::json_writer::{write_object, JsonWriter};
use crate::time::Micros;

/// The shape of the stored JSON; bump when `write_json` changes.
pub const LEAD_VIEW_FORMAT: u8 = 2;
/// Room for one lead as the interface writes it, with short fields and no extras.
pub const LEAD_JSON_BYTES: usize = 768;

/// The lead's wire JSON.
pub fn render(lead: &LeadRecord) -> Result<Vec<u8>> {
    let mut out = JsonWriter::with_capacity(LEAD_JSON_BYTES);
    write_json(&mut out, lead);
    out.finish()
}

/// The value of the lead's `leads_by_updated` row.
pub fn index_value(lead: &LeadRecord) -> Result<Vec<u8>> {
    let json = render(lead)?;
    let mut value = Vec::with_capacity(9 + json.len());
    value.push(LEAD_VIEW_FORMAT);
    value.extend_from_slice(&lead.created_at.to_le_bytes());
    value.extend_from_slice(&json);
    Ok(value)
}

/// What a `leads_by_updated` row holds, when it has this release's format.
pub struct IndexedLead<'a> {
    pub created_at: Micros,
    pub json: &'a [u8],
}

pub fn parse(value: &[u8]) -> Option<IndexedLead<'_>> {
    let (&LEAD_VIEW_FORMAT, rest) = value.split_first()? else {
        return None;
    };
    let (created_at, json) = rest.split_first_chunk::<8>()?;
    Some(IndexedLead {
        created_at: i64::from_le_bytes(*created_at),
        json,
    })
}

/// A lead on the wire, field by field as the interface lists them.
pub fn write_json(out: &mut JsonWriter, lead: &LeadRecord) {
    let s = &lead.subscriptions;
    write_object!(out,
        "id": str(&lead.id),
        "firstName": str(&lead.first_name),
        "lastName": str(&lead.last_name),
        "phone": str(&lead.phone),
        "email": str(&lead.email),
        "customerProfile": str(&lead.customer_profile),
        "createdAt": time(lead.created_at),
        "updatedAt": time(lead.updated_at),
        "lastActivityAt": time(lead.last_activity_at),
        "additionalInfo": serde(&lead.additional_info.0),
        "hasReplied": bool(lead.has_replied),
        "hasRepliedEmail": bool(lead.has_replied_email),
        "hasAiCall": bool(lead.has_ai_call),
        "isHot": bool(lead.is_hot),
        "isQualified": bool(lead.is_qualified),
        "hasTransferCall": bool(lead.has_transfer_call),
        "isUnsubscribed": bool(is_unsubscribed(lead)),
        "isAiOn": bool(lead.is_ai_on),
        "tags": serde(&lead.tags),
        "summary": str(&lead.summary),
        "externalLeadId": str(&lead.external_lead_id),
        "secondaryCrmLeadId": str(&lead.secondary_crm_lead_id),
        "timeZone": str(&lead.time_zone),
        "subscriptions": with(|out| write_object!(out,
            "sms": str(state(s.sms_unsubscribed)),
            "voice": str(state(s.voice_unsubscribed)),
            "email": str(state(s.email_unsubscribed)),
        )),
        "deleted": bool(lead.deleted_at.is_some()),
        "deletedAt": opt_time(lead.deleted_at),
        "nextMeetingAt": opt_time(lead.next_meeting_at),
    );
}

fn state(unsubscribed: bool) -> &'static str {
    if unsubscribed {
        "unsubscribed"
    } else {
        "subscribed"
    }
}

/// True when every channel the lead can receive is unsubscribed (and it can receive one).
pub fn is_unsubscribed(lead: &LeadRecord) -> bool {
    let s: &Subscriptions = &lead.subscriptions;
    let has_phone = !lead.phone.is_empty();
    let has_email = !lead.email.is_empty();
    (has_phone || has_email)
        && (!has_phone || (s.sms_unsubscribed && s.voice_unsubscribed))
        && (!has_email || s.email_unsubscribed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::{JsonBlob, TagRecord};
    use serde_json::{json, Value};

    fn sample() -> LeadRecord {
        LeadRecord {
            id: "lead-1".into(),
            first_name: "Ann \"Q\"".into(),
            phone: "+15550001111".into(),
            created_at: 1_795_342_530_123_456,
            updated_at: 1_795_342_531_000_000,
            additional_info: JsonBlob(json!({"plan": "gold", "seats": [1, 2]})),
            tags: vec![TagRecord {
                id: "t1".into(),
                name: "vip".into(),
                condition: "manual".into(),
            }],
            deleted_at: Some(1_795_342_532_000_000),
            ..LeadRecord::default()
        }
    }

    #[test]
    fn an_index_value_holds_created_at_and_the_wire_json() {
        let lead = sample();
        let value = index_value(&lead).unwrap();
        let indexed = parse(&value).unwrap();
        assert_eq!(indexed.created_at, lead.created_at);
        assert_eq!(indexed.json, render(&lead).unwrap().as_slice());
        let view: Value = serde_json::from_slice(indexed.json).unwrap();
        assert_eq!(view["id"], "lead-1");
        assert_eq!(view["firstName"], "Ann \"Q\"");
        assert_eq!(view["createdAt"], "2026-11-22T10:15:30.123456Z");
        assert_eq!(
            view["additionalInfo"],
            json!({"plan": "gold", "seats": [1, 2]})
        );
        assert_eq!(view["tags"][0]["name"], "vip");
        assert_eq!(view["deleted"], true);
        assert_eq!(view["deletedAt"], "2026-11-22T10:15:32.000000Z");
        assert_eq!(view["isUnsubscribed"], false);
        assert_eq!(view["subscriptions"]["voice"], "subscribed");
        assert_eq!(view["nextMeetingAt"], Value::Null);
        assert_eq!(view.as_object().unwrap().len(), 27);
    }

    #[test]
    fn other_formats_and_short_values_are_not_read_as_views() {
        let mut value = index_value(&sample()).unwrap();
        assert!(parse(&value[..5]).is_none());
        assert!(parse(&[]).is_none());
        value[0] = LEAD_VIEW_FORMAT + 1;
        assert!(parse(&value).is_none());
    }
}
