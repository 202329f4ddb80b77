//! Web chat: a website visitor's conversation (`shared/spec/webchat.md`), each step one
//! write job. A session is created behind the organization's hourly bound; its token
//! (256 random bits, of which only the SHA-256 is kept) is good for 30 days after the
//! visitor's last message. A visitor's message counts against the day's 200 and, when
//! the assistant is to answer, against `maxAssistantTurnsPerSession`; a refused one
//! changes nothing.
//!
//! A visitor who gives a phone or an email becomes a lead (`become_lead`): the live lead
//! with that phone or email (the unique-contact rule), else a new one with
//! `additionalInfo.source = "webchat"` in the campaign of `webchat.profile`. The
//! session's transcript joins the lead's messages (`MESSAGE` events, channel `webchat`,
//! ids `wcm_<session>_<seq>`, so a line is written once), and every later line follows.
//! A ticked consent box writes a ledger entry per channel the visitor gave (source
//! `webchat`, the proof: the text shown, the page, the time, the address and browser).

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::channel::Channel;
use crate::domain::engagement::reactions::React;
use crate::domain::records::consent::{self, ConsentInput};
use crate::domain::records::events;
use crate::domain::records::leads::{self, LeadInput};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{ConsentSource, ConsentStatus, LeadRecord, Proof, Purpose};
use crate::store::webchat::{Speaker, WebchatLine, WebchatSession, WebchatSettings};
use crate::store::{ReadTx, Reader, WriteTx};
use crate::time::Micros;

/// The longest message a visitor may send, in characters.
pub const MESSAGE_CHARS: usize = 1_000;
/// A visitor's messages in a day.
pub const MESSAGES_PER_DAY: u32 = 200;
/// How long a token stays good after the visitor's last message.
pub const TOKEN_DAYS: i64 = 30;
const DAY: Micros = 86_400_000_000;
const HOUR: Micros = 3_600_000_000;

/// The channel name web chat messages carry on the lead.
pub const CHANNEL: &str = "webchat";

/// What the visitor's browser said about them, kept as a consent's proof.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Visitor {
    pub ip: String,
    pub user_agent: String,
    pub page_url: String,
}

/// The SHA-256 of a session token: what the store keeps.
pub fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// A new token: 256 random bits, URL-safe base64.
pub fn new_token() -> String {
    use base64::Engine as _;
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The organization's web chat, when it is on: 404 otherwise (and for an organization
/// that does not exist).
pub fn settings_on(read: &ReadTx, org: &str) -> Result<WebchatSettings> {
    let off = || Error::NotFound("Web chat is not available here".into());
    if read.org(org)?.is_none() {
        return Err(off());
    }
    let settings = read.webchat_settings(org)?;
    if !settings.enabled {
        return Err(off());
    }
    Ok(settings)
}

fn settings_on_tx(tx: &WriteTx, org: &str) -> Result<WebchatSettings> {
    let settings = tx.webchat_settings(org)?;
    if !settings.enabled || tx.org(org)?.is_none() {
        return Err(Error::NotFound("Web chat is not available here".into()));
    }
    Ok(settings)
}

/// The session `id` whose token is `token` and still good at `now`; 401 otherwise (a
/// session of another organization is no session of this one).
pub fn check_token(
    session: Option<WebchatSession>,
    token: &str,
    now: Micros,
) -> Result<WebchatSession> {
    let session = session.ok_or(Error::Unauthorized)?;
    let given = token_hash(token);
    // Compared in full whatever differs first.
    let same = given.len() == session.token_hash.len()
        && given
            .iter()
            .zip(&session.token_hash)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same || now - session.last_seen_at > TOKEN_DAYS * DAY {
        return Err(Error::Unauthorized);
    }
    Ok(session)
}

/// Creates a session whose token hashes to `token_hash`, behind the organization's
/// `maxSessionsPerHour`.
pub fn create(
    tx: &mut WriteTx,
    org: &str,
    token_hash: &[u8],
    visitor: &Visitor,
    now: Micros,
) -> Result<(WebchatSession, WebchatSettings)> {
    let settings = settings_on_tx(tx, org)?;
    let max = settings.max_sessions_per_hour as usize;
    if tx.webchat_sessions_since(org, now - HOUR, max)? >= max {
        return Err(Error::Throttled {
            retry_after_secs: 60,
            message: "This website's chat is busy right now. Try again in a few minutes.".into(),
        });
    }
    let mut session = WebchatSession {
        id: crate::ids::generate("wcs"),
        token_hash: token_hash.to_vec(),
        created_at: now,
        last_seen_at: now,
        ip: visitor.ip.clone(),
        user_agent: visitor.user_agent.chars().take(1_000).collect(),
        page_url: visitor.page_url.chars().take(2_000).collect(),
        lead_id: None,
        assistant_turns: 0,
        day_started_at: now,
        day_messages: 0,
        taken_over_by: None,
        transcript: Vec::new(),
        next_seq: 1,
    };
    if !settings.greeting.is_empty() {
        session.push(now, Speaker::Assistant, &settings.greeting);
    }
    tx.put_webchat_session(org, &session)?;
    Ok((session, settings))
}

/// Whether the assistant answers a visitor's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The assistant answers (its turn is counted when it has answered).
    Assistant,
    /// A person took the chat over (or no assistant is connected): nobody answers now.
    Nobody,
}

