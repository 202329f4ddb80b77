//! "Add lead" (agents and admins): `GET /console/new-lead` shows a form for one lead
//! (first and last name, phone, email, campaign); `POST` creates it through the same
//! domain path as the API's `POST /v1/leads` (`leads::create`: the duplicate, DNC and
//! field rules, enrolment in the campaign) and redirects to the new lead's page. A
//! phone without `+` is read in the organization's default country, as an import
//! reads it. A refusal shows the form again with its words beside the field.

use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout::{self, csrf_field};
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::engagement::reactions::React;
use crate::domain::records::leads::{self, LeadInput, LeadPatch, LeadText};
use crate::error::{Error, Result};
use crate::phone::{self, Country};
use crate::store::Reader;

/// The form's fields: (name, label, input type, the lead field it sets).
const FIELDS: [(&str, &str, &str, LeadText); 4] = [
    ("firstName", "First name", "text", LeadText::FirstName),
    ("lastName", "Last name", "text", LeadText::LastName),
    ("phone", "Phone", "tel", LeadText::Phone),
    ("email", "Email", "email", LeadText::Email),
];

const PATH: &str = "/console/new-lead";

/// `GET /console/new-lead`: the form, or, after a refused `POST`, the form as it was
/// typed with the refusal (Post/Redirect/Get), once.
pub fn page(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let markup = match state.flash.take::<Refused>(visitor.token_hash, PATH) {
        Some(Refused(pairs, refusal)) => {
            form_page(state, visitor, &Form::from_pairs(pairs), Some(refusal))?
        }
        None => form_page(state, visitor, &Form::default(), None)?,
    };
    Ok(respond::html(StatusCode::OK, markup))
}

/// What a refused `POST` typed and why, for the form the refusal redirects to.
struct Refused(Vec<(String, String)>, Refusal);

/// The form again with `refusal` beside its field, after the redirect.
fn refuse(state: &AppState, visitor: &Visitor, form: &Form, refusal: Refusal) -> Response<Body> {
    let typed = form
        .pairs()
        .iter()
        .filter(|(name, _)| name != "csrf")
        .cloned()
        .collect();
    state
        .flash
        .put(visitor.token_hash, PATH, Refused(typed, refusal));
    respond::redirect(PATH)
}

/// `POST /console/new-lead`: creates the lead, then its page; a refusal, the form again.
pub async fn create(state: &AppState, visitor: &Visitor, form: &Form) -> Result<Response<Body>> {
    let input = match read(state, visitor, form) {
        Ok(input) => input,
        Err(refusal) => return Ok(refuse(state, visitor, form, refusal)),
    };
    let caller = visitor.caller();
    let created = state
        .store
        .write(move |tx| leads::create(tx, &caller, input.clone()).react(tx))
        .await;
    match created {
        Ok(lead) => Ok(respond::redirect(&format!("/console/leads/{}", lead.id))),
        Err(Error::Conflict(message)) => {
            let refusal = match message.strip_prefix("Lead exists: ") {
                Some(id) => Refusal {
                    field: "",
                    words: "A lead with this phone or email exists already.".into(),
                    existing: Some(id.to_string()),
                },
                None => Refusal {
                    field: "phone",
                    words: message,
                    existing: None,
                },
            };
            Ok(refuse(state, visitor, form, refusal))
        }
        Err(Error::InvalidField { message, .. }) | Err(Error::BadRequest(message)) => {
            // A bound of the lead's rules (a name too long): its words, above the form.
            let refusal = Refusal {
                field: "",
                words: message,
                existing: None,
            };
            Ok(refuse(state, visitor, form, refusal))
        }
        Err(other) => Err(other),
    }
}

/// Why the form was refused: the field (its name; empty: the whole form), the words,
/// and the lead that already has the phone or email.
struct Refusal {
    field: &'static str,
    words: String,
    existing: Option<String>,
}

