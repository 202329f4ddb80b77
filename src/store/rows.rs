//! The records the store keeps, as they are encoded on disk (postcard, via `codec`).
//!
//! Free-form JSON (`additionalInfo`, event `data`) is kept as JSON bytes inside a
//! record through [`JsonBlob`], a call transcript as [`RawJson`]; times are
//! microseconds. The wire shapes live in `api::views`, a lead's in `store::lead_view`
//! (its JSON is stored beside the record), and call details serve both: `call_details!`
//! declares the stored fields and writes their wire view (see `CallDetails`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::channel::{Channel, Medium};
use crate::error::Error;
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

/// How an email address is compared (case-insensitively) and indexed
/// (`leads_by_email`): trimmed, in lower case.
pub fn email_key(email: &str) -> String {
    email.trim().to_lowercase()
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
    /// The start of the lead's next booked meeting (`nextMeetingAt`).
    pub next_meeting_at: Option<Micros>,
}

impl LeadRecord {
    /// How people see the lead named: its full name, else its email, phone or id.
    pub fn display_name(&self) -> String {
        let full = format!("{} {}", self.first_name.trim(), self.last_name.trim());
        let full = full.trim();
        if !full.is_empty() {
            return full.to_string();
        }
        [&self.email, &self.phone, &self.id]
            .into_iter()
            .find(|s| !s.is_empty())
            .cloned()
            .unwrap_or_default()
    }
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

/// The size of every stored chunk but an upload's last: 255 KiB, so that a chunk with
/// its key and redb's leaf header fits one 256 KiB page. A chunk of exactly 256 KiB
/// would spill into a 512 KiB page and nearly double the file (measured: 100 MiB of
/// audio took a 273 MiB file in 256 KiB chunks, 145 MiB in 255 KiB ones).
pub const CHUNK_BYTES: usize = 255 * 1024;

/// A call's current recording; its audio is the chunks of `upload_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordingRecord {
    pub call_id: String,
    pub upload_id: String,
    pub content_type: String,
    pub size: u64,
    /// SHA-256 of the audio, lowercase hex.
    pub sha256: String,
    pub uploaded_at: Micros,
}

impl RecordingRecord {
    /// How many chunks hold the audio.
    pub fn chunk_count(&self) -> u64 {
        self.size.div_ceil(CHUNK_BYTES as u64)
    }
}

/// An upload still streaming in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub org_id: String,
    pub call_id: String,
    pub started_at: Micros,
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

/// What a channel means for a lead: whether it has a target, whether it is
/// unsubscribed. Beside the records they read; the enum itself is the leaf
/// `crate::channel`.
impl Channel {
    pub fn reachable(self, lead: &LeadRecord) -> bool {
        match self {
            Channel::Sms | Channel::Voice => !lead.phone.is_empty(),
            Channel::Email => !lead.email.is_empty(),
        }
    }

    /// The interface's message when a requested channel has no target.
    pub(crate) fn missing_target(self) -> Error {
        match self {
            Channel::Email => Error::BadRequest("Lead has no email".into()),
            Channel::Sms | Channel::Voice => Error::BadRequest("Lead has no phone".into()),
        }
    }

    pub fn is_unsubscribed(self, s: &Subscriptions) -> bool {
        match self {
            Channel::Sms => s.sms_unsubscribed,
            Channel::Voice => s.voice_unsubscribed,
            Channel::Email => s.email_unsubscribed,
        }
    }

    pub(crate) fn set_unsubscribed(self, s: &mut Subscriptions, value: bool) {
        match self {
            Channel::Sms => s.sms_unsubscribed = value,
            Channel::Voice => s.voice_unsubscribed = value,
            Channel::Email => s.email_unsubscribed = value,
        }
    }
}

// The engagement engine.

/// A campaign as people name it: its profile's name, the id integrators use
/// (`customerProfile`), and its display name ("Spring Solar Push"; the id when it has
/// none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignName {
    pub id: String,
    pub label: String,
}

impl CampaignName {
    /// The display name of the campaign `id` among `names`; the id itself when it is not
    /// among them (a lead's campaign deleted since).
    pub fn label_of<'a>(names: &'a [CampaignName], id: &'a str) -> &'a str {
        names
            .iter()
            .find(|c| c.id == id)
            .map_or(id, |c| c.label.as_str())
    }
}

/// A stored profile (postcard): every member is always present, empty meaning unset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub name: String,
    pub instructions: String,
    pub cadence: Vec<StepRecord>,
    pub reply_delay_ms: u64,
    /// As written, for the view.
    pub reply_delay: String,
    pub dispositions: Vec<DispositionRecord>,
    /// E.164, or empty.
    pub transfer_number: String,
    /// E.164, or empty.
    pub fallback_transfer_number: String,
    pub voice_greeting: String,
    pub created_at: Micros,
    pub updated_at: Micros,
    /// The calendar the assistant books on (empty: none).
    pub calendar: String,
    /// What a call screener hears on an outbound call (empty: the default,
    /// `voice::screening::DEFAULT_REPLY`).
    pub screening_reply: String,
    /// What an outbound AI call answered by a machine does (none: it hangs up).
    pub voicemail: Option<VoicemailRecord>,
    /// How a transfer reaches a person (none: cold, the numbers above, as before
    /// schema 14). The numbers stay in `transfer_number` / `fallback_transfer_number`.
    pub transfer: Option<TransferSettings>,
    /// The profile's test conversations, run by every replay (none before schema 16).
    pub tests: Vec<ProfileTest>,
    /// A save that changes the instructions or the tools runs the tests first and is
    /// refused when one fails.
    pub require_tests_pass: bool,
}

