//! The replays of a profile's draft over past conversations (`replays`, one record per
//! replay: its status, progress, per-turn results and test results), kept
//! [`REPLAY_KEPT_DAYS`] days and at most [`REPLAYS_KEPT`] per organization: each new
//! replay's write removes the organization's older ones past either bound.

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::read::ReadTx;
use super::tables::REPLAYS;
use super::write::WriteTx;
use crate::error::Result;
use crate::time::Micros;

/// How many replays an organization keeps (the newest).
pub const REPLAYS_KEPT: usize = 20;
/// How long a replay's results are kept.
pub const REPLAY_KEPT_DAYS: i64 = 30;
const KEPT_MICROS: Micros = REPLAY_KEPT_DAYS * 86_400 * 1_000_000;

/// Where a replay stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplayStatus {
    Running,
    Done,
    Canceled,
    Failed,
}

impl ReplayStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayStatus::Running => "running",
            ReplayStatus::Done => "done",
            ReplayStatus::Canceled => "canceled",
            ReplayStatus::Failed => "failed",
        }
    }
}

/// What a replayed turn's answer did differently, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplayFlag {
    /// A tool call was added or removed.
    ActionChanged,
    /// The output guard left nothing of a non-empty answer.
    GuardBlocked,
    /// The answer was over its channel's bound.
    TooLong,
    /// The model failed.
    NoAnswer,
    /// The same words and the same tools as what was said.
    Identical,
}

impl ReplayFlag {
    pub const ALL: [ReplayFlag; 5] = [
        ReplayFlag::ActionChanged,
        ReplayFlag::GuardBlocked,
        ReplayFlag::TooLong,
        ReplayFlag::NoAnswer,
        ReplayFlag::Identical,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReplayFlag::ActionChanged => "action_changed",
            ReplayFlag::GuardBlocked => "guard_blocked",
            ReplayFlag::TooLong => "too_long",
            ReplayFlag::NoAnswer => "no_answer",
            ReplayFlag::Identical => "identical",
        }
    }
}

/// One side of a turn: what was (or would be) said and the tools called, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaySide {
    pub text: String,
    pub tools: Vec<String>,
}

/// One lead turn replayed: the lead's words, what was said then, what the draft says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayTurn {
    pub lead_text: String,
    pub before: ReplaySide,
    pub after: ReplaySide,
    pub flags: Vec<ReplayFlag>,
}

/// One conversation replayed, turn by turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayConversation {
    pub lead_id: String,
    pub turns: Vec<ReplayTurn>,
}

/// One test conversation's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayTestResult {
    pub name: String,
    pub passed: bool,
    /// Each failed expectation, in words.
    pub failures: Vec<String>,
}

/// A replay of a profile's draft.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayRecord {
    pub id: String,
    pub profile: String,
    pub status: ReplayStatus,
    pub started_at: Micros,
    pub finished_at: Option<Micros>,
    /// Model requests answered or failed, of `total` (turns and test turns).
    pub done: u32,
    pub total: u32,
    pub conversations: Vec<ReplayConversation>,
    pub tests: Vec<ReplayTestResult>,
    /// Model tokens used (the answers' `usage.total_tokens`).
    pub tokens: u64,
    /// Why a failed replay failed, in words.
    pub error: String,
}

impl WriteTx<'_> {
    /// Writes a replay (new or updated).
    pub fn put_replay(&mut self, org: &str, replay: &ReplayRecord) -> Result<()> {
        let bytes = encode(replay)?;
        self.open_write(REPLAYS)?
            .insert((org, replay.id.as_str()), bytes.as_slice())?;
        Ok(())
    }

    /// Removes `org`'s finished replays started before `now` minus
    /// [`REPLAY_KEPT_DAYS`], and the oldest beyond the newest [`REPLAYS_KEPT`] - 1 (room
    /// for the one about to be written). Answers how many went.
    pub fn prune_replays(&mut self, org: &str, now: Micros) -> Result<usize> {
        let mut table = self.open_write(REPLAYS)?;
        let mut all: Vec<(Micros, String, bool)> = Vec::new();
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            let replay: ReplayRecord = decode(value.value())?;
            all.push((
                replay.started_at,
                replay.id,
                replay.status == ReplayStatus::Running,
            ));
        }
        all.sort_by_key(|r| std::cmp::Reverse(r.0));
        let mut doomed = Vec::new();
        for (i, (started_at, id, running)) in all.into_iter().enumerate() {
            if running {
                continue;
            }
            if i + 1 >= REPLAYS_KEPT || started_at < now - KEPT_MICROS {
                doomed.push(id);
            }
        }
        for id in &doomed {
            table.remove((org, id.as_str()))?;
        }
        Ok(doomed.len())
    }
}

