//! Replays: a profile's draft tried on real past conversations before a lead hears it.
//!
//! [`Engine::start_replay`] chooses the conversations on a snapshot (the most recent of
//! the profile with a lead turn, or the leads named), writes the replay `running` and
//! runs it in a task of its own: for each lead turn (a run of the lead's messages) the
//! model is asked as it was then — the draft's instructions and tools, the
//! conversation up to that turn, the lead's fields (its next meeting as of the turn:
//! `Past::lead_at`), the local time of the turn —
//! through the assistant's own loop (`reply::converse`) with its tools dry
//! (`tools::ToolMode::Dry`), and the answer passes the output guard. Beside it the
//! turn keeps what was said then (the organization's messages until the lead's next,
//! the `TOOL_CALL` events between) and its flags (`domain::settings::replays::flags`).
//! The profile's test conversations run after. Nothing is sent, booked or written to a
//! lead: the only write is the replay's own record, at its start and its end.
//!
//! One replay runs per organization at a time (409 otherwise), one model request at a
//! time: its pace is the organization's model server's, and its requests count in the
//! assistant's metrics like any other. Progress lives in memory while it runs (a
//! `GET` reads it there); a replay the process lost on a restart reads `failed`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{TimeZone, Utc};

use super::guard::guard;
use super::reply::{lead_data, local_time_at, Said};
use super::tools::{Booking, DryRun, ToolMode};
use super::Engine;
use crate::channel::{Channel, Owner};
use crate::domain::contact::keywords;
use crate::domain::records::message_shape::MessageShape;
use crate::domain::settings::replays::{self as rules, Selection, TestConversation};
use crate::error::{Error, Result};
use crate::providers::model::protocol::{Context, Turn};
use crate::store::calendars::{MeetingRecord, MeetingStatus};
use crate::store::replays::{
    ReplayConversation, ReplayRecord, ReplaySide, ReplayStatus, ReplayTestResult, ReplayTurn,
};
use crate::store::rows::{AssistantSettings, LeadRecord, ProfileRecord, SystemEvent};
use crate::store::{Flow, ReadTx, Reader, Start};
use crate::time::{now_micros, Micros};

/// The most lead turns replayed of one conversation (its latest).
pub const MAX_TURNS_PER_CONVERSATION: usize = 50;
/// The most meetings of one lead read for its next meeting as of a turn.
const MAX_MEETINGS_LOOKED_AT: usize = 200;
/// The most leads that wrote looked through for a profile's recent conversations.
const MAX_LEADS_SCANNED: usize = 20_000;

/// The replays running now, one per organization.
#[derive(Default)]
pub struct Replays(Mutex<HashMap<String, Arc<Running>>>);

/// A running replay: its record as it grows, and whether it was asked to stop.
pub struct Running {
    record: Mutex<ReplayRecord>,
    cancel: AtomicBool,
}