/// The lead the form describes, or the first field it cannot take.
fn read(
    state: &AppState,
    visitor: &Visitor,
    form: &Form,
) -> std::result::Result<LeadInput, Refusal> {
    let refuse = |field: &'static str, words: &str| Refusal {
        field,
        words: words.to_string(),
        existing: None,
    };
    let country = state
        .store
        .read()
        .and_then(|read| read.engine_settings(visitor.org()))
        .ok()
        .and_then(|s| Country::parse(&s.default_country));
    let mut fields = LeadPatch::default();
    for (name, _, _, field) in FIELDS {
        let value = form.text(name).trim();
        if value.is_empty() {
            continue;
        }
        let value = if field == LeadText::Phone {
            match phone::read(value, country) {
                Ok(e164) => e164,
                Err(phone::Unreadable::NoCountry) => {
                    return Err(refuse(
                        "phone",
                        "Write the number with its country code, like +1 512 555 0101 (or set the default country in Settings).",
                    ))
                }
                Err(phone::Unreadable::Invalid) => {
                    return Err(refuse("phone", "Use a phone number like (512) 555-0101."))
                }
            }
        } else {
            value.to_string()
        };
        if fields.set_text(field, &value).is_err() {
            let words = match field {
                LeadText::Email => "Use an email address like dana@example.com.",
                _ => "This cannot be a lead's value.",
            };
            return Err(refuse(name_of(field), words));
        }
    }
    if fields.text(LeadText::Phone).is_none() && fields.text(LeadText::Email).is_none() {
        return Err(refuse("phone", "Give a phone number or an email address."));
    }
    let campaign = form.text("campaign").trim();
    if !campaign.is_empty()
        && fields
            .set_text(LeadText::CustomerProfile, campaign)
            .is_err()
    {
        return Err(refuse("campaign", "Choose a campaign from the list."));
    }
    Ok(LeadInput { id: None, fields })
}

/// The form's name of a lead field.
fn name_of(field: LeadText) -> &'static str {
    FIELDS
        .iter()
        .find(|(_, _, _, f)| *f == field)
        .map_or("", |(name, _, _, _)| *name)
}

fn form_page(
    state: &AppState,
    visitor: &Visitor,
    form: &Form,
    refusal: Option<Refusal>,
) -> Result<Markup> {
    let profiles = state.store.read()?.campaign_names(visitor.org())?;
    let error_for = |name: &str| {
        refusal
            .as_ref()
            .filter(|r| r.field == name)
            .map(|r| r.words.clone())
    };
    let chosen = form.text("campaign");
    Ok(layout::page(
        "Add lead",
        Some(visitor),
        html! {
            p { a href="/console/leads" { "All leads" } }
            h1 { "Add lead" }
            @if let Some(r) = refusal.as_ref().filter(|r| r.field.is_empty()) {
                p.error role="alert" {
                    (r.words)
                    @if let Some(id) = &r.existing { " " a href={ "/console/leads/" (id) } { "Open that lead" } }
                }
            }
            form.stack method="post" action="/console/new-lead" {
                (csrf_field(visitor))
                @for (name, label, kind, _) in FIELDS {
                    div {
                        label for=(name) { (label) }
                        @let error = error_for(name);
                        input id=(name) name=(name) type=(kind) value=(form.text(name))
                            aria-invalid=[error.as_ref().map(|_| "true")]
                            aria-describedby=[error.as_ref().map(|_| format!("{name}-error"))];
                        @if let Some(error) = error { p.field-error id={ (name) "-error" } { (error) } }
                    }
                }
                div {
                    label for="campaign" { "Campaign" }
                    select #campaign name="campaign" {
                        option value="" selected[chosen.is_empty()] { "Not in a campaign" }
                        @for p in &profiles {
                            option value=(p.id) selected[chosen == p.id.as_str()] { (p.label) }
                        }
                    }
                    @if let Some(error) = error_for("campaign") { p.field-error { (error) } }
                }
                div.actions { button type="submit" { "Add lead" } }
            }
        },
    ))
}