/// A profile's test conversation: the lead's turns, and what the answers must do
/// (`domain::settings::replays`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileTest {
    pub name: String,
    pub turns: Vec<String>,
    pub expect: Vec<TestExpectation>,
}

/// One expectation of a test conversation: its turn (1-based) and check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestExpectation {
    pub turn: u32,
    pub check: TestCheck,
}

/// What one expectation checks of its turn's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestCheck {
    /// The tool was called.
    Tool(String),
    /// The tool was not called.
    NotTool(String),
    /// The answer contains the text (any case).
    Contains(String),
    /// The answer does not contain the text (any case).
    NotContains(String),
}

/// A profile's transfer settings besides its numbers (`transfer` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferSettings {
    pub mode: TransferMode,
    /// Whom the lead hears it is connected with (empty: "a member of our team").
    pub name: String,
    /// How long each person's phone rings, 10 to 60 seconds.
    pub ring_seconds: u32,
    /// The digit a person presses to take a warm transfer.
    pub accept_digit: KeypadDigit,
    /// What the lead hears while held (empty: Twilio's default music).
    pub hold_music_url: String,
}

/// How a transfer reaches a person: `cold` bridges the lead to the number as it
/// rings; `warm` holds the lead in a conference while the person hears a summary and
/// accepts with a digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferMode {
    Cold,
    Warm,
}

impl TransferMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TransferMode::Cold => "cold",
            TransferMode::Warm => "warm",
        }
    }

    pub fn parse(text: &str) -> Option<TransferMode> {
        [TransferMode::Cold, TransferMode::Warm]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

/// Where a warm transfer stands (the `warm_transfers` table): the lead waits in a
/// conference named for the call while one person at a time is rung.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarmTransfer {
    /// Twilio's `CallSid` of the lead's call.
    pub lead_sid: String,
    /// 1: `transferNumber`; 2: `fallbackTransferNumber`.
    pub attempt: u8,
    pub phase: WarmPhase,
    /// Twilio's `CallSid` of the person's leg being rung (empty until known).
    pub agent_sid: String,
    /// When the person accepted (0: not yet).
    pub connected_at: i64,
    /// The assistant's summary for the whisper (empty: the template).
    pub summary: String,
}

/// The steps of a warm transfer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WarmPhase {
    /// The person's phone rings (or the dial is on its way).
    #[default]
    Ringing,
    /// The person answered and hears the whisper, until a digit.
    Whisper,
    /// The person accepted: the two are bridged in the conference.
    Connected,
    /// Over: connected then left, failed, or the lead hung up.
    Ended,
}

/// A profile's voicemail: the message left after the beep, or a hang-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoicemailRecord {
    /// A template with a step's placeholders.
    pub text: String,
    pub on_machine: OnMachine,
}

/// What an outbound AI call answered by a machine does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OnMachine {
    /// Speaks the voicemail's text once after the beep, then hangs up.
    Leave,
    /// Hangs up at once.
    HangUp,
}

impl OnMachine {
    pub fn as_str(self) -> &'static str {
        match self {
            OnMachine::Leave => "leave",
            OnMachine::HangUp => "hang_up",
        }
    }

    pub fn parse(text: &str) -> Option<OnMachine> {
        [OnMachine::Leave, OnMachine::HangUp]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

/// One cadence step: `after` the previous step (the first counts from enrolment), send
/// `text` (and `subject` for email) on `channel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// As written, for the view.
    pub after: String,
    pub after_ms: u64,
    pub channel: Channel,
    pub text: String,
    /// Empty unless given (required for email).
    pub subject: String,
    /// What the step is for, which the consent policy checks (`marketing` unless given).
    pub purpose: Purpose,
}

/// A call outcome the post-call processing may choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispositionRecord {
    pub id: String,
    pub name: String,
    pub description: String,
}

/// Where the assistant lives and how long one attempt may take (stored in the
/// organization's settings).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantSettings {
    /// The API base, e.g. `http://127.0.0.1:11434/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// The bound of one attempt.
    pub timeout_ms: u64,
    /// `max_tokens` of every request; `None`: the channel's default (`providers::model::protocol`).
    pub max_tokens: Option<u32>,
}

impl std::fmt::Debug for AssistantSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: it never reaches a log line.
        f.debug_struct("AssistantSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout_ms", &self.timeout_ms)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// How a message left (or failed to leave) through its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SendStatus {
    Sending,
    Queued,
    Sent,
    Delivered,
    Failed,
    Undelivered,
    Unknown,
}

