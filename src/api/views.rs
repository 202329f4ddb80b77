//! The wire shapes of records: what a client sees of a lead, an event, a message and a
//! call. Borrowing views serialise straight from the stored records without copies.

use serde::Serialize;
use serde_json::Value;

use crate::domain::events::MessageShape;
use crate::store::records::{CallRecord, LeadRecord, Subscriptions, TagRecord};
use crate::store::EventRow;
use crate::time::Timestamp;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeadView<'a> {
    id: &'a str,
    first_name: &'a str,
    last_name: &'a str,
    phone: &'a str,
    email: &'a str,
    customer_profile: &'a str,
    created_at: Timestamp,
    updated_at: Timestamp,
    last_activity_at: Timestamp,
    additional_info: &'a Value,
    has_replied: bool,
    has_replied_email: bool,
    has_ai_call: bool,
    is_hot: bool,
    is_qualified: bool,
    has_transfer_call: bool,
    is_unsubscribed: bool,
    is_ai_on: bool,
    tags: &'a [TagRecord],
    summary: &'a str,
    external_lead_id: &'a str,
    secondary_crm_lead_id: &'a str,
    time_zone: &'a str,
    subscriptions: SubscriptionsView,
    deleted: bool,
    deleted_at: Option<Timestamp>,
}

#[derive(Serialize)]
pub struct SubscriptionsView {
    sms: &'static str,
    voice: &'static str,
    email: &'static str,
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

impl<'a> LeadView<'a> {
    pub fn of(lead: &'a LeadRecord) -> Self {
        let s = &lead.subscriptions;
        LeadView {
            id: &lead.id,
            first_name: &lead.first_name,
            last_name: &lead.last_name,
            phone: &lead.phone,
            email: &lead.email,
            customer_profile: &lead.customer_profile,
            created_at: Timestamp(lead.created_at),
            updated_at: Timestamp(lead.updated_at),
            last_activity_at: Timestamp(lead.last_activity_at),
            additional_info: &lead.additional_info.0,
            has_replied: lead.has_replied,
            has_replied_email: lead.has_replied_email,
            has_ai_call: lead.has_ai_call,
            is_hot: lead.is_hot,
            is_qualified: lead.is_qualified,
            has_transfer_call: lead.has_transfer_call,
            is_unsubscribed: is_unsubscribed(lead),
            is_ai_on: lead.is_ai_on,
            tags: &lead.tags,
            summary: &lead.summary,
            external_lead_id: &lead.external_lead_id,
            secondary_crm_lead_id: &lead.secondary_crm_lead_id,
            time_zone: &lead.time_zone,
            subscriptions: SubscriptionsView {
                sms: state(s.sms_unsubscribed),
                voice: state(s.voice_unsubscribed),
                email: state(s.email_unsubscribed),
            },
            deleted: lead.deleted_at.is_some(),
            deleted_at: lead.deleted_at.map(Timestamp),
        }
    }
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
    owner: &'a str,
    content: &'a Value,
    created_at: Timestamp,
}

impl<'a> MessageView<'a> {
    /// `None` for an event that is not message-shaped.
    pub fn of(row: &'a EventRow) -> Option<Self> {
        let shape = MessageShape::of(&row.kind, &row.record.data.0)?;
        Some(MessageView {
            id: &row.id,
            channel: shape.channel,
            owner: shape.owner,
            content: shape.content,
            created_at: Timestamp(row.record.created_at),
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
pub struct LeadsPage<'a> {
    pub leads: Vec<LeadView<'a>>,
    pub next_token: Option<String>,
}

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