/// The visitor's message: checked against its bounds, added to the transcript (and the
/// lead's messages once there is a lead). Answers the line and who answers it.
pub fn visitor_message(
    tx: &mut WriteTx,
    org: &str,
    session_id: &str,
    token: &str,
    text: &str,
    now: Micros,
) -> Result<(WebchatLine, Answer)> {
    let settings = settings_on_tx(tx, org)?;
    let mut session = check_token(tx.webchat_session(org, session_id)?, token, now)?;
    let text = checked_text(text)?;
    if now - session.day_started_at >= DAY {
        session.day_started_at = now;
        session.day_messages = 0;
    }
    if session.day_messages >= MESSAGES_PER_DAY {
        let wait = (session.day_started_at + DAY - now).max(1_000_000) / 1_000_000;
        return Err(Error::Throttled {
            retry_after_secs: wait as u64,
            message: format!(
                "You have sent {MESSAGES_PER_DAY} messages today, the most for a day. Try again tomorrow."
            ),
        });
    }
    let assistant = tx.engine_settings(org)?.assistant.is_some();
    let answer = if session.taken_over_by.is_none() && assistant {
        if session.assistant_turns >= settings.max_assistant_turns_per_session {
            return Err(Error::Throttled {
                retry_after_secs: 3_600,
                message: "This chat has had all the answers it can. Leave your phone or email with the form and the team will get back to you.".into(),
            });
        }
        Answer::Assistant
    } else {
        Answer::Nobody
    };
    session.day_messages += 1;
    session.last_seen_at = now;
    let line = session.push(now, Speaker::Visitor, &text);
    join_line(tx, org, &session, &line)?;
    tx.put_webchat_session(org, &session)?;
    Ok((line, answer))
}

/// A visitor's text: not empty, at most [`MESSAGE_CHARS`] (413 beyond).
pub fn checked_text(text: &str) -> Result<String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::field("text", "Write a message first."));
    }
    if text.chars().count() > MESSAGE_CHARS {
        return Err(Error::TooLong(format!(
            "A message is at most {MESSAGE_CHARS} characters."
        )));
    }
    Ok(text.to_string())
}

/// The organization's side said `text` (the assistant, or a person): added to the
/// transcript and the lead's messages; an assistant's answer counts as a turn.
pub fn answer(
    tx: &mut WriteTx,
    org: &str,
    session_id: &str,
    speaker: Speaker,
    text: &str,
    now: Micros,
) -> Result<WebchatLine> {
    let mut session = tx
        .webchat_session(org, session_id)?
        .ok_or_else(|| Error::NotFound("No such web chat".into()))?;
    if speaker == Speaker::Assistant {
        session.assistant_turns += 1;
    }
    let line = session.push(now, speaker, text);
    join_line(tx, org, &session, &line)?;
    tx.put_webchat_session(org, &session)?;
    Ok(line)
}

/// A person takes the chat over: the assistant stops answering and the visitor sees
/// "Dana joined the chat". Answers the notice's line (none when they had already).
pub fn take_over(
    tx: &mut WriteTx,
    org: &str,
    session_id: &str,
    person: &str,
    now: Micros,
) -> Result<Option<WebchatLine>> {
    let mut session = tx
        .webchat_session(org, session_id)?
        .ok_or_else(|| Error::NotFound("No such web chat".into()))?;
    if session.taken_over_by.as_deref() == Some(person) {
        return Ok(None);
    }
    session.taken_over_by = Some(person.to_string());
    let line = session.push(now, Speaker::Notice, &format!("{person} joined the chat"));
    tx.put_webchat_session(org, &session)?;
    Ok(Some(line))
}

/// What the contact form posts: a name, a phone or an email (at least one), and the
/// consent box.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContactForm {
    pub name: String,
    pub phone: String,
    pub email: String,
    pub consent: bool,
}

