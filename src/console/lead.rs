//! `/console/leads/{id}`: one lead's page (header, engagement, consent ledger,
//! timeline, reply box, actions) and what a person does there: take over, hand back,
//! reply, ask for a suggested reply, record consent given on the phone, and the agents'
//! other actions; `/console/leads/{id}/consent.csv`, the consent record's download.
//!
//! Each action is one write job calling its `domain::conversation::handling` function, which
//! holds its rules, calls the domain function the API's operation calls and records the
//! `USER_ACTION` event naming the person; a
//! reply goes through the gate and the provider exactly as `POST .../messages` does
//! (`engine::gate`), with `origin: "human"`.

use hyper::{Response, StatusCode};
use maud::{html, Markup};
use serde_json::{json, Value};

use super::form::Form;
use super::layout::{self, badges, csrf_field, lead_name};
use super::respond;
use super::routes::LeadAction;
use super::session::Visitor;
use super::timeline;
use crate::api::response::Body;
use crate::api::AppState;
use crate::channel::Channel;
use crate::domain::conversation::handling::{self, Command, PersonAction, Subscription};
use crate::domain::conversation::inbound;
use crate::domain::engagement::gate::Outcome;
use crate::domain::engagement::waiting;
use crate::domain::records::consent::{self, ConsentInput, Ledger, ProofPart};
use crate::domain::records::limits::MAX_SMS_SEGMENTS;
use crate::domain::records::{messages, tags};
use crate::error::{Error, Result};
use crate::store::calendars::{CalendarReader, MeetingRecord, MeetingStatus};
use crate::store::rows::{
    CalendarChange, CampaignName, ConsentEntry, ConsentSource, ConsentStatus, EngagementRecord,
    EngagementState, HandlingRecord, HoldRecord, LeadRecord, Origin, Proof, Purpose, RecordedBy,
    Role,
};
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
    /// The "Record consent" form as it was sent (refused): channel, status, purpose,
    /// words.
    pub consent: Option<[String; 4]>,
}

impl Shown {
    /// The refusal shown beside `field`, if it is the one refused.
    fn error_for(&self, field: &str) -> Option<String> {
        self.error
            .as_ref()
            .filter(|(f, _)| *f == field)
            .map(|(_, m)| m.clone())
    }
}

/// `GET /console/leads/{id}`: the page, with what a refused form left for it
/// ([`page`]'s redirect).
pub async fn show(state: &AppState, visitor: &Visitor, id: &str) -> Result<Response<Body>> {
    let shown = state
        .flash
        .take::<Shown>(visitor.token_hash, &page_path(id))
        .unwrap_or_default();
    let view = LeadPageView::read(state, visitor, id)?;
    super::inbox::record_view(state, visitor, id, view.handling.last_inbound_at);
    let name = lead_name(&view.lead);
    let markup = layout::page(&name, Some(visitor), view.view(visitor, &shown));
    Ok(respond::html(StatusCode::OK, markup))
}

fn page_path(id: &str) -> String {
    format!("/console/leads/{id}")
}

/// After a POST that did not go as asked (a refusal, a notice, a draft to show): what
/// the page shows kept for this session, and `303` to the page (Post/Redirect/Get: a
/// reload never posts again, and live updates go on).
async fn page(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    shown: Shown,
) -> Result<Response<Body>> {
    // Another organization's lead answers exactly like a missing one.
    state
        .store
        .read()?
        .lead(visitor.org(), id)?
        .ok_or_else(|| Error::lead_not_found(id))?;
    let path = page_path(id);
    state.flash.put(visitor.token_hash, &path, shown);
    Ok(respond::redirect(&path))
}

/// What a lead's page shows, read from one snapshot; `LeadPageView::view` renders it.
struct LeadPageView {
    lead: LeadRecord,
    engagement: Option<EngagementRecord>,
    handling: HandlingRecord,
    /// The organization's time zone, for times shown.
    zone: String,
    /// The owner's name when a person took the lead over.
    owner: Option<String>,
    /// How many steps the lead's profile's cadence has.
    steps: Option<usize>,
    /// `Re: <their subject>` when the lead wrote an email.
    re_subject: Option<String>,
    /// The timeline's newest events, rendered; how many of how many.
    timeline: Markup,
    shown: usize,
    total: usize,
    on_dnc: bool,
    /// The lead's consent ledger (oldest first) and each channel's state.
    ledger: Ledger,
    /// The possible opt-out the lead is held by, if any.
    hold: Option<HoldRecord>,
    /// Why the next step waits, when it does (`engagement::waiting`).
    wait: Option<waiting::Wait>,
    /// The SMS provider is the sandbox: "Reply as this lead (sandbox)" is offered.
    sandbox_sms: bool,
    /// The visitor may act (an agent or above) and the lead is not deleted.
    can_act: bool,
    /// The organization's campaigns, for "Add to campaign" and the lead's own.
    profiles: Vec<CampaignName>,
    /// The "Meetings" panel (`lead_meetings::panel`).
    meetings: Markup,
    /// The meeting the owner changed in their calendar, until a person saw it.
    calendar_change: Option<MeetingRecord>,
    /// The lead's call in progress that a person may transfer now, if any.
    live_call: Option<String>,
    /// The organization has an assistant connected (Settings → Assistant); without
    /// one nothing answers the lead but a person.
    assistant: bool,
    /// The organization's default country: phones show in its national format.
    country: Option<crate::phone::Country>,
}