impl SendStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SendStatus::Sending => "sending",
            SendStatus::Queued => "queued",
            SendStatus::Sent => "sent",
            SendStatus::Delivered => "delivered",
            SendStatus::Failed => "failed",
            SendStatus::Undelivered => "undelivered",
            SendStatus::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<SendStatus> {
        [
            SendStatus::Sending,
            SendStatus::Queued,
            SendStatus::Sent,
            SendStatus::Delivered,
            SendStatus::Failed,
            SendStatus::Undelivered,
            SendStatus::Unknown,
        ]
        .into_iter()
        .find(|status| status.as_str() == s)
    }
}

/// Who started an outbound message: the event data's `origin`, and what names it
/// further (a cadence step's number as `step`, a person as `sentBy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Step `step` (1-based) of the lead's cadence.
    Cadence {
        step: u32,
    },
    Assistant,
    Keyword,
    Api,
    /// A person of the organization, in the console.
    Human(Person),
    /// A meeting's confirmation or reminder (`meetingId` in the event's data): the
    /// lead's reply to it is a "Meeting reply".
    Meeting {
        meeting_id: String,
    },
}

/// A person acting in the console: the user's id and display name, as events and
/// messages record them (`sentBy`, `USER_ACTION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub user_id: String,
    pub name: String,
}

impl Origin {
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::Cadence { .. } => "cadence",
            Origin::Assistant => "assistant",
            Origin::Keyword => "keyword",
            Origin::Api => "api",
            Origin::Human(_) => "human",
            Origin::Meeting { .. } => "meeting",
        }
    }
}

/// The event types engaged writes itself (a client's types are free-form): their names,
/// written once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemEvent {
    /// An SMS (a message on the `sms` channel; voice-channel text too).
    Message,
    Email,
    /// The summary of a call, beside its record.
    Call,
    /// An outbound attempt the compliance gate suppressed.
    ComplianceBlocked,
    /// A tool the assistant called, with its result.
    ToolCall,
    /// Something a person did in the console (`action`, `userId`, `name`, details).
    UserAction,
    /// An entry of the lead's consent ledger (`domain::records::consent`), never edited.
    Consent,
}

impl SystemEvent {
    pub const fn as_str(self) -> &'static str {
        match self {
            SystemEvent::Message => "MESSAGE",
            SystemEvent::Email => "EMAIL",
            SystemEvent::Call => "CALL",
            SystemEvent::ComplianceBlocked => "COMPLIANCE_BLOCKED",
            SystemEvent::ToolCall => "TOOL_CALL",
            SystemEvent::UserAction => "USER_ACTION",
            SystemEvent::Consent => "CONSENT",
        }
    }
}

/// The type of a message event: `MESSAGE` (SMS) or `EMAIL`. Stored as its name, a
/// string, the same bytes as when the field was a `String`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum MessageKind {
    Sms,
    Email,
}

impl MessageKind {
    /// The type of a message on `channel`: `EMAIL` for email, `MESSAGE` otherwise.
    pub fn of(channel: Channel) -> MessageKind {
        match channel {
            Channel::Email => MessageKind::Email,
            Channel::Sms | Channel::Voice => MessageKind::Sms,
        }
    }

    pub fn parse(kind: &str) -> Option<MessageKind> {
        [MessageKind::Sms, MessageKind::Email]
            .into_iter()
            .find(|k| k.as_str() == kind)
    }

    pub fn event(self) -> SystemEvent {
        match self {
            MessageKind::Sms => SystemEvent::Message,
            MessageKind::Email => SystemEvent::Email,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.event().as_str()
    }

    /// The channel a message of this type was on (an SMS's: `sms`).
    pub fn channel(self) -> Channel {
        match self {
            MessageKind::Sms => Channel::Sms,
            MessageKind::Email => Channel::Email,
        }
    }
}

impl From<MessageKind> for String {
    fn from(kind: MessageKind) -> String {
        kind.as_str().to_string()
    }
}

impl TryFrom<String> for MessageKind {
    type Error = String;

    fn try_from(kind: String) -> Result<MessageKind, String> {
        MessageKind::parse(&kind).ok_or_else(|| format!("not a message type: {kind}"))
    }
}

/// Where a lead stands in its profile's cadence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum EngagementState {
    #[default]
    None,
    Active,
    Paused,
    Stopped,
    Finished,
    /// A possible opt-out waits for a person (or the timeout): automated outreach
    /// waits, as while `Paused` (`HoldRecord` says what it resumes as).
    Held,
}

impl EngagementState {
    pub fn as_str(self) -> &'static str {
        match self {
            EngagementState::None => "none",
            EngagementState::Active => "active",
            EngagementState::Paused => "paused",
            EngagementState::Stopped => "stopped",
            EngagementState::Finished => "finished",
            EngagementState::Held => "held",
        }
    }
}

/// Why a cadence stopped; it never resumes by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    Replied,
    Unsubscribed,
    Dnc,
    Deleted,
    Qualified,
    Handoff,
    ProfileChanged,
    ProfileDeleted,
    MeetingBooked,
}

