//! The consent ledger (`shared/spec/consent.md`): per lead and channel, who consented
//! to what, when, and how we know, as append-only `CONSENT` events a lawyer can read.
//!
//! Every entry is written by [`record`], in the same transaction as what caused it (the
//! API's `POST .../consent`, an unsubscribe, a keyword, the import): the `CONSENT` event
//! (which syncs like any event), the ledger row, the channel's state (what the gate
//! reads in one lookup) and the `lead.consent_changed` webhook. Nothing edits or deletes
//! an entry; `POST /events` refuses the type.

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::csv_cell::{neutralize, Column};
use crate::domain::records::written::Written;
use crate::domain::records::{events, leads};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{
    ConsentEntry, ConsentSource, ConsentState, ConsentStatus, LeadRecord, Proof, Purpose,
    RecordedBy, SystemEvent,
};
use crate::store::{ReadTx, Reader, WriteTx};
use crate::time::{self, now_micros, Micros};
use crate::webhooks::{self, WebhookEvent};

/// The event type of a ledger entry.
pub const CONSENT_EVENT: &str = SystemEvent::Consent.as_str();

/// Most entries one lead's ledger keeps: a ledger is a short history of decisions.
pub const MAX_ENTRIES: usize = 1_000;

/// Bounds of a proof's parts, in characters.
const PROOF_TEXT_CHARS: usize = 10_000;
const PROOF_URL_CHARS: usize = 2_000;
const PROOF_IP_CHARS: usize = 64;
const PROOF_USER_AGENT_CHARS: usize = 1_000;

/// An entry to write, before it has its event id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentInput {
    pub channel: Channel,
    pub status: ConsentStatus,
    pub purpose: Purpose,
    pub source: ConsentSource,
    /// When it was given or revoked; now when absent.
    pub at: Option<Micros>,
    pub proof: Proof,
}

impl ConsentInput {
    /// Parses `POST /v1/leads/{id}/consent`'s body `{"channel", "status", "purpose"?,
    /// "source", "at"?, "proof"?: {"text"?, "url"?, "ip"?, "userAgent"?}}`; who recorded
    /// it is the caller, never the body.
    pub fn from_json(body: &Map<String, Value>, recorded_by: RecordedBy) -> Result<ConsentInput> {
        let mut channel = None;
        let mut status = None;
        let mut purpose = Purpose::Marketing;
        let mut source = None;
        let mut at = None;
        let mut proof = Proof::default();
        for (name, value) in body {
            let text = value.as_str();
            match name.as_str() {
                "channel" => {
                    channel = Some(
                        text.and_then(Channel::parse)
                            .ok_or_else(|| Error::invalid_field("channel"))?,
                    )
                }
                "status" => {
                    status = Some(
                        text.and_then(ConsentStatus::parse)
                            .ok_or_else(|| Error::invalid_field("status"))?,
                    )
                }
                "purpose" => {
                    purpose = text
                        .and_then(Purpose::parse)
                        .ok_or_else(|| Error::invalid_field("purpose"))?
                }
                "source" => {
                    source = Some(
                        text.and_then(ConsentSource::parse)
                            .ok_or_else(|| Error::invalid_field("source"))?,
                    )
                }
                "at" => match value {
                    Value::Null => {}
                    _ => {
                        let micros = text
                            .and_then(time::parse)
                            .ok_or_else(|| Error::invalid_field("at"))?;
                        if micros > now_micros() + 5 * 60 * 1_000_000 {
                            return Err(Error::field(
                                "at",
                                "Consent cannot be given in the future: at",
                            ));
                        }
                        at = Some(micros);
                    }
                },
                "proof" => proof = parse_proof(value)?,
                other => return Err(Error::unknown_field(other)),
            }
        }
        let missing = |name: &str| Error::field(name, format!("Missing required field: {name}"));
        proof.recorded_by = Some(recorded_by);
        Ok(ConsentInput {
            channel: channel.ok_or_else(|| missing("channel"))?,
            status: status.ok_or_else(|| missing("status"))?,
            purpose,
            source: source.ok_or_else(|| missing("source"))?,
            at,
            proof,
        })
    }
}

