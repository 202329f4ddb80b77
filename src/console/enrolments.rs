//! The bulk "Add to campaign" of the leads list (agents and admins): the leads list's
//! form names the filtered set's count and a campaign; `/console/enrolments/new` asks
//! to confirm, naming the count and the campaign; the confirmation creates one job
//! (`domain::conversation::bulk_enrolment::start`, the set captured then) and sends the
//! person to `/console/enrolments/{id}`, its progress and then its result ("Added N,
//! skipped M (...)"), kept live while it runs.

use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout::{self, csrf_field};
use super::respond;
use super::routes::campaign_path;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::conversation::bulk_enrolment::{self, result_words, thousands};
use crate::domain::engagement::add_to_campaign::campaign_ready;
use crate::domain::records::search::{self, LeadFilter};
use crate::error::{Error, Result};
use crate::store::enrolments::enrolment_job;
use crate::store::rows::CampaignName;
use crate::store::Reader;

/// The fields of the forms here that are not the filter's.
const OWN_FIELDS: [&str; 2] = ["campaign", "csrf"];

/// The filter a form or query carries beside its own fields.
fn filter_of(pairs: &[(String, String)]) -> Result<LeadFilter> {
    LeadFilter::from_params(
        pairs
            .iter()
            .filter(|(k, _)| !OWN_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

/// The filter's parameters as hidden fields, to carry it through a form.
fn hidden_filter(filter: &LeadFilter) -> Markup {
    html! {
        @for (name, value) in filter.params() {
            input type="hidden" name=(name) value=(value);
        }
    }
}

/// The leads list's bulk action: "Add 1,234 leads to a campaign" with a campaign select
/// (GET to the confirmation).
pub fn bulk_form(filter: &LeadFilter, total: u64, profiles: &[CampaignName]) -> Markup {
    let leads = if total == 1 { "lead" } else { "leads" };
    html! {
        form.filters method="get" action="/console/enrolments/new" aria-label="Add to campaign" {
            (hidden_filter(filter))
            div {
                label for="bulk-campaign" { "Campaign" }
                select #bulk-campaign name="campaign" required {
                    @for p in profiles { option value=(p.id) { (p.label) } }
                }
            }
            div { button type="submit" disabled[total == 0 || profiles.is_empty()] {
                "Add " (thousands(total)) " " (leads) " to a campaign"
            } }
        }
    }
}

const CONFIRM_PATH: &str = "/console/enrolments/new";

/// Why an "Add" was refused, for the confirmation it redirects to.
struct Refused(String);

/// `GET /console/enrolments/new?<filter>&campaign=NAME`: the confirmation, naming the
/// count and the campaign (a campaign that cannot take leads is said in words).
pub fn confirm(state: &AppState, visitor: &Visitor, query: &str) -> Result<Response<Body>> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|_| Error::BadRequest("The address's query could not be read".into()))?;
    let filter = filter_of(&pairs)?;
    let campaign = pairs
        .iter()
        .find(|(k, _)| k == "campaign")
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let org = visitor.org();
    let read = state.store.read()?;
    let total = search::search(&read, org, &filter, 1, None)?.total;
    // A refused "Add" (Post/Redirect/Get) says why here, once; else whether the
    // campaign can take leads.
    let refused = state
        .flash
        .take::<Refused>(visitor.token_hash, CONFIRM_PATH);
    let refusal = match refused {
        Some(Refused(words)) => Some(words),
        None => campaign_ready(&read, org, &campaign)
            .err()
            .map(|skip| skip.error("", &campaign).to_string()),
    };
    let label = read
        .profile_label(org, &campaign)?
        .unwrap_or_else(|| campaign.clone());
    let back = format!(
        "/console/leads?{}",
        serde_urlencoded::to_string(filter.params()).unwrap_or_default()
    );
    let leads = if total == 1 { "lead" } else { "leads" };
    let count = thousands(total);
    let markup = layout::page(
        "Add to campaign",
        Some(visitor),
        html! {
            p { a href=(back) { "Back to leads" } }
            h1 { "Add to campaign" }
            @if let Some(refusal) = &refusal {
                p.error role="alert" { (refusal) }
            } @else if total == 0 {
                p.notice { "No lead matches this filter." }
            } @else {
                p { "Add " strong { (count) } " " (leads) " to the campaign " strong { (label) } "? "
                    "Each starts at step 1; a lead already in a campaign, on the DNC list or unsubscribed everywhere is skipped." }
                form method="post" action="/console/enrolments" {
                    (csrf_field(visitor))
                    (hidden_filter(&filter))
                    input type="hidden" name="campaign" value=(campaign);
                    div.actions {
                        button type="submit" { "Add " (count) " " (leads) " to " (label) }
                        a href=(back) { "Cancel" }
                    }
                }
            }
        },
    );
    let status = if refusal.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(respond::html(status, markup))
}

/// `POST /console/enrolments`: the job created for the filtered set as it is now; the
/// person goes to its page.
pub async fn create(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Response<Body>> {
    let pairs: Vec<(String, String)> = form.pairs().to_vec();
    let filter = filter_of(&pairs)?;
    let campaign = form.text("campaign");
    let started = bulk_enrolment::start(
        &state.store,
        &visitor.caller(),
        &visitor.person(),
        campaign,
        &filter,
    )
    .await;
    match started {
        Ok(id) => Ok(respond::redirect(&format!("/console/enrolments/{id}"))),
        Err(e) if e.is_bad_request() || matches!(e, Error::NotFound(_) | Error::Conflict(_)) => {
            // Back to the confirmation (Post/Redirect/Get), which says why.
            let mut params = filter.params();
            params.push(("campaign", campaign.to_string()));
            let back = format!(
                "{CONFIRM_PATH}?{}",
                serde_urlencoded::to_string(params).unwrap_or_default()
            );
            state
                .flash
                .put(visitor.token_hash, CONFIRM_PATH, Refused(e.to_string()));
            Ok(respond::redirect(&back))
        }
        Err(e) => Err(e),
    }
}

/// `GET /console/enrolments/{id}`: the job's progress, then its result.
pub fn page(state: &AppState, visitor: &Visitor, id: &str) -> Result<Response<Body>> {
    let read = state.store.read()?;
    let job = enrolment_job(&read, visitor.org(), id)?
        .ok_or_else(|| Error::NotFound("Not found".into()))?;
    let running = job.finished_at.is_none();
    let label = read
        .profile_label(visitor.org(), &job.profile)?
        .unwrap_or_else(|| job.profile.clone());
    let markup = layout::page(
        "Add to campaign",
        Some(visitor),
        html! {
            @if running { meta http-equiv="refresh" content="2"; }
            p { a href="/console/leads" { "Back to leads" } }
            h1 { "Add to campaign " a href=(campaign_path(&job.profile, "")) { (label) } }
            div #enrolment data-live="" role="status" {
                @if running {
                    p { "Adding leads: " (thousands(job.done())) " of " (thousands(job.total)) " done." }
                    progress max=(job.total) value=(job.done()) aria-label="Progress" {}
                } @else {
                    p.notice { (result_words(&job)) }
                }
            }
            p.muted { "Asked by " (job.user_name) " · " (layout::time(job.created_at, &read.engine_settings(visitor.org())?.time_zone)) }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}
