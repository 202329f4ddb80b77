//! The profile editor (admins): `/console/campaigns/{profile}/edit` and "New campaign"
//! (`/console/campaigns/new`). One form holds every member of a profile; steps are
//! added, removed and moved up or down with buttons that post the form back (no script
//! needed).
//! "Save" validates exactly as `PUT /v1/profiles/{name}` (`settings::profiles`), each
//! refusal beside its field; "Preview" renders each step for a lead the person names
//! (or a sample lead); "Try the assistant" asks the configured model with these
//! instructions, saved or not, the conversation kept in the form: tool calls show as
//! what they would do, and nothing is applied, sent or stored.

use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout;
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::channel::Channel;
use crate::domain::settings::profiles::{DispositionInput, ProfileInput, StepInput};
use crate::domain::settings::{org, profiles, templates};
use crate::error::{Error, Result};
use crate::providers::model::protocol::Turn;
use crate::store::rows::{LeadRecord, ProfileRecord, Purpose};
use crate::store::Reader;

/// A step as the form holds it.
#[derive(Debug, Clone, Default)]
struct Step {
    channel: String,
    after: String,
    subject: String,
    text: String,
    /// The step's `purpose` as the API set it, kept through the form.
    purpose: String,
}

/// The form's state: what a person typed (or the saved profile), and what the page
/// shows besides it.
#[derive(Debug, Default)]
struct Draft {
    name: String,
    new: bool,
    instructions: String,
    reply_delay: String,
    voice_greeting: String,
    transfer: String,
    fallback: String,
    /// One per line: `id | name | description`.
    dispositions: String,
    steps: Vec<Step>,
    preview_lead: String,
    /// The playground's conversation, oldest first: (from the lead, text).
    chat: Vec<(bool, String)>,
    /// The channel the playground's conversation is on (the assistant answers as it
    /// would there: length, tone, the channel's guard); none chosen: SMS.
    chat_channel: Option<Channel>,
}

#[derive(Debug, Default)]
struct Shown {
    notice: Option<String>,
    /// (API field path, message)
    error: Option<(String, String)>,
    preview: Option<Vec<(String, String)>>,
    tried: Option<String>,
}

impl Draft {
    fn of(p: &ProfileRecord) -> Draft {
        Draft {
            name: p.name.clone(),
            new: false,
            instructions: p.instructions.clone(),
            reply_delay: p.reply_delay.clone(),
            voice_greeting: p.voice_greeting.clone(),
            transfer: p.transfer_number.clone(),
            fallback: p.fallback_transfer_number.clone(),
            dispositions: p
                .dispositions
                .iter()
                .map(|d| format!("{} | {} | {}", d.id, d.name, d.description))
                .collect::<Vec<_>>()
                .join("\n"),
            steps: p
                .cadence
                .iter()
                .map(|s| Step {
                    channel: s.channel.as_str().to_string(),
                    after: s.after.clone(),
                    subject: s.subject.clone(),
                    text: s.text.clone(),
                    purpose: s.purpose.as_str().to_string(),
                })
                .collect(),
            preview_lead: String::new(),
            chat: Vec::new(),
            chat_channel: None,
        }
    }

    fn read(form: &Form, name: &str, new: bool) -> Draft {
        let count: usize = form
            .text("steps")
            .parse()
            .unwrap_or(0)
            .min(profiles::MAX_STEPS);
        let steps = (0..count)
            .map(|i| Step {
                channel: form.text(&format!("step-{i}-channel")).to_string(),
                after: form.text(&format!("step-{i}-after")).to_string(),
                subject: form.text(&format!("step-{i}-subject")).to_string(),
                text: form
                    .get(&format!("step-{i}-text"))
                    .unwrap_or_default()
                    .to_string(),
                purpose: form.text(&format!("step-{i}-purpose")).to_string(),
            })
            .collect();
        let chat = form
            .all("chat")
            .filter_map(|line| {
                let (who, text) = line.split_once(':')?;
                Some((who == "lead", text.to_string()))
            })
            .collect();
        Draft {
            name: if new {
                form.text("name").to_string()
            } else {
                name.to_string()
            },
            new,
            instructions: form.get("instructions").unwrap_or_default().to_string(),
            reply_delay: form.text("reply-delay").to_string(),
            voice_greeting: form.get("voice-greeting").unwrap_or_default().to_string(),
            transfer: form.text("transfer").to_string(),
            fallback: form.text("fallback").to_string(),
            dispositions: form.get("dispositions").unwrap_or_default().to_string(),
            steps,
            preview_lead: form.text("preview-lead").to_string(),
            chat,
            chat_channel: Channel::parse(form.text("chat-channel")),
        }
    }

