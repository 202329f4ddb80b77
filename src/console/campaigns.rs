//! `/console/campaigns`: a row per profile with its numbers (enrolled, by state, the
//! rates as counts and percentages), and `/console/campaigns/{profile}`: the funnel by
//! step, the sends and replies of the last 30 days as an SVG chart drawn here, and the
//! cadence. The numbers are `domain::engagement::campaigns`', the same as
//! `GET /v1/profiles/{name}/stats`.

use hyper::{Response, StatusCode};
use maud::{html, Markup, PreEscaped};
use serde_json::Value;

use super::layout;
use super::respond;
use super::routes::campaign_path;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::engagement::campaigns;
use crate::domain::engagement::waiting;
use crate::error::Result;
use crate::store::facet::Rate;
use crate::store::Reader;

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// "12 (40%)": a count and its share of `of`.
fn share(count: u64, of: u64) -> String {
    if of == 0 {
        return count.to_string();
    }
    format!("{count} ({}%)", (count * 100 + of / 2) / of)
}

fn stopped_total(stats: &Value) -> u64 {
    stats["stopped"]
        .as_object()
        .map_or(0, |reasons| reasons.values().map(n).sum())
}

/// `GET /console/campaigns`.
pub fn list(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let org = visitor.org();
    let read = state.store.read()?;
    // Names only: a profile is read by `stats`, one at a time.
    let profiles = read.profile_names(org)?;
    let mut rows = Vec::with_capacity(profiles.len());
    for name in &profiles {
        rows.push((
            campaigns::stats(&read, org, name)?,
            read.campaign_paused(org, name)?,
        ));
    }
    let markup = layout::page(
        "Campaigns",
        Some(visitor),
        html! {
            h1 { "Campaigns" }
            @if visitor.user.role.at_least(crate::store::rows::Role::Admin) {
                p { a href="/console/campaigns/new" { "New campaign" } }
            }
            @if profiles.is_empty() {
                p.notice { "No campaign yet. A profile (PUT /v1/profiles/{name}) is a campaign: its cadence and its assistant's instructions." }
            } @else {
                div.table-wrap {
                    table {
                        thead { tr {
                            th scope="col" { "Campaign" } th scope="col" { "Enrolled" } th scope="col" { "Active" }
                            th scope="col" { "Finished" } th scope="col" { "Stopped" } th scope="col" { "Replied" }
                            th scope="col" { "Hot" } th scope="col" { "Qualified" } th scope="col" { "Handed off" }
                            th scope="col" { "Opted out" } th scope="col" { "Meetings booked" }
                        } }
                        tbody {
                            @for (s, paused) in &rows {
                                @let enrolled = n(&s["enrolled"]);
                                @let name = s["profile"].as_str().unwrap_or_default();
                                tr {
                                    td data-label="Campaign" {
                                        a href=(campaign_path(name, "")) { (name) }
                                        @if *paused { " " span.badge.attention { "Paused" } }
                                    }
                                    td data-label="Enrolled" { (enrolled) }
                                    td data-label="Active" { (n(&s["active"])) }
                                    td data-label="Finished" { (n(&s["finished"])) }
                                    td data-label="Stopped" { (stopped_total(s)) }
                                    @for rate in Rate::ALL {
                                        td data-label=(rate.wire()) { (share(n(&s[rate.wire()]), enrolled)) }
                                    }
                                    td data-label="Meetings booked" { (share(n(&s["meetingsBooked"]), enrolled)) }
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

/// The most leads a campaign's page reads to count why its steps wait; past it, the
/// counts say "at least".
const WAIT_BOUND: usize = 1000;

/// `GET /console/campaigns/{profile}`.
pub fn page(state: &AppState, visitor: &Visitor, name: &str) -> Result<Response<Body>> {
    let org = visitor.org();
    let read = state.store.read()?;
    let stats = campaigns::stats(&read, org, name)?;
    let profile = read
        .profile(org, name)?
        .ok_or_else(|| crate::error::Error::NotFound("Profile not found".into()))?;
    let paused = read.campaign_paused(org, name)?;
    let (waits, more) = waiting::campaign_waits(&read, org, name, chrono::Utc::now(), WAIT_BOUND)?;
    let at_least = if more { "at least " } else { "" };
    let admin = visitor.user.role.at_least(crate::store::rows::Role::Admin);
    let enrolled = n(&stats["enrolled"]);
    let empty = Vec::new();
    let steps = stats["steps"].as_array().unwrap_or(&empty);
    let days = stats["days"].as_array().unwrap_or(&empty);
    let markup = layout::page(
        name,
        Some(visitor),
        html! {
            p { a href="/console/campaigns" { "All campaigns" } }
            h1 { (name) @if paused { " " span.badge.attention { "Paused" } } }
            @if admin {
                p { a href=(campaign_path(name, "/edit")) { "Edit campaign" } }
                form method="post" action=(campaign_path(name, if paused { "/resume" } else { "/pause" })) {
                    (layout::csrf_field(visitor))
                    @if paused {
                        p { "No step of this campaign runs while it is paused." }
                        button type="submit" { "Resume campaign" }
                    } @else {
                        button.secondary type="submit" { "Pause campaign" }
                    }
                }
            }
            dl.facts {
                dt { "Enrolled" } dd { (enrolled) }
                dt { "Active" } dd { (n(&stats["active"])) }
                dt { "Paused" } dd { (n(&stats["paused"])) }
                dt { "Finished" } dd { (n(&stats["finished"])) }
                @if let Some(stopped) = stats["stopped"].as_object() {
                    @for (reason, count) in stopped {
                        @if n(count) > 0 { dt { "Stopped: " (reason.replace('_', " ")) } dd { (n(count)) } }
                    }
                }
                dt { "Replied" } dd { (share(n(&stats[Rate::Replied.wire()]), enrolled)) }
                dt { "Hot" } dd { (share(n(&stats[Rate::Hot.wire()]), enrolled)) }
                dt { "Qualified" } dd { (share(n(&stats[Rate::Qualified.wire()]), enrolled)) }
                dt { "Handed off" } dd { (share(n(&stats[Rate::HandedOff.wire()]), enrolled)) }
                dt { "Opted out" } dd { (share(n(&stats[Rate::OptedOut.wire()]), enrolled)) }
                dt { "Meetings booked" } dd { (share(n(&stats["meetingsBooked"]), enrolled)) }
            }
            h2 { "Waiting" }
            @if waits.is_empty() {
                p { "No step of this campaign waits." }
            } @else {
                dl.facts {
                    @for (reason, count) in &waits {
                        dt { (reason.words()) } dd { (at_least) (count) }
                    }
                }
            }
            h2 { "Funnel" }
            div.table-wrap {
                table {
                    thead { tr {
                        th scope="col" { "Step" } th scope="col" { "Channel" } th scope="col" { "Reached" }
                        th scope="col" { "Sent" } th scope="col" { "Delivered" } th scope="col" { "Blocked" }
                        th scope="col" { "Failed" } th scope="col" { "Replies after" }
                    } }
                    tbody {
                        @for s in steps {
                            tr {
                                td { (n(&s["step"])) } td { (s["channel"].as_str().unwrap_or_default()) }
                                td { (n(&s["reached"])) } td { (n(&s["sent"])) } td { (n(&s["delivered"])) }
                                td { (n(&s["blocked"])) } td { (n(&s["failed"])) } td { (n(&s["repliesAfter"])) }
                            }
                        }
                    }
                }
            }
            h2 #chart-title { "Last 30 days" }
            (chart(days))
            h2 { "Cadence" }
            ol {
                @for step in &profile.cadence {
                    li { (step.channel.as_str()) " after " (step.after) ": " (step.text) }
                }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// `POST /console/campaigns/{profile}/pause|resume` (admins), then back to its page.
pub async fn pause(
    state: &AppState,
    visitor: &Visitor,
    name: &str,
    paused: bool,
) -> Result<Response<Body>> {
    campaigns::set_paused(&state.store, &visitor.caller(), name, paused).await?;
    Ok(respond::redirect(&campaign_path(name, "")))
}

/// Sends and replies per day as two bar series, drawn as SVG (no script, no library).
fn chart(days: &[Value]) -> Markup {
    let (width, height, pad) = (600.0_f64, 160.0_f64, 20.0_f64);
    let top = days
        .iter()
        .map(|d| n(&d["sends"]).max(n(&d["replies"])))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let slot = (width - 2.0 * pad) / days.len().max(1) as f64;
    let bar = (slot / 2.0 - 1.0).max(1.0);
    let mut bars = String::new();
    for (i, d) in days.iter().enumerate() {
        let x = pad + i as f64 * slot;
        for (j, (key, class)) in [("sends", "sends"), ("replies", "replies")]
            .iter()
            .enumerate()
        {
            let value = n(&d[*key]) as f64;
            let h = (height - 2.0 * pad) * value / top;
            let date = d["date"].as_str().unwrap_or_default();
            bars.push_str(&format!(
                "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\"><title>{date}: {} {key}</title></rect>",
                x + j as f64 * (bar + 1.0),
                height - pad - h,
                value,
            ));
        }
    }
    let first = days
        .first()
        .and_then(|d| d["date"].as_str())
        .unwrap_or_default();
    let last = days
        .last()
        .and_then(|d| d["date"].as_str())
        .unwrap_or_default();
    html! {
        figure.chart {
            svg viewBox={ "0 0 " (width) " " (height) } role="img" aria-labelledby="chart-title" {
                line x1=(pad) y1=(height - pad) x2=(width - pad) y2=(height - pad) class="axis" {}
                (PreEscaped(bars))
                text x=(pad) y=(height - 4.0) class="label" { (first) }
                text x=(width - pad) y=(height - 4.0) text-anchor="end" class="label" { (last) }
                text x=(pad) y="12" class="label" { "max " (top) }
            }
            figcaption { span.key.sends { "Sends" } " " span.key.replies { "Replies" } }
        }
    }
}