impl Running {
    fn record(&self) -> ReplayRecord {
        self.record
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn update(&self, change: impl FnOnce(&mut ReplayRecord)) {
        change(&mut self.record.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

impl Replays {
    /// Removes `running` of `org`, unless a newer replay took its place.
    fn forget(&self, org: &str, running: &Arc<Running>) {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if all.get(org).is_some_and(|r| Arc::ptr_eq(r, running)) {
            all.remove(org);
        }
    }

    fn running(&self, org: &str) -> Option<Arc<Running>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(org)
            .cloned()
    }
}

/// What a replay is asked to try.
#[derive(Debug, Clone)]
pub struct ReplayRequest {
    /// The profile whose conversations are replayed.
    pub profile: String,
    /// The draft, as `PUT` would save it, with its test conversations.
    pub draft: ProfileRecord,
    pub selection: Selection,
}

/// One past conversation, as the store holds it.
struct Past {
    lead: LeadRecord,
    /// The lead's meetings (canceled ones too): its next meeting as of each turn.
    meetings: Vec<MeetingRecord>,
    messages: Vec<PastMessage>,
    /// `TOOL_CALL` events: when, and the tool's name.
    tools: Vec<(Micros, String)>,
}

struct PastMessage {
    from_lead: bool,
    text: String,
    at: Micros,
    channel: Channel,
}

/// One lead turn to replay: the messages up to it and what was said after it.
struct PastTurn {
    /// Index past the turn's last lead message.
    end: usize,
    lead_text: String,
    channel: Channel,
    at: Micros,
    before: ReplaySide,
}

impl Engine {
    /// Starts a replay of `request` for `org`: 409 while another runs or with no
    /// assistant configured. Answers the replay as it starts.
    pub async fn start_replay(
        self: &Arc<Self>,
        org: &str,
        request: ReplayRequest,
    ) -> Result<ReplayRecord> {
        let (settings, pasts, org_zone) = {
            let read = self.store.read()?;
            let engine = read.engine_settings(org)?;
            let Some(settings) = engine.assistant else {
                return Err(Error::Conflict(
                    "No assistant is configured (Settings, or PATCH /v1/org): there is nothing to replay with".into(),
                ));
            };
            let pasts = choose(&read, org, &request.profile, &request.selection)?;
            (settings, pasts, engine.time_zone)
        };
        let turns: Vec<Vec<PastTurn>> = pasts.iter().map(turns_of).collect();
        let total = turns.iter().map(Vec::len).sum::<usize>()
            + request
                .draft
                .tests
                .iter()
                .map(|t| t.turns.len())
                .sum::<usize>();
        let now = now_micros();
        let record = ReplayRecord {
            id: crate::ids::generate("rpl"),
            profile: request.profile.clone(),
            status: ReplayStatus::Running,
            started_at: now,
            finished_at: None,
            done: 0,
            total: u32::try_from(total).unwrap_or(u32::MAX),
            conversations: Vec::new(),
            tests: Vec::new(),
            tokens: 0,
            error: String::new(),
        };
        let running = Arc::new(Running {
            record: Mutex::new(record.clone()),
            cancel: AtomicBool::new(false),
        });
        {
            let mut all = self.replays.0.lock().unwrap_or_else(|p| p.into_inner());
            // A finished replay waits in the map only for its last write.
            let busy = all
                .get(org)
                .is_some_and(|r| r.record().status == ReplayStatus::Running);
            if busy {
                return Err(Error::Conflict(
                    "A replay is already running for this organization; wait for it or cancel it"
                        .into(),
                ));
            }
            all.insert(org.to_string(), running.clone());
        }
        let (o, first) = (org.to_string(), record.clone());
        let written = self
            .store
            .write(move |tx| {
                tx.prune_replays(&o, now)?;
                tx.put_replay(&o, &first)
            })
            .await;
        if let Err(e) = written {
            self.replays.forget(org, &running);
            return Err(e);
        }
        let engine = self.clone();
        let org = org.to_string();
        tokio::spawn(async move {
            let outcome = engine
                .run_replay(&org, &settings, &org_zone, &request, pasts, turns, &running)
                .await;
            running.update(|r| {
                r.finished_at = Some(now_micros());
                r.status = match &outcome {
                    Err(e) => {
                        r.error = format!("The replay stopped: {e}");
                        ReplayStatus::Failed
                    }
                    Ok(()) if running.cancel.load(Ordering::Relaxed) => ReplayStatus::Canceled,
                    Ok(()) => ReplayStatus::Done,
                };
            });
            if let Err(e) = &outcome {
                tracing::warn!(org, error = %e.to_string_for_logs(), "a replay failed");
            }
            let last = running.record();
            let o = org.clone();
            if let Err(e) = engine.store.write(move |tx| tx.put_replay(&o, &last)).await {
                tracing::error!(org, error = %e.to_string_for_logs(), "could not record a replay's results");
            }
            engine.replays.forget(&org, &running);
        });
        Ok(record)
    }

    /// The replay `id` of `org`: as it runs, or as it was recorded (one the process
    /// lost while it ran reads `failed`).
    pub fn replay(&self, org: &str, id: &str) -> Result<Option<ReplayRecord>> {
        if let Some(running) = self.replays.running(org) {
            let record = running.record();
            if record.id == id {
                return Ok(Some(record));
            }
        }
        Ok(self.store.read()?.replay(org, id)?.map(lost))
    }

    /// `org`'s replays of the last 30 days, newest first.
    pub fn replays(&self, org: &str) -> Result<Vec<ReplayRecord>> {
        let running = self.replays.running(org).map(|r| r.record());
        let stored = self.store.read()?.replays(org, now_micros())?;
        Ok(stored
            .into_iter()
            .map(|r| match &running {
                Some(now) if now.id == r.id => now.clone(),
                _ => lost(r),
            })
            .collect())
    }

    /// Asks the running replay `id` to stop after its current turn: 404 when there is
    /// no such replay, 409 when it has finished.
    pub fn cancel_replay(&self, org: &str, id: &str) -> Result<ReplayRecord> {
        if let Some(running) = self.replays.running(org) {
            let record = running.record();
            if record.id == id && record.status == ReplayStatus::Running {
                running.cancel.store(true, Ordering::Relaxed);
                return Ok(record);
            }
            if record.id == id {
                return Err(Error::Conflict("The replay has finished".into()));
            }
        }
        match self.store.read()?.replay(org, id)? {
            None => Err(Error::NotFound("Replay not found".into())),
            Some(_) => Err(Error::Conflict("The replay has finished".into())),
        }
    }

    /// Runs `tests` with `draft` (a save under `requireTestsPass`): each test's result.
    /// An organization with no assistant cannot run them (409).
    pub async fn run_tests(
        &self,
        org: &str,
        draft: &ProfileRecord,
        tests: &[TestConversation],
    ) -> Result<Vec<ReplayTestResult>> {
        let settings = self.store.read()?.engine_settings(org)?.assistant;
        let Some(settings) = settings else {
            return Err(Error::Conflict(
                "No assistant is configured: the profile's tests cannot run".into(),
            ));
        };
        let mut results = Vec::with_capacity(tests.len());
        for test in tests {
            let (result, _) = self
                .run_test(org, &settings, draft, test, &|| false)
                .await?;
            results.push(result);
        }
        Ok(results)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_replay(
        &self,
        org: &str,
        settings: &AssistantSettings,
        org_zone: &str,
        request: &ReplayRequest,
        pasts: Vec<Past>,
        turns: Vec<Vec<PastTurn>>,
        running: &Running,
    ) -> Result<()> {
        let draft = &request.draft;
        let stopped = || running.cancel.load(Ordering::Relaxed);
        for (past, turns) in pasts.iter().zip(turns) {
            if stopped() {
                return Ok(());
            }
            let booking = (!draft.calendar.is_empty())
                .then(|| Booking::on(&draft.calendar, &past.lead, org_zone));
            let dry = DryRun::new(booking);
            running.update(|r| {
                r.conversations.push(ReplayConversation {
                    lead_id: past.lead.id.clone(),
                    turns: Vec::new(),
                })
            });
            for turn in turns {
                if stopped() {
                    return Ok(());
                }
                let history: Vec<Turn> = past.messages[..turn.end]
                    .iter()
                    .map(|m| Turn {
                        from_lead: m.from_lead,
                        text: m.text.clone(),
                    })
                    .collect();
                let when = Utc
                    .timestamp_micros(turn.at)
                    .single()
                    .unwrap_or_else(Utc::now);
                let local_time = local_time_at(&past.lead, org_zone, when);
                let data = lead_data(&past.lead_at(turn.at));
                let context = Context {
                    instructions: &draft.instructions,
                    lead: &data,
                    channel: turn.channel,
                    local_time: &local_time,
                    history: &history,
                    booking: dry.booking.is_some(),
                };
                let (after, raw, tokens) = self
                    .dry_turn(org, &past.lead.id, settings, &context, &dry)
                    .await?;
                let flags = rules::flags(&turn.before, &after, raw.as_deref(), turn.channel);
                running.update(|r| {
                    r.done += 1;
                    r.tokens += tokens;
                    if let Some(c) = r.conversations.last_mut() {
                        c.turns.push(ReplayTurn {
                            lead_text: turn.lead_text,
                            before: turn.before,
                            after,
                            flags,
                        });
                    }
                });
            }
        }
        for test in &request.draft.tests {
            if stopped() {
                return Ok(());
            }
            let (result, tokens) = self
                .run_test(org, settings, draft, test, &|| {
                    running.update(|r| r.done += 1);
                    stopped()
                })
                .await?;
            running.update(|r| {
                r.tokens += tokens;
                r.tests.push(result);
            });
        }
        Ok(())
    }

    /// One turn asked with dry tools: what the guard left and the tools called, the
    /// model's words before the guard (`None`: it failed), the tokens used.
    async fn dry_turn(
        &self,
        org: &str,
        lead_id: &str,
        settings: &AssistantSettings,
        context: &Context<'_>,
        dry: &DryRun,
    ) -> Result<(ReplaySide, Option<String>, u64)> {
        let (said, _) = self
            .converse(
                org,
                lead_id,
                context.channel,
                settings,
                context,
                ToolMode::Dry(dry),
            )
            .await?;
        let (tools, tokens) = dry.take();
        let raw = match said {
            Said::Text(text) => Some(text),
            Said::Nothing | Said::Ended(_) => Some(String::new()),
            Said::Failed(_) => None,
        };
        let text = raw
            .as_deref()
            .map(|t| guard(t, context.channel))
            .unwrap_or_default();
        Ok((ReplaySide { text, tools }, raw, tokens))
    }

    /// One test conversation with `draft`, as SMS to a sample lead: each turn's answer
    /// joins the conversation before the next. `step` is called after each turn and
    /// answers whether to stop.
    async fn run_test(
        &self,
        org: &str,
        settings: &AssistantSettings,
        draft: &ProfileRecord,
        test: &TestConversation,
        step: &(dyn Fn() -> bool + Sync),
    ) -> Result<(ReplayTestResult, u64)> {
        let sample = LeadRecord {
            id: "test".into(),
            first_name: "Sam".into(),
            last_name: "Sample".into(),
            phone: "+15125550100".into(),
            ..LeadRecord::default()
        };
        let data = lead_data(&sample);
        let booking =
            (!draft.calendar.is_empty()).then(|| Booking::on(&draft.calendar, &sample, "UTC"));
        let dry = DryRun::new(booking);
        let mut history: Vec<Turn> = Vec::new();
        let mut answers = Vec::with_capacity(test.turns.len());
        let mut tokens = 0;
        for text in &test.turns {
            history.push(Turn {
                from_lead: true,
                text: text.clone(),
            });
            let context = Context {
                instructions: &draft.instructions,
                lead: &data,
                channel: Channel::Sms,
                local_time: "(a sample time)",
                history: &history,
                booking: dry.booking.is_some(),
            };
            let (after, raw, used) = self.dry_turn(org, "test", settings, &context, &dry).await?;
            tokens += used;
            if !after.text.is_empty() {
                history.push(Turn {
                    from_lead: false,
                    text: after.text.clone(),
                });
            }
            answers.push(raw.is_some().then_some(after));
            if step() {
                break;
            }
        }
        Ok((rules::judge(test, &answers), tokens))
    }
}

/// A stored replay still `running` that no task runs: the process stopped under it.
fn lost(mut replay: ReplayRecord) -> ReplayRecord {
    if replay.status == ReplayStatus::Running {
        replay.status = ReplayStatus::Failed;
        replay.error = "The replay stopped when the service restarted".into();
    }
    replay
}

/// The conversations `selection` names, read on one snapshot.
fn choose(read: &ReadTx, org: &str, profile: &str, selection: &Selection) -> Result<Vec<Past>> {
    let mut out = Vec::new();
    match selection {
        Selection::Leads(ids) => {
            for id in ids {
                let Some(lead) = read.lead(org, id)? else {
                    return Err(Error::field("leadIds", format!("Lead not found: {id}")));
                };
                out.push(past(read, org, lead)?);
            }
        }
        Selection::Recent(n) => {
            let mut scanned = 0;
            let mut ids = Vec::new();
            read.leads_by_last_reply(org, |id| {
                scanned += 1;
                ids.push(id.to_string());
                Ok(if scanned >= MAX_LEADS_SCANNED {
                    Flow::Stop
                } else {
                    Flow::Continue
                })
            })?;
            for id in ids {
                if out.len() >= *n {
                    break;
                }
                let Some(lead) = read.lead(org, &id)? else {
                    continue;
                };
                if lead.customer_profile != profile {
                    continue;
                }
                let past = past(read, org, lead)?;
                if past.messages.iter().any(|m| m.from_lead) {
                    out.push(past);
                }
            }
        }
    }
    Ok(out)
}

/// A lead's conversation: its messages (keyword traffic left out) and tool calls.
fn past(read: &ReadTx, org: &str, lead: LeadRecord) -> Result<Past> {
    let own = read.engine_settings(org)?.opt_out_keywords;
    let mut messages = Vec::new();
    let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
    read.scan_messages(org, &lead.id, start, |row| {
        let data = &row.record.data.0;
        if let Some(shape) = MessageShape::of(&row.kind, data) {
            if !keywords::is_keyword_traffic(&shape, data, &own) {
                messages.push(PastMessage {
                    from_lead: shape.owner == Owner::Lead,
                    text: shape.text().to_string(),
                    at: row.record.created_at,
                    channel: shape.channel,
                });
            }
        }
        Ok(Flow::Continue)
    })?;
    let mut tools = Vec::new();
    let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
    read.scan_events(org, &lead.id, start, |row| {
        if row.kind == SystemEvent::ToolCall.as_str() {
            if let Some(name) = row.record.data.0.get("name").and_then(|n| n.as_str()) {
                tools.push((row.record.created_at, name.to_string()));
            }
        }
        Ok(Flow::Continue)
    })?;
    tools.sort();
    let meetings = read.lead_meetings(org, &lead.id, MAX_MEETINGS_LOOKED_AT)?;
    Ok(Past {
        lead,
        meetings,
        messages,
        tools,
    })
}

impl Past {
    /// The lead as the model saw it at `at`, as far as the store keeps its history: the
    /// next meeting is the one booked by then, not canceled by then and starting after
    /// it (a meeting moved later shows where it is now); the other fields are today's,
    /// since a lead's earlier field values are not kept.
    fn lead_at(&self, at: Micros) -> LeadRecord {
        let mut lead = self.lead.clone();
        lead.next_meeting_at = next_meeting_at(&self.meetings, at);
        lead
    }
}

/// The start of the earliest meeting of `meetings` that, at `at`, was booked, not yet
/// canceled and still to come.
fn next_meeting_at(meetings: &[MeetingRecord], at: Micros) -> Option<Micros> {
    meetings
        .iter()
        .filter(|m| m.created_at <= at && m.start > at)
        .filter(|m| !(m.status == MeetingStatus::Canceled && m.updated_at <= at))
        .map(|m| m.start)
        .min()
}

/// A conversation's lead turns (its latest [`MAX_TURNS_PER_CONVERSATION`]): each run
/// of the lead's messages, with what was said and called after it until the lead's next.
fn turns_of(past: &Past) -> Vec<PastTurn> {
    let messages = &past.messages;
    let mut turns = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        if !messages[i].from_lead {
            i += 1;
            continue;
        }
        let start = i;
        while i < messages.len() && messages[i].from_lead {
            i += 1;
        }
        let end = i;
        let mut said = Vec::new();
        while i < messages.len() && !messages[i].from_lead {
            said.push(messages[i].text.as_str());
            i += 1;
        }
        let last = &messages[end - 1];
        let until = messages.get(i).map_or(Micros::MAX, |m| m.at);
        let tools = past
            .tools
            .iter()
            .filter(|(at, _)| *at >= last.at && *at < until)
            .map(|(_, name)| name.clone())
            .collect();
        turns.push(PastTurn {
            end,
            lead_text: messages[start..end]
                .iter()
                .map(|m| m.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            channel: last.channel,
            at: last.at,
            before: ReplaySide {
                text: said.join("\n"),
                tools,
            },
        });
    }
    let skip = turns.len().saturating_sub(MAX_TURNS_PER_CONVERSATION);
    turns.into_iter().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::calendars::{BookedBy, CalendarSync};

    fn meeting(
        id: &str,
        created_at: Micros,
        start: Micros,
        canceled_at: Option<Micros>,
    ) -> MeetingRecord {
        MeetingRecord {
            id: id.into(),
            lead_id: "l".into(),
            calendar: "sales".into(),
            start,
            end: start + 1,
            time_zone: String::new(),
            status: if canceled_at.is_some() {
                MeetingStatus::Canceled
            } else {
                MeetingStatus::Booked
            },
            booked_by: BookedBy::Api,
            location: String::new(),
            calendar_sync: CalendarSync::None,
            sync_error: String::new(),
            sequence: 0,
            created_at,
            updated_at: canceled_at.unwrap_or(created_at),
            etag: String::new(),
            etag_collection: String::new(),
        }
    }

    #[test]
    fn the_next_meeting_of_a_turn_is_the_one_booked_and_standing_then() {
        let meetings = [
            // Booked at 10 for 100, canceled at 50.
            meeting("a", 10, 100, Some(50)),
            // Booked at 60 for 200.
            meeting("b", 60, 200, None),
            // Booked at 5 for 30: past by 40.
            meeting("c", 5, 30, None),
        ];
        assert_eq!(next_meeting_at(&meetings, 1), None, "nothing booked yet");
        assert_eq!(next_meeting_at(&meetings, 20), Some(30));
        assert_eq!(next_meeting_at(&meetings, 40), Some(100), "canceled later");
        assert_eq!(next_meeting_at(&meetings, 55), None, "canceled by then");
        assert_eq!(next_meeting_at(&meetings, 70), Some(200));
        assert_eq!(next_meeting_at(&meetings, 250), None, "all past");
    }
}