impl ConsentInput {
    /// Consent a person records in the console from a phone call (source `console`): the
    /// lead's own words are required, and the person is who recorded it.
    pub fn spoken(
        channel: Channel,
        status: ConsentStatus,
        purpose: Purpose,
        words: &str,
        recorded_by: RecordedBy,
    ) -> Result<ConsentInput> {
        let words = words.trim();
        if words.is_empty() {
            return Err(Error::field(
                "proof.text",
                "Write the words the lead said on the phone.",
            ));
        }
        let words = ProofPart::Text.checked(words, "proof.text")?;
        Ok(ConsentInput {
            channel,
            status,
            purpose,
            source: ConsentSource::Console,
            at: None,
            proof: Proof {
                text: Some(words),
                recorded_by: Some(recorded_by),
                ..Proof::default()
            },
        })
    }
}

/// A part of a proof given as text (an import's cells): each has its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofPart {
    Text,
    Url,
    Ip,
}

impl ProofPart {
    /// `text` as this part of a proof, refused under `field`'s name when too long or
    /// holding control characters.
    pub fn checked(self, text: &str, field: &str) -> Result<String> {
        let bound = match self {
            ProofPart::Text => PROOF_TEXT_CHARS,
            ProofPart::Url => PROOF_URL_CHARS,
            ProofPart::Ip => PROOF_IP_CHARS,
        };
        if text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
        {
            return Err(Error::invalid_field(field));
        }
        if text.chars().count() > bound {
            return Err(Error::field(
                field,
                format!("Field too long: {field} (at most {bound})"),
            ));
        }
        Ok(text.to_string())
    }
}

/// When consent was given, read from RFC 3339 text: never in the future (five minutes
/// of clock skew allowed); refused under `field`'s name.
pub fn given_at(text: &str, field: &str) -> Result<Micros> {
    let micros = time::parse(text).ok_or_else(|| Error::invalid_field(field))?;
    if micros > now_micros() + 5 * 60 * 1_000_000 {
        return Err(Error::field(
            field,
            format!("Consent cannot be given in the future: {field}"),
        ));
    }
    Ok(micros)
}

/// A proof as `POST /v1/leads/{id}/consent` and a resubscribe take it: `{"text"?,
/// "url"?, "ip"?, "userAgent"?}`, each bounded; `recordedBy` is never the body's.
pub(crate) fn parse_proof(value: &Value) -> Result<Proof> {
    let map = match value {
        Value::Null => return Ok(Proof::default()),
        Value::Object(map) => map,
        _ => return Err(Error::invalid_field("proof")),
    };
    let mut proof = Proof::default();
    for (name, value) in map {
        let (slot, bound, wire) = match name.as_str() {
            "text" => (&mut proof.text, PROOF_TEXT_CHARS, "proof.text"),
            "url" => (&mut proof.url, PROOF_URL_CHARS, "proof.url"),
            "ip" => (&mut proof.ip, PROOF_IP_CHARS, "proof.ip"),
            "userAgent" => (
                &mut proof.user_agent,
                PROOF_USER_AGENT_CHARS,
                "proof.userAgent",
            ),
            "recordedBy" => {
                return Err(Error::field(
                    "proof.recordedBy",
                    "Field is read-only: proof.recordedBy",
                ))
            }
            other => return Err(Error::unknown_field(&format!("proof.{other}"))),
        };
        match value {
            Value::Null => {}
            Value::String(s) if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') => {
                return Err(Error::invalid_field(wire))
            }
            Value::String(s) if s.chars().count() > bound => {
                return Err(Error::field(
                    wire,
                    format!("Field too long: {wire} (at most {bound})"),
                ))
            }
            Value::String(s) => *slot = Some(s.clone()),
            _ => return Err(Error::invalid_field(wire)),
        }
    }
    Ok(proof)
}

/// The caller id of a one-click unsubscribe link's request.
pub const UNSUBSCRIBE_LINK_CALLER: &str = "unsubscribe-link";

/// Why a lead's subscriptions changed, for the ledger entries the change writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub source: ConsentSource,
    pub proof: Proof,
}