impl StopReason {
    /// Every reason, in the order the interface lists them.
    pub const ALL: [StopReason; 9] = [
        StopReason::Replied,
        StopReason::Unsubscribed,
        StopReason::Dnc,
        StopReason::Deleted,
        StopReason::Qualified,
        StopReason::Handoff,
        StopReason::ProfileChanged,
        StopReason::ProfileDeleted,
        StopReason::MeetingBooked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Replied => "replied",
            StopReason::Unsubscribed => "unsubscribed",
            StopReason::Dnc => "dnc",
            StopReason::Deleted => "deleted",
            StopReason::Qualified => "qualified",
            StopReason::Handoff => "handoff",
            StopReason::ProfileChanged => "profile_changed",
            StopReason::ProfileDeleted => "profile_deleted",
            StopReason::MeetingBooked => "meeting_booked",
        }
    }

    /// The reason as the console says it ("Opted out", never `unsubscribed`).
    pub fn words(self) -> &'static str {
        match self {
            StopReason::Replied => "Replied",
            StopReason::Unsubscribed => "Opted out",
            StopReason::Dnc => "On the DNC list",
            StopReason::Deleted => "Lead deleted",
            StopReason::Qualified => "Qualified",
            StopReason::Handoff => "Handed off",
            StopReason::ProfileChanged => "Campaign changed",
            StopReason::ProfileDeleted => "Campaign deleted",
            StopReason::MeetingBooked => "Meeting booked",
        }
    }

    /// The reason whose wire name is `name`.
    pub fn parse(name: &str) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// A lead's engagement: its cadence position and its pending agenda jobs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngagementRecord {
    /// The profile the cadence follows (empty: none).
    pub profile: String,
    pub state: EngagementState,
    /// 0-based index of the next step to run.
    pub next_step: u32,
    pub stopped_reason: Option<StopReason>,
    pub last_error: String,
    /// The agenda row of the next cadence step: (due, job id).
    pub step_job: Option<(Micros, String)>,
    /// The agenda row of the pending assistant reply: (due, job id).
    pub reply_job: Option<(Micros, String)>,
}

/// What an agenda row asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum JobKind {
    /// Step `index` of the lead's cadence.
    Step { index: u32 },
    /// One assistant reply to the lead's latest messages on `channel`.
    Reply { channel: Channel },
    /// A compliance text (keyword confirmation, help) sent past the gate.
    Notice { channel: Channel, text: String },
    /// An outbound call the assistant asked for.
    Call,
    /// Post-call processing of a completed call: its summary and disposition.
    PostCall { call_id: String },
    /// Fetching a call's finished recording from its provider; `attempt` counts the
    /// failed tries so far.
    FetchRecording {
        call_id: String,
        url: String,
        attempt: u32,
    },
    /// A possible opt-out nobody decided within 10 business days: it becomes an opt-out
    /// (source `timeout`).
    HoldTimeout,
    /// A bulk "Add to campaign" (`domain::conversation::bulk_enrolment`), run batch by
    /// batch; its row has no lead.
    Enrolment { job: String },
    /// A reminder of meeting `meeting_id` before its `start`: nothing when the meeting
    /// is no longer booked at that start (moved or canceled since).
    Reminder { meeting_id: String, start: Micros },
    /// The lead's confirmation of a meeting booked, moved or canceled, through the gate.
    MeetingConfirmation {
        meeting_id: String,
        change: MeetingChange,
    },
}

/// What happened to a meeting, as its confirmation tells the lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MeetingChange {
    Booked,
    Moved,
    Canceled,
}

/// A lead held by a possible opt-out (`consent_holds`), until a person, the assistant's
/// `opt_out` or the timeout decides it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldRecord {
    /// The channel the words came on (SMS or email).
    pub channel: Channel,
    /// The lead's words (the proof of an opt-out).
    pub words: String,
    pub at: Micros,
    /// The agenda row of the timeout: (due, job id).
    pub timeout_job: (Micros, String),
    /// What the engagement resumes as when the hold ends without an opt-out.
    pub resume: EngagementState,
    pub resume_reason: Option<StopReason>,
}

/// engaged's side of a call it placed or answered through a voice provider: what the
/// call's record does not say (the record is the interface's view).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VoiceSession {
    /// The lead's id; empty for a caller no live lead has (see [`VoiceSession::lead`]).
    pub lead_id: String,
    /// The profile the call follows (empty: none).
    pub profile: String,
    /// What a call without the assistant says (a cadence step's text, rendered).
    pub say: String,
    /// What the assistant's side says first (rendered), once the call is answered.
    pub greeting: String,
    /// The provider's id of the call (Twilio's `CallSid`), once known.
    pub provider_call_id: String,
    pub transfer: TransferStage,
    /// Post-call processing was scheduled (it is, once).
    pub post_call_scheduled: bool,
}

impl VoiceSession {
    /// The lead's id; `None` for a caller no live lead has. (The stored field keeps an
    /// empty string for none: postcard would store an `Option` with a tag byte.)
    pub fn lead(&self) -> Option<&str> {
        Some(self.lead_id.as_str()).filter(|id| !id.is_empty())
    }
}