impl ContactForm {
    /// `{"name"?, "phone"?, "email"?, "consent"?: bool, "pageUrl"?}`.
    pub fn from_json(body: &Map<String, Value>) -> Result<ContactForm> {
        let mut form = ContactForm::default();
        for (name, value) in body {
            let text = || match value {
                Value::Null => Ok(String::new()),
                Value::String(t) if t.chars().count() <= 200 => Ok(t.trim().to_string()),
                _ => Err(Error::invalid_field(name)),
            };
            match name.as_str() {
                "name" => form.name = text()?,
                "phone" => form.phone = text()?,
                "email" => form.email = text()?,
                // The page the form was on, read by the handler as the consent's proof.
                "pageUrl" if value.is_string() || value.is_null() => {}
                "consent" => {
                    form.consent = value.as_bool().ok_or_else(|| Error::invalid_field(name))?
                }
                other => return Err(Error::unknown_field(other)),
            }
        }
        if form.phone.is_empty() && form.email.is_empty() {
            return Err(Error::field(
                "phone",
                "Give a phone number or an email address.",
            ));
        }
        Ok(form)
    }
}

/// The visitor gave their contact (the form, or the assistant's `capture_contact`):
/// they become a lead, or are matched with the one they are; the transcript joins the
/// lead's messages, and a ticked consent box writes its ledger entries.
pub fn become_lead(
    tx: &mut WriteTx,
    org: &str,
    session_id: &str,
    form: &ContactForm,
    consent_visitor: Option<&Visitor>,
    now: Micros,
) -> Result<LeadRecord> {
    let settings = settings_on_tx(tx, org)?;
    let mut session = tx
        .webchat_session(org, session_id)?
        .ok_or_else(|| Error::NotFound("No such web chat".into()))?;
    let phone = if form.phone.is_empty() {
        String::new()
    } else {
        match crate::domain::settings::org::read_phone(tx, org, &form.phone)? {
            Ok(phone) => phone,
            Err(why) => {
                return Err(Error::field(
                    "phone",
                    crate::domain::settings::org::unreadable_phone(why),
                ))
            }
        }
    };
    let email = form.email.trim().to_string();
    if !email.is_empty() && !leads::is_plausible_email(&email) {
        return Err(Error::field(
            "email",
            "This is not an email address: write it as name@example.com",
        ));
    }
    let caller = Caller::system(org);
    let known = match &session.lead_id {
        Some(id) => tx.lead(org, id)?.filter(|l| l.deleted_at.is_none()),
        None => None,
    };
    let known = match known {
        Some(lead) => Some(lead),
        None if !phone.is_empty() => leads::lead_by_phone(tx, org, &phone)?,
        None => None,
    };
    let known = match known {
        Some(lead) => Some(lead),
        None if !email.is_empty() => leads::lead_by_email(tx, org, &email)?,
        None => None,
    };
    let lead = match known {
        Some(lead) => lead,
        None => {
            let (first, last) = match form.name.trim().split_once(' ') {
                Some((first, last)) => (first.trim(), last.trim()),
                None => (form.name.trim(), ""),
            };
            let mut body = Map::new();
            body.insert("firstName".into(), json!(first));
            body.insert("lastName".into(), json!(last));
            body.insert("phone".into(), json!(phone));
            body.insert("email".into(), json!(email));
            if !settings.profile.is_empty() && tx.profile(org, &settings.profile)?.is_some() {
                body.insert("customerProfile".into(), json!(settings.profile));
            }
            body.insert(
                "additionalInfo".into(),
                json!({"source": CHANNEL, "webchatSessionId": session.id}),
            );
            let input = LeadInput::from_json(&body)?;
            leads::create(tx, &caller, input).react(tx)?
        }
    };
    let first_time = session.lead_id.as_deref() != Some(lead.id.as_str());
    session.lead_id = Some(lead.id.clone());
    tx.put_webchat_session(org, &session)?;
    if first_time {
        for line in &session.transcript {
            join_line(tx, org, &session, line)?;
        }
    }
    // No disclosure set, no box was shown: nothing to prove.
    if form.consent && !settings.consent_text.is_empty() {
        if let Some(visitor) = consent_visitor {
            let mut channels = Vec::new();
            if !phone.is_empty() {
                channels.extend([Channel::Sms, Channel::Voice]);
            }
            if !email.is_empty() {
                channels.push(Channel::Email);
            }
            for channel in channels {
                let Some(current) = tx.lead(org, &lead.id)? else {
                    break;
                };
                consent::room(tx, org, &lead.id, 1)?;
                let input = ConsentInput {
                    channel,
                    status: ConsentStatus::Granted,
                    purpose: Purpose::Marketing,
                    source: ConsentSource::Webchat,
                    at: Some(now),
                    proof: Proof {
                        text: Some(settings.consent_text.clone()),
                        url: (!visitor.page_url.is_empty()).then(|| visitor.page_url.clone()),
                        ip: (!visitor.ip.is_empty()).then(|| visitor.ip.clone()),
                        user_agent: (!visitor.user_agent.is_empty())
                            .then(|| visitor.user_agent.clone()),
                        recorded_by: Some(crate::store::rows::RecordedBy::Service),
                    },
                };
                consent::record(tx, org, current, input).react(tx)?;
            }
        }
    }
    tx.lead(org, &lead.id)?
        .ok_or_else(|| Error::Internal("the web chat's lead is missing".into()))
}

