//! The console's other pages: campaigns (each profile and its cadence) and settings
//! (admins: the organization and its people).

use hyper::{Response, StatusCode};
use maud::html;

use super::layout;
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::people::users;
use crate::error::Result;
use crate::store::Reader;

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