/// Where a call's transfer to a human stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferStage {
    #[default]
    None,
    /// Ringing `transferNumber`.
    Primary,
    /// Ringing `fallbackTransferNumber` after the first did not answer.
    Fallback,
    /// Connected or failed: the outcome is on the call.
    Finished,
}

/// One row of the agenda: work on a lead, due at the row's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgendaJob {
    pub org_id: String,
    pub lead_id: String,
    pub kind: JobKind,
}

/// A message still being handed to its provider: its event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendingRow {
    pub org_id: String,
    pub lead_id: String,
    pub kind: MessageKind,
    pub event_id: String,
}

/// Which provider serves a channel, with its settings. New kinds are added at the end
/// (postcard stores the variant's position).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ProviderSettings {
    /// Nothing leaves the machine; `latency_ms` delays each acceptance (a slow provider,
    /// for trials and tests); `rate_per_second` paces its sends (none: unlimited).
    Sandbox {
        latency_ms: u64,
        rate_per_second: Option<f64>,
    },
    /// Email through an SMTP server.
    Smtp(SmtpSettings),
    /// SMS (and, later, voice) through a Twilio-compatible REST API.
    Twilio(TwilioSettings),
}

/// A Twilio-compatible account. `auth_token` is write-only in the view and hidden from
/// `Debug`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct TwilioSettings {
    pub account_sid: String,
    pub auth_token: String,
    /// E.164 sender, or empty when `messaging_service_sid` is set.
    pub from: String,
    pub messaging_service_sid: String,
    /// `https://api.twilio.com` unless a compatible service is used.
    pub base_url: String,
    /// Sends (messages, or calls) per second at most; none: [`DEFAULT_TWILIO_RATE`].
    pub rate_per_second: Option<f64>,
}

/// The sending rate of a `twilio` provider that sets none (Twilio queues what goes
/// beyond an account's rate, and refuses with 20429 past its queue).
pub const DEFAULT_TWILIO_RATE: f64 = 10.0;

impl ProviderSettings {
    /// Sends per second this provider takes at most; `None`: unlimited.
    pub fn rate_per_second(&self) -> Option<f64> {
        match self {
            ProviderSettings::Sandbox {
                rate_per_second, ..
            } => *rate_per_second,
            ProviderSettings::Smtp(_) => None,
            ProviderSettings::Twilio(t) => Some(t.rate_per_second.unwrap_or(DEFAULT_TWILIO_RATE)),
        }
    }
}

impl std::fmt::Debug for TwilioSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioSettings")
            .field("account_sid", &self.account_sid)
            .field("auth_token", &"<set>")
            .field("from", &self.from)
            .field("messaging_service_sid", &self.messaging_service_sid)
            .field("base_url", &self.base_url)
            .field("rate_per_second", &self.rate_per_second)
            .finish()
    }
}

/// Where a provider's message id points: the message event (for status callbacks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderMessageRef {
    pub lead_id: String,
    pub kind: MessageKind,
    pub event_id: String,
}

/// How the connection to an SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SmtpSecurity {
    /// Implicit TLS from the first byte (port 465).
    Tls,
    /// Plain connect, then a required STARTTLS (port 587).
    StartTls,
    /// No TLS at all: a local relay.
    None,
}

/// An SMTP provider's settings. `password` and `inbound_signing_key` are secrets:
/// write-only in the view, hidden from `Debug`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub username: Option<String>,
    pub password: Option<String>,
    /// A mailbox, `Name <addr>` or `addr` (parsed with lettre when set).
    pub from: String,
    /// Mailgun's HTTP webhook signing key, which verifies inbound email.
    pub inbound_signing_key: Option<String>,
}

impl std::fmt::Debug for SmtpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &Option<String>| s.as_ref().map(|_| "<set>");
        f.debug_struct("SmtpSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password", &set(&self.password))
            .field("from", &self.from)
            .field("inbound_signing_key", &set(&self.inbound_signing_key))
            .finish()
    }
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings::Sandbox {
            latency_ms: 0,
            rate_per_second: None,
        }
    }
}

/// The engine's organization settings (their own table: the organization record keeps
/// its layout).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    /// IANA name, or empty: quiet hours for leads without a time zone.
    pub time_zone: String,
    pub business_name: String,
    pub help_text: String,
    pub assistant: Option<AssistantSettings>,
    pub sms: ProviderSettings,
    pub voice: ProviderSettings,
    pub email: ProviderSettings,
    /// ISO 3166 alpha-2 (`US`), or empty: the country an imported phone without `+` is
    /// read in (`defaultCountry`).
    pub default_country: String,
    /// The days of the week cadence steps may run (`mon` ... `sun`); empty: every day
    /// (`followUpDays`).
    pub follow_up_days: Vec<String>,
    /// Dates (`YYYY-MM-DD`) no cadence step runs on (`holidays`).
    pub holidays: Vec<String>,
    /// How a lead opts out on a call with the assistant's voice (`voiceOptOutDigit`,
    /// `voiceOptOutSentence`).
    pub voice_opt_out: VoiceOptOut,
    /// The (channel, purpose) pairs outreach needs recorded consent for
    /// (`consentRequired`; a new organization's: voice for marketing).
    pub consent_required: ConsentRequired,
    /// The organization's own opt-out words, beside the per-se ones (`optOutKeywords`).
    pub opt_out_keywords: Vec<String>,
    /// What a definite revocation unsubscribes (`revocationScope`).
    pub revocation_scope: RevocationScope,
}