impl ReadTx {
    /// The replay `id` of `org`.
    pub fn replay(&self, org: &str, id: &str) -> Result<Option<ReplayRecord>> {
        let table = self.open_read(REPLAYS)?;
        let found = table.get((org, id))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// `org`'s replays started since `now` minus [`REPLAY_KEPT_DAYS`], newest first.
    pub fn replays(&self, org: &str, now: Micros) -> Result<Vec<ReplayRecord>> {
        let table = self.open_read(REPLAYS)?;
        let mut out: Vec<ReplayRecord> = Vec::new();
        for row in table.range::<(&str, &str)>((org, "")..)? {
            let (key, value) = row?;
            if key.value().0 != org {
                break;
            }
            let replay: ReplayRecord = decode(value.value())?;
            if replay.started_at >= now - KEPT_MICROS {
                out.push(replay);
            }
        }
        out.sort_by_key(|r| std::cmp::Reverse(r.started_at));
        Ok(out)
    }

    /// `org`'s live leads that wrote, newest own message first: the lead ids, visited
    /// until `visit` says stop.
    pub fn leads_by_last_reply(
        &self,
        org: &str,
        mut visit: impl FnMut(&str) -> Result<super::Flow>,
    ) -> Result<()> {
        let table = self.open_read(super::tables::LEADS_BY_REPLY)?;
        let rows = table.range((org, i64::MIN, "")..=(org, i64::MAX, "\u{10FFFF}"))?;
        for row in rows.rev() {
            let (key, _) = row?;
            if visit(key.value().2)? == super::Flow::Stop {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    fn replay(id: &str, started_at: Micros, status: ReplayStatus) -> ReplayRecord {
        ReplayRecord {
            id: id.into(),
            profile: "p".into(),
            status,
            started_at,
            finished_at: None,
            done: 0,
            total: 0,
            conversations: Vec::new(),
            tests: Vec::new(),
            tokens: 0,
            error: String::new(),
        }
    }

    #[test]
    fn pruning_keeps_the_newest_and_the_running_and_drops_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let now = 100 * 86_400 * 1_000_000;
        store
            .write_blocking(move |tx| {
                for i in 0..(REPLAYS_KEPT as i64 + 3) {
                    tx.put_replay(
                        "o1",
                        &replay(&format!("r{i:02}"), now - i, ReplayStatus::Done),
                    )?;
                }
                tx.put_replay(
                    "o1",
                    &replay("old", now - KEPT_MICROS - 1, ReplayStatus::Running),
                )?;
                tx.put_replay(
                    "o2",
                    &replay("other", now - KEPT_MICROS - 1, ReplayStatus::Done),
                )?;
                Ok(())
            })
            .unwrap();
        let gone = store
            .write_blocking(move |tx| tx.prune_replays("o1", now))
            .unwrap();
        assert_eq!(gone, 4);
        let read = store.read().unwrap();
        let kept = read.replays("o1", now).unwrap();
        assert_eq!(kept.len(), REPLAYS_KEPT - 1);
        assert_eq!(kept[0].id, "r00");
        assert!(
            read.replay("o1", "old").unwrap().is_some(),
            "a running one stays"
        );
        assert!(
            read.replays("o2", now).unwrap().is_empty(),
            "too old to list"
        );
        assert!(
            read.replay("o2", "other").unwrap().is_some(),
            "another organization's"
        );
    }
}
