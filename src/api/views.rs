//! The wire shapes of records: what a client sees of a lead, an event, a message and a
//! call. Borrowing views serialise straight from the stored records without copies;
//! a lead is JSON text already (`store::lead_view`), which a page only concatenates.

use serde::Serialize;
use serde_json::Value;

use crate::domain::records::listing::MAX_LIMIT;
use crate::domain::records::message_shape::MessageShape;
use crate::error::Result;
use crate::json_writer::JsonWriter;
use crate::store::lead_view;
use crate::store::rows::{CallRecord, LeadRecord};
use crate::store::EventRow;
use crate::time::Timestamp;

/// A lead, rendered from its record.
pub fn lead(lead: &LeadRecord) -> Result<Vec<u8>> {
    lead_view::render(lead)
}

/// A lead of a search: its wire JSON and `engagement` (`profile`, `state`, `step`).
pub fn lead_with_engagement(
    lead: &LeadRecord,
    engagement: Option<&crate::store::rows::EngagementRecord>,
) -> Result<serde_json::Value> {
    let mut value: serde_json::Value = serde_json::from_slice(&lead_view::render(lead)?)
        .map_err(|e| crate::error::Error::Internal(format!("a lead's view: {e}")))?;
    let full = crate::domain::engagement::enrolment::view(engagement);
    value["engagement"] = serde_json::json!({
        "profile": full["profile"],
        "state": full["state"],
        "step": full["step"],
    });
    Ok(value)
}

/// A page of leads: `rows` writes their wire JSON as the store keeps it (copied as it
/// is, straight into the answer) and answers the page's `nextToken`.
pub fn leads_page(
    limit: usize,
    rows: impl FnOnce(&mut Vec<u8>) -> Result<Option<String>>,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + limit.min(MAX_LIMIT) * lead_view::LEAD_JSON_BYTES);
    out.extend_from_slice(b"{\"leads\":[");
    let next_token = rows(&mut out)?;
    let mut tail = JsonWriter::with_capacity(64);
    tail.raw("],\"nextToken\":");
    tail.opt_str(next_token.as_deref());
    tail.raw("}");
    out.extend_from_slice(&tail.finish()?);
    Ok(out)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    updated_at: Timestamp,
    data: &'a Value,
}

impl<'a> EventView<'a> {
    pub fn of(row: &'a EventRow) -> Self {
        EventView {
            id: &row.id,
            kind: &row.kind,
            updated_at: Timestamp(row.updated_at),
            data: &row.record.data.0,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageView<'a> {
    id: &'a str,
    channel: &'static str,
    owner: &'static str,
    content: &'a Value,
    created_at: Timestamp,
    /// What sent it (`cadence`, `assistant`, `keyword`, `api`, `human`), when engaged
    /// sent it through a provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<&'a str>,
    /// The person who sent it from the console (`origin` `human`).
    #[serde(skip_serializing_if = "Option::is_none")]
    sent_by: Option<&'a Value>,
}

impl<'a> MessageView<'a> {
    /// `None` for an event that is not message-shaped.
    pub fn of(row: &'a EventRow) -> Option<Self> {
        let data = &row.record.data.0;
        let shape = MessageShape::of(&row.kind, data)?;
        Some(MessageView {
            id: &row.id,
            // A web chat's line is text like an SMS, on channel `webchat`.
            channel: shape.medium.as_str(),
            owner: shape.owner.as_str(),
            content: shape.content,
            created_at: Timestamp(row.record.created_at),
            origin: data.get("origin").and_then(Value::as_str),
            sent_by: data.get("sentBy").filter(|v| v.is_object()),
        })
    }
}

/// The full call record: required fields always, optional ones only when known.
pub fn call(call: &CallRecord) -> CallView<'_> {
    CallView(call)
}

/// A call on the wire: its id, the details that are set, `durationSeconds` and
/// `transcript` defaulted when unset, and its times.
pub struct CallView<'a>(&'a CallRecord);

impl Serialize for CallView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let CallView(call) = self;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("id", &call.id)?;
        call.details.serialize_present(&mut map)?;
        if call.details.duration_seconds.is_none() {
            map.serialize_entry("durationSeconds", &0)?;
        }
        if call.details.transcript.is_none() {
            map.serialize_entry("transcript", &[(); 0])?;
        }
        map.serialize_entry("createdAt", &Timestamp(call.created_at))?;
        map.serialize_entry("updatedAt", &Timestamp(call.updated_at))?;
        map.end()
    }
}

// Pages serialise in one pass, without building a `serde_json::Value` first.

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage<'a> {
    pub events: Vec<EventView<'a>>,
    pub next_token: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesPage<'a> {
    pub messages: Vec<MessageView<'a>>,
    pub next_token: Option<String>,
}