    /// The profile this form says, for `settings::profiles::put`: blank text fields
    /// say none, dispositions are one per line (`id | name | description`), and only an
    /// email step has a subject.
    fn input(&self) -> ProfileInput {
        let text = |v: &str| {
            if v.trim().is_empty() {
                String::new()
            } else {
                v.to_string()
            }
        };
        let dispositions = self
            .dispositions
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let mut parts = line.splitn(3, '|').map(str::trim);
                let mut next = || parts.next().unwrap_or_default().to_string();
                DispositionInput {
                    id: next(),
                    name: next(),
                    description: next(),
                }
            })
            .collect();
        let cadence = self
            .steps
            .iter()
            .map(|s| StepInput {
                after: s.after.clone(),
                channel: Channel::parse(&s.channel),
                text: s.text.clone(),
                subject: if s.channel == "email" {
                    s.subject.clone()
                } else {
                    String::new()
                },
                purpose: Purpose::parse(&s.purpose),
            })
            .collect();
        ProfileInput {
            instructions: self.instructions.clone(),
            cadence,
            reply_delay: (!self.reply_delay.is_empty()).then(|| self.reply_delay.clone()),
            dispositions,
            transfer_number: text(&self.transfer),
            fallback_transfer_number: text(&self.fallback),
            voice_greeting: text(&self.voice_greeting),
            ..ProfileInput::default()
        }
    }
}

fn action_url(draft: &Draft) -> String {
    if draft.new {
        "/console/campaigns/new".to_string()
    } else {
        super::routes::campaign_path(&draft.name, "/edit")
    }
}

/// `GET /console/campaigns/{profile}/edit`, or a new campaign's empty form.
pub fn page(state: &AppState, visitor: &Visitor, name: Option<&str>) -> Result<Response<Body>> {
    let draft = match name {
        Some(name) => {
            let read = state.store.read()?;
            let profile = read
                .profile(visitor.org(), name)?
                .ok_or_else(profiles::not_found)?;
            Draft::of(&profile)
        }
        None => Draft {
            new: true,
            steps: vec![Step {
                channel: "sms".into(),
                after: "0s".into(),
                ..Step::default()
            }],
            ..Draft::default()
        },
    };
    Ok(respond::html(
        StatusCode::OK,
        ProfileEditorView::of(visitor, &draft, &Shown::default()).view(),
    ))
}

/// `POST` of the form: a step added, removed or moved; "Save"; "Preview"; "Try the
/// assistant".
pub async fn act(
    state: &AppState,
    visitor: &Visitor,
    name: Option<&str>,
    form: Form,
) -> Result<Response<Body>> {
    let mut draft = Draft::read(&form, name.unwrap_or_default(), name.is_none());
    let mut shown = Shown::default();
    match form.text("op") {
        "save" => match save(state, visitor, &draft).await? {
            None => {
                return Ok(respond::redirect(&super::routes::campaign_path(
                    &draft.name,
                    "",
                )))
            }
            Some(refusal) => shown.error = Some(refusal),
        },
        "preview" => shown.preview = Some(preview(state, visitor, &draft)?),
        "try" => shown.tried = Some(try_assistant(state, visitor, &form, &mut draft).await?),
        op => edit_steps(&mut draft, op),
    }
    let status = if shown.error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(respond::html(
        status,
        ProfileEditorView::of(visitor, &draft, &shown).view(),
    ))
}

