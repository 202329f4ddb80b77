//! Web chat's records: an organization's `webchat` settings (`webchat_settings`) and
//! its visitors' sessions (`webchat_sessions`, with `webchat_by_created` beside them).
//!
//! A session keeps the SHA-256 of its token, never the token; its transcript holds the
//! last [`TRANSCRIPT_KEPT`] lines (the model reads the last 50, the widget replays them
//! on a return visit). Its rules live in `domain::conversation::webchat`.

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::read::ReadTx;
use super::tables::{WEBCHAT_BY_CREATED, WEBCHAT_SESSIONS, WEBCHAT_SETTINGS};
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

/// The lines a session keeps, newest last.
pub const TRANSCRIPT_KEPT: usize = 200;

/// `webchat` of `GET /v1/org`: the website as a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebchatSettings {
    pub enabled: bool,
    /// Origins (`https://acme.example`) whose pages may use the widget; nothing else.
    pub allowed_origins: Vec<String>,
    /// The widget's first words.
    pub greeting: String,
    /// The campaign (profile) of visitors who become leads, and the assistant's
    /// instructions; empty: none.
    pub profile: String,
    /// The widget offers a call from the browser.
    pub voice: bool,
    /// The disclosure beside the consent box.
    pub consent_text: String,
    pub max_sessions_per_hour: u32,
    pub max_assistant_turns_per_session: u32,
}

pub const DEFAULT_MAX_SESSIONS_PER_HOUR: u32 = 500;
pub const DEFAULT_MAX_ASSISTANT_TURNS: u32 = 30;

impl Default for WebchatSettings {
    fn default() -> Self {
        WebchatSettings {
            enabled: false,
            allowed_origins: Vec::new(),
            greeting: String::new(),
            profile: String::new(),
            voice: false,
            consent_text: String::new(),
            max_sessions_per_hour: DEFAULT_MAX_SESSIONS_PER_HOUR,
            max_assistant_turns_per_session: DEFAULT_MAX_ASSISTANT_TURNS,
        }
    }
}

/// Who said a line of a web chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Speaker {
    Visitor,
    Assistant,
    /// A person of the organization who took the chat over: their name.
    Person(String),
    /// A notice of the system ("Dana joined the chat").
    Notice,
}

/// One line of a web chat's transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebchatLine {
    /// A number of the session, from 1, in order: the SSE stream's event id.
    pub seq: u64,
    pub at: Micros,
    pub speaker: Speaker,
    pub text: String,
}

/// A website visitor's chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebchatSession {
    pub id: String,
    /// SHA-256 of the session's token.
    pub token_hash: Vec<u8>,
    pub created_at: Micros,
    /// The last message of the visitor (or the creation): a token is good for 30 days
    /// after it.
    pub last_seen_at: Micros,
    /// The visitor's address and browser at creation.
    pub ip: String,
    pub user_agent: String,
    /// The page the widget was on, as the visitor's browser said (`Origin`'s page).
    pub page_url: String,
    /// The lead the visitor became, once they gave a phone or an email.
    pub lead_id: Option<String>,
    /// The model's answers so far (`maxAssistantTurnsPerSession`).
    pub assistant_turns: u32,
    /// The start of the current day's window and the visitor's messages in it.
    pub day_started_at: Micros,
    pub day_messages: u32,
    /// The person who took the chat over: the assistant no longer answers.
    pub taken_over_by: Option<String>,
    /// The newest lines, at most [`TRANSCRIPT_KEPT`].
    pub transcript: Vec<WebchatLine>,
    /// The next line's `seq`.
    pub next_seq: u64,
}

impl WebchatSession {
    /// A session created at time 0 with `token_hash`, nothing said yet: for tests.
    #[cfg(test)]
    pub(crate) fn blank(token_hash: Vec<u8>) -> WebchatSession {
        WebchatSession {
            id: "wcs_1".into(),
            token_hash,
            created_at: 0,
            last_seen_at: 0,
            ip: String::new(),
            user_agent: String::new(),
            page_url: String::new(),
            lead_id: None,
            assistant_turns: 0,
            day_started_at: 0,
            day_messages: 0,
            taken_over_by: None,
            transcript: Vec::new(),
            next_seq: 1,
        }
    }