impl LeadPageView {
    fn read(state: &AppState, visitor: &Visitor, id: &str) -> Result<LeadPageView> {
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
        let country = crate::phone::Country::parse(&settings.default_country);
        let owner = match handling.owner.as_str() {
            "" => None,
            user => Some(
                read.user(user)?
                    .map_or_else(|| "a former user".to_string(), |u| u.name),
            ),
        };
        let steps = match &engagement {
            Some(e) if !e.profile.is_empty() => {
                read.profile(org, &e.profile)?.map(|p| p.cadence.len())
            }
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
        let timeline = timeline::render(&ctx, &rows)?;
        let on_dnc = !lead.phone.is_empty() && read.dnc_contains(org, &lead.phone)?;
        let ledger = consent::ledger(&read, &visitor.caller(), id)?;
        let hold = read.hold(org, id)?;
        let wait = match &engagement {
            Some(e) => waiting::why(&read, org, &lead, e, chrono::Utc::now())?,
            None => None,
        };
        let sandbox_sms = inbound::sms_is_sandbox(&read, org)?;
        let can_act = visitor.user.role.at_least(Role::Agent) && lead.deleted_at.is_none();
        let profiles = read.campaign_names(org)?;
        let meetings = super::lead_meetings::panel(&read, visitor, &lead, &zone)?;
        // The newest calls only: a live one is among them.
        let live_call = rows
            .iter()
            .rev()
            .filter(|row| row.kind == "CALL")
            .take(3)
            .find_map(|row| {
                match crate::domain::voice::transfer::transferable(&read, org, id, &row.id) {
                    Ok(Ok(_)) => Some(Ok(row.id.clone())),
                    Ok(Err(_)) => None,
                    Err(e) => Some(Err(e)),
                }
            })
            .transpose()?;
        let calendar_change = match &handling.calendar_change {
            Some(change) => read.meeting(org, &change.meeting_id)?,
            None => None,
        };
        Ok(LeadPageView {
            live_call,
            calendar_change,
            assistant: settings.assistant.is_some(),
            country,
            profiles,
            meetings,
            ledger,
            engagement,
            handling,
            zone,
            owner,
            steps,
            re_subject,
            timeline,
            shown: rows.len(),
            total,
            on_dnc,
            hold,
            wait,
            sandbox_sms,
            can_act,
            lead,
        })
    }

    /// The page's content (inside `layout::page`), with what `shown` adds.
    fn view(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let lead = &self.lead;
        let name = lead_name(lead);
        let e = self.engagement.clone().unwrap_or_default();
        html! {
            p { a href="/console/leads" { "All leads" } }
            h1 { (name) " " (badges(lead.is_hot, lead.is_qualified)) }
            @if lead.deleted_at.is_some() { p.notice { "This lead was deleted." } }
            @if let Some(notice) = &shown.notice { p.notice role="status" { (notice) } }
            div.columns {
                div.conversation {
                    h2 { "Conversation" }
                    @if self.total > self.shown {
                        p.muted { "The latest " (self.shown) " of " (self.total) " events." }
                    }
                    div #timeline data-live="" data-lead=(lead.id) {
                        (self.timeline)
                        @if let (Some(failed), true) = (&self.handling.failed_send, self.can_act) {
                            section.panel aria-labelledby="failed-send" {
                                h2 #failed-send { "A send failed" }
                                p { "A message to this lead ended failed or unknown. Send it again as a new message, or dismiss it." }
                                div.actions {
                                    form method="post" action=(action_url(lead, PersonAction::RetrySend)) {
                                        (csrf_field(visitor))
                                        input type="hidden" name="message" value=(failed.event_id);
                                        button type="submit" { "Send again" }
                                    }
                                    form method="post" action=(action_url(lead, PersonAction::DismissFailure)) {
                                        (csrf_field(visitor))
                                        input type="hidden" name="message" value=(failed.event_id);
                                        button.secondary type="submit" { "Dismiss" }
                                    }
                                }
                            }
                        }
                    }
                    @if let (Some(_), true) = (&self.handling.call_back, self.can_act) {
                        section.panel aria-labelledby="call-back" {
                            h2 #call-back { "Call back" }
                            p { "The lead asked for a person on a call, and nobody took the transfer. Call them back, then mark it here." }
                            form method="post" action=(action_url(lead, PersonAction::CalledBack)) {
                                (csrf_field(visitor))
                                button type="submit" { "Called back" }
                            }
                        }
                    }
                    @if let (Some(call), true) = (&self.live_call, self.can_act) {
                        section.panel aria-labelledby="live-call" {
                            h2 #live-call { "Live call" }
                            p { "The lead is on a call with the assistant now. Transfer it to the campaign's transfer number: the assistant hands over as its own transfer would." }
                            form method="post" action=(action_url(lead, LeadAction::TransferCall)) {
                                (csrf_field(visitor))
                                input type="hidden" name="call" value=(call);
                                button type="submit" { "Transfer the call" }
                            }
                        }
                    }
                    @if let (Some(change), Some(meeting), true) = (&self.handling.calendar_change, &self.calendar_change, self.can_act) {
                        (calendar_change_panel(visitor, lead, change, meeting, &self.zone))
                    }
                    @if self.can_act { (reply_box(visitor, lead, shown, self.re_subject.as_deref(), self.assistant)) }
                    @if self.can_act && self.sandbox_sms && !lead.phone.is_empty() { (reply_as_lead_box(visitor, lead, shown)) }
                }
                div.sidebar {
                    @if let (Some(hold), true) = (&self.hold, self.can_act) { (hold_panel(visitor, lead, hold)) }
                    section.panel aria-labelledby="about" {
                        h2 #about { "Lead" }
                        dl.facts {
                            dt { "Phone" } dd { @if !lead.phone.is_empty() { (crate::phone::shown(&lead.phone, self.country)) } }
                            dt { "Email" } dd { (lead.email) }
                            dt { "Campaign" } dd { @if lead.customer_profile.is_empty() { "Not in a campaign" } @else { (CampaignName::label_of(&self.profiles, &lead.customer_profile)) } }
                            dt { "SMS" } dd { (subscribed(lead.subscriptions.sms_unsubscribed)) }
                            dt { "Voice" } dd { (subscribed(lead.subscriptions.voice_unsubscribed)) }
                            dt { "Email" } dd { (subscribed(lead.subscriptions.email_unsubscribed)) }
                            dt { "DNC" } dd { @if self.on_dnc { "On the DNC list" } @else { "No" } }
                            dt { "Tags" } dd { @for t in &lead.tags { span.badge.state { (t.name) } " " } }
                            dt { "Assistant" } dd {
                                @if !self.assistant { "No assistant connected — a person answers" }
                                @else if lead.is_ai_on { "Assistant on" } @else { "Assistant off" }
                            }
                            dt { "Owner" } dd {
                                @match (&self.owner, self.assistant && lead.is_ai_on && self.handling.handed_off_at.is_none()) {
                                    (Some(name), _) => (name),
                                    (None, true) => "Assistant",
                                    (None, false) => "Unassigned",
                                }
                            }
                            @if self.handling.handed_off_at.is_some() { dt { "Handed off" } dd { "Yes" } }
                        }
                        @if self.can_act { (handling_buttons(visitor, lead, self.assistant)) }
                    }
                    (self.meetings)
                    (self.fields_panel(visitor, shown))
                    section.panel aria-labelledby="engagement" {
                        h2 #engagement { "Engagement" }
                        dl.facts {
                            dt { "State" } dd { (super::leads::state_words(self.engagement.as_ref())) }
                            @if let (Some(steps), EngagementState::Active | EngagementState::Paused) = (self.steps, e.state) {
                                dt { "Step" } dd { "Step " (e.next_step + 1) " of " (steps) }
                            }
                            @if let Some((due, _)) = e.step_job.as_ref().filter(|_| matches!(e.state, EngagementState::Active | EngagementState::Paused)) {
                                dt { "Next step" } dd { (layout::time(*due, &self.zone)) }
                            }
                            @if let Some(wait) = self.wait {
                                dt { "Waiting" }
                                dd {
                                    (wait.reason().words())
                                    @if let Some(until) = wait.until() { ", until " (layout::time(until, &self.zone)) }
                                }
                            }
                            @if let Some(reason) = e.stopped_reason.filter(|_| e.state == EngagementState::Stopped) {
                                dt { "Stop reason" } dd { (reason.words()) }
                            }
                            @if !e.last_error.is_empty() {
                                dt { "Last error" } dd.error { (e.last_error) }
                            }
                        }
                    }
                    @if self.can_act { (campaign_form(visitor, lead, &self.profiles, shown)) }
                    (self.consent_panel(visitor, shown))
                    @if self.can_act { (other_actions(visitor, lead)) }
                }
            }
        }
    }
}