impl Change {
    /// A request's change: the unsubscribe link, a person in the console (named), an
    /// API key, or the engine (the assistant's `opt_out`).
    pub fn of_caller(read: &impl Reader, caller: &Caller) -> Result<Change> {
        let (source, by) = if caller.key_id == UNSUBSCRIBE_LINK_CALLER {
            (ConsentSource::UnsubscribeLink, RecordedBy::Service)
        } else if caller.key_id == Caller::system(&caller.org_id).key_id {
            (ConsentSource::Reply, RecordedBy::Service)
        } else if let Some(user) = read.user(&caller.key_id)? {
            (
                ConsentSource::Console,
                RecordedBy::User {
                    user_id: user.id,
                    name: user.name,
                },
            )
        } else {
            (ConsentSource::Api, recorded_by_key(caller))
        };
        Ok(Change {
            source,
            proof: Proof {
                recorded_by: Some(by),
                ..Proof::default()
            },
        })
    }

    /// Words that came in as the lead's through `caller`'s door: read by the service from
    /// a provider's delivery (`source`, recorded by the service), or typed through the
    /// inbound API or the console's sandbox reply, which name the key or person (source
    /// `api` or `console`), so they never read as the lead's own keyword.
    pub fn lead_words(
        read: &impl Reader,
        caller: &Caller,
        source: ConsentSource,
        text: &str,
    ) -> Result<Change> {
        let words = Change::words(source, text);
        if caller.key_id == Caller::system(&caller.org_id).key_id {
            return Ok(words);
        }
        let door = Change::of_caller(read, caller)?;
        Ok(Change {
            source: door.source,
            proof: Proof {
                recorded_by: door.proof.recorded_by,
                ..words.proof
            },
        })
    }

    /// The lead's own words (a keyword, an email reply), read by the service.
    pub fn words(source: ConsentSource, text: &str) -> Change {
        Change {
            source,
            proof: Proof {
                text: Some(
                    crate::domain::records::limits::truncate(text, PROOF_TEXT_CHARS).to_string(),
                ),
                recorded_by: Some(RecordedBy::Service),
                ..Proof::default()
            },
        }
    }
}

/// One ledger entry with `status` for each of `channels` (those a change of
/// subscriptions actually moved), in this transaction; answers the lead as it now is.
pub fn note(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channels: &[Channel],
    status: ConsentStatus,
    change: &Change,
) -> Result<Written<LeadRecord>> {
    let mut written = Written::owing_nothing(lead);
    for &channel in channels {
        let input = ConsentInput {
            channel,
            status,
            purpose: Purpose::Marketing,
            source: change.source,
            at: None,
            proof: change.proof.clone(),
        };
        written = written.and_then(|lead| Ok(record(tx, org, lead, input)?.map(|(_, l)| l)))?;
    }
    Ok(written)
}

/// Whether `channel`'s consent stands revoked: a revocation later than every grant.
pub fn stands_revoked(read: &impl Reader, org: &str, lead: &str, channel: Channel) -> Result<bool> {
    let state = read.consent_state(org, lead, channel)?;
    Ok(match state.revoked {
        None => false,
        Some(revoked) => [state.granted_marketing, state.granted_informational]
            .iter()
            .flatten()
            .all(|granted| *granted <= revoked),
    })
}

/// Whether a proof shows the lead gave consent: the lead's words or the disclosure they
/// agreed to (`text`), or the signed form's or recording's address (`url`).
pub fn proves(proof: &Proof) -> bool {
    let given = |part: &Option<String>| part.as_deref().is_some_and(|p| !p.trim().is_empty());
    given(&proof.text) || given(&proof.url)
}

/// The refusal of a grant over a revocation without proof (409), naming the channels.
pub fn proof_missing(channels: &[Channel]) -> Error {
    let names: Vec<&str> = channels.iter().map(|c| c.as_str()).collect();
    Error::Conflict(format!(
        "The lead revoked consent for {}: only the lead undoes a revocation. Give proof of \
         the lead's new consent (proof.text with the lead's words or the disclosure they \
         agreed to, or proof.url of the signed form or the recording) for each channel",
        names.join(", ")
    ))
}

/// Who a request's caller is, as a ledger names them.
pub fn recorded_by_key(caller: &Caller) -> RecordedBy {
    RecordedBy::Key {
        key_id: caller.key_id.clone(),
    }
}

