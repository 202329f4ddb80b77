//! A person's own notifications page, and the list of notification emails sent that
//! Settings shows too.

use hyper::{Response, StatusCode};
use maud::html;

use maud::Markup;

use super::form::Form;
use super::layout;
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::people::users;
use crate::error::Result;
use crate::store::rows::NotificationRecord;
use crate::store::Reader;

/// Notification emails a page lists.
pub(super) const NOTIFICATIONS_SHOWN: usize = 50;

/// The notification emails sent (or, with the sandbox provider, logged), newest first.
pub(super) fn notification_list(sent: &[NotificationRecord], zone: &str) -> Markup {
    html! {
        @if sent.is_empty() {
            p.notice { "No notification yet. When a lead needs attention, the people who turned notifications on get an email; they are listed here." }
        } @else {
            div.table-wrap {
                table.cards {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "To" } th scope="col" { "Subject" }
                        th scope="col" { "Lead" } th scope="col" { "Outcome" }
                    } }
                    tbody {
                        @for n in sent {
                            tr {
                                td data-label="Time" { (layout::time(n.sent_at, zone)) }
                                td data-label="To" { (n.to) }
                                td data-label="Subject" { (n.subject) }
                                td data-label="Lead" { a href={ "/console/leads/" (n.lead_id) } { (n.lead_id) } }
                                td data-label="Outcome" { @match n.outcome.as_str() {
                                    "logged" => "Logged (sandbox)",
                                    "sent" => "Sent",
                                    other => (other),
                                } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /console/notifications` (agents and admins): the person's own setting, and the
/// organization's recent notification emails.
pub fn notifications(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let saved = match query {
        "saved=on" => Some(true),
        "saved=off" => Some(false),
        _ => None,
    };
    let org = visitor.org();
    let read = state.store.read()?;
    let zone = read.engine_settings(org)?.time_zone;
    let sent = read.notifications(org, NOTIFICATIONS_SHOWN)?;
    let on = read.user(&visitor.user.id)?.is_some_and(|u| u.notify);
    let markup = layout::page(
        "Notifications",
        Some(visitor),
        html! {
            h1 { "Notifications" }
            @if let Some(on) = saved {
                p.notice role="status" { @if on { "Saved: you will get an email when a lead needs attention." } @else { "Saved: no more notification emails." } }
            }
            section.panel {
                h2 { "Your notifications" }
                form method="post" action="/console/notifications" {
                    (layout::csrf_field(visitor))
                    p {
                        input #notify type="checkbox" name="notify" value="on" checked[on];
                        " "
                        label for="notify" { "Email me when a lead needs attention" }
                    }
                    p.muted { "One email per lead per hour at most, to " (visitor.user.email) ", through the organization's email provider. While the console is open, the inbox can also show browser notifications." }
                    button type="submit" { "Save" }
                }
            }
            section.panel {
                h2 { "Recent notifications" }
                (notification_list(&sent, &zone))
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

/// `POST /console/notifications`: turns the person's own notification emails on
/// (`notify=on`) or off, then back to the page, which says it saved.
pub async fn set_notifications(
    state: &AppState,
    visitor: &Visitor,
    form: &Form,
) -> Result<Response<Body>> {
    let on = form.get("notify") == Some("on");
    let user = visitor.user.id.clone();
    state
        .store
        .write(move |tx| users::set_notify(tx, &user, on).map(drop))
        .await?;
    let saved = if on { "on" } else { "off" };
    Ok(respond::redirect(&format!(
        "/console/notifications?saved={saved}"
    )))
}