    /// Appends a line (dropping the oldest past [`TRANSCRIPT_KEPT`]); answers it.
    pub fn push(&mut self, at: Micros, speaker: Speaker, text: &str) -> WebchatLine {
        self.next_seq = self.next_seq.max(1);
        let line = WebchatLine {
            seq: self.next_seq,
            at,
            speaker,
            text: text.to_string(),
        };
        self.next_seq += 1;
        self.transcript.push(line.clone());
        if self.transcript.len() > TRANSCRIPT_KEPT {
            let over = self.transcript.len() - TRANSCRIPT_KEPT;
            self.transcript.drain(..over);
        }
        line
    }
}

impl WriteTx<'_> {
    pub fn put_webchat_settings(&mut self, org: &str, settings: &WebchatSettings) -> Result<()> {
        self.open_write(WEBCHAT_SETTINGS)?
            .insert(org, encode(settings)?.as_slice())?;
        Ok(())
    }

    pub fn webchat_settings(&self, org: &str) -> Result<WebchatSettings> {
        let table = self.open_read(WEBCHAT_SETTINGS)?;
        let value = table.get(org)?;
        value.map_or_else(|| Ok(WebchatSettings::default()), |v| decode(v.value()))
    }

    pub fn webchat_session(&self, org: &str, id: &str) -> Result<Option<WebchatSession>> {
        let table = self.open_read(WEBCHAT_SESSIONS)?;
        let value = table.get((org, id))?;
        value.map(|v| decode(v.value())).transpose()
    }

    /// Writes a session (and, when new, its row by age).
    pub fn put_webchat_session(&mut self, org: &str, session: &WebchatSession) -> Result<()> {
        let new = self
            .open_read(WEBCHAT_SESSIONS)?
            .get((org, session.id.as_str()))?
            .is_none();
        self.open_write(WEBCHAT_SESSIONS)?
            .insert((org, session.id.as_str()), encode(session)?.as_slice())?;
        self.marked_webchats
            .insert((org.to_string(), session.id.clone()));
        if new {
            self.open_write(WEBCHAT_BY_CREATED)?
                .insert((org, session.created_at, session.id.as_str()), ())?;
        }
        Ok(())
    }

    /// The organization's sessions created at or after `since`, counted up to `limit`.
    pub fn webchat_sessions_since(&self, org: &str, since: Micros, limit: usize) -> Result<usize> {
        let table = self.open_read(WEBCHAT_BY_CREATED)?;
        let rows = table.range((org, since, "")..=(org, i64::MAX, "\u{10FFFF}"))?;
        Ok(rows.take(limit).count())
    }

    /// Removes, oldest first, at most `limit` sessions of any organization created
    /// before `cutoff` that never became a lead; answers how many.
    pub fn purge_webchat_sessions(&mut self, cutoff: Micros, limit: usize) -> Result<usize> {
        let mut old: Vec<(String, i64, String)> = Vec::new();
        {
            let table = self.open_read(WEBCHAT_BY_CREATED)?;
            for row in table.iter()? {
                let (key, _) = row?;
                let (org, at, id) = key.value();
                if at < cutoff {
                    old.push((org.to_string(), at, id.to_string()));
                }
            }
        }
        let mut purged = 0;
        for (org, at, id) in old {
            if purged >= limit {
                break;
            }
            let session = self.webchat_session(&org, &id)?;
            if session.as_ref().is_some_and(|s| s.lead_id.is_some()) {
                continue;
            }
            self.open_write(WEBCHAT_SESSIONS)?
                .remove((org.as_str(), id.as_str()))?;
            self.open_write(WEBCHAT_BY_CREATED)?
                .remove((org.as_str(), at, id.as_str()))?;
            purged += 1;
        }
        Ok(purged)
    }
}