/// `POST /v1/leads/{id}/consent`: the entry written.
pub fn post(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    input: ConsentInput,
) -> Result<Written<ConsentEntry>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    room(tx, &caller.org_id, lead_id, 1)?;
    let written = record(tx, &caller.org_id, lead, input)?;
    Ok(written.map(|(entry, _)| entry))
}

/// Refuses (409) `more` entries that would take the lead's ledger past [`MAX_ENTRIES`].
pub fn room(tx: &WriteTx, org: &str, lead_id: &str, more: usize) -> Result<()> {
    let count = tx.consent_count(org, lead_id, MAX_ENTRIES)?;
    if count + more > MAX_ENTRIES {
        return Err(Error::Conflict(format!(
            "A lead's consent ledger holds at most {MAX_ENTRIES} entries"
        )));
    }
    Ok(())
}

/// Writes one ledger entry for `lead`: its `CONSENT` event, the ledger row, the
/// channel's state and the `lead.consent_changed` webhook, all in this transaction
/// (engagement's reactions to the event owed after them: they read none of these rows).
pub fn record(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    input: ConsentInput,
) -> Result<Written<(ConsentEntry, LeadRecord)>> {
    // Only the lead undoes a revocation: a grant over one carries the proof of it.
    if input.status == ConsentStatus::Granted
        && !proves(&input.proof)
        && stands_revoked(tx, org, &lead.id, input.channel)?
    {
        return Err(proof_missing(&[input.channel]));
    }
    let entry = ConsentEntry {
        event_id: crate::ids::generate("cns"),
        channel: input.channel,
        status: input.status,
        purpose: input.purpose,
        source: input.source,
        at: input.at.unwrap_or_else(now_micros),
        proof: input.proof,
    };
    let lead_id = lead.id.clone();
    let written = events::record(
        tx,
        org,
        lead,
        CONSENT_EVENT,
        &entry.event_id,
        entry_json(&entry),
        |_| {},
    )?;
    tx.put_consent(org, &lead_id, &entry)?;
    webhooks::emit(
        tx,
        org,
        WebhookEvent::LeadConsentChanged,
        json!({
            "leadId": lead_id,
            "channel": entry.channel.as_str(),
            "status": entry.status.as_str(),
            "source": entry.source.as_str(),
            "at": time::format(entry.at),
        }),
    )?;
    Ok(written.map(|(_, lead)| (entry, lead)))
}

/// Whether `lead` has consent for `purpose` on `channel`: a grant later than the last
/// revocation. One lookup, whatever the ledger's length.
pub fn allows(
    read: &impl Reader,
    org: &str,
    lead: &str,
    channel: Channel,
    purpose: Purpose,
) -> Result<bool> {
    Ok(read.consent_state(org, lead, channel)?.allows(purpose))
}

/// An entry as JSON: its `CONSENT` event's `data` and its place in the ledger's answer.
pub fn entry_json(entry: &ConsentEntry) -> Value {
    let mut proof = Map::new();
    let mut put = |name: &str, value: &Option<String>| {
        if let Some(v) = value {
            proof.insert(name.to_string(), json!(v));
        }
    };
    put("text", &entry.proof.text);
    put("url", &entry.proof.url);
    put("ip", &entry.proof.ip);
    put("userAgent", &entry.proof.user_agent);
    if let Some(by) = &entry.proof.recorded_by {
        proof.insert("recordedBy".to_string(), recorded_by_json(by));
    }
    json!({
        "id": entry.event_id,
        "channel": entry.channel.as_str(),
        "status": entry.status.as_str(),
        "purpose": entry.purpose.as_str(),
        "source": entry.source.as_str(),
        "at": time::format(entry.at),
        "proof": proof,
    })
}

fn recorded_by_json(by: &RecordedBy) -> Value {
    match by {
        RecordedBy::User { user_id, name } => json!({"userId": user_id, "name": name}),
        RecordedBy::Key { key_id } => json!({"keyId": key_id}),
        RecordedBy::Service => json!({"service": true}),
    }
}

/// A lead's ledger, oldest first, and where each channel stands.
pub struct Ledger {
    pub entries: Vec<ConsentEntry>,
    pub current: Vec<(Channel, ConsentState)>,
}

