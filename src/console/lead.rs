//! `/console/leads/{id}`: one lead's page (header, engagement, timeline, reply box,
//! actions) and what a person does there: take over, hand back, reply, ask for a
//! suggested reply, and the agents' other actions.
//!
//! Each action is one write job calling the domain function the API's operation calls,
//! plus the `USER_ACTION` event naming the person (`domain::contact::handling`); a
//! reply goes through the gate and the provider exactly as `POST .../messages` does,
//! with `origin: "human"`.

use hyper::{Response, StatusCode};
use maud::{html, Markup};
use serde_json::{json, Value};

use super::form::Form;
use super::layout::{self, badges, csrf_field, lead_name};
use super::respond;
use super::routes::LeadAction;
use super::session::Visitor;
use super::timeline;
use crate::api::outreach;
use crate::api::response::Body;
use crate::api::AppState;
use crate::channel::Channel;
use crate::domain::contact::compliance::Outcome;
use crate::domain::contact::controls;
use crate::domain::contact::handling::{self, Action};
use crate::domain::records::{dnc, leads, messages};
use crate::error::{Error, Result};
use crate::store::rows::{EngagementState, LeadRecord, Origin, Role};
use crate::store::Reader;

/// What a page shows besides the lead: a refusal beside a field, a notice, a draft.
#[derive(Debug, Default)]
pub struct Shown {
    /// (field, message): a refusal shown beside its field.
    pub error: Option<(&'static str, String)>,
    pub notice: Option<String>,
    /// The reply box's text, channel and subject (a draft, or what was refused).
    pub message: String,
    pub channel: Option<Channel>,
    pub subject: String,
}

/// `GET /console/leads/{id}`.
pub async fn page(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    shown: Shown,
) -> Result<Response<Body>> {
    let status = if shown.error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let org = visitor.org();
    let read = state.store.read()?;
    // Another organization's lead answers exactly like a missing one.
    let lead = read
        .lead(org, id)?
        .ok_or_else(|| Error::lead_not_found(id))?;
    let engagement = read.engagement(org, id)?;
    let handling = read.handling(org, id)?;
    let settings = read.engine_settings(org)?;
    let zone = settings.time_zone.clone();
    let owner = match handling.owner.as_str() {
        "" => None,
        user => Some(
            read.user(user)?
                .map_or_else(|| "a former user".to_string(), |u| u.name),
        ),
    };
    let steps = match &engagement {
        Some(e) if !e.profile.is_empty() => read.profile(org, &e.profile)?.map(|p| p.cadence.len()),
        _ => None,
    };
    // The Subject starts as `Re: <their subject>` when the lead wrote an email.
    let re_subject = match read.last_lead_email(org, id)? {
        Some(theirs) => theirs
            .data
            .0
            .get("content")
            .and_then(|c| messages::thread_of(c).1)
            .and_then(|s| messages::reply_subject(&s)),
        None => None,
    };
    let (rows, total) = timeline::events(&read, org, id)?;
    let ctx = timeline::Context {
        read: &read,
        org,
        lead: &lead,
        zone: &zone,
        link_key: &state.recordings.link_key,
        link_ttl_secs: state.recordings.link_ttl_secs,
    };
    let items = timeline::render(&ctx, &rows)?;
    let can_act = visitor.user.role.at_least(Role::Agent) && lead.deleted_at.is_none();
    let name = lead_name(&lead);
    let e = engagement.clone().unwrap_or_default();
    let markup = layout::page(
        &name,
        Some(visitor),
        html! {
            p { a href="/console/leads" { "All leads" } }
            h1 { (name) " " (badges(lead.is_hot, lead.is_qualified)) }
            @if lead.deleted_at.is_some() { p.notice { "This lead was deleted." } }
            @if let Some(notice) = &shown.notice { p.notice role="status" { (notice) } }
            div.columns {
                div {
                    h2 { "Conversation" }
                    @if total > rows.len() {
                        p.muted { "The latest " (rows.len()) " of " (total) " events." }
                    }
                    div #timeline data-live="" data-lead=(lead.id) {
                        (items)
                        @if let (Some(failed), true) = (&handling.failed_send, can_act) {
                            section.panel aria-labelledby="failed-send" {
                                h2 #failed-send { "A send failed" }
                                p { "A message to this lead ended failed or unknown. Send it again as a new message, or dismiss it." }
                                div.actions {
                                    form method="post" action=(action_url(&lead, LeadAction::RetrySend)) {
                                        (csrf_field(visitor))
                                        input type="hidden" name="message" value=(failed.event_id);
                                        button type="submit" { "Send again" }
                                    }
                                    form method="post" action=(action_url(&lead, LeadAction::DismissFailure)) {
                                        (csrf_field(visitor))
                                        input type="hidden" name="message" value=(failed.event_id);
                                        button.secondary type="submit" { "Dismiss" }
                                    }
                                }
                            }
                        }
                    }
                    @if can_act { (reply_box(visitor, &lead, &shown, re_subject.as_deref())) }
                }
                div {
                    section.panel aria-labelledby="about" {
                        h2 #about { "Lead" }
                        dl.facts {
                            dt { "Phone" } dd { (lead.phone) }
                            dt { "Email" } dd { (lead.email) }
                            dt { "Profile" } dd { (lead.customer_profile) }
                            dt { "SMS" } dd { (subscribed(lead.subscriptions.sms_unsubscribed)) }
                            dt { "Voice" } dd { (subscribed(lead.subscriptions.voice_unsubscribed)) }
                            dt { "Email" } dd { (subscribed(lead.subscriptions.email_unsubscribed)) }
                            dt { "DNC" } dd { @if !lead.phone.is_empty() && read.dnc_contains(org, &lead.phone)? { "On the DNC list" } @else { "No" } }
                            dt { "Tags" } dd { @for t in &lead.tags { span.badge.state { (t.name) } " " } }
                            dt { "Assistant" } dd { @if lead.is_ai_on { "Assistant on" } @else { "Assistant off" } }
                            dt { "Owner" } dd { (owner.clone().unwrap_or_else(|| "Assistant".into())) }
                            @if handling.handed_off_at.is_some() { dt { "Handed off" } dd { "Yes" } }
                        }
                        @if can_act { (handling_buttons(visitor, &lead)) }
                    }
                    section.panel aria-labelledby="engagement" {
                        h2 #engagement { "Engagement" }
                        dl.facts {
                            dt { "State" } dd { (super::leads::state_words(engagement.as_ref())) }
                            @if let (Some(steps), EngagementState::Active | EngagementState::Paused) = (steps, e.state) {
                                dt { "Step" } dd { "Step " (e.next_step + 1) " of " (steps) }
                            }
                            @if let Some((due, _)) = e.step_job.as_ref().filter(|_| matches!(e.state, EngagementState::Active | EngagementState::Paused)) {
                                dt { "Next step" } dd { (layout::time(*due, &zone)) }
                            }
                            @if let Some(reason) = e.stopped_reason.filter(|_| e.state == EngagementState::Stopped) {
                                dt { "Stop reason" } dd { (reason.as_str()) }
                            }
                            @if !e.last_error.is_empty() {
                                dt { "Last error" } dd.error { (e.last_error) }
                            }
                        }
                    }
                    @if can_act { (other_actions(visitor, &lead)) }
                }
            }
        },
    );
    Ok(respond::html(status, markup))
}

