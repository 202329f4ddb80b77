//! How a lead is stored: its record, then the lead as the interface shows it.
//!
//! A page of a hundred leads is the largest answer the interface gives, and decoding each
//! record and writing it out as JSON was most of what a page cost. So every write of a
//! lead also renders its wire JSON ([`write_json`]) and keeps that text after the record,
//! in the same value: a page copies text, and one read still finds both.
//!
//! Layout of a `LEADS` value (format [`LEAD_FORMAT`]):
//! `[LEAD_FORMAT] [record length: u32 LE] [postcard LeadRecord] [LEAD_VIEW_FORMAT] [JSON]`.
//! Schema 1 files hold `[RECORD_FORMAT] [postcard LeadRecord]`; the schema 2 migration
//! rewrites them, and `decode` still reads them. A release that changes the wire shape
//! bumps [`LEAD_VIEW_FORMAT`]; a value with another view format is rendered from its
//! record on read, so it is never served stale.

use std::borrow::Cow;

use super::codec::{self, RECORD_FORMAT};
use super::records::{LeadRecord, Subscriptions};
use crate::error::{Error, Result};
use crate::json_writer::{write_object, JsonWriter};

/// Format byte of a lead value with its rendered view.
pub const LEAD_FORMAT: u8 = 2;
/// The shape of the stored view; bump when `write_json` changes.
pub const LEAD_VIEW_FORMAT: u8 = 1;
/// Room for one lead as the interface writes it, with short fields and no extras.
pub const LEAD_JSON_BYTES: usize = 768;

pub fn encode(lead: &LeadRecord) -> Result<Vec<u8>> {
    let record = postcard::to_allocvec(lead)
        .map_err(|e| Error::Internal(format!("record encoding: {e}")))?;
    let length = u32::try_from(record.len())
        .map_err(|_| Error::Internal("a lead record over 4 GiB".into()))?;
    let mut view = JsonWriter::with_capacity(LEAD_JSON_BYTES);
    write_json(&mut view, lead);
    let view = view.finish()?;
    let mut out = Vec::with_capacity(6 + record.len() + view.len());
    out.push(LEAD_FORMAT);
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&record);
    out.push(LEAD_VIEW_FORMAT);
    out.extend_from_slice(&view);
    Ok(out)
}

/// The record and the stored view (if any) of a value.
fn split(bytes: &[u8]) -> Result<(&[u8], Option<&[u8]>)> {
    let Some((&LEAD_FORMAT, rest)) = bytes.split_first() else {
        return Err(Error::Internal("not a lead value of this release".into()));
    };
    let truncated = || Error::Internal("truncated lead value".into());
    let (length, rest) = rest.split_first_chunk::<4>().ok_or_else(truncated)?;
    let length = u32::from_le_bytes(*length) as usize;
    if rest.len() < length {
        return Err(truncated());
    }
    let (record, view) = rest.split_at(length);
    let view = match view.split_first() {
        Some((&LEAD_VIEW_FORMAT, json)) => Some(json),
        _ => None,
    };
    Ok((record, view))
}

pub fn decode(bytes: &[u8]) -> Result<LeadRecord> {
    match bytes.first() {
        Some(&RECORD_FORMAT) => codec::decode(bytes),
        _ => Ok(postcard::from_bytes(split(bytes)?.0)?),
    }
}

/// The lead's wire JSON: the stored text when it has this release's shape, else
/// rendered from the record.
pub fn json(bytes: &[u8]) -> Result<Cow<'_, [u8]>> {
    if bytes.first() != Some(&RECORD_FORMAT) {
        if let (_, Some(view)) = split(bytes)? {
            return Ok(Cow::Borrowed(view));
        }
    }
    let mut out = JsonWriter::with_capacity(LEAD_JSON_BYTES);
    write_json(&mut out, &decode(bytes)?);
    out.finish().map(Cow::Owned)
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
    use crate::store::records::{JsonBlob, TagRecord};
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

    fn rendered(lead: &LeadRecord) -> Value {
        let mut out = JsonWriter::with_capacity(0);
        write_json(&mut out, lead);
        serde_json::from_slice(&out.finish().unwrap()).unwrap()
    }

    #[test]
    fn a_value_holds_the_record_and_its_view() {
        let lead = sample();
        let bytes = encode(&lead).unwrap();
        assert_eq!(decode(&bytes).unwrap(), lead);
        assert!(matches!(json(&bytes).unwrap(), Cow::Borrowed(_)));
        let view: Value = serde_json::from_slice(&json(&bytes).unwrap()).unwrap();
        assert_eq!(view, rendered(&lead));
        assert_eq!(view["firstName"], "Ann \"Q\"");
        assert_eq!(view["createdAt"], "2026-11-22T10:15:30.123456Z");
        assert_eq!(
            view["additionalInfo"],
            json!({"plan": "gold", "seats": [1, 2]})
        );
        assert_eq!(view["tags"][0]["name"], "vip");
        assert_eq!(view["deleted"], true);
        assert_eq!(view["subscriptions"]["voice"], "subscribed");
        assert_eq!(view.as_object().unwrap().len(), 26);
    }

    #[test]
    fn schema_1_values_and_other_view_formats_render_from_the_record() {
        let lead = sample();
        let old = codec::encode(&lead).unwrap();
        assert_eq!(decode(&old).unwrap(), lead);
        assert!(matches!(json(&old).unwrap(), Cow::Owned(_)));

        let mut other_view = encode(&lead).unwrap();
        let at = 5 + u32::from_le_bytes(other_view[1..5].try_into().unwrap()) as usize;
        other_view[at] = LEAD_VIEW_FORMAT + 1;
        let view: Value = serde_json::from_slice(&json(&other_view).unwrap()).unwrap();
        assert_eq!(view, rendered(&lead));
    }

    #[test]
    fn damaged_values_are_errors() {
        let bytes = encode(&sample()).unwrap();
        assert!(decode(&[]).is_err());
        assert!(decode(&bytes[..3]).is_err());
        assert!(decode(&bytes[..10]).is_err());
        assert!(json(&[LEAD_FORMAT + 1]).is_err());
    }
}
