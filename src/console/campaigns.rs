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
    let profiles = read.campaign_names(org)?;
    let mut rows = Vec::with_capacity(profiles.len());
    for campaign in &profiles {
        rows.push((
            campaign,
            campaigns::stats(&read, org, &campaign.id)?,
            read.campaign_paused(org, &campaign.id)?,
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
                p.notice { "No campaign yet. A campaign is the steps that reach your leads (texts, emails, calls) and the instructions your assistant answers them with." }
            } @else {
                div.table-wrap {
                    table.cards {
                        thead { tr {
                            th scope="col" { "Campaign" } th scope="col" { "Enrolled" } th scope="col" { "Active" }
                            th scope="col" { "Finished" } th scope="col" { "Stopped" } th scope="col" { "Replied" }
                            th scope="col" { "Hot" } th scope="col" { "Qualified" } th scope="col" { "Handed off" }
                            th scope="col" { "Opted out" } th scope="col" { "Meetings booked" }
                        } }
                        tbody {
                            @for (campaign, s, paused) in &rows {
                                @let enrolled = n(&s["enrolled"]);
                                tr {
                                    td data-label="Campaign" {
                                        a href=(campaign_path(&campaign.id, "")) { (campaign.label) }
                                        @if *paused { " " span.badge.attention { "Paused" } }
                                    }
                                    td data-label="Enrolled" { (enrolled) }
                                    td data-label="Active" { (n(&s["active"])) }
                                    td data-label="Finished" { (n(&s["finished"])) }
                                    td data-label="Stopped" { (stopped_total(s)) }
                                    @for rate in Rate::ALL {
                                        td data-label=(rate_label(rate)) { (share(n(&s[rate.wire()]), enrolled)) }
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
    let label = read.profile_label(org, name)?;
    let label = label.as_deref().unwrap_or(name);
    let (waits, more) = waiting::campaign_waits(&read, org, name, chrono::Utc::now(), WAIT_BOUND)?;
    let at_least = if more { "at least " } else { "" };
    let admin = visitor.user.role.at_least(crate::store::rows::Role::Admin);
    let empty = Vec::new();
    let steps = stats["steps"].as_array().unwrap_or(&empty);
    let days = stats["days"].as_array().unwrap_or(&empty);
    let markup = layout::page(
        label,
        Some(visitor),
        html! {
            p { a href="/console/campaigns" { "All campaigns" } }
            h1 { (label) @if paused { " " span.badge.attention { "Paused" } } }
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
            (cards(&stats))
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
                table.cards {
                    caption.muted { "Leads per step; \u{201c}Replies after\u{201d} counts each lead once, an opt-out not" }
                    thead { tr {
                        th scope="col" { "Step" } th scope="col" { "Channel" } th scope="col" { "Reached" }
                        th scope="col" { "Sent" } th scope="col" { "Delivered" } th scope="col" { "Blocked" }
                        th scope="col" { "Failed" } th scope="col" { "Replies after" }
                    } }
                    tbody {
                        @for s in steps {
                            tr {
                                td data-label="Step" { (n(&s["step"])) }
                                td data-label="Channel" { (channel_words(s["channel"].as_str().unwrap_or_default())) }
                                td data-label="Reached" { (n(&s["reached"])) }
                                td data-label="Sent" { (n(&s["sent"])) }
                                td data-label="Delivered" { (n(&s["delivered"])) }
                                td data-label="Blocked" { (n(&s["blocked"])) }
                                td data-label="Failed" { (n(&s["failed"])) }
                                td data-label="Replies after" { (n(&s["repliesAfter"])) }
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

/// A channel's wire name (`sms`) in words ("SMS").
fn channel_words(wire: &str) -> &str {
    match wire {
        "sms" => "SMS",
        "email" => "Email",
        "voice" => "Voice",
        other => other,
    }
}

/// A rate's label, as the list's column and the page's card name it.
fn rate_label(rate: Rate) -> &'static str {
    match rate {
        Rate::Replied => "Replied",
        Rate::Hot => "Hot",
        Rate::Qualified => "Qualified",
        Rate::HandedOff => "Handed off",
        Rate::OptedOut => "Opted out",
    }
}

/// The campaign's numbers as cards: a label, the count, and its share of the enrolled.
fn cards(stats: &Value) -> Markup {
    let enrolled = n(&stats["enrolled"]);
    let mut items: Vec<(String, u64)> = vec![
        ("Enrolled".into(), enrolled),
        ("Active".into(), n(&stats["active"])),
        ("Paused".into(), n(&stats["paused"])),
        ("Finished".into(), n(&stats["finished"])),
        ("Stopped".into(), stopped_total(stats)),
    ];
    for rate in Rate::ALL {
        items.push((rate_label(rate).into(), n(&stats[rate.wire()])));
    }
    items.push(("Meetings booked".into(), n(&stats["meetingsBooked"])));
    if let Some(stopped) = stats["stopped"].as_object() {
        for (reason, count) in stopped {
            if n(count) > 0 {
                let words = crate::store::rows::StopReason::parse(reason).map_or_else(
                    || reason.replace('_', " "),
                    |r| {
                        let words = r.words();
                        // "Opted out" → "opted out", keeping "DNC" as it is.
                        let mut chars = words.chars();
                        chars.next().map_or_else(String::new, |first| {
                            first.to_lowercase().chain(chars).collect()
                        })
                    },
                );
                items.push((format!("Stopped: {words}"), n(count)));
            }
        }
    }
    html! {
        ul.cards aria-label="Numbers" {
            @for (label, count) in &items {
                li.card {
                    span.card-label { (label) }
                    span.card-count { (count) }
                    @if label != "Enrolled" && enrolled > 0 {
                        span.card-share { ((count * 100 + enrolled / 2) / enrolled) "%" }
                    }
                }
            }
        }
    }
}

/// Sends and replies per day as two bar series, drawn as SVG (no script, no library):
/// a y axis with its ticks (0, half, the top) and an x axis with a date every week,
/// each bar's value above it; the SVG scales to its box's width.
fn chart(days: &[Value]) -> Markup {
    let (width, height) = (600.0_f64, 260.0_f64);
    let (left, right, top_pad, bottom) = (44.0_f64, 8.0_f64, 22.0_f64, 34.0_f64);
    let plot_h = height - top_pad - bottom;
    let most = days
        .iter()
        .map(|d| n(&d["sends"]).max(n(&d["replies"])))
        .max()
        .unwrap_or(0)
        .max(1);
    // A top that halves evenly.
    let top = (most + most % 2) as f64;
    let slot = (width - left - right) / days.len().max(1) as f64;
    let bar = (slot / 2.0 - 1.0).max(1.0);
    let base = height - bottom;
    let mut svg = String::new();
    for tick in [0.0, top / 2.0, top] {
        let y = base - plot_h * tick / top;
        svg.push_str(&format!(
            "<line class=\"grid\" x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"></line><text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            width - right,
            left - 6.0,
            y + 5.0,
            tick as u64
        ));
    }
    for (i, d) in days.iter().enumerate() {
        let x = left + i as f64 * slot;
        let date = d["date"].as_str().unwrap_or_default();
        for (j, key) in ["sends", "replies"].iter().enumerate() {
            let value = n(&d[*key]);
            let h = plot_h * value as f64 / top;
            let bx = x + j as f64 * (bar + 1.0);
            svg.push_str(&format!(
                "<rect class=\"{key}\" x=\"{bx:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\"><title>{date}: {value} {key}</title></rect>",
                base - h,
            ));
            if value > 0 {
                svg.push_str(&format!(
                    "<text class=\"value\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{value}</text>",
                    bx + bar / 2.0,
                    base - h - 3.0
                ));
            }
        }
        // A label every week and on the last day; a weekly one too near the last is
        // left out, so that the last labels never overlap.
        let last = i + 1 == days.len();
        if last || (i % 7 == 0 && i + 4 <= days.len()) {
            let short = date.get(5..).unwrap_or(date);
            svg.push_str(&format!(
                "<line class=\"axis\" x1=\"{:.1}\" y1=\"{base}\" x2=\"{:.1}\" y2=\"{:.1}\"></line><text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{short}</text>",
                x + slot / 2.0,
                x + slot / 2.0,
                base + 4.0,
                x + slot / 2.0,
                base + 22.0
            ));
        }
    }
    html! {
        figure.chart {
            svg viewBox={ "0 0 " (width) " " (height) } role="img" aria-labelledby="chart-title" {
                line x1=(left) y1=(top_pad) x2=(left) y2=(base) class="axis" {}
                line x1=(left) y1=(base) x2=(width - right) y2=(base) class="axis" {}
                (PreEscaped(svg))
            }
            figcaption { span.key.sends { "Sends" } " " span.key.replies { "Replies" } " per day in the organization's time zone; the left axis counts messages" }
        }
    }
}
