//! The records the store keeps, as they are encoded on disk (postcard, via `codec`).
//!
//! Free-form JSON (`additionalInfo`, event `data`) is kept as JSON bytes inside a
//! record through [`JsonBlob`], a call transcript as [`RawJson`]; times are
//! microseconds. The wire shapes live in `api::views`, a lead's in `store::lead_view`
//! (its JSON is stored beside the record), and call details serve both: `call_details!`
//! declares the stored fields and writes their wire view (see `CallDetails`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::time::{Micros, Timestamp};

/// JSON that is a value in JSON documents and JSON text in postcard records.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonBlob(pub Value);

impl Serialize for JsonBlob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.0.serialize(s)
        } else {
            let bytes = serde_json::to_vec(&self.0).map_err(serde::ser::Error::custom)?;
            s.serialize_bytes(&bytes)
        }
    }
}

impl<'de> Deserialize<'de> for JsonBlob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            Value::deserialize(d).map(JsonBlob)
        } else {
            let bytes: Vec<u8> = serde_bytes_compat::deserialize(d)?;
            serde_json::from_slice(&bytes)
                .map(JsonBlob)
                .map_err(serde::de::Error::custom)
        }
    }
}

/// JSON kept as its text, for a value that is stored and sent back but never looked
/// into on a read (a call's transcript): reading it costs no parse into a tree. The
/// postcard form is the same as [`JsonBlob`]'s, so either type reads the other's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct RawJson(String);

impl RawJson {
    pub fn from_value(value: &Value) -> Self {
        RawJson(value.to_string())
    }

    pub fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::from_str(&self.0)
    }
}

impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            // Borrowing the text as a `RawValue` checks it without allocating, and
            // serde_json then copies it to the output as it is.
            let raw: &serde_json::value::RawValue =
                serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
            raw.serialize(s)
        } else {
            s.serialize_bytes(self.0.as_bytes())
        }
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            Value::deserialize(d).map(|v| RawJson::from_value(&v))
        } else {
            let bytes = serde_bytes_compat::deserialize(d)?;
            String::from_utf8(bytes)
                .map(RawJson)
                .map_err(serde::de::Error::custom)
        }
    }
}

mod serde_bytes_compat {
    //! Reads a byte string however the format hands it over.
    use serde::de::{Deserializer, Error, SeqAccess, Visitor};
    use std::fmt;

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("bytes")
        }
        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::new();
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_bytes(BytesVisitor)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Read,
    Write,
    Admin,
}