fn subscribed(unsubscribed: bool) -> &'static str {
    if unsubscribed {
        "Unsubscribed"
    } else {
        "Subscribed"
    }
}

fn action_url(lead: &LeadRecord, action: LeadAction) -> String {
    format!("/console/leads/{}/{}", lead.id, action.segment())
}

fn handling_buttons(v: &Visitor, lead: &LeadRecord) -> Markup {
    html! {
        div.actions {
            @if lead.is_ai_on {
                form method="post" action=(action_url(lead, LeadAction::TakeOver)) {
                    (csrf_field(v)) button type="submit" { "Take over" }
                }
            } @else {
                form method="post" action=(action_url(lead, LeadAction::HandBack)) {
                    (csrf_field(v)) button type="submit" { "Hand back" }
                }
            }
        }
    }
}

/// The reply form; its Subject is what was refused, else `re_subject` (the answer to
/// the lead's own newest email).
fn reply_box(v: &Visitor, lead: &LeadRecord, shown: &Shown, re_subject: Option<&str>) -> Markup {
    let subject = match (shown.subject.as_str(), re_subject) {
        ("", Some(re)) => re,
        (subject, _) => subject,
    };
    let channel = shown.channel.unwrap_or(if lead.phone.is_empty() {
        Channel::Email
    } else {
        Channel::Sms
    });
    let error_for = |field: &str| {
        shown
            .error
            .as_ref()
            .filter(|(f, _)| *f == field)
            .map(|(_, m)| m.clone())
    };
    let message_error = error_for("message");
    let subject_error = error_for("subject");
    html! {
        h2 #reply-heading { "Reply" }
        @if lead.is_ai_on { p.muted { "Sending takes the lead over from the assistant first." } }
        form.stack method="post" action=(action_url(lead, LeadAction::Reply)) aria-labelledby="reply-heading" {
            (csrf_field(v))
            div {
                label for="message" { "Message" }
                textarea #message name="message" aria-describedby=[message_error.as_ref().map(|_| "message-error")] { (shown.message) }
                @if let Some(error) = &message_error { p #message-error .field-error { (error) } }
            }
            fieldset.choice {
                legend { "Channel" }
                input #channel-sms type="radio" name="channel" value="sms" checked[channel != Channel::Email];
                label for="channel-sms" { "SMS" }
                input #channel-email type="radio" name="channel" value="email" checked[channel == Channel::Email];
                label for="channel-email" { "Email" }
            }
            div {
                label for="subject" { "Subject" }
                input #subject type="text" name="subject" value=(subject) aria-describedby=[subject_error.as_ref().map(|_| "subject-error")];
                @if let Some(error) = &subject_error { p #subject-error .field-error { (error) } }
            }
            div.actions {
                button type="submit" { "Send" }
                button.secondary type="submit" formaction=(action_url(lead, LeadAction::Suggest)) { "Suggest a reply" }
            }
        }
    }
}

fn other_actions(v: &Visitor, lead: &LeadRecord) -> Markup {
    let form = |action: LeadAction, body: Markup| {
        html! {
            form method="post" action=(action_url(lead, action)) { (csrf_field(v)) (body) }
        }
    };
    html! {
        section.panel aria-labelledby="actions" {
            h2 #actions { "Actions" }
            div.actions {
                @if !lead.is_hot { (form(LeadAction::MarkHot, html! { button.secondary type="submit" { "Mark hot" } })) }
                @if !lead.is_qualified { (form(LeadAction::MarkQualified, html! { button.secondary type="submit" { "Mark qualified" } })) }
                @if !lead.phone.is_empty() { (form(LeadAction::AddToDnc, html! { button.secondary type="submit" { "Add to DNC" } })) }
            }
            (form(LeadAction::Unsubscribe, html! {
                label for="unsub-channel" { "Unsubscribe from" }
                div.actions {
                    select #unsub-channel name="channel" { (channel_options()) }
                    button.secondary type="submit" { "Unsubscribe" }
                }
            }))
            (form(LeadAction::Resubscribe, html! {
                label for="resub-channel" { "Resubscribe to" }
                div.actions {
                    select #resub-channel name="channel" { (channel_options()) }
                    button.secondary type="submit" { "Resubscribe" }
                }
            }))
            (form(LeadAction::AddTag, html! {
                label for="tag-name" { "New tag" }
                div.actions {
                    input #tag-name type="text" name="tag" required;
                    button.secondary type="submit" { "Add tag" }
                }
            }))
            @if !lead.tags.is_empty() {
                (form(LeadAction::RemoveTag, html! {
                    label for="tag-remove" { "Tag to remove" }
                    div.actions {
                        select #tag-remove name="tag" {
                            @for t in &lead.tags { option value=(t.id) { (t.name) } }
                        }
                        button.secondary type="submit" { "Remove tag" }
                    }
                }))
            }
            form method="post" action=(action_url(lead, LeadAction::Delete)) data-confirm="Delete this lead?" {
                (csrf_field(v))
                div {
                    input #confirm-delete type="checkbox" name="confirm" value="yes" required;
                    label for="confirm-delete" { "Yes, delete this lead" }
                }
                button.danger type="submit" { "Delete lead" }
            }
        }
    }
}

fn channel_options() -> Markup {
    html! {
        option value="all" { "Every channel" }
        option value="sms" { "SMS" }
        option value="voice" { "Voice" }
        option value="email" { "Email" }
    }
}

/// The channels a form's `channel` names (`all`: every reachable one).
fn channels(form: &Form) -> Result<Option<Vec<Channel>>> {
    match form.text("channel") {
        "" | "all" => Ok(None),
        one => Channel::parse(one)
            .map(|c| Some(vec![c]))
            .ok_or_else(|| Error::invalid_field("channels")),
    }
}

/// `POST /console/leads/{id}/{action}`.
pub async fn act(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    action: LeadAction,
    form: Form,
) -> Result<Response<Body>> {
    let caller = visitor.caller();
    let person = visitor.person();
    let lead_id = id.to_string();
    let back = format!("/console/leads/{id}");
    let store = &state.store;
    let done = match action {
        LeadAction::TakeOver => {
            store
                .write(move |tx| handling::take_over(tx, &caller, &person, &lead_id).map(drop))
                .await
        }
        LeadAction::HandBack => {
            store
                .write(move |tx| handling::hand_back(tx, &caller, &person, &lead_id).map(drop))
                .await
        }
        LeadAction::Reply => return reply(state, visitor, id, &form).await,
        LeadAction::RetrySend => return send_again(state, visitor, id, &form).await,
        LeadAction::DismissFailure => {
            let event_id = form.text("message").to_string();
            store
                .write(move |tx| {
                    handling::clear_failed_send(
                        tx,
                        &caller,
                        &person,
                        &lead_id,
                        &event_id,
                        Action::DismissFailure,
                    )
                    .map(drop)
                })
                .await
        }
        LeadAction::Suggest => return suggest(state, visitor, id, &form).await,
        LeadAction::Unsubscribe | LeadAction::Resubscribe => {
            let requested = channels(&form)?;
            let unsubscribe = action == LeadAction::Unsubscribe;
            store
                .write(move |tx| {
                    let requested = requested.as_deref();
                    let applied = if unsubscribe {
                        controls::unsubscribe(tx, &caller, &lead_id, requested)?
                    } else {
                        controls::resubscribe(tx, &caller, &lead_id, requested)?
                    };
                    let names: Vec<&str> = applied.iter().map(|c| c.as_str()).collect();
                    let act = if unsubscribe {
                        Action::Unsubscribe
                    } else {
                        Action::Resubscribe
                    };
                    let lead = leads::live_lead(tx, &caller, &lead_id)?;
                    handling::record_action(
                        tx,
                        &caller.org_id,
                        lead,
                        &person,
                        act,
                        json!({"channels": names}),
                    )
                    .map(drop)
                })
                .await
        }
        LeadAction::AddToDnc => {
            store
                .write(move |tx| {
                    let lead = leads::live_lead(tx, &caller, &lead_id)?;
                    if lead.phone.is_empty() {
                        return Err(Error::BadRequest("Lead has no phone".into()));
                    }
                    let phone = lead.phone.clone();
                    handling::record_action(
                        tx,
                        &caller.org_id,
                        lead,
                        &person,
                        Action::AddToDnc,
                        json!({"phone": phone}),
                    )?;
                    dnc::register(tx, &caller, &phone)
                })
                .await
        }
        LeadAction::AddTag => {
            let name = form.text("tag").to_string();
            let tag_id = crate::providers::model::tools::tag_id(&name);
            let tags = leads::tags(&json!([{"id": tag_id, "name": name}]))?;
            store
                .write(move |tx| {
                    let lead = controls::add_tags(tx, &caller, &lead_id, tags.clone())?;
                    handling::record_action(
                        tx,
                        &caller.org_id,
                        lead,
                        &person,
                        Action::AddTag,
                        json!({"tag": name, "tagId": tag_id}),
                    )
                    .map(drop)
                })
                .await
        }
        LeadAction::RemoveTag => {
            let tag = form.text("tag").to_string();
            store
                .write(move |tx| {
                    let lead =
                        controls::remove_tags(tx, &caller, &lead_id, std::slice::from_ref(&tag))?;
                    handling::record_action(
                        tx,
                        &caller.org_id,
                        lead,
                        &person,
                        Action::RemoveTag,
                        json!({"tag": tag}),
                    )
                    .map(drop)
                })
                .await
        }
        LeadAction::MarkHot | LeadAction::MarkQualified => {
            let mut patch = leads::LeadPatch::default();
            let act = if action == LeadAction::MarkHot {
                patch.is_hot = Some(true);
                Action::MarkHot
            } else {
                patch.is_qualified = Some(true);
                Action::MarkQualified
            };
            store
                .write(move |tx| {
                    let lead = leads::update(tx, &caller, &lead_id, patch.clone())?;
                    handling::record_action(tx, &caller.org_id, lead, &person, act, json!({}))
                        .map(drop)
                })
                .await
        }
        LeadAction::Delete => {
            if form.text("confirm") != "yes" {
                let shown = Shown {
                    notice: Some("Tick \u{201c}Yes, delete this lead\u{201d} to delete it.".into()),
                    ..Shown::default()
                };
                return page(state, visitor, id, shown).await;
            }
            store
                .write(move |tx| {
                    let lead = leads::live_lead(tx, &caller, &lead_id)?;
                    handling::record_action(
                        tx,
                        &caller.org_id,
                        lead,
                        &person,
                        Action::Delete,
                        json!({}),
                    )?;
                    leads::delete(tx, &caller, &lead_id).map(drop)
                })
                .await?;
            return Ok(respond::redirect("/console/leads"));
        }
    };
    match done {
        Ok(()) => Ok(respond::redirect(&back)),
        // A refusal (a lead without that channel, a tag too long) shows on the page.
        Err(e @ (Error::BadRequest(_) | Error::InvalidField { .. } | Error::Conflict(_))) => {
            let shown = Shown {
                notice: Some(e.to_string()),
                ..Shown::default()
            };
            page(state, visitor, id, shown).await
        }
        Err(e) => Err(e),
    }
}

/// The reply box's fields as the API's message body, parsed by the API's own parser.
fn reply_input(form: &Form) -> (Result<messages::MessageInput>, Shown) {
    let text = form.get("message").unwrap_or_default().to_string();
    let subject = form.text("subject").to_string();
    let channel = match form.text("channel") {
        "email" => Channel::Email,
        _ => Channel::Sms,
    };
    let shown = Shown {
        message: text.clone(),
        channel: Some(channel),
        subject: subject.clone(),
        ..Shown::default()
    };
    if text.trim().is_empty() {
        return (
            Err(Error::BadRequest("Write a message to send.".into())),
            shown,
        );
    }
    let mut content = json!({"text": text});
    if channel == Channel::Email {
        content["subject"] = json!(subject);
    }
    let body = json!({"owner": "user", "channel": channel.as_str(), "content": content});
    let parsed = match body {
        Value::Object(map) => messages::MessageInput::from_json(map),
        _ => Err(Error::Internal("a message body is an object".into())),
    };
    (parsed, shown)
}

/// A refusal of the reply box, beside its field: the subject's beside the subject, any
/// other beside the message.
fn beside_field(e: &Error) -> (&'static str, String) {
    let field = match e.refused_field() {
        Some("content.subject") => "subject",
        _ => "message",
    };
    (field, e.to_string())
}

async fn reply(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let (input, mut shown) = reply_input(form);
    let input = match input {
        Ok(input) => input,
        Err(e) if e.is_bad_request() => {
            shown.error = Some(beside_field(&e));
            return page(state, visitor, id, shown).await;
        }
        Err(e) => return Err(e),
    };
    let caller = visitor.caller();
    let person = visitor.person();
    // A person and the assistant never talk over each other: sending takes over first.
    {
        let (caller, person, lead_id) = (caller.clone(), person.clone(), id.to_string());
        state
            .store
            .write(move |tx| handling::take_over(tx, &caller, &person, &lead_id).map(drop))
            .await?;
    }
    match outreach::send_message(state, caller, id, &input, Origin::Human(person)).await {
        Ok(Outcome::Sent(_)) => Ok(respond::redirect(&format!("/console/leads/{id}"))),
        Ok(Outcome::Blocked(event)) => {
            let reason = event
                .record
                .data
                .0
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("blocked");
            shown.notice = Some(format!("Not sent. Blocked: {reason}"));
            shown.error = None;
            page(state, visitor, id, shown).await
        }
        Err(e) if e.is_bad_request() => {
            shown.error = Some(beside_field(&e));
            page(state, visitor, id, shown).await
        }
        Err(e) => Err(e),
    }
}

/// "Send again": the failed message's text goes out as a new message from this person,
/// through the gate (never a silent re-send of the old one).
async fn send_again(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let caller = visitor.caller();
    let person = visitor.person();
    let event_id = form.text("message").to_string();
    let failed = {
        let (caller, person, lead_id, event_id) = (
            caller.clone(),
            person.clone(),
            id.to_string(),
            event_id.clone(),
        );
        state
            .store
            .write(move |tx| {
                handling::clear_failed_send(
                    tx,
                    &caller,
                    &person,
                    &lead_id,
                    &event_id,
                    Action::RetrySend,
                )
            })
            .await
    };
    let (failed, content) = match failed {
        Ok(found) => found,
        Err(e @ Error::Conflict(_)) => {
            let shown = Shown {
                notice: Some(e.to_string()),
                ..Shown::default()
            };
            return page(state, visitor, id, shown).await;
        }
        Err(e) => return Err(e),
    };
    let body =
        json!({"owner": "user", "channel": failed.kind.channel().as_str(), "content": content});
    let Value::Object(body) = body else {
        return Err(Error::Internal("a message body is an object".into()));
    };
    let input = messages::MessageInput::from_json(body)?;
    match outreach::send_message(state, caller, id, &input, Origin::Human(person)).await? {
        Outcome::Sent(_) => Ok(respond::redirect(&format!("/console/leads/{id}"))),
        Outcome::Blocked(event) => {
            let reason = event
                .record
                .data
                .0
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("blocked");
            let shown = Shown {
                notice: Some(format!("Not sent. Blocked: {reason}")),
                ..Shown::default()
            };
            page(state, visitor, id, shown).await
        }
    }
}

/// "Suggest a reply": the assistant's draft fills the Message box; nothing is sent,
/// applied or stored.
async fn suggest(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let (_, mut shown) = reply_input(form);
    let channel = shown.channel.unwrap_or(Channel::Sms);
    // The lead must be this organization's before the model hears of it.
    if state.store.read()?.lead(visitor.org(), id)?.is_none() {
        return Err(Error::lead_not_found(id));
    }
    match state.engine.suggest(visitor.org(), id, channel).await? {
        Ok(draft) => {
            shown.message = draft;
            shown.notice =
                Some("A suggested reply is in the Message box. Nothing was sent.".into());
        }
        Err(reason) => shown.notice = Some(reason),
    }
    page(state, visitor, id, shown).await
}