/// The call opt-out: the keypad digit that opts a lead out of voice on a relay call,
/// and whether the greeting says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoiceOptOut {
    pub digit: KeypadDigit,
    /// The greeting ends with `To stop these calls, press 9 or say stop.`
    pub sentence: bool,
}

impl Default for VoiceOptOut {
    fn default() -> VoiceOptOut {
        VoiceOptOut {
            digit: KeypadDigit::NINE,
            sentence: true,
        }
    }
}

/// One keypad digit, `0` to `9`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeypadDigit(u8);

impl KeypadDigit {
    pub const NINE: KeypadDigit = KeypadDigit(9);
    pub const ONE: KeypadDigit = KeypadDigit(1);

    /// `"0"` to `"9"`, exactly one character.
    pub fn parse(text: &str) -> Option<KeypadDigit> {
        match text.as_bytes() {
            [d @ b'0'..=b'9'] => Some(KeypadDigit(d - b'0')),
            _ => None,
        }
    }

    pub fn as_char(self) -> char {
        char::from(b'0' + self.0.min(9))
    }
}

impl std::fmt::Display for KeypadDigit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.as_char())
    }
}

/// One pair of `consentRequired`: outreach on `channel` for `purpose` needs consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentRequirement {
    pub channel: Channel,
    pub purpose: Purpose,
}

/// The organization's consent policy. Its default, a new organization's, is voice for
/// marketing (calls with the assistant's artificial voice); an organization from before
/// the policy existed was given none (schema 7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentRequired(pub Vec<ConsentRequirement>);

impl Default for ConsentRequired {
    fn default() -> Self {
        ConsentRequired(vec![ConsentRequirement {
            channel: Channel::Voice,
            purpose: Purpose::Marketing,
        }])
    }
}

impl ConsentRequired {
    /// Whether outreach on `channel` for `purpose` needs consent.
    pub fn requires(&self, channel: Channel, purpose: Purpose) -> bool {
        self.0
            .iter()
            .any(|r| r.channel == channel && r.purpose == purpose)
    }
}

/// What a definite revocation unsubscribes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RevocationScope {
    /// Every channel of the lead (the FCC's revoke-all rule).
    #[default]
    All,
    /// The channel it came on (SMS with its voice coupling).
    Channel,
}

impl RevocationScope {
    pub const fn as_str(self) -> &'static str {
        match self {
            RevocationScope::All => "all",
            RevocationScope::Channel => "channel",
        }
    }

    pub fn parse(s: &str) -> Option<RevocationScope> {
        [RevocationScope::All, RevocationScope::Channel]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// Who handles a lead besides the assistant, and where its conversation stands: what
/// the inbox shows and why a lead needs a person (`lead_handling`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlingRecord {
    /// The user who took the lead over and still owns it (empty: nobody).
    pub owner: String,
    /// When the assistant handed the lead off to a person (its `handoff` tool), until
    /// a person hands it back.
    pub handed_off_at: Option<Micros>,
    /// A person replied since the hand-off.
    pub handoff_answered: bool,
    /// The lead has a message, an email or a call: a conversation.
    pub conversation: bool,
    /// The lead's last message is its own, unanswered.
    pub awaiting_reply: bool,
    /// The newest send that ended `failed` or `unknown`, until retried or dismissed.
    pub failed_send: Option<FailedSend>,
    /// The last message, for the inbox's row.
    pub last_message: Option<LastMessage>,
    /// When the lead's newest own message (any channel) was created: the inbox's
    /// "Replied" tab and its unread markers.
    pub last_inbound_at: Option<Micros>,
    /// The newest message to the lead was a meeting's confirmation or reminder
    /// (`origin: "meeting"`): a reply to it is a "Meeting reply".
    pub meeting_message: bool,
    /// The owner moved or canceled one of the lead's meetings in their calendar (or
    /// their change overrode one engaged was making), until a person replies to the
    /// lead or marks it seen ("Meeting changed in the calendar").
    pub calendar_change: Option<CalendarChange>,
    /// When a transfer nobody took left the lead waiting without an assistant to take
    /// the call back ("Call back"), until a person replies or marks it called back.
    pub call_back: Option<Micros>,
}

/// A meeting the owner changed in their calendar: which, when it was taken in, and
/// whether the owner's version overrode a change engaged had not yet written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarChange {
    pub meeting_id: String,
    pub at: Micros,
    pub overrode: bool,
}

/// A send that failed (or whose fate is unknown): its event and when it ended so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedSend {
    pub kind: MessageKind,
    pub event_id: String,
    pub at: Micros,
}

