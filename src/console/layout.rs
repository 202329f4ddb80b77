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
                    @if let Some(why) = &v.replica_paused {
                        p.notice.refused role="alert" {
                            "Replication to object storage is paused: " (why)
                            ". Serving goes on; see GET /v1/admin/replica."
                        }
                    }
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
                    li { a href="/console/webchats" { "Web chats" } }
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

/// Zones (or their areas, ending in `/`) of the countries that write times on a
/// 12-hour clock: the United States, Canada, Australia, New Zealand, India, the
/// Philippines, Pakistan, Bangladesh, Egypt, Saudi Arabia.
const TWELVE_HOUR_ZONES: [&str; 31] = [
    "US/",
    "Canada/",
    "Australia/",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Los_Angeles",
    "America/Phoenix",
    "America/Anchorage",
    "America/Boise",
    "America/Detroit",
    "America/Indiana/",
    "America/Kentucky/",
    "America/North_Dakota/",
    "America/Juneau",
    "America/Adak",
    "Pacific/Honolulu",
    "America/Toronto",
    "America/Vancouver",
    "America/Edmonton",
    "America/Winnipeg",
    "America/Halifax",
    "America/St_Johns",
    "America/Regina",
    "Pacific/Auckland",
    "Asia/Kolkata",
    "Asia/Calcutta",
    "Asia/Manila",
    "Asia/Karachi",
    "Asia/Dhaka",
    "Africa/Cairo",
];

/// Whether the organization of time zone `zone` writes times on a 12-hour clock ("2:05
/// PM"): derived from its zone, which names its country (`TWELVE_HOUR_ZONES`, and
/// Riyadh); elsewhere, and in UTC, 24-hour ("14:05").
pub fn twelve_hour(zone: &str) -> bool {
    zone == "Asia/Riyadh"
        || TWELVE_HOUR_ZONES.iter().any(|z| {
            if z.ends_with('/') {
                zone.starts_with(z)
            } else {
                zone == *z
            }
        })
}

/// The clock part of a time's format in `zone`'s habit.
pub fn clock_format(zone: &str) -> &'static str {
    if twelve_hour(zone) {
        "%-I:%M %p"
    } else {
        "%H:%M"
    }
}

/// `micros` as "2026-11-24 2:05 PM CST" (a 12-hour zone) or "2026-11-24 14:05 CET" in
/// `zone` (UTC when unknown).
pub fn local(micros: i64, zone: &str) -> String {
    use chrono::TimeZone;
    let Some(utc) = chrono::Utc.timestamp_micros(micros).single() else {
        return crate::time::format(micros);
    };
    let clock = clock_format(zone);
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => utc
            .with_timezone(&tz)
            .format(&format!("%Y-%m-%d {clock} %Z"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_follow_the_zone_s_country_habit() {
        // 2026-11-24 20:05 UTC.
        let at = 1_795_550_700_000_000;
        assert_eq!(local(at, "America/Chicago"), "2026-11-24 2:05 PM CST");
        assert_eq!(local(at, "Europe/Berlin"), "2026-11-24 21:05 CET");
        assert_eq!(local(at, ""), "2026-11-24 20:05 UTC");
        assert!(twelve_hour("America/Indiana/Indianapolis"));
        assert!(!twelve_hour("America/Sao_Paulo"));
    }
}