impl LeadPageView {
    /// "Additional fields": the lead's `additionalInfo`, key → value; agents and admins
    /// add, change ("Save field") and remove them.
    fn fields_panel(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let lead = &self.lead;
        let empty = serde_json::Map::new();
        let fields = match &lead.additional_info.0 {
            Value::Object(map) => map,
            _ => &empty,
        };
        let shown_value = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        html! {
            section.panel aria-labelledby="additional-fields" {
                h2 #additional-fields { "Additional fields" }
                @if fields.is_empty() {
                    p.muted { "No additional fields." }
                } @else {
                    dl.facts {
                        @for (key, value) in fields {
                            dt { (key) } dd { (shown_value(value)) }
                        }
                    }
                }
                @if self.can_act {
                    form.stack method="post" action=(action_url(lead, PersonAction::SetField)) {
                        (csrf_field(visitor))
                        div {
                            label for="field-name" { "Field" }
                            input #field-name type="text" name="field" list="field-names" required;
                            datalist #field-names { @for key in fields.keys() { option value=(key) {} } }
                            @if let Some(problem) = shown.error_for("field") { p.field-error role="alert" { (problem) } }
                        }
                        div {
                            label for="field-value" { "Value" }
                            input #field-value type="text" name="value";
                            @if let Some(problem) = shown.error_for("additionalInfo") { p.field-error role="alert" { (problem) } }
                        }
                        div.actions { button.secondary type="submit" { "Save field" } }
                    }
                    @if !fields.is_empty() {
                        form method="post" action=(action_url(lead, PersonAction::RemoveField)) {
                            (csrf_field(visitor))
                            label for="field-remove" { "Field to remove" }
                            div.actions {
                                select #field-remove name="field" {
                                    @for key in fields.keys() { option value=(key) { (key) } }
                                }
                                button.secondary type="submit" { "Remove field" }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The "Consent" panel: each channel's status, the ledger newest first, the
    /// download, and (agents and admins) "Record consent".
    fn consent_panel(&self, visitor: &Visitor, shown: &Shown) -> Markup {
        let lead = &self.lead;
        html! {
            section.panel aria-labelledby="consent" {
                h2 #consent { "Consent" }
                dl.facts {
                    @for (channel, state) in &self.ledger.current {
                        dt { (channel_name(*channel)) } dd { (consent::status_word(state)) }
                    }
                }
                @if self.ledger.entries.is_empty() {
                    p.muted { "No consent recorded." }
                } @else {
                    div.table-wrap {
                        table.ledger aria-label="Consent ledger" {
                            thead { tr { th { "When" } th { "Channel" } th { "Status" } th { "Purpose" } th { "Source" } th { "Proof" } th { "Recorded by" } } }
                            tbody {
                                @for entry in self.ledger.entries.iter().rev() { (ledger_row(entry, &self.zone)) }
                            }
                        }
                    }
                }
                p { a href=(format!("/console/leads/{}/consent.csv", lead.id)) download="" { "Download consent record" } }
                @if self.can_act { (consent_form(visitor, lead, shown)) }
            }
        }
    }
}

fn channel_name(channel: Channel) -> &'static str {
    match channel {
        Channel::Sms => "SMS",
        Channel::Voice => "Voice",
        Channel::Email => "Email",
    }
}

/// A consent entry's status in words.
fn consent_status_words(status: ConsentStatus) -> &'static str {
    match status {
        ConsentStatus::Granted => "Granted",
        ConsentStatus::Revoked => "Revoked",
    }
}

/// A consent's purpose in words.
fn purpose_words(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::Marketing => "Marketing",
        Purpose::Informational => "Informational",
    }
}

/// Where a consent entry came from, in words (`web_form` is "Web form").
fn consent_source_words(source: ConsentSource) -> &'static str {
    match source {
        ConsentSource::Import => "Import",
        ConsentSource::Api => "An integration",
        ConsentSource::Console => "Console",
        ConsentSource::WebForm => "Web form",
        ConsentSource::Keyword => "Keyword",
        ConsentSource::Reply => "Reply",
        ConsentSource::Call => "Call",
        ConsentSource::UnsubscribeLink => "Unsubscribe link",
        ConsentSource::Timeout => "No answer in time",
        ConsentSource::Webchat => "Web chat",
    }
}

fn ledger_row(entry: &ConsentEntry, zone: &str) -> Markup {
    let by = match &entry.proof.recorded_by {
        Some(RecordedBy::User { name, .. }) => name.clone(),
        Some(RecordedBy::Key { .. }) => "An integration (API key)".to_string(),
        Some(RecordedBy::Service) => "engaged".to_string(),
        None => String::new(),
    };
    html! {
        tr {
            td { (layout::time(entry.at, zone)) }
            td { (channel_name(entry.channel)) }
            td { (consent_status_words(entry.status)) }
            td { (purpose_words(entry.purpose)) }
            td { (consent_source_words(entry.source)) }
            td {
                @if let Some(text) = &entry.proof.text { q { (text) } }
                @if let Some(url) = &entry.proof.url { " " span.muted { (url) } }
                @if let Some(ip) = &entry.proof.ip { " " span.muted { "IP " (ip) } }
            }
            td { (by) }
        }
    }
}

/// "Record consent": consent given (or revoked) on the phone, the lead's words required.
fn consent_form(v: &Visitor, lead: &LeadRecord, shown: &Shown) -> Markup {
    let empty: [String; 4] = Default::default();
    let [channel, status, purpose, words] = shown.consent.as_ref().unwrap_or(&empty);
    let error_for = |field: &str| shown.error_for(field);
    let words_error = error_for("consent-words");
    let other_error = error_for("consent");
    html! {
        h3 #record-consent { "Record consent" }
        form.stack method="post" action=(action_url(lead, PersonAction::RecordConsent)) aria-labelledby="record-consent" {
            (csrf_field(v))
            @if let Some(error) = &other_error { p.field-error { (error) } }
            div {
                label for="consent-channel" { "Consent channel" }
                select #consent-channel name="channel" {
                    @for c in Channel::ALL {
                        option value=(c.as_str()) selected[channel == c.as_str()] { (channel_name(c)) }
                    }
                }
            }
            div {
                label for="consent-status" { "Consent status" }
                select #consent-status name="status" {
                    option value="granted" selected[status == "granted"] { "Granted" }
                    option value="revoked" selected[status == "revoked"] { "Revoked" }
                }
            }
            div {
                label for="consent-purpose" { "Purpose" }
                select #consent-purpose name="purpose" {
                    option value="marketing" selected[purpose == "marketing"] { "Marketing" }
                    option value="informational" selected[purpose == "informational"] { "Informational" }
                }
            }
            div {
                label for="consent-words" { "Words the lead said" }
                textarea #consent-words name="words" aria-describedby=[words_error.as_ref().map(|_| "consent-words-error")] { (words) }
                @if let Some(error) = &words_error { p #consent-words-error .field-error { (error) } }
            }
            div.actions { button.secondary type="submit" { "Record consent" } }
        }
    }
}