/// A lead's last message as the inbox shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastMessage {
    pub event_id: String,
    /// Where it was written (stored before web chat as a [`Channel`], which reads as
    /// the same [`Medium`]).
    pub channel: Medium,
    /// The first 80 characters of its text.
    pub preview: String,
    pub created_at: Micros,
    pub from_lead: bool,
    /// Who wrote it, as the inbox's row names them.
    pub author: Author,
}

/// Who wrote a message, as the timeline names them: the lead, or on the
/// organization's side its `origin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Author {
    Lead,
    Assistant,
    Cadence,
    /// A person of the organization (origin `human`), by `sentBy.name`.
    Person(String),
    Keyword,
    Api,
}

impl Author {
    /// The author of a message of the lead (`from_lead`) or else with `data`'s
    /// `origin` (and `sentBy.name` for a person).
    pub fn of(from_lead: bool, data: &Value) -> Author {
        if from_lead {
            return Author::Lead;
        }
        match data.get("origin").and_then(Value::as_str) {
            Some("assistant") => Author::Assistant,
            Some("keyword") => Author::Keyword,
            Some("cadence") => Author::Cadence,
            Some("human") => Author::Person(
                data.pointer("/sentBy/name")
                    .and_then(Value::as_str)
                    .unwrap_or("A person")
                    .to_string(),
            ),
            _ => Author::Api,
        }
    }
}

/// A live lead's sort keys (`lead_order`) and facets (`lead_facet_list`), as
/// `store::lead_index` last wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadOrder {
    pub created_at: Micros,
    pub last_activity_at: Micros,
    pub facets: Vec<String>,
    /// The lead's newest own message (`leads_by_reply`, the inbox's "Replied" tab).
    pub last_inbound_at: Option<Micros>,
}

/// What a console user may do: `viewer` reads, `agent` also acts on leads, `admin`
/// also changes settings. Ordered: `Admin > Agent > Viewer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Role {
    Viewer,
    Agent,
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Agent, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Agent => "agent",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether this role may do what `needed` may.
    pub fn at_least(self, needed: Role) -> bool {
        self >= needed
    }
}

/// A person who signs in to the console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    pub id: String,
    pub org_id: String,
    /// As given; compared and indexed in lower case.
    pub email: String,
    pub name: String,
    pub role: Role,
    /// The argon2id hash in PHC form; never the password.
    pub password_hash: String,
    pub created_at: Micros,
    pub disabled_at: Option<Micros>,
    /// Email notifications about leads that need attention (the person's own setting).
    pub notify: bool,
}

/// One notification email about a lead that needs attention, as the notifier sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationRecord {
    pub id: String,
    pub lead_id: String,
    /// The person it went to (their email when it was sent).
    pub to: String,
    pub subject: String,
    pub text: String,
    pub sent_at: Micros,
    /// What came of it: `sent`, `logged` (the sandbox), or `failed: <code>`.
    pub outcome: String,
}

/// Whether a consent entry gives consent or takes it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsentStatus {
    Granted,
    Revoked,
}

impl ConsentStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            ConsentStatus::Granted => "granted",
            ConsentStatus::Revoked => "revoked",
        }
    }

    pub fn parse(s: &str) -> Option<ConsentStatus> {
        [ConsentStatus::Granted, ConsentStatus::Revoked]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// What the contact is for: marketing needs written consent for an artificial voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Purpose {
    Marketing,
    Informational,
}

impl Purpose {
    pub const ALL: [Purpose; 2] = [Purpose::Marketing, Purpose::Informational];

    pub const fn as_str(self) -> &'static str {
        match self {
            Purpose::Marketing => "marketing",
            Purpose::Informational => "informational",
        }
    }

    pub fn parse(s: &str) -> Option<Purpose> {
        Purpose::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// How a consent entry came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsentSource {
    Import,
    Api,
    Console,
    WebForm,
    Keyword,
    Reply,
    Call,
    UnsubscribeLink,
    Timeout,
    /// The web chat widget's consent box (`shared/spec/webchat.md`).
    Webchat,
}

impl ConsentSource {
    pub const ALL: [ConsentSource; 10] = [
        ConsentSource::Import,
        ConsentSource::Api,
        ConsentSource::Console,
        ConsentSource::WebForm,
        ConsentSource::Keyword,
        ConsentSource::Reply,
        ConsentSource::Call,
        ConsentSource::UnsubscribeLink,
        ConsentSource::Timeout,
        ConsentSource::Webchat,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ConsentSource::Import => "import",
            ConsentSource::Api => "api",
            ConsentSource::Console => "console",
            ConsentSource::WebForm => "web_form",
            ConsentSource::Keyword => "keyword",
            ConsentSource::Reply => "reply",
            ConsentSource::Call => "call",
            ConsentSource::UnsubscribeLink => "unsubscribe_link",
            ConsentSource::Timeout => "timeout",
            ConsentSource::Webchat => "webchat",
        }
    }

    pub fn parse(s: &str) -> Option<ConsentSource> {
        ConsentSource::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Who wrote a consent entry down: a person in the console, an API key, or the service
/// itself reading the lead's own words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordedBy {
    User { user_id: String, name: String },
    Key { key_id: String },
    Service,
}

