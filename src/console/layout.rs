//! The shell every console page shares: the document head (the embedded stylesheet
//! and script, the CSRF token for scripts), a skip link, the navigation bar and
//! `<main>`; plus small pieces many pages use (the CSRF field, times, badges).

use maud::{html, Markup, DOCTYPE};

use super::assets;
use super::session::Visitor;
use crate::store::rows::Role;

/// A whole page titled `title` ("<title> · engaged"), with the navigation bar when a
/// person is signed in.
pub fn page(title: &str, visitor: Option<&Visitor>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(v) = visitor {
                    meta name="csrf-token" content=(v.session.csrf);
                }
                title { (title) " · engaged" }
                link rel="icon" type="image/svg+xml" href=(assets::FAVICON_PATH);
                link rel="stylesheet" href=(assets::CSS_PATH);
                script src=(assets::JS_PATH) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                @if let Some(v) = visitor {
                    (nav(v))
                }
                main #main {
                    (content)
                }
            }
        }
    }
}

fn nav(v: &Visitor) -> Markup {
    html! {
        header.top {
            nav aria-label="Main" {
                span.brand { "engaged" }
                ul {
                    li { a href="/console/inbox" { "Inbox" } }
                    li { a href="/console/leads" { "Leads" } }
                    li { a href="/console/campaigns" { "Campaigns" } }
                    li { a href="/console/meetings" { "Meetings" } }
                    @if v.user.role.at_least(Role::Agent) {
                        li { a href="/console/notifications" { "Notifications" } }
                    }
                    @if v.user.role.at_least(Role::Admin) {
                        li { a href="/console/settings" { "Settings" } }
                    }
                }
                div.who {
                    span.user { (v.user.name) }
                    form method="post" action="/console/logout" {
                        (csrf_field(v))
                        button.link type="submit" { "Sign out" }
                    }
                }
            }
        }
    }
}

/// The hidden CSRF field every form that changes something carries.
pub fn csrf_field(v: &Visitor) -> Markup {
    html! { input type="hidden" name="csrf" value=(v.session.csrf); }
}

/// A time for people, in the organization's time zone (`zone`, an IANA name; empty
/// or unknown: UTC), with the machine-readable value in `<time datetime>`.
pub fn time(micros: i64, zone: &str) -> Markup {
    let iso = crate::time::format(micros);
    html! { time datetime=(iso) { (local(micros, zone)) } }
}

/// `micros` as "2026-11-24 14:05 CST" in `zone` (UTC when unknown).
pub fn local(micros: i64, zone: &str) -> String {
    use chrono::TimeZone;
    let Some(utc) = chrono::Utc.timestamp_micros(micros).single() else {
        return crate::time::format(micros);
    };
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => utc
            .with_timezone(&tz)
            .format("%Y-%m-%d %H:%M %Z")
            .to_string(),
        Err(_) => utc.format("%Y-%m-%d %H:%M UTC").to_string(),
    }
}

/// The "Hot" / "Qualified" badges of a lead.
pub fn badges(hot: bool, qualified: bool) -> Markup {
    html! {
        @if hot { span.badge.hot { "Hot" } " " }
        @if qualified { span.badge.qualified { "Qualified" } }
    }
}

/// A lead's name for people: first and last, else its email, phone or id.
pub fn lead_name(lead: &crate::store::rows::LeadRecord) -> String {
    lead.display_name()
}