fn subscribed(unsubscribed: bool) -> &'static str {
    if unsubscribed {
        "Unsubscribed"
    } else {
        "Subscribed"
    }
}

fn action_url(lead: &LeadRecord, action: impl Into<LeadAction>) -> String {
    format!("/console/leads/{}/{}", lead.id, action.into().segment())
}

/// A possible opt-out holds the lead: its words, and the person's decision.
fn hold_panel(v: &Visitor, lead: &LeadRecord, hold: &HoldRecord) -> Markup {
    html! {
        section.panel aria-labelledby="possible-opt-out" {
            h2 #possible-opt-out { "Possible opt-out" }
            p { "Automated outreach is paused until you decide. The lead wrote:" }
            blockquote { (hold.words) }
            div.actions {
                form method="post" action=(action_url(lead, PersonAction::ConfirmOptOut)) {
                    (csrf_field(v)) button type="submit" { "Opt out" }
                }
                form method="post" action=(action_url(lead, PersonAction::DismissOptOut)) {
                    (csrf_field(v)) button.secondary type="submit" { "Not an opt-out" }
                }
            }
        }
    }
}

/// "Take over", or "Hand back" (to the assistant: not offered while none is connected).
fn handling_buttons(v: &Visitor, lead: &LeadRecord, assistant: bool) -> Markup {
    html! {
        div.actions {
            @if lead.is_ai_on {
                form method="post" action=(action_url(lead, PersonAction::TakeOver)) {
                    (csrf_field(v)) button type="submit" { "Take over" }
                }
            } @else if assistant {
                form method="post" action=(action_url(lead, PersonAction::HandBack)) {
                    (csrf_field(v)) button type="submit" { "Hand back" }
                }
            }
        }
    }
}

