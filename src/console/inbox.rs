//! `/console/inbox`: the conversations, newest activity first, in five tabs ("Needs
//! attention", "Replied", "Mine", "Assistant", "All") with their counts of conversations,
//! each row with who wrote last, its time relative to now, its reasons in words, and in
//! bold when the lead wrote since this person last opened its page; and `/console/events`, the Server-Sent Events stream that tells an open
//! page (inbox, or a lead's) that something of its organization changed.
//!
//! Tabs and counts are facets of the lead search's index (`store::lead_index`), kept in
//! the write that changes them: a count is one row, a tab one range; "Replied" is the
//! range of the last 7 days of `leads_by_reply`, and a person's last view of a lead is
//! one row of `lead_seen` (`record_view`).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Frame;
use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use maud::{html, Markup};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use super::layout::{self, badges, lead_name};
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::attention::Attention;
use crate::domain::people::sessions;
use crate::domain::records::conversation;
use crate::domain::records::search::{self, LeadFilter};
use crate::error::Result;
use crate::store::changes::Commit;
use crate::store::facet::Facet;
use crate::store::rows::{Author, HandlingRecord, LeadRecord, Role};
use crate::store::Reader;
use crate::time::{now_micros, Micros};

/// Conversations on one page of a tab.
const ROWS: usize = 50;
/// How often an idle stream says it is alive (and checks its session).
const HEARTBEAT: Duration = Duration::from_secs(15);
/// Messages a stream may hold for a slow reader before it is dropped.
const STREAM_BUFFER: usize = 16;

/// The inbox's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Attention,
    Replied,
    Mine,
    Assistant,
    All,
}

impl Tab {
    const ALL: [Tab; 5] = [
        Tab::Attention,
        Tab::Replied,
        Tab::Mine,
        Tab::Assistant,
        Tab::All,
    ];

    fn param(self) -> &'static str {
        match self {
            Tab::Attention => "attention",
            Tab::Replied => "replied",
            Tab::Mine => "mine",
            Tab::Assistant => "assistant",
            Tab::All => "all",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Tab::Attention => "Needs attention",
            Tab::Replied => "Replied",
            Tab::Mine => "Mine",
            Tab::Assistant => "Assistant",
            Tab::All => "All",
        }
    }

    /// The facet of the conversations the tab lists; `None` for "Replied", a range of
    /// its own (`search::replied`).
    fn facet(self, user: &str) -> Option<Facet> {
        let conversing = |facet| Some(Facet::Conversing(Box::new(facet)));
        match self {
            Tab::Attention => conversing(Facet::NeedsAttention),
            Tab::Replied => None,
            Tab::Mine => conversing(Facet::Owner(user.to_string())),
            Tab::Assistant => conversing(Facet::Assisted),
            Tab::All => Some(Facet::Conversation),
        }
    }
}

/// Who handles a conversation, as its row's Owner says.
enum Handler {
    Person(String),
    Assistant,
    /// Handed off, or the assistant is off, and no person owns it.
    Unassigned,
}

impl Handler {
    fn words(&self) -> &str {
        match self {
            Handler::Person(name) => name,
            Handler::Assistant => "Assistant",
            Handler::Unassigned => "Unassigned",
        }
    }
}

/// One row of the inbox, read from one snapshot.
struct InboxRow {
    lead: LeadRecord,
    handling: HandlingRecord,
    reasons: Vec<Attention>,
    owner: Handler,
    /// The lead wrote since this person last opened its page.
    unread: bool,
}

/// The inbox's rows of leads `ids`, in that order: each lead with its handling, the
/// reasons it needs attention (computed in the write that last changed it; a reason
/// that ended with time alone is repaired by the notifier's tick, `engine::notices`),
/// who handles it and whether `visitor` has read it.
fn inbox_rows(
    read: &crate::store::ReadTx,
    index: &crate::store::lead_index::Index<'_>,
    visitor: &Visitor,
    ids: &[String],
    assistant: bool,
) -> Result<Vec<InboxRow>> {
    let (org, user) = (visitor.org(), visitor.user.id.as_str());
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(lead) = read.lead(org, id)? else {
            continue;
        };
        let handling = read.handling(org, id)?;
        let reasons = index.attention(id)?;
        let owner = match handling.owner.as_str() {
            "" if handling.handed_off_at.is_some() || !lead.is_ai_on || !assistant => {
                Handler::Unassigned
            }
            "" => Handler::Assistant,
            id => Handler::Person(
                read.user(id)?
                    .map_or_else(|| "a former user".into(), |u| u.name),
            ),
        };
        let unread = conversation::unread(handling.last_inbound_at, index.seen(user, id)?);
        rows.push(InboxRow {
            lead,
            handling,
            reasons,
            owner,
            unread,
        });
    }
    Ok(rows)
}