/// Writes `line` on the session's lead, when it has one, as a `MESSAGE` event of
/// channel `webchat` (once: its id is the session's and the line's).
fn join_line(
    tx: &mut WriteTx,
    org: &str,
    session: &WebchatSession,
    line: &WebchatLine,
) -> Result<()> {
    let Some(lead_id) = &session.lead_id else {
        return Ok(());
    };
    let Some(lead) = tx.lead(org, lead_id)?.filter(|l| l.deleted_at.is_none()) else {
        return Ok(());
    };
    let (owner, extra) = match &line.speaker {
        Speaker::Visitor => ("lead", json!({})),
        Speaker::Assistant => ("user", json!({"origin": "assistant"})),
        Speaker::Person(name) => ("user", json!({"origin": "human", "sentBy": {"name": name}})),
        Speaker::Notice => return Ok(()),
    };
    let mut data = json!({
        "owner": owner,
        "channel": CHANNEL,
        "content": {"text": line.text},
        "webchatSessionId": session.id,
    });
    if let (Value::Object(d), Value::Object(e)) = (&mut data, extra) {
        d.extend(e);
    }
    let id = format!("wcm_{}_{}", session.id.trim_start_matches("wcs_"), line.seq);
    events::record(tx, org, lead, "MESSAGE", &id, data, |_| {}).react(tx)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_checked_by_its_hash_and_its_age() {
        let token = new_token();
        assert_eq!(token.len(), 43, "256 bits in URL-safe base64");
        let session = WebchatSession::blank(token_hash(&token));
        assert!(check_token(Some(session.clone()), &token, DAY).is_ok());
        assert!(check_token(Some(session.clone()), "nope", DAY).is_err());
        assert!(check_token(Some(session), &token, 31 * DAY).is_err());
        assert!(check_token(None, &token, 0).is_err());
    }

    #[test]
    fn a_day_holds_200_messages_then_says_when_the_next_day_begins() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("t.redb")).unwrap();
        let token = new_token();
        let hash = token_hash(&token);
        let (org, session) = store
            .write_blocking(move |tx| {
                let org = crate::domain::settings::org::create(tx, "acme")?.id;
                let settings = WebchatSettings {
                    enabled: true,
                    ..WebchatSettings::default()
                };
                tx.put_webchat_settings(&org, &settings)?;
                let (session, _) = create(tx, &org, &hash, &Visitor::default(), 0)?;
                Ok((org, session.id))
            })
            .unwrap();
        let say = |at: Micros| {
            let (org, session, token) = (org.clone(), session.clone(), token.clone());
            store.write_blocking(move |tx| visitor_message(tx, &org, &session, &token, "hi", at))
        };
        for i in 0..MESSAGES_PER_DAY {
            let (line, answer) = say(i64::from(i)).unwrap();
            assert_eq!(line.seq, u64::from(i) + 1);
            assert_eq!(answer, Answer::Nobody, "no assistant connected");
        }
        match say(HOUR) {
            Err(Error::Throttled {
                retry_after_secs, ..
            }) => assert_eq!(retry_after_secs, 23 * 3_600),
            other => panic!("expected the day's bound, got {other:?}"),
        }
        assert!(say(DAY).is_ok(), "a new day");
        // 30 days without a message: the token is no longer good.
        assert!(matches!(say(DAY + 31 * DAY), Err(Error::Unauthorized)));
    }

    #[test]
    fn a_message_is_bounded() {
        assert!(checked_text(&"x".repeat(MESSAGE_CHARS)).is_ok());
        assert!(matches!(
            checked_text(&"x".repeat(MESSAGE_CHARS + 1)),
            Err(Error::TooLong(_))
        ));
        assert!(checked_text("  ").is_err());
    }
}