/// The reply form; its Subject is what was refused, else `re_subject` (the answer to
/// the lead's own newest email).
/// `assistant`: the organization has one connected (else nothing is taken over from it).
fn reply_box(
    v: &Visitor,
    lead: &LeadRecord,
    shown: &Shown,
    re_subject: Option<&str>,
    assistant: bool,
) -> Markup {
    let subject = match (shown.subject.as_str(), re_subject) {
        ("", Some(re)) => re,
        (subject, _) => subject,
    };
    let channel = shown.channel.unwrap_or(if lead.phone.is_empty() {
        Channel::Email
    } else {
        Channel::Sms
    });
    let error_for = |field: &str| shown.error_for(field);
    let message_error = error_for("message");
    let subject_error = error_for("subject");
    html! {
        h2 #reply-heading { "Reply" }
        @if lead.is_ai_on && assistant { p.muted { "Sending takes the lead over from the assistant first." } }
        form.stack method="post" action=(action_url(lead, LeadAction::Reply)) aria-labelledby="reply-heading" {
            (csrf_field(v))
            div {
                label for="message" { "Message" }
                textarea #message name="message" data-sms-count=(MAX_SMS_SEGMENTS) aria-describedby=[message_error.as_ref().map(|_| "message-error")] { (shown.message) }
                p.muted #message-segments aria-live="polite" { (crate::sms_segments::words(&shown.message, MAX_SMS_SEGMENTS)) }
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

/// "Reply as this lead (sandbox)": a text as if the lead sent it (sandbox SMS only).
fn reply_as_lead_box(v: &Visitor, lead: &LeadRecord, shown: &Shown) -> Markup {
    let error = shown.error_for("lead-message");
    html! {
        h2 #reply-as-lead-heading { "Reply as this lead (sandbox)" }
        p.muted { "Try the conversation: the text arrives as if the lead sent it, so keywords, the assistant and the inbox react." }
        form.stack method="post" action=(action_url(lead, LeadAction::ReplyAsLead)) aria-labelledby="reply-as-lead-heading" {
            (csrf_field(v))
            div {
                label for="lead-message" { "The lead's message" }
                textarea #lead-message name="message" aria-describedby=[error.as_ref().map(|_| "lead-message-error")] {}
                @if let Some(error) = &error { p #lead-message-error .field-error { (error) } }
            }
            div.actions { button.secondary type="submit" { "Reply as this lead" } }
        }
    }
}

/// "Add to campaign": a select of the organization's profiles; a refusal (already in a
/// campaign, DNC, unknown campaign...) in words beside it.
fn campaign_form(
    v: &Visitor,
    lead: &LeadRecord,
    profiles: &[CampaignName],
    shown: &Shown,
) -> Markup {
    let error = shown.error_for("campaign");
    html! {
        section.panel aria-labelledby="add-to-campaign" {
            h2 #add-to-campaign { "Add to campaign" }
            form.stack method="post" action=(action_url(lead, PersonAction::AddToCampaign)) {
                (csrf_field(v))
                div {
                    label for="campaign" { "Campaign" }
                    select #campaign name="profile" required aria-describedby=[error.as_ref().map(|_| "campaign-error")] {
                        @for p in profiles { option value=(p.id) { (p.label) } }
                    }
                    @if let Some(error) = &error { p #campaign-error .field-error role="alert" { (error) } }
                }
                div.actions { button type="submit" { "Add to campaign" } }
            }
        }
    }
}

/// `POST .../reply-as-lead`: the text through the inbound path (`inbound::sandbox_reply`).
async fn reply_as_lead(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let (caller, lead_id) = (visitor.caller(), id.to_string());
    let text = form.get("message").unwrap_or_default().to_string();
    let done = state
        .store
        .write(move |tx| inbound::sandbox_reply(tx, &caller, &lead_id, &text).map(drop))
        .await;
    match done {
        Ok(()) => Ok(respond::redirect(&format!("/console/leads/{id}"))),
        Err(Error::Forbidden) => {
            let markup = super::layout::page(
                "Not allowed",
                Some(visitor),
                maud::html! {
                    h1 { "Not allowed" }
                    p.notice { (inbound::SANDBOX_ONLY) }
                    p { a href={ "/console/leads/" (id) } { "Back to the lead" } }
                },
            );
            Ok(respond::html(StatusCode::FORBIDDEN, markup))
        }
        Err(e) if e.is_bad_request() => {
            let shown = Shown {
                error: Some(("lead-message", e.to_string())),
                ..Shown::default()
            };
            page(state, visitor, id, shown).await
        }
        Err(e) => Err(e),
    }
}

/// "Meeting changed in the calendar": what the owner did to the lead's meeting, that
/// the lead was told, and "Seen".
fn calendar_change_panel(
    v: &Visitor,
    lead: &LeadRecord,
    change: &CalendarChange,
    meeting: &MeetingRecord,
    zone: &str,
) -> Markup {
    html! {
        section.panel aria-labelledby="calendar-change" {
            h2 #calendar-change { "Meeting changed in the calendar" }
            @if meeting.status == MeetingStatus::Canceled {
                p { "The owner canceled the meeting of " (layout::time(meeting.start, zone)) " in their calendar. The lead was told it is canceled." }
            } @else {
                p { "The owner moved the meeting to " (layout::time(meeting.start, zone)) " in their calendar. The lead was told the new time." }
            }
            @if change.overrode {
                p { "Their change replaced one engaged was still writing to the calendar (the lead's own request): check with the lead that the time suits them." }
            }
            form method="post" action=(action_url(lead, PersonAction::SeenCalendarChange)) {
                (csrf_field(v))
                button.secondary type="submit" { "Seen" }
            }
        }
    }
}

fn other_actions(v: &Visitor, lead: &LeadRecord) -> Markup {
    let form = |action: PersonAction, body: Markup| {
        html! {
            form method="post" action=(action_url(lead, action)) { (csrf_field(v)) (body) }
        }
    };
    html! {
        section.panel aria-labelledby="actions" {
            h2 #actions { "Actions" }
            div.actions {
                @if !lead.is_hot { (form(PersonAction::MarkHot, html! { button.secondary type="submit" { "Mark hot" } })) }
                @if !lead.is_qualified { (form(PersonAction::MarkQualified, html! { button.secondary type="submit" { "Mark qualified" } })) }
                @if !lead.phone.is_empty() { (form(PersonAction::AddToDnc, html! { button.secondary type="submit" { "Add to DNC" } })) }
            }
            (form(PersonAction::Unsubscribe, html! {
                label for="unsub-channel" { "Unsubscribe from" }
                div.actions {
                    select #unsub-channel name="channel" { (channel_options()) }
                    button.secondary type="submit" { "Unsubscribe" }
                }
            }))
            (form(PersonAction::Resubscribe, html! {
                label for="resub-channel" { "Resubscribe to" }
                div.actions {
                    select #resub-channel name="channel" { (channel_options()) }
                    button.secondary type="submit" { "Resubscribe" }
                }
                label for="resub-words" { "What the lead said to opt back in" }
                input #resub-words type="text" name="words" maxlength="10000" aria-describedby="resub-words-help";
                p.muted #resub-words-help { "Needed after the lead opted out: only the lead undoes an opt-out, and their words are kept as the proof." }
            }))
            (form(PersonAction::AddTag, html! {
                label for="tag-name" { "New tag" }
                div.actions {
                    input #tag-name type="text" name="tag" required;
                    button.secondary type="submit" { "Add tag" }
                }
            }))
            @if !lead.tags.is_empty() {
                (form(PersonAction::RemoveTag, html! {
                    label for="tag-remove" { "Tag to remove" }
                    div.actions {
                        select #tag-remove name="tag" {
                            @for t in &lead.tags { option value=(t.id) { (t.name) } }
                        }
                        button.secondary type="submit" { "Remove tag" }
                    }
                }))
            }
            form method="post" action=(action_url(lead, PersonAction::Delete)) data-confirm="Delete this lead?" {
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

/// `POST /console/leads/{id}/{action}`: the form parsed into a `handling::Command`,
/// one write through `handling::act`, then the page (a refusal beside its field, or
/// as the page's notice) or a redirect.
pub async fn act(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    action: LeadAction,
    form: Form,
) -> Result<Response<Body>> {
    let action = match action {
        LeadAction::Reply => return reply(state, visitor, id, &form).await,
        LeadAction::Suggest => return suggest(state, visitor, id, &form).await,
        LeadAction::ReplyAsLead => return reply_as_lead(state, visitor, id, &form).await,
        LeadAction::TransferCall => return transfer_call(state, visitor, id, &form).await,
        LeadAction::Person(PersonAction::RetrySend) => {
            return send_again(state, visitor, id, &form).await
        }
        LeadAction::Person(PersonAction::RecordConsent) => {
            return record_consent(state, visitor, id, &form).await
        }
        LeadAction::Person(action) => action,
    };
    let Some(command) = command(action, &form)? else {
        let shown = Shown {
            notice: Some("Tick \u{201c}Yes, delete this lead\u{201d} to delete it.".into()),
            ..Shown::default()
        };
        return page(state, visitor, id, shown).await;
    };
    let (caller, person, lead_id) = (visitor.caller(), visitor.person(), id.to_string());
    let done = state
        .store
        .write(move |tx| handling::act(tx, &caller, &person, &lead_id, &command))
        .await;
    match done {
        Ok(()) if action == PersonAction::Delete => Ok(respond::redirect("/console/leads")),
        Ok(()) => Ok(respond::redirect(&format!("/console/leads/{id}"))),
        // A refusal (a lead without that channel, a tag too long, a campaign a rule
        // skips, a field without a name) shows on the page, beside its field if it has one.
        Err(e @ (Error::BadRequest(_) | Error::InvalidField { .. } | Error::Conflict(_))) => {
            let shown = match (action, e.refused_field()) {
                (PersonAction::AddToCampaign, _) => Shown {
                    error: Some(("campaign", e.to_string())),
                    ..Shown::default()
                },
                (PersonAction::SetField | PersonAction::RemoveField, field) => Shown {
                    error: Some((
                        if field == Some("field") {
                            "field"
                        } else {
                            "additionalInfo"
                        },
                        e.to_string(),
                    )),
                    ..Shown::default()
                },
                _ => Shown {
                    notice: Some(e.to_string()),
                    ..Shown::default()
                },
            };
            page(state, visitor, id, shown).await
        }
        Err(e) => Err(e),
    }
}

/// The command a person's `action` form says, read once; `None`: a deletion not
/// confirmed ("Yes, delete this lead" unticked).
fn command(action: PersonAction, form: &Form) -> Result<Option<Command>> {
    Ok(Some(match action {
        PersonAction::TakeOver => Command::TakeOver,
        PersonAction::HandBack => Command::HandBack,
        PersonAction::Unsubscribe => Command::Subscription {
            channels: channels(form)?,
            change: Subscription::Unsubscribe,
        },
        PersonAction::Resubscribe => {
            let words = form.text("words").trim();
            let text = (!words.is_empty())
                .then(|| ProofPart::Text.checked(words, "words"))
                .transpose()?;
            Command::Subscription {
                channels: channels(form)?,
                change: Subscription::Resubscribe(Proof {
                    text,
                    ..Proof::default()
                }),
            }
        }
        PersonAction::AddToDnc => Command::AddToDnc,
        PersonAction::AddTag => Command::AddTag(tags::named(form.text("tag"))?),
        PersonAction::RemoveTag => Command::RemoveTag(form.text("tag").to_string()),
        PersonAction::MarkHot => Command::MarkHot,
        PersonAction::MarkQualified => Command::MarkQualified,
        PersonAction::DismissFailure => Command::DismissFailure(form.text("message").to_string()),
        PersonAction::ConfirmOptOut => Command::DecideOptOut(true),
        PersonAction::DismissOptOut => Command::DecideOptOut(false),
        PersonAction::SetField => Command::SetField {
            key: form.text("field").to_string(),
            value: Some(form.text("value").to_string()),
        },
        PersonAction::RemoveField => Command::SetField {
            key: form.text("field").to_string(),
            value: None,
        },
        PersonAction::AddToCampaign => Command::AddToCampaign(form.text("profile").to_string()),
        PersonAction::SeenCalendarChange => Command::SeenCalendarChange,
        PersonAction::CalledBack => Command::CalledBack,
        PersonAction::Delete if form.text("confirm") != "yes" => return Ok(None),
        PersonAction::Delete => Command::Delete,
        // Their own paths (`act` sends them there first).
        PersonAction::RetrySend | PersonAction::RecordConsent => {
            return Err(Error::BadRequest("Not a form of this page".into()))
        }
    }))
}

/// "Transfer the call": the engine redirects the live call to its transfer
/// (`Engine::transfer_call`); the page says it is under way, or why not.
async fn transfer_call(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let call = form.text("call");
    let notice = match state.engine.transfer_call(visitor.org(), id, call).await {
        Ok(()) => {
            "Transferring the call: the lead hears that they are being connected.".to_string()
        }
        Err(Error::Conflict(why)) => why,
        Err(e) => return Err(e),
    };
    let shown = Shown {
        notice: Some(notice),
        ..Shown::default()
    };
    page(state, visitor, id, shown).await
}

/// "Record consent": the form read into `ConsentInput::spoken` (the words required),
/// one write through `handling::record_consent`; a refusal shows beside its field.
async fn record_consent(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let sent = ["channel", "status", "purpose", "words"].map(|f| form.text(f).to_string());
    let person = visitor.person();
    let recorded_by = RecordedBy::User {
        user_id: person.user_id.clone(),
        name: person.name.clone(),
    };
    let input = Channel::parse(&sent[0])
        .ok_or_else(|| Error::invalid_field("channel"))
        .and_then(|channel| {
            let status =
                ConsentStatus::parse(&sent[1]).ok_or_else(|| Error::invalid_field("status"))?;
            let purpose =
                Purpose::parse(&sent[2]).ok_or_else(|| Error::invalid_field("purpose"))?;
            ConsentInput::spoken(channel, status, purpose, &sent[3], recorded_by)
        });
    let done = match input {
        Ok(input) => {
            let (caller, lead_id) = (visitor.caller(), id.to_string());
            state
                .store
                .write(move |tx| {
                    handling::record_consent(tx, &caller, &person, &lead_id, input.clone())
                })
                .await
        }
        Err(e) => Err(e),
    };
    match done {
        Ok(()) => Ok(respond::redirect(&format!("/console/leads/{id}#consent"))),
        Err(e) if e.is_bad_request() || matches!(e, Error::Conflict(_)) => {
            let field = match e.refused_field() {
                Some("proof.text") => "consent-words",
                _ => "consent",
            };
            let shown = Shown {
                error: Some((field, e.to_string())),
                consent: Some(sent),
                ..Shown::default()
            };
            page(state, visitor, id, shown).await
        }
        Err(e) => Err(e),
    }
}

/// `GET /console/leads/{id}/consent.csv`: every ledger entry with its proof, for a
/// dispute (`consent::csv`, as `GET .../consent?format=csv`).
pub fn consent_csv(state: &AppState, visitor: &Visitor, id: &str) -> Result<Response<Body>> {
    let read = state.store.read()?;
    let ledger = consent::ledger(&read, &visitor.caller(), id)?;
    let bytes = consent::csv(id, &ledger.entries)?;
    Ok(respond::csv_download(
        crate::api::response::full(bytes),
        "consent-record.csv",
    ))
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
    // A person and the assistant never talk over each other: a send the gate lets go
    // takes the lead over in the write that records it; a blocked one changes nothing.
    let sending = state.engine.send_as_person(caller, id, &input, person);
    match sending.await {
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
            .write(move |tx| handling::retry_send(tx, &caller, &person, &lead_id, &event_id))
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
    let sending = state
        .engine
        .send_message(caller, id, &input, Origin::Human(person));
    match sending.await? {
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