impl ReadTx {
    pub fn webchat_settings(&self, org: &str) -> Result<WebchatSettings> {
        let table = self.open_read(WEBCHAT_SETTINGS)?;
        let value = table.get(org)?;
        value.map_or_else(|| Ok(WebchatSettings::default()), |v| decode(v.value()))
    }

    pub fn webchat_session(&self, org: &str, id: &str) -> Result<Option<WebchatSession>> {
        let table = self.open_read(WEBCHAT_SESSIONS)?;
        let value = table.get((org, id))?;
        value.map(|v| decode(v.value())).transpose()
    }

    /// The organization's sessions, newest first, at most `limit`.
    pub fn webchat_sessions(&self, org: &str, limit: usize) -> Result<Vec<WebchatSession>> {
        let by_created = self.open_read(WEBCHAT_BY_CREATED)?;
        let sessions = self.open_read(WEBCHAT_SESSIONS)?;
        let mut out = Vec::new();
        for row in by_created
            .range((org, i64::MIN, "")..=(org, i64::MAX, "\u{10FFFF}"))?
            .rev()
            .take(limit)
        {
            let (key, _) = row?;
            let (_, _, id) = key.value();
            if let Some(value) = sessions.get((org, id))? {
                out.push(decode(value.value())?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, created_at: Micros, lead: Option<&str>) -> WebchatSession {
        WebchatSession {
            id: id.into(),
            token_hash: vec![0; 32],
            created_at,
            last_seen_at: created_at,
            ip: String::new(),
            user_agent: String::new(),
            page_url: String::new(),
            lead_id: lead.map(str::to_string),
            assistant_turns: 0,
            day_started_at: created_at,
            day_messages: 0,
            taken_over_by: None,
            transcript: Vec::new(),
            next_seq: 1,
        }
    }

    #[test]
    fn old_sessions_without_a_lead_are_purged_and_counted_by_the_hour() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::Store::open(&dir.path().join("t.redb")).unwrap();
        store
            .write_blocking(|tx| {
                tx.put_webchat_session("o1", &session("old", 100, None))?;
                tx.put_webchat_session("o1", &session("old-lead", 110, Some("L1")))?;
                tx.put_webchat_session("o1", &session("new", 1_000, None))?;
                tx.put_webchat_session("o2", &session("other", 120, None))
            })
            .unwrap();
        let since = |org: &'static str, at: Micros| {
            store
                .write_blocking(move |tx| tx.webchat_sessions_since(org, at, 10))
                .unwrap()
        };
        assert_eq!(since("o1", 0), 3);
        assert_eq!(since("o1", 500), 1);
        assert_eq!(since("o2", 0), 1, "counted per organization");
        let purged = store
            .write_blocking(|tx| tx.purge_webchat_sessions(500, 10))
            .unwrap();
        assert_eq!(
            purged, 2,
            "the old ones that never became leads, of every organization"
        );
        let read = store.read().unwrap();
        assert!(read.webchat_session("o1", "old").unwrap().is_none());
        assert!(read.webchat_session("o1", "old-lead").unwrap().is_some());
        assert!(read.webchat_session("o1", "new").unwrap().is_some());
        assert!(read.webchat_session("o2", "other").unwrap().is_none());
        assert_eq!(
            read.webchat_sessions("o1", 10)
                .unwrap()
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>(),
            ["new", "old-lead"],
            "newest first"
        );
    }

    #[test]
    fn a_transcript_keeps_its_newest_lines_in_order() {
        let mut s = WebchatSession::blank(vec![0; 32]);
        for i in 0..(TRANSCRIPT_KEPT + 5) {
            s.push(i as i64, Speaker::Visitor, &format!("m{i}"));
        }
        assert_eq!(s.transcript.len(), TRANSCRIPT_KEPT);
        assert_eq!(s.transcript[0].seq, 6);
        assert_eq!(
            s.transcript.last().map(|l| l.seq),
            Some(TRANSCRIPT_KEPT as u64 + 5)
        );
    }
}