/// The evidence behind a consent entry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Proof {
    /// The disclosure the person agreed to, or the words they wrote or said.
    pub text: Option<String>,
    /// The web form's page.
    pub url: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub recorded_by: Option<RecordedBy>,
}

/// One entry of a lead's consent ledger (its `CONSENT` event's data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentEntry {
    pub event_id: String,
    pub channel: Channel,
    pub status: ConsentStatus,
    pub purpose: Purpose,
    pub source: ConsentSource,
    /// When consent was given or revoked (the source's time; now when it gives none).
    pub at: Micros,
    pub proof: Proof,
}

/// A lead's consent on one channel, as the gate reads it: the latest grant per purpose
/// and the latest revocation (a revocation takes back every purpose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConsentState {
    pub granted_marketing: Option<Micros>,
    pub granted_informational: Option<Micros>,
    pub revoked: Option<Micros>,
}

impl ConsentState {
    /// Whether consent for `purpose` stands: granted, and later than the last revocation.
    pub fn allows(&self, purpose: Purpose) -> bool {
        let granted = match purpose {
            Purpose::Marketing => self.granted_marketing,
            Purpose::Informational => self.granted_informational,
        };
        match (granted, self.revoked) {
            (Some(g), Some(r)) => g > r,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The state with `entry` applied (the latest time of each kind wins).
    pub fn with(mut self, entry: &ConsentEntry) -> ConsentState {
        let slot = match (entry.status, entry.purpose) {
            (ConsentStatus::Revoked, _) => &mut self.revoked,
            (ConsentStatus::Granted, Purpose::Marketing) => &mut self.granted_marketing,
            (ConsentStatus::Granted, Purpose::Informational) => &mut self.granted_informational,
        };
        *slot = Some(slot.map_or(entry.at, |t| t.max(entry.at)));
        self
    }
}

/// A signed-in session, stored under the SHA-256 of its token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub user_id: String,
    pub org_id: String,
    /// The token forms and scripts send back with every change (hex).
    pub csrf: String,
    pub created_at: Micros,
    pub last_seen_at: Micros,
}

/// The first run's one-time setup link, kept in `meta` while no user exists: the
/// SHA-256 of its token and when it stops working. A new start replaces it; the first
/// admin's creation removes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupTokenRecord {
    pub hash: [u8; 32],
    pub expires_at: Micros,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_messages_author_is_the_lead_or_its_origin() {
        use serde_json::json;
        assert_eq!(Author::of(true, &json!({"origin": "api"})), Author::Lead);
        assert_eq!(
            Author::of(false, &json!({"origin": "assistant"})),
            Author::Assistant
        );
        assert_eq!(
            Author::of(false, &json!({"origin": "cadence", "step": 2})),
            Author::Cadence
        );
        assert_eq!(
            Author::of(false, &json!({"origin": "keyword"})),
            Author::Keyword
        );
        assert_eq!(
            Author::of(
                false,
                &json!({"origin": "human", "sentBy": {"name": "Ana Ruiz"}})
            ),
            Author::Person("Ana Ruiz".into())
        );
        assert_eq!(Author::of(false, &json!({})), Author::Api);
    }

    #[test]
    fn settings_round_trip_and_hide_the_key_from_debug() {
        let settings = AssistantSettings {
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3.1:8b".into(),
            api_key: Some("sk-secret".into()),
            timeout_ms: 30_000,
            max_tokens: None,
        };
        let bytes = postcard::to_stdvec(&settings).unwrap();
        assert_eq!(
            postcard::from_bytes::<AssistantSettings>(&bytes).unwrap(),
            settings
        );
        let debug = format!("{settings:?}");
        assert!(!debug.contains("sk-secret"), "{debug}");
        assert!(debug.contains("<set>"), "{debug}");
    }
    use crate::store::codec;

    #[test]
    fn message_kinds_are_stored_as_the_strings_they_were() {
        #[derive(Serialize)]
        struct Before {
            org_id: String,
            lead_id: String,
            kind: String,
            event_id: String,
        }
        for (kind, name) in [(MessageKind::Sms, "MESSAGE"), (MessageKind::Email, "EMAIL")] {
            let before = Before {
                org_id: "o".into(),
                lead_id: "l".into(),
                kind: name.into(),
                event_id: "e".into(),
            };
            let row = SendingRow {
                org_id: "o".into(),
                lead_id: "l".into(),
                kind,
                event_id: "e".into(),
            };
            let bytes = codec::encode(&before).unwrap();
            assert_eq!(codec::encode(&row).unwrap(), bytes);
            assert_eq!(codec::decode::<SendingRow>(&bytes).unwrap(), row);
            let message = ProviderMessageRef {
                lead_id: "l".into(),
                kind,
                event_id: "e".into(),
            };
            let back: ProviderMessageRef =
                codec::decode(&codec::encode(&message).unwrap()).unwrap();
            assert_eq!(back, message);
        }
        assert!(codec::decode::<MessageKind>(&codec::encode(&"CALL").unwrap()).is_err());
    }

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