/// `GET /console/inbox?tab=...&q=...`.
pub fn page(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let tab = get("tab")
        .and_then(|t| Tab::ALL.into_iter().find(|tab| tab.param() == t))
        .unwrap_or(Tab::Attention);
    let q = get("q");
    let org = visitor.org();
    let user = visitor.user.id.as_str();
    let now = now_micros();
    let since = now - search::REPLIED_WINDOW;
    let read = state.store.read()?;
    let index = read.lead_index(org)?;
    let mut counts = Vec::with_capacity(Tab::ALL.len());
    for t in Tab::ALL {
        let count = match t.facet(user) {
            Some(facet) => index.count(&facet)?,
            None => index.count_replied(since)?,
        };
        counts.push((t, count));
    }
    let attention = counts[0].1;
    let conversations = counts
        .iter()
        .find(|(t, _)| *t == Tab::All)
        .map_or(0, |(_, n)| *n);
    let checklist = if conversations == 0 {
        Some(super::checklist::render(&read, visitor, conversations)?)
    } else {
        None
    };
    let settings = read.engine_settings(org)?;
    // Without an assistant nothing answers a lead: no "Assistant" tab, owner or count.
    let assistant = settings.assistant.is_some();
    if !assistant {
        counts.retain(|(t, _)| *t != Tab::Assistant);
    }
    let ids: Vec<String> = match tab.facet(user) {
        Some(facet) => {
            let filter = LeadFilter {
                q: q.clone(),
                facets_extra: vec![facet],
                ..LeadFilter::default()
            };
            let found = search::search(&read, org, &filter, ROWS, None)?;
            found.leads.into_iter().map(|l| l.id).collect()
        }
        None => search::replied(&read, org, q.clone(), since, ROWS)?.0,
    };
    let zone = settings.time_zone;
    let rows = inbox_rows(&read, &index, visitor, &ids, assistant)?;
    let title = if attention > 0 {
        format!("({attention}) Inbox")
    } else {
        "Inbox".to_string()
    };
    let markup = layout::page(
        &title,
        Some(visitor),
        html! {
            h1 { "Inbox" }
            form.toolbar method="get" action="/console/inbox" role="search" {
                input type="hidden" name="tab" value=(tab.param());
                label for="q" { "Search" }
                input #q type="search" name="q" value=[q.as_deref()] placeholder="Name, phone or email";
                button type="submit" { "Search" }
            }
            @if !assistant {
                p.notice role="status" {
                    @if visitor.user.role.at_least(Role::Admin) {
                        "No assistant connected: replies wait for you. A person answers every lead until one is connected in "
                        a href="/console/settings/assistant" { "Settings → Assistant" } "."
                    } @else {
                        "No assistant connected: replies wait for you. A person answers every lead until an admin connects one."
                    }
                }
            }
            @if let Some(checklist) = &checklist { (checklist) }
            div #inbox data-live="" data-attention=(attention) {
                nav.tabs aria-label="Conversations" {
                    ul {
                        @for (t, count) in &counts {
                            li {
                                a href={ "/console/inbox?tab=" (t.param()) } aria-current=[(*t == tab).then_some("page")] {
                                    (t.label()) " " span.count { "(" (count) ")" }
                                }
                            }
                        }
                    }
                }
                (rows_table(&rows, &zone, tab, now))
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// After `visitor` opened lead `lead`'s page, whose newest own message is
/// `last_inbound_at`: records that they saw it, through the writer's next batch,
/// without waiting for it, and only when it is newer than what they saw before.
pub fn record_view(
    state: &AppState,
    visitor: &Visitor,
    lead: &str,
    last_inbound_at: Option<Micros>,
) {
    let org = visitor.org().to_string();
    let user = visitor.user.id.clone();
    let lead = lead.to_string();
    let Some(upto) = last_inbound_at else {
        return;
    };
    let seen = state
        .store
        .read()
        .and_then(|read| read.lead_index(&org)?.seen(&user, &lead));
    match seen {
        Ok(seen) if !conversation::unread(Some(upto), seen) => return,
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, "the lead's last view could not be read");
            return;
        }
    }
    // The answer is not awaited: the page does not wait for the commit.
    if let Err(e) = state
        .store
        .write_queued(move |tx| conversation::mark_seen(tx, &org, &user, &lead, upto))
    {
        tracing::warn!(error = %e, "the lead's view was not recorded");
    }
}

/// Who wrote a row's last message, as its excerpt starts.
fn author_words<'a>(author: &'a Author, lead: &LeadRecord) -> std::borrow::Cow<'a, str> {
    match author {
        Author::Lead => lead_name(lead).into(),
        Author::Assistant => "Assistant".into(),
        Author::Cadence => "Cadence".into(),
        Author::Person(name) => name.as_str().into(),
        Author::Keyword => "Keyword reply".into(),
        Author::Api => "API".into(),
    }
}

