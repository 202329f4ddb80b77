//! "Try this change": a replay of the campaign editor's unsaved form, in words.
//!
//! The editor's "Try this change" (`profile_editor`) starts a replay of the form as it
//! stands (`engine::replay`), keeps the form for the editor (`api::flash`) and
//! redirects here, `/console/replays/{id}`: a progress bar while it runs (the page
//! reloads itself every two seconds), then each conversation side by side — what the
//! lead wrote, what was said then, what the draft says — flagged turns first, the
//! test conversations' results, and a link back to the form to save it.

use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::layout;
use super::respond;
use super::routes::campaign_path;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::error::{Error, Result};
use crate::store::replays::{ReplayFlag, ReplayRecord, ReplaySide, ReplayStatus, ReplayTurn};

/// A flag in words.
fn flag_words(flag: ReplayFlag) -> &'static str {
    match flag {
        ReplayFlag::ActionChanged => "Does something different",
        ReplayFlag::GuardBlocked => "Blocked by the output guard",
        ReplayFlag::TooLong => "Too long for the channel",
        ReplayFlag::NoAnswer => "The assistant did not answer",
        ReplayFlag::Identical => "Same as before",
    }
}

/// What a side said and did, in words.
fn side(label: &str, side: &ReplaySide) -> Markup {
    html! {
        div.side {
            h4 { (label) }
            @if side.text.is_empty() { p.muted { "(nothing said)" } } @else { p.text { (side.text) } }
            @if !side.tools.is_empty() {
                p.muted { "Did: " (side.tools.join(", ")) }
            }
        }
    }
}

fn turn(t: &ReplayTurn) -> Markup {
    let flagged = t.flags.iter().any(|f| *f != ReplayFlag::Identical);
    html! {
        li.turn.flagged[flagged] {
            p { strong { "The lead wrote: " } (t.lead_text) }
            @if !t.flags.is_empty() {
                p.flags { @for (i, f) in t.flags.iter().enumerate() { @if i > 0 { " · " } (flag_words(*f)) } }
            }
            div.sides {
                (side("What was said", &t.before))
                (side("What the change says", &t.after))
            }
        }
    }
}

/// The replay in words: its progress, then its conversations (flagged turns first) and
/// tests.
pub fn results(replay: &ReplayRecord) -> Markup {
    let turns: Vec<(&str, &ReplayTurn)> = replay
        .conversations
        .iter()
        .flat_map(|c| c.turns.iter().map(move |t| (c.lead_id.as_str(), t)))
        .collect();
    let is_flagged = |t: &ReplayTurn| t.flags.iter().any(|f| *f != ReplayFlag::Identical);
    let (flagged, calm): (Vec<_>, Vec<_>) = turns.iter().partition(|(_, t)| is_flagged(t));
    let changed = turns
        .iter()
        .filter(|(_, t)| t.flags.contains(&ReplayFlag::ActionChanged))
        .count();
    html! {
        div #replay role="status" data-status=(replay.status.as_str()) {
            @match replay.status {
                ReplayStatus::Running => {
                    p { "Trying the change: " (replay.done) " of " (replay.total) " answers." }
                    progress max=(replay.total) value=(replay.done) aria-label="Progress" {}
                }
                ReplayStatus::Done => p.notice { "Tried on " (replay.conversations.len()) " conversations, " (turns.len()) " answers: " (changed) " do something different, " (flagged.len()) " flagged in all." },
                ReplayStatus::Canceled => p.notice { "Stopped after " (turns.len()) " answers." },
                ReplayStatus::Failed => p.notice.refused { (replay.error) },
            }
            @if !replay.tests.is_empty() {
                h2 { "Test conversations" }
                ul {
                    @for t in &replay.tests {
                        li {
                            strong { (t.name) } ": "
                            @if t.passed { "passed" } @else { "failed — " (t.failures.join("; ")) }
                        }
                    }
                }
            }
            @if !flagged.is_empty() {
                h2 { "Flagged answers" }
                ol.replay { @for (lead, t) in &flagged { li { p.muted { "Lead " a href={ "/console/leads/" (lead) } { (lead) } } ol { (turn(t)) } } } }
            }
            @if !calm.is_empty() {
                h2 { "The other answers" }
                ol.replay { @for (lead, t) in &calm { li { p.muted { "Lead " a href={ "/console/leads/" (lead) } { (lead) } } ol { (turn(t)) } } } }
            }
            @if replay.status != ReplayStatus::Running && turns.is_empty() {
                p.muted { "The campaign has no conversation with a lead's message to try the change on." }
            }
        }
    }
}

/// `GET /console/replays/{id}`.
pub fn page(state: &AppState, visitor: &Visitor, id: &str) -> Result<Response<Body>> {
    let replay = state
        .engine
        .replay(visitor.org(), id)?
        .ok_or_else(|| Error::NotFound("Not found".into()))?;
    let running = replay.status == ReplayStatus::Running;
    let markup = layout::page(
        "Try this change",
        Some(visitor),
        html! {
            @if running { meta http-equiv="refresh" content="2"; }
            p { a href=(campaign_path(&replay.profile, "/edit")) { "Back to the change, to save it" } }
            h1 { "Try this change on " (replay.profile) }
            p.muted { "The change was tried on the campaign's own past conversations. Nothing was sent, booked or changed for any lead." }
            (results(&replay))
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}
