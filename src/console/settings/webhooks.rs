//! The settings page's "Webhooks" section: the organization's endpoints through
//! `records::webhook_endpoints` (added from an `EndpointInput` with the signing secret
//! shown once, removed) and each one's recent deliveries (retried by hand).

use maud::{html, Markup};

use super::{Outcome, Shown};
use crate::api::AppState;
use crate::console::form::Form;
use crate::console::layout;
use crate::console::routes::SettingsAction;
use crate::console::session::Visitor;
use crate::domain::records::webhook_endpoints::{self, EndpointInput};
use crate::error::Result;
use crate::store::rows::{DeliveryRecord, DeliveryState, EndpointRecord};
use crate::store::ReadTx;
use crate::webhooks::WebhookEvent;

/// Deliveries shown per webhook endpoint.
const RECENT_DELIVERIES: usize = 10;

/// What the section shows: each endpoint of the organization with its recent
/// deliveries, times in its zone.
pub(super) struct WebhooksSectionView {
    hooks: Vec<(EndpointRecord, Vec<DeliveryRecord>)>,
    zone: String,
}

impl WebhooksSectionView {
    pub(super) fn of(read: &ReadTx, org_id: &str, zone: &str) -> Result<WebhooksSectionView> {
        let mut hooks = Vec::new();
        for endpoint in read
            .all_webhook_endpoints()?
            .into_iter()
            .filter(|e| e.org_id == org_id)
        {
            let recent = read.recent_deliveries(&endpoint.id, RECENT_DELIVERIES)?;
            hooks.push((endpoint, recent));
        }
        Ok(WebhooksSectionView {
            hooks,
            zone: zone.to_string(),
        })
    }

    pub(super) fn view(&self, visitor: &Visitor) -> Markup {
        html! {
            section.panel aria-labelledby="webhooks-heading" {
                h2 #webhooks-heading { "Webhooks" }
                @if self.hooks.is_empty() { p.muted { "No endpoint yet." } }
                @for (endpoint, recent) in &self.hooks {
                    h3 { (endpoint.url) @if endpoint.disabled_at.is_some() { " " span.badge.attention { "Disabled: " (endpoint.disabled_reason) } } }
                    p.muted {
                        @if endpoint.events.is_empty() { "Every event" } @else { (endpoint.events.join(", ")) }
                    }
                    form.inline method="post" action=(super::path(SettingsAction::RemoveWebhook)) data-confirm={ "Remove the endpoint " (endpoint.url) "?" } {
                        (layout::csrf_field(visitor))
                        input type="hidden" name="id" value=(endpoint.id);
                        button.secondary type="submit" { "Remove endpoint " (endpoint.url) }
                    }
                    @if recent.is_empty() { p.muted { "No delivery yet." } } @else {
                        div.table-wrap {
                            table.cards {
                                thead { tr { th scope="col" { "Event" } th scope="col" { "Created" } th scope="col" { "State" } th scope="col" { "Last attempt" } th scope="col" { "Actions" } } }
                                tbody {
                                    @for d in recent {
                                        tr {
                                            td data-label="Event" { (d.event) } td data-label="Created" { (layout::time(d.created_at, &self.zone)) }
                                            td data-label="State" { (format!("{:?}", d.state).to_lowercase()) " (" (d.attempts.len()) " attempts)" }
                                            td data-label="Last attempt" { @if let Some(a) = d.attempts.last() {
                                                @match a.status { Some(status) => { "HTTP " (status) }, None => { (a.error) } }
                                            } }
                                            td {
                                                @if d.state != DeliveryState::Delivered {
                                                    form.inline method="post" action=(super::path(SettingsAction::RetryDelivery)) {
                                                        (layout::csrf_field(visitor))
                                                        input type="hidden" name="endpoint" value=(endpoint.id);
                                                        input type="hidden" name="delivery" value=(d.id);
                                                        button.secondary type="submit" { "Retry" }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                h3 { "Add an endpoint" }
                form.stack method="post" action=(super::path(SettingsAction::AddWebhook)) {
                    (layout::csrf_field(visitor))
                    div {
                        label for="webhook-url" { "Endpoint URL" }
                        input #webhook-url type="url" name="url" required placeholder="https://crm.example/hooks/engaged";
                    }
                    fieldset.choice {
                        legend { "Events (none checked: every event)" }
                        @for event in WebhookEvent::ALL {
                            span.pair {
                                input id={ "event-" (event.as_str()) } type="checkbox" name="events" value=(event.as_str());
                                label for={ "event-" (event.as_str()) } { (event.as_str()) }
                            }
                            " "
                        }
                    }
                    div.actions { button type="submit" { "Add endpoint" } }
                }
            }
        }
    }
}

/// `POST /console/settings/webhooks`: a new endpoint, its signing secret shown once; a
/// refusal shown on the page (400).
pub(super) async fn add(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let caller = visitor.caller();
    let policy = state.engine.http_client().policy();
    let added = match EndpointInput::new(form.text("url"), form.all("events")) {
        Ok(input) => {
            state
                .store
                .write(move |tx| {
                    webhook_endpoints::create_endpoint(tx, &caller, input.clone(), policy)
                })
                .await
        }
        Err(e) => Err(e),
    };
    match added {
        Ok(endpoint) => Ok(Outcome::shown(Shown::secret(
            format!(
                "Deliveries to {} are signed with this secret (webhook-signature).",
                endpoint.url
            ),
            endpoint.secret,
        ))),
        Err(e) if e.is_bad_request() => Ok(Outcome::Show(Shown::notice(e.to_string()))),
        Err(e) => Err(e),
    }
}

/// `POST /console/settings/remove-webhook`.
pub(super) async fn remove(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let caller = visitor.caller();
    let id = form.text("id").to_string();
    state
        .store
        .write(move |tx| webhook_endpoints::delete_endpoint(tx, &caller, &id))
        .await?;
    Ok(Outcome::shown(Shown::notice("The endpoint is removed.")))
}

/// `POST /console/settings/retry-delivery`: the delivery queued again now.
pub(super) async fn retry(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Outcome> {
    let caller = visitor.caller();
    let (endpoint, delivery) = (
        form.text("endpoint").to_string(),
        form.text("delivery").to_string(),
    );
    state
        .store
        .write(move |tx| {
            webhook_endpoints::retry_delivery(tx, &caller, &endpoint, &delivery).map(drop)
        })
        .await?;
    Ok(Outcome::shown(Shown::notice(
        "The delivery is queued again.",
    )))
}