/// `at` relative to `now` ("just now", "3 min ago", "2 h ago", "yesterday", "Nov 3",
/// "Nov 3, 2025"), the days as the organization's zone counts them.
pub fn relative(at: Micros, now: Micros, zone: &str) -> String {
    use chrono::{Datelike, TimeZone};
    const MINUTE: Micros = 60 * 1_000_000;
    let elapsed = now - at;
    if elapsed < MINUTE {
        return "just now".into();
    }
    if elapsed < 60 * MINUTE {
        return format!("{} min ago", elapsed / MINUTE);
    }
    let tz: chrono_tz::Tz = zone.parse().unwrap_or(chrono_tz::UTC);
    let (Some(then), Some(today)) = (
        chrono::Utc.timestamp_micros(at).single(),
        chrono::Utc.timestamp_micros(now).single(),
    ) else {
        return layout::local(at, zone);
    };
    let (then, today) = (then.with_timezone(&tz), today.with_timezone(&tz));
    let days = (today.date_naive() - then.date_naive()).num_days();
    match days {
        0 => format!("{} h ago", elapsed / (60 * MINUTE)),
        1 => "yesterday".into(),
        _ if then.year() == today.year() => then.format("%b %-d").to_string(),
        _ => then.format("%b %-d, %Y").to_string(),
    }
}

/// A time as its row shows it: relative, with the absolute time in the zone on hover.
fn ago(at: Micros, now: Micros, zone: &str) -> Markup {
    html! {
        time datetime=(crate::time::format(at)) title=(layout::local(at, zone)) { (relative(at, now, zone)) }
    }
}

