//! The console's other pages: the inbox (the organization's conversations, newest
//! activity first), campaigns (each profile and its cadence) and settings (admins: the
//! organization and its people).

use hyper::{Response, StatusCode};
use maud::html;
use serde_json::Value;

use super::layout::{self, badges, lead_name};
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::channel::Owner;
use crate::domain::people::users;
use crate::domain::records::message_shape::MessageShape;
use crate::domain::records::search::{self, LeadFilter};
use crate::error::Result;
use crate::store::{Flow, ReadTx, Reader, Start};

/// Conversations on the inbox page.
const INBOX_ROWS: usize = 50;
/// How much of the last message a row shows.
const PREVIEW_CHARS: usize = 80;

/// The lead's last message: its first 80 characters, channel, time and whether the
/// lead wrote it.
fn last_message(read: &ReadTx, org: &str, lead: &str) -> Result<Option<(String, String, i64)>> {
    let mut last = None;
    let start = Start::AtOrAfter((i64::MIN, String::new(), String::new()));
    read.scan_messages(org, lead, start, |row| {
        if let Some(shape) = MessageShape::of(&row.kind, &row.record.data.0) {
            let text = shape
                .content
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let preview: String = text.chars().take(PREVIEW_CHARS).collect();
            let from = if shape.owner == Owner::Lead {
                ""
            } else {
                "You: "
            };
            last = Some((
                format!("{from}{preview}"),
                shape.channel.as_str().to_string(),
                row.record.created_at,
            ));
        }
        Ok(Flow::Continue)
    })?;
    Ok(last)
}

/// `GET /console/inbox`.
pub fn inbox(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let org = visitor.org();
    let read = state.store.read()?;
    let zone = read.engine_settings(org)?.time_zone;
    let page = search::search(&read, org, &LeadFilter::default(), INBOX_ROWS, None)?;
    let mut rows = Vec::new();
    for found in &page.leads {
        let Some(lead) = read.lead(org, &found.id)? else {
            continue;
        };
        let Some(last) = last_message(&read, org, &found.id)? else {
            continue;
        };
        let handling = read.handling(org, &found.id)?;
        let owner = match handling.owner.as_str() {
            "" => "Assistant".to_string(),
            user => read
                .user(user)?
                .map_or_else(|| "a former user".into(), |u| u.name),
        };
        rows.push((lead, last, owner));
    }
    let markup = layout::page(
        "Inbox",
        Some(visitor),
        html! {
            h1 { "Inbox" }
            @if rows.is_empty() {
                p.notice { "No conversation yet. Messages, emails and calls with leads appear here." }
            } @else {
                div.table-wrap {
                    table.leads {
                        thead { tr {
                            th scope="col" { "Lead" } th scope="col" { "Channel" } th scope="col" { "Last message" }
                            th scope="col" { "Time" } th scope="col" { "Owner" }
                        } }
                        tbody {
                            @for (lead, (preview, channel, at), owner) in &rows {
                                tr {
                                    td data-label="Lead" { a href={ "/console/leads/" (lead.id) } { (lead_name(lead)) } " " (badges(lead.is_hot, lead.is_qualified)) }
                                    td data-label="Channel" { (channel) }
                                    td data-label="Last message" { (preview) }
                                    td data-label="Time" { (layout::time(*at, &zone)) }
                                    td data-label="Owner" { (owner) }
                                }
                            }
                        }
                    }
                }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// `GET /console/campaigns`: each profile with its cadence.
pub fn campaigns(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let org = visitor.org();
    let read = state.store.read()?;
    let profiles = read.profiles(org)?;
    let mut counts = Vec::with_capacity(profiles.len());
    for p in &profiles {
        counts.push(read.facet_count(org, &format!("profile:{}", p.name))?);
    }
    let markup = layout::page(
        "Campaigns",
        Some(visitor),
        html! {
            h1 { "Campaigns" }
            @if profiles.is_empty() {
                p.notice { "No profile yet. A profile (PUT /v1/profiles/{name}) is a campaign: its cadence and its assistant's instructions." }
            }
            @for (p, count) in profiles.iter().zip(&counts) {
                section.panel {
                    h2 { (p.name) }
                    p { a href={ "/console/leads?profile=" (p.name) } { (count) " leads" } }
                    ol {
                        @for step in &p.cadence {
                            li { (step.channel.as_str()) " after " (step.after) ": " (step.text) }
                        }
                    }
                }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// `GET /console/settings` (admins): the organization and its people.
pub fn settings(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let org = visitor.org();
    let read = state.store.read()?;
    let settings = read.engine_settings(org)?;
    let org_name = read.org(org)?.map(|o| o.name).unwrap_or_default();
    let people = users::list(&read, Some(org))?;
    let markup = layout::page(
        "Settings",
        Some(visitor),
        html! {
            h1 { "Settings" }
            section.panel {
                h2 { "Organization" }
                dl.facts {
                    dt { "Name" } dd { (org_name) }
                    dt { "Business" } dd { (settings.business_name) }
                    dt { "Time zone" } dd { @if settings.time_zone.is_empty() { "UTC" } @else { (settings.time_zone) } }
                    dt { "Assistant" } dd { @match &settings.assistant { Some(a) => { (a.model) " at " (a.base_url) }, None => "Not configured" } }
                }
            }
            section.panel {
                h2 { "People" }
                div.table-wrap {
                    table {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Email" } th scope="col" { "Role" } th scope="col" { "Status" } } }
                        tbody {
                            @for u in &people {
                                tr {
                                    td { (u.name) } td { (u.email) } td { (u.role.as_str()) }
                                    td { @if u.disabled_at.is_some() { "Disabled" } @else { "Active" } }
                                }
                            }
                        }
                    }
                }
                p.muted { "Add people with " code { "engaged user create" } "." }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}