/// A step added (`add`), removed (`remove:i`) or moved (`up:i`, `down:i`).
fn edit_steps(draft: &mut Draft, op: &str) {
    let steps = &mut draft.steps;
    match op.split_once(':') {
        Some(("remove", i)) => {
            if let Ok(i) = i.parse::<usize>() {
                if i < steps.len() {
                    steps.remove(i);
                }
            }
        }
        Some(("up", i)) => {
            if let Ok(i) = i.parse::<usize>() {
                if i > 0 && i < steps.len() {
                    steps.swap(i - 1, i);
                }
            }
        }
        Some(("down", i)) => {
            if let Ok(i) = i.parse::<usize>() {
                if i + 1 < steps.len() {
                    steps.swap(i, i + 1);
                }
            }
        }
        _ if op == "add" && steps.len() < profiles::MAX_STEPS => steps.push(Step {
            channel: "sms".into(),
            after: "1d".into(),
            ..Step::default()
        }),
        _ => {}
    }
}

/// "Save": the profile written as `PUT /v1/profiles/{name}` writes it; a refusal as
/// (the field it names, or "", its message).
async fn save(
    state: &AppState,
    visitor: &Visitor,
    draft: &Draft,
) -> Result<Option<(String, String)>> {
    let (caller, name, input) = (visitor.caller(), draft.name.clone(), draft.input());
    let saved = state
        .store
        .write(move |tx| profiles::put(tx, &caller, &name, &input).map(drop))
        .await;
    match saved {
        Ok(()) => Ok(None),
        Err(e) if e.is_bad_request() => {
            let field = e.refused_field().unwrap_or_default().to_string();
            Ok(Some((field, e.to_string())))
        }
        Err(e) => Err(e),
    }
}

/// "Try the assistant": the lead's words (if any) join the conversation, and the
/// assistant's answer with what it would have done (or why it could not answer).
async fn try_assistant(
    state: &AppState,
    visitor: &Visitor,
    form: &Form,
    draft: &mut Draft,
) -> Result<String> {
    let said = form.text("say").to_string();
    if !said.is_empty() {
        draft.chat.push((true, said));
    }
    let turns: Vec<Turn> = draft
        .chat
        .iter()
        .map(|(from_lead, text)| Turn {
            from_lead: *from_lead,
            text: text.clone(),
        })
        .collect();
    let tried = state
        .engine
        .try_assistant(
            visitor.org(),
            &draft.instructions,
            &turns,
            draft.chat_channel.unwrap_or(Channel::Sms),
        )
        .await?;
    Ok(match tried {
        Ok(tried) => {
            if !tried.reply.is_empty() {
                draft.chat.push((false, tried.reply.clone()));
            }
            let mut words = format!("Answered in {} ms.", tried.took.as_millis());
            for would in &tried.would {
                words.push_str(&format!(" It {would} (not applied)."));
            }
            words
        }
        Err(reason) => reason,
    })
}

/// Each step's text rendered for the named lead, or a sample one.
fn preview(state: &AppState, visitor: &Visitor, draft: &Draft) -> Result<Vec<(String, String)>> {
    let read = state.store.read()?;
    let sample = LeadRecord {
        first_name: "Sam".into(),
        last_name: "Sample".into(),
        phone: "+15125550100".into(),
        email: "sam@example.com".into(),
        ..LeadRecord::default()
    };
    let lead = if draft.preview_lead.is_empty() {
        sample
    } else {
        read.lead(visitor.org(), &draft.preview_lead)?
            .filter(|l| l.deleted_at.is_none())
            .ok_or_else(|| Error::lead_not_found(&draft.preview_lead))?
    };
    let business = org::business_name(&read, visitor.org())?;
    Ok(draft
        .steps
        .iter()
        .map(|s| {
            let subject = if s.channel == "email" {
                templates::render(&s.subject, &lead, &business)
            } else {
                String::new()
            };
            (subject, templates::render(&s.text, &lead, &business))
        })
        .collect())
}

/// The editor page: the form's state and what came of the last action, each refusal
/// beside the field it names (a refusal naming no field of the form shows at the top).
struct ProfileEditorView<'a> {
    visitor: &'a Visitor,
    draft: &'a Draft,
    shown: &'a Shown,
    title: String,
}

/// The fields of the form that show their refusal beside them (the cadence's steps
/// besides, by `cadence…`).
const PLACED: [&str; 7] = [
    "name",
    "instructions",
    "replyDelay",
    "voiceGreeting",
    "transferNumber",
    "fallbackTransferNumber",
    "dispositions",
];