impl Scope {
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OrgSettings {
    pub sms_voice_opt_out_coupled: bool,
    pub compliance_url: Option<String>,
    pub compliance_channels: Option<Vec<String>>,
    pub compliance_timeout_ms: Option<u64>,
    /// ("21:00", "08:00") local to the lead's time zone.
    pub quiet_hours: Option<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OrgRecord {
    pub id: String,
    pub name: String,
    pub created_at: Micros,
    pub settings: OrgSettings,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: String,
    pub org_id: String,
    pub scope: Scope,
    pub name: String,
    pub created_at: Micros,
    pub revoked_at: Option<Micros>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagRecord {
    pub id: String,
    pub name: String,
    pub condition: String,
}

/// Per-channel opt-out state. `sms_by_keyword` remembers that the lead itself texted an
/// opt-out keyword: only its own opt-in keyword may clear that.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Subscriptions {
    pub sms_unsubscribed: bool,
    pub voice_unsubscribed: bool,
    pub email_unsubscribed: bool,
    pub sms_by_keyword: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LeadRecord {
    pub id: String,
    pub first_name: String,
    pub last_name: String,
    /// E.164, or empty.
    pub phone: String,
    pub email: String,
    pub customer_profile: String,
    pub created_at: Micros,
    pub updated_at: Micros,
    pub last_activity_at: Micros,
    /// Always a JSON object.
    pub additional_info: JsonBlob,
    pub has_replied: bool,
    pub has_replied_email: bool,
    pub has_ai_call: bool,
    pub is_hot: bool,
    pub is_qualified: bool,
    pub has_transfer_call: bool,
    pub is_ai_on: bool,
    pub subscriptions: Subscriptions,
    pub tags: Vec<TagRecord>,
    pub summary: String,
    pub external_lead_id: String,
    pub secondary_crm_lead_id: String,
    /// IANA time zone name, or empty.
    pub time_zone: String,
    pub deleted_at: Option<Micros>,
}

/// An event row's value; its type, id and `updatedAt` are in the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub created_at: Micros,
    /// Always a JSON object.
    pub data: JsonBlob,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    #[serde(rename = "INBOUND")]
    Inbound,
    #[serde(rename = "OUTBOUND")]
    Outbound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    Answered,
    NoAnswer,
    Pending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    Human,
    MachineStart,
    MachineEndBeep,
    MachineEndSilence,
    MachineEndOther,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EndedBy {
    Lead,
    Agent,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferFailureCode {
    AgentNotConnected,
    LeadDisconnected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferStatus {
    Connected,
    Failed,
}

/// Declares [`CallDetails`] from one list of fields, each with its wire name, so that the
/// struct and its wire view ([`CallDetails::serialize_present`]) cannot drift apart.
macro_rules! call_details {
    ($($field:ident: $ty:ty = $wire:literal,)*) => {
        /// Every client-writable field of a call. The same struct is the body of
        /// `PUT /v1/calls/{id}` (all fields optional: a field left out keeps its value),
        /// the stored record's contents, and, with `None`s dropped, the wire record.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct CallDetails {
            $(
                #[serde(rename = $wire)]
                pub $field: Option<$ty>,
            )*
        }

        impl CallDetails {
            /// Writes the fields that are set, by their wire names, into a map being
            /// serialised: the wire record leaves unset fields out rather than sending
            /// `null`, and a derived `skip_serializing_if` would break the postcard form.
            pub fn serialize_present<M: serde::ser::SerializeMap>(
                &self,
                map: &mut M,
            ) -> Result<(), M::Error> {
                $(
                    if let Some(value) = &self.$field {
                        map.serialize_entry($wire, value)?;
                    }
                )*
                Ok(())
            }
        }
    };
}

call_details! {
    lead_id: String = "leadId",
    session_id: String = "sessionId",
    direction: Direction = "direction",
    call_status: String = "callStatus",
    duration_seconds: u64 = "durationSeconds",
    transcript: RawJson = "transcript",
    summary: String = "summary",
    is_transfer: bool = "isTransfer",
    mid_call_transfer: bool = "midCallTransfer",
    has_voicemail: bool = "hasVoicemail",
    transfer_number: String = "transferNumber",
    fallback_transfer_number: String = "fallbackTransferNumber",
    transfer_answer_status: AnswerStatus = "transferAnswerStatus",
    transfer_answered_by: AnsweredBy = "transferAnsweredBy",
    transfer_fallback_attempted: bool = "transferFallbackAttempted",
    transfer_fallback_answer_status: AnswerStatus = "transferFallbackAnswerStatus",
    transfer_fallback_answered_by: AnsweredBy = "transferFallbackAnsweredBy",
    mid_call_transfer_duration: u64 = "midCallTransferDuration",
    ended_by: EndedBy = "endedBy",
    transfer_initiated_at: Timestamp = "transferInitiatedAt",
    agent_connected: bool = "agentConnected",
    transfer_failure_code: TransferFailureCode = "transferFailureCode",
    transfer_wait_duration_seconds: u64 = "transferWaitDurationSeconds",
    transfer_status: TransferStatus = "transferStatus",
    ai_call_without_human_response: bool = "aiCallWithoutHumanResponse",
    is_follow_up: bool = "isFollowUp",
    is_ai_initiated: bool = "isAiInitiated",
    hit_call_screening: bool = "hitCallScreening",
    reached_human_after_screening: bool = "reachedHumanAfterScreening",
    is_forward: bool = "isForward",
    disposition_id: String = "dispositionId",
    disposition_name: String = "dispositionName",
    disposition_classified_at: Timestamp = "dispositionClassifiedAt",
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub id: String,
    pub created_at: Micros,
    pub updated_at: Micros,
    pub details: CallDetails,
    pub notified: CallNotified,
}

/// Which once-only webhooks a call has already caused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CallNotified {
    pub completed: bool,
    pub dispositioned: bool,
    pub transfer: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec;

    #[test]
    fn json_blobs_are_values_in_json_and_text_in_records() {
        let record = EventRecord {
            created_at: 5,
            data: JsonBlob(serde_json::json!({"a": [1, "x", null]})),
        };
        let back: EventRecord = codec::decode(&codec::encode(&record).unwrap()).unwrap();
        assert_eq!(back, record);
        let json = serde_json::to_value(&record.data).unwrap();
        assert_eq!(json, serde_json::json!({"a": [1, "x", null]}));
    }

    #[test]
    fn raw_json_reads_json_blob_bytes_and_sends_its_text_as_json() {
        let value = serde_json::json!([{"speaker": "lead", "text": "hi \"there\""}]);
        let blob = postcard::to_allocvec(&JsonBlob(value.clone())).unwrap();
        let raw: RawJson = postcard::from_bytes(&blob).unwrap();
        assert_eq!(raw.to_value().unwrap(), value);
        assert_eq!(
            postcard::to_allocvec(&raw).unwrap(),
            blob,
            "same stored form"
        );
        assert_eq!(serde_json::to_value(&raw).unwrap(), value);
        let parsed: RawJson = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(parsed.to_value().unwrap(), value);
    }

    #[test]
    fn call_details_round_trip_in_both_encodings() {
        let details: CallDetails = serde_json::from_value(serde_json::json!({
            "direction": "OUTBOUND",
            "transferInitiatedAt": "2026-11-22T10:15:30.5Z",
            "transferAnsweredBy": "machine_end_beep",
            "transcript": [{"speaker": "lead", "text": "hi"}]
        }))
        .unwrap();
        let record = CallRecord {
            id: "c".into(),
            created_at: 1,
            updated_at: 2,
            details,
            notified: CallNotified::default(),
        };
        let back: CallRecord = codec::decode(&codec::encode(&record).unwrap()).unwrap();
        assert_eq!(back, record);
        let wire = serde_json::to_value(&back.details).unwrap();
        assert_eq!(wire["transferInitiatedAt"], "2026-11-22T10:15:30.500000Z");
        assert_eq!(wire["transferAnsweredBy"], "machine_end_beep");
    }

    #[test]
    fn call_details_refuse_unknown_fields_and_bad_enums() {
        assert!(serde_json::from_str::<CallDetails>(r#"{"nope": 1}"#).is_err());
        assert!(serde_json::from_str::<CallDetails>(r#"{"direction": "SIDEWAYS"}"#).is_err());
        assert!(serde_json::from_str::<CallDetails>(r#"{"durationSeconds": -1}"#).is_err());
    }
}

/// A registered webhook receiver. `events` empty means every event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointRecord {
    pub id: String,
    pub org_id: String,
    pub url: String,
    pub events: Vec<String>,
    /// `whsec_` + base64 of 32 random bytes.
    pub secret: String,
    pub created_at: Micros,
    pub disabled_at: Option<Micros>,
    pub disabled_reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub at: Micros,
    /// The receiver's HTTP status, if it answered.
    pub status: Option<u16>,
    /// Why there was no usable answer (timeout, connection refused, ...), else empty.
    pub error: String,
    pub latency_micros: i64,
}

/// One event for one endpoint. Its id is the `webhook-id` of every attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    pub id: String,
    pub org_id: String,
    pub endpoint_id: String,
    pub event: String,
    pub data: JsonBlob,
    pub created_at: Micros,
    pub state: DeliveryState,
    pub attempts: Vec<AttemptRecord>,
    /// Attempts since the delivery was (re)queued; drives the retry schedule.
    pub cycle_attempts: u32,
    /// When the outbox row is due; `None` once delivered or failed.
    pub next_attempt_at: Option<Micros>,
}