fn rows_table(rows: &[InboxRow], zone: &str, tab: Tab, now: Micros) -> Markup {
    if rows.is_empty() {
        let words = match tab {
            Tab::Attention => "Nothing needs you now.",
            Tab::Replied => "No lead wrote in the last 7 days.",
            Tab::Mine => "You own no conversation: take one over from a lead's page.",
            Tab::Assistant => "The assistant is handling no conversation.",
            Tab::All => "No conversation yet. Messages, emails and calls with leads appear here.",
        };
        return html! { p.notice { (words) } };
    }
    html! {
        div.table-wrap {
            table.leads.inbox {
                thead { tr {
                    th scope="col" { "Lead" } th scope="col" { "Channel" } th scope="col" { "Last message" }
                    th scope="col" { "Time" } th scope="col" { "Owner" } th scope="col" { "Why" }
                } }
                tbody {
                    @for row in rows {
                        @let lead = &row.lead;
                        tr.unread[row.unread] data-row="" {
                            td data-label="Lead" {
                                @if row.unread { span.visually-hidden { "Unread: " } }
                                a href={ "/console/leads/" (lead.id) } { (lead_name(lead)) } " " (badges(lead.is_hot, lead.is_qualified))
                            }
                            @match &row.handling.last_message {
                                Some(last) => {
                                    td data-label="Channel" { (last.channel.words()) }
                                    td data-label="Last message" { span.author { (author_words(&last.author, lead)) ":" } " " (last.preview) }
                                    td data-label="Time" { (ago(last.created_at, now, zone)) }
                                }
                                None => {
                                    td data-label="Channel" { "Call" }
                                    td data-label="Last message" {}
                                    td data-label="Time" { (ago(lead.last_activity_at, now, zone)) }
                                }
                            }
                            td data-label="Owner" { (row.owner.words()) }
                            td data-label="Why" {
                                @for reason in &row.reasons { span.badge.attention { (reason.words()) } " " }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A `change` event's data for `org`: `leads`, the ids of its changed leads (an empty
/// list: any may have changed; absent: none did), and `webchats`, its changed web
/// chats (absent: none), each at most 100.
fn changed(commit: &Commit, org: &str) -> Value {
    let mut data = serde_json::Map::new();
    let mut leads: Vec<&str> = commit.leads_of(org).take(101).collect();
    if commit.every_lead || leads.len() > 100 {
        leads.clear();
    }
    if commit.every_lead || !leads.is_empty() {
        data.insert("leads".into(), json!(leads));
    }
    let chats: Vec<&str> = commit.webchats_of(org).take(100).collect();
    if !chats.is_empty() {
        data.insert("webchats".into(), json!(chats));
    }
    Value::Object(data)
}

/// One message of the stream, as its bytes.
fn frame(text: String) -> std::result::Result<Frame<Bytes>, Infallible> {
    Ok(Frame::data(Bytes::from(text)))
}

/// `GET /console/events`: Server-Sent Events for the visitor's organization. `change`
/// (with the changed leads' ids, or none when any may have changed) after every window
/// of commits (`store::changes`, at most 100 ms) that changed one of its leads;
/// `reload` when the stream fell behind (it then ends); `signed-out` when the session
/// ended (it then ends); a comment every 15 s. A `Last-Event-ID` older than the last
/// commit gets one `change` at once, so a page that reconnects catches up.
pub fn stream(state: &AppState, visitor: &Visitor, headers: &HeaderMap) -> Result<Response<Body>> {
    let store = state.store.clone();
    let org = visitor.org().to_string();
    let token_hash = visitor.token_hash;
    let mut commits = store.changes().subscribe();
    let last_seen = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
    tokio::spawn(async move {
        // Event ids count this organization's windows only (`Commit::seq_of`).
        let now_seq = store.changes().last_seq_of(&org);
        let mut opening = "retry: 2000\n\n".to_string();
        if last_seen.is_some_and(|seen| seen < now_seq) {
            opening.push_str(&format!(
                "id: {now_seq}\nevent: change\ndata: {{\"leads\":[]}}\n\n"
            ));
        }
        if tx.try_send(frame(opening)).is_err() {
            return;
        }
        let signed_in = || -> bool {
            store.read().ok().is_some_and(|read| {
                read.session(&token_hash)
                    .ok()
                    .flatten()
                    .is_some_and(|s| sessions::is_valid(&s, now_micros()))
            })
        };
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        heartbeat.tick().await;
        loop {
            let message = tokio::select! {
                commit = commits.recv() => match commit {
                    Ok(commit) => {
                        if commit.sessions_ended && !signed_in() {
                            let _ = tx.try_send(frame("event: signed-out\ndata: {}\n\n".into()));
                            return;
                        }
                        let Some(seq) = commit.seq_of(&org) else {
                            continue;
                        };
                        format!("id: {seq}\nevent: change\ndata: {}\n\n", changed(&commit, &org))
                    }
                    Err(RecvError::Lagged(_)) => {
                        let _ = tx.try_send(frame("event: reload\ndata: {}\n\n".into()));
                        return;
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = heartbeat.tick() => {
                    if !signed_in() {
                        let _ = tx.try_send(frame("event: signed-out\ndata: {}\n\n".into()));
                        return;
                    }
                    ": heartbeat\n\n".to_string()
                }
                _ = tx.closed() => return,
            };
            // A reader this far behind is dropped: it reconnects and catches up.
            if tx.try_send(frame(message)).is_err() {
                return;
            }
        }
    });
    Ok(crate::api::response::event_stream(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_relative_to_now_in_the_organizations_days() {
        let minute = 60 * 1_000_000;
        // 2026-11-26 15:00 UTC, 09:00 in Chicago.
        let now = 1_795_705_200_000_000;
        let zone = "America/Chicago";
        assert_eq!(relative(now - 10_000_000, now, zone), "just now");
        assert_eq!(relative(now - 3 * minute, now, zone), "3 min ago");
        assert_eq!(relative(now - 120 * minute, now, zone), "2 h ago");
        // 23:00 the day before in Chicago: yesterday there, though 10 hours ago.
        assert_eq!(relative(now - 600 * minute, now, zone), "yesterday");
        assert_eq!(relative(now - 23 * 24 * 60 * minute, now, zone), "Nov 3");
        assert_eq!(
            relative(now - 400 * 24 * 60 * minute, now, zone),
            "Oct 22, 2025"
        );
    }

    #[test]
    fn a_lead_message_is_unread_until_seen() {
        assert!(conversation::unread(Some(5), None));
        assert!(conversation::unread(Some(5), Some(4)));
        assert!(!conversation::unread(Some(5), Some(5)));
        assert!(!conversation::unread(None, None));
    }
}