impl<'a> ProfileEditorView<'a> {
    fn of(visitor: &'a Visitor, draft: &'a Draft, shown: &'a Shown) -> ProfileEditorView<'a> {
        let title = if draft.new {
            "New campaign".to_string()
        } else {
            format!("Edit {}", draft.name)
        };
        ProfileEditorView {
            visitor,
            draft,
            shown,
            title,
        }
    }

    fn view(&self) -> Markup {
        let draft = self.draft;
        layout::page(
            &self.title,
            Some(self.visitor),
            html! {
                p { a href="/console/campaigns" { "All campaigns" } }
                h1 { (self.title) }
                (self.unplaced_refusal())
                @if let Some(notice) = &self.shown.notice { p.notice role="status" { (notice) } }
                form.stack method="post" action=(action_url(draft)) {
                    (layout::csrf_field(self.visitor))
                    input type="hidden" name="steps" value=(draft.steps.len());
                    @for (from_lead, text) in &draft.chat {
                        input type="hidden" name="chat" value={ (if *from_lead { "lead" } else { "assistant" }) ":" (text) };
                    }
                    (self.profile_fields())
                    h2 { "Cadence" }
                    @for (i, step) in draft.steps.iter().enumerate() { (self.step(i, step)) }
                    @if let Some(message) = self.error_for("cadence") { p.field-error role="alert" { (message) } }
                    div.actions { button.secondary type="submit" name="op" value="add" { "Add step" } }
                    div {
                        label for="preview-lead" { "Preview for lead (id; empty: a sample lead)" }
                        input #preview-lead type="text" name="preview-lead" value=(draft.preview_lead);
                    }
                    div.actions {
                        button type="submit" name="op" value="save" { "Save" }
                        button.secondary type="submit" name="op" value="preview" { "Preview" }
                    }
                    (self.playground())
                }
            },
        )
    }

    /// The refusal's message when it names a field of the form.
    fn error_for(&self, path: &str) -> Option<&str> {
        self.shown
            .error
            .as_ref()
            .filter(|(f, _)| f == path)
            .map(|(_, m)| m.as_str())
    }

    /// The refusal of `path` under the input `id`, if it is refused.
    fn described(&self, id: &str, path: &str) -> Markup {
        html! {
            @if let Some(message) = self.error_for(path) { p.field-error id={ (id) "-error" } role="alert" { (message) } }
        }
    }

    /// A refusal no field of the form shows, at the top.
    fn unplaced_refusal(&self) -> Markup {
        html! {
            @if let Some((path, message)) = &self.shown.error {
                @if PLACED.contains(&path.as_str()) || path.starts_with("cadence") {
                } @else {
                    p.field-error role="alert" { (message) }
                }
            }
        }
    }

    /// The profile's own members: its name (a new one), instructions, reply delay,
    /// greeting, transfer numbers and dispositions.
    fn profile_fields(&self) -> Markup {
        let draft = self.draft;
        html! {
            @if draft.new {
                div {
                    label for="name" { "Name" }
                    input #name type="text" name="name" value=(draft.name);
                    (self.described("name", "name"))
                    p.muted { "Letters, digits, - and _; leads name it in customerProfile." }
                }
            }
            div {
                label for="instructions" { "Instructions" }
                textarea #instructions name="instructions" rows="6" { (draft.instructions) }
                (self.described("instructions", "instructions"))
            }
            div {
                label for="reply-delay" { "Reply delay" }
                input #reply-delay type="text" name="reply-delay" value=(draft.reply_delay) placeholder="30s";
                (self.described("reply-delay", "replyDelay"))
            }
            div {
                label for="voice-greeting" { "Voice greeting" }
                textarea #voice-greeting name="voice-greeting" rows="2" { (draft.voice_greeting) }
                (self.described("voice-greeting", "voiceGreeting"))
            }
            div {
                label for="transfer" { "Transfer number" }
                input #transfer type="text" name="transfer" value=(draft.transfer);
                (self.described("transfer", "transferNumber"))
            }
            div {
                label for="fallback" { "Fallback transfer number" }
                input #fallback type="text" name="fallback" value=(draft.fallback);
                (self.described("fallback", "fallbackTransferNumber"))
            }
            div {
                label for="dispositions" { "Dispositions" }
                textarea #dispositions name="dispositions" rows="3" { (draft.dispositions) }
                p.muted { "One per line: id | name | description." }
                (self.described("dispositions", "dispositions"))
            }
        }
    }

    /// Step `i` of the cadence: its fields, its preview, and its buttons.
    fn step(&self, i: usize, step: &Step) -> Markup {
        let id = |member: &str| format!("step-{i}-{member}");
        let path = |member: &str| format!("cadence[{i}].{member}");
        html! {
            fieldset.step {
                legend { "Step " (i + 1) }
                div {
                    label for=(id("channel")) { "Channel of step " (i + 1) }
                    select id=(id("channel")) name=(id("channel")) {
                        @for c in ["sms", "email", "voice"] { option value=(c) selected[step.channel == c] { (c) } }
                    }
                    (self.described(&id("channel"), &path("channel")))
                }
                div {
                    label for=(id("after")) { "After (step " (i + 1) ")" }
                    input id=(id("after")) type="text" name=(id("after")) value=(step.after);
                    (self.described(&id("after"), &path("after")))
                }
                div {
                    label for=(id("subject")) { "Subject (step " (i + 1) ")" }
                    input id=(id("subject")) type="text" name=(id("subject")) value=(step.subject);
                    (self.described(&id("subject"), &path("subject")))
                }
                div {
                    label for=(id("text")) { "Text (step " (i + 1) ")" }
                    textarea id=(id("text")) name=(id("text")) rows="3" { (step.text) }
                    (self.described(&id("text"), &path("text")))
                    input type="hidden" name=(id("purpose")) value=(step.purpose);
                }
                (self.step_preview(i))
                div.actions {
                    button.secondary type="submit" name="op" value={ "remove:" (i) } { "Remove step " (i + 1) }
                    @if i > 0 { button.secondary type="submit" name="op" value={ "up:" (i) } { "Move step " (i + 1) " up" } }
                    @if i + 1 < self.draft.steps.len() { button.secondary type="submit" name="op" value={ "down:" (i) } { "Move step " (i + 1) " down" } }
                }
            }
        }
    }

    /// Step `i` rendered for the preview's lead, after "Preview".
    fn step_preview(&self, i: usize) -> Markup {
        html! {
            @if let Some(preview) = self.shown.preview.as_ref().and_then(|p| p.get(i)) {
                div.preview {
                    p.muted { "Preview" }
                    @if !preview.0.is_empty() { p { strong { (preview.0) } } }
                    p { (preview.1) }
                }
            }
        }
    }

    /// "Try the assistant": the conversation so far, the last try's outcome, and the
    /// lead's next words.
    fn playground(&self) -> Markup {
        let draft = self.draft;
        html! {
            h2 { "Try the assistant" }
            p.muted { "Write as the lead; the configured assistant answers with these instructions, saved or not. Nothing is sent, stored or applied." }
            @if !draft.chat.is_empty() {
                ol.timeline aria-label="Conversation with the assistant" {
                    @for (from_lead, text) in &draft.chat {
                        li class=(if *from_lead { "from-lead" } else { "from-user" }) {
                            div.meta { span.who { (if *from_lead { "You, as the lead" } else { "Assistant" }) } }
                            p.text { (text) }
                        }
                    }
                }
            }
            @if let Some(tried) = &self.shown.tried { p.notice role="status" { (tried) } }
            div {
                label for="chat-channel" { "Conversation on" }
                select #chat-channel name="chat-channel" {
                    @for (channel, words) in [(Channel::Sms, "SMS"), (Channel::Email, "Email"), (Channel::Voice, "A call (spoken)")] {
                        option value=(channel.as_str()) selected[draft.chat_channel.unwrap_or(Channel::Sms) == channel] { (words) }
                    }
                }
            }
            div {
                label for="say" { "As the lead" }
                input #say type="text" name="say";
            }
            div.actions { button.secondary type="submit" name="op" value="try" { "Try the assistant" } }
        }
    }
}