/// `GET /v1/leads/{id}/consent`: the ledger of a lead (a soft-deleted one too: the
/// ledger outlives it).
pub fn ledger(read: &ReadTx, caller: &Caller, lead_id: &str) -> Result<Ledger> {
    if read.lead(&caller.org_id, lead_id)?.is_none() {
        return Err(Error::lead_not_found(lead_id));
    }
    let entries = read.consent_ledger(&caller.org_id, lead_id, MAX_ENTRIES * 2)?;
    let mut current = Vec::new();
    for channel in Channel::ALL {
        current.push((
            channel,
            read.consent_state(&caller.org_id, lead_id, channel)?,
        ));
    }
    Ok(Ledger { entries, current })
}

/// What a channel's state reads as: `granted` (for some purpose, after the last
/// revocation), `revoked`, or `unknown` (nothing recorded).
pub fn status_word(state: &ConsentState) -> &'static str {
    if Purpose::ALL.iter().any(|&p| state.allows(p)) {
        "granted"
    } else if state.revoked.is_some() {
        "revoked"
    } else {
        "unknown"
    }
}

/// The ledger as CSV, every entry with its proof, for a dispute: cells that a
/// spreadsheet would run as a formula are neutralized.
pub fn csv(lead_id: &str, entries: &[ConsentEntry]) -> Result<Vec<u8>> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let header = [
        "leadId",
        "id",
        "at",
        "channel",
        "status",
        "purpose",
        "source",
        "proofText",
        "proofUrl",
        "proofIp",
        "proofUserAgent",
        "recordedBy",
    ];
    let failed = |e: csv::Error| Error::Internal(format!("consent csv: {e}"));
    out.write_record(header).map_err(failed)?;
    for e in entries {
        let by = match &e.proof.recorded_by {
            Some(RecordedBy::User { user_id, name }) => format!("{name} ({user_id})"),
            Some(RecordedBy::Key { key_id }) => format!("key {key_id}"),
            Some(RecordedBy::Service) => "engaged".to_string(),
            None => String::new(),
        };
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        let row = [
            lead_id.to_string(),
            e.event_id.clone(),
            time::format(e.at),
            e.channel.as_str().to_string(),
            e.status.as_str().to_string(),
            e.purpose.as_str().to_string(),
            e.source.as_str().to_string(),
            opt(&e.proof.text),
            opt(&e.proof.url),
            opt(&e.proof.ip),
            opt(&e.proof.user_agent),
            by,
        ];
        out.write_record(
            row.iter()
                .map(|cell| neutralize(cell, Column::Other).into_owned()),
        )
        .map_err(failed)?;
    }
    out.into_inner()
        .map_err(|e| Error::Internal(format!("consent csv: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn key() -> RecordedBy {
        RecordedBy::Key {
            key_id: "key_1".into(),
        }
    }

    fn refusal(v: Value) -> String {
        match ConsentInput::from_json(&body(v), key()) {
            Ok(input) => format!("accepted: {input:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_entry_is_read_with_its_defaults_and_the_caller_as_recorder() {
        let input = ConsentInput::from_json(
            &body(
                json!({"channel": "voice", "status": "granted", "source": "web_form",
                         "proof": {"text": "I agree to calls", "url": "https://x.example/form"}}),
            ),
            key(),
        )
        .unwrap();
        assert_eq!(input.channel, Channel::Voice);
        assert_eq!(input.purpose, Purpose::Marketing);
        assert_eq!(input.at, None);
        assert_eq!(input.proof.text.as_deref(), Some("I agree to calls"));
        assert_eq!(input.proof.recorded_by, Some(key()));
    }

    #[test]
    fn bad_entries_are_refused_by_field() {
        assert_eq!(
            refusal(json!({"status": "granted", "source": "api"})),
            "Missing required field: channel"
        );
        assert_eq!(
            refusal(json!({"channel": "fax", "status": "granted", "source": "api"})),
            "Invalid format for field: channel"
        );
        assert_eq!(
            refusal(json!({"channel": "sms", "status": "maybe", "source": "api"})),
            "Invalid format for field: status"
        );
        assert_eq!(
            refusal(json!({"channel": "sms", "status": "granted", "source": "rumour"})),
            "Invalid format for field: source"
        );
        assert_eq!(
            refusal(
                json!({"channel": "sms", "status": "granted", "source": "api", "purpose": "x"})
            ),
            "Invalid format for field: purpose"
        );
        assert_eq!(
            refusal(
                json!({"channel": "sms", "status": "granted", "source": "api", "at": "yesterday"})
            ),
            "Invalid format for field: at"
        );
        assert_eq!(
            refusal(
                json!({"channel": "sms", "status": "granted", "source": "api", "at": "2999-01-01T00:00:00Z"})
            ),
            "Consent cannot be given in the future: at"
        );
        assert_eq!(
            refusal(
                json!({"channel": "sms", "status": "granted", "source": "api", "proof": {"recordedBy": {}}})
            ),
            "Field is read-only: proof.recordedBy"
        );
        assert_eq!(
            refusal(
                json!({"channel": "sms", "status": "granted", "source": "api", "proof": {"colour": "red"}})
            ),
            "Unknown field: proof.colour"
        );
        assert_eq!(
            refusal(
                json!({"channel": "sms", "status": "granted", "source": "api", "proof": {"ip": "x".repeat(65)}})
            ),
            "Field too long: proof.ip (at most 64)"
        );
        assert_eq!(
            refusal(json!({"channel": "sms", "status": "granted", "source": "api", "extra": 1})),
            "Unknown field: extra"
        );
        let e = ConsentInput::from_json(&body(json!({"channel": 1})), key()).unwrap_err();
        assert_eq!(e.refused_field(), Some("channel"));
    }

    #[test]
    fn consent_given_on_the_phone_needs_the_lead_s_words() {
        let spoken = |words: &str| {
            ConsentInput::spoken(
                Channel::Voice,
                ConsentStatus::Granted,
                Purpose::Marketing,
                words,
                key(),
            )
        };
        let e = spoken("  ").unwrap_err();
        assert_eq!(e.refused_field(), Some("proof.text"));
        let input = spoken(" Yes, call me ").unwrap();
        assert_eq!(input.source, ConsentSource::Console);
        assert_eq!(input.proof.text.as_deref(), Some("Yes, call me"));
        assert_eq!(input.proof.recorded_by, Some(key()));
    }

    #[test]
    fn a_grant_stands_only_when_later_than_the_last_revocation() {
        let entry = |status, purpose, at| ConsentEntry {
            event_id: "cns_1".into(),
            channel: Channel::Voice,
            status,
            purpose,
            source: ConsentSource::Api,
            at,
            proof: Proof::default(),
        };
        let s = ConsentState::default();
        assert!(!s.allows(Purpose::Marketing));
        let s = s.with(&entry(ConsentStatus::Granted, Purpose::Marketing, 10));
        assert!(s.allows(Purpose::Marketing));
        assert!(!s.allows(Purpose::Informational));
        let s = s.with(&entry(ConsentStatus::Revoked, Purpose::Marketing, 20));
        assert!(!s.allows(Purpose::Marketing));
        // A grant dated before the revocation (a late import) does not undo it.
        let s = s.with(&entry(ConsentStatus::Granted, Purpose::Marketing, 15));
        assert!(!s.allows(Purpose::Marketing));
        assert_eq!(status_word(&s), "revoked");
        let s = s.with(&entry(ConsentStatus::Granted, Purpose::Marketing, 30));
        assert!(s.allows(Purpose::Marketing));
        assert_eq!(status_word(&s), "granted");
        assert_eq!(status_word(&ConsentState::default()), "unknown");
    }

    #[test]
    fn the_csv_neutralizes_formulas_in_the_proof() {
        let entry = ConsentEntry {
            event_id: "cns_1".into(),
            channel: Channel::Sms,
            status: ConsentStatus::Revoked,
            purpose: Purpose::Marketing,
            source: ConsentSource::Keyword,
            at: 0,
            proof: Proof {
                text: Some("=HYPERLINK(\"http://evil\")".into()),
                ..Proof::default()
            },
        };
        let text = String::from_utf8(csv("L1", &[entry]).unwrap()).unwrap();
        assert!(text.starts_with("leadId,id,at,channel,status"), "{text}");
        assert!(text.contains("'=HYPERLINK"), "{text}");
        assert!(text.contains(",sms,revoked,marketing,keyword,"), "{text}");
    }
}
