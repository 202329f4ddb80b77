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
use crate::domain::records::search::{self, LeadFilter};
use crate::domain::settings::profiles::{DispositionInput, ProfileInput, StepInput};
use crate::domain::settings::{org, profiles, templates};
use crate::error::{Error, Result};
use crate::providers::model::protocol::Turn;
use crate::store::rows::{LeadRecord, OnMachine, ProfileRecord, Purpose, VoicemailRecord};
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
    /// The profile's id (a new campaign's is derived from its display name on save).
    name: String,
    new: bool,
    /// The campaign's name as people read it ("Spring Solar Push").
    display_name: String,
    instructions: String,
    reply_delay: String,
    voice_greeting: String,
    transfer: String,
    fallback: String,
    /// The calendar the assistant books on (empty: none), and the organization's
    /// calendars to choose from.
    calendar: String,
    calendar_choices: Vec<String>,
    /// What a call screener hears (empty: the default).
    screening_reply: String,
    /// When a machine answers an AI call: `leave` (the voicemail below) or `hang_up`.
    on_machine: String,
    voicemail: String,
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
    /// Every refusal of the last "Save": (API field path, words for people).
    refusals: Vec<(String, String)>,
    preview: Option<Preview>,
    tried: Option<String>,
}

/// What "Preview" shows: whom the steps were rendered for (or why for nobody), the
/// other leads the search found, and each step rendered.
#[derive(Debug, Default)]
struct Preview {
    /// "Previewed for Ada Lovelace (+15125550101)", or "nothing found" words.
    heading: String,
    /// Other matches of the search, to choose from: (lead id, words naming the lead).
    others: Vec<(String, String)>,
    steps: Vec<StepPreview>,
}

/// One step rendered for the preview's lead.
#[derive(Debug, Default)]
struct StepPreview {
    subject: String,
    text: String,
    /// The placeholders that rendered empty for this lead, as written.
    empty: Vec<String>,
}

/// The most other matches "Preview" lists.
const PREVIEW_MATCHES: usize = 6;

impl Draft {
    fn of(p: &ProfileRecord, label: Option<String>) -> Draft {
        Draft {
            name: p.name.clone(),
            new: false,
            display_name: label.unwrap_or_else(|| p.name.clone()),
            instructions: p.instructions.clone(),
            reply_delay: p.reply_delay.clone(),
            voice_greeting: p.voice_greeting.clone(),
            transfer: p.transfer_number.clone(),
            fallback: p.fallback_transfer_number.clone(),
            calendar: p.calendar.clone(),
            calendar_choices: Vec::new(),
            screening_reply: p.screening_reply.clone(),
            on_machine: match &p.voicemail {
                Some(v) if v.on_machine == OnMachine::Leave => "leave".to_string(),
                _ => "hang_up".to_string(),
            },
            voicemail: p
                .voicemail
                .as_ref()
                .map(|v| v.text.clone())
                .unwrap_or_default(),
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
            name: name.to_string(),
            new,
            display_name: form.text("display-name").to_string(),
            instructions: form.get("instructions").unwrap_or_default().to_string(),
            reply_delay: form.text("reply-delay").to_string(),
            voice_greeting: form.get("voice-greeting").unwrap_or_default().to_string(),
            transfer: form.text("transfer").to_string(),
            fallback: form.text("fallback").to_string(),
            calendar: form.text("calendar").to_string(),
            calendar_choices: Vec::new(),
            screening_reply: form.get("screening-reply").unwrap_or_default().to_string(),
            on_machine: form.text("on-machine").to_string(),
            voicemail: form.get("voicemail").unwrap_or_default().to_string(),
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
            display_name: Some(self.display_name.trim().to_string()),
            instructions: self.instructions.clone(),
            cadence,
            reply_delay: (!self.reply_delay.is_empty()).then(|| self.reply_delay.clone()),
            dispositions,
            transfer_number: text(&self.transfer),
            fallback_transfer_number: text(&self.fallback),
            voice_greeting: text(&self.voice_greeting),
            calendar: Some(self.calendar.clone()),
            screening_reply: Some(text(&self.screening_reply)),
            // "Leave the voicemail" with its text; anything else hangs up.
            voicemail: Some((self.on_machine == "leave").then(|| VoicemailRecord {
                text: self.voicemail.clone(),
                on_machine: OnMachine::Leave,
            })),
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
    let path = match name {
        Some(name) => super::routes::campaign_path(name, "/edit"),
        None => "/console/campaigns/new".to_string(),
    };
    // The form as the last POST left it (refusals, a preview, a step moved), once.
    if let Some((mut draft, shown)) = state
        .flash
        .take::<(Draft, Shown)>(visitor.token_hash, &path)
    {
        draft.calendar_choices = calendar_names(state, visitor)?;
        let keys = templates::additional_keys(&state.store.read()?, visitor.org())?;
        return Ok(respond::html(
            StatusCode::OK,
            ProfileEditorView::of(visitor, &draft, &shown, &keys).view(),
        ));
    }
    let draft = match name {
        Some(name) => {
            let read = state.store.read()?;
            let profile = read
                .profile(visitor.org(), name)?
                .ok_or_else(profiles::not_found)?;
            Draft::of(&profile, read.profile_label(visitor.org(), name)?)
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
    let mut draft = draft;
    draft.calendar_choices = calendar_names(state, visitor)?;
    let keys = templates::additional_keys(&state.store.read()?, visitor.org())?;
    Ok(respond::html(
        StatusCode::OK,
        ProfileEditorView::of(visitor, &draft, &Shown::default(), &keys).view(),
    ))
}

/// The organization's calendars, by name: the editor's calendar choices.
fn calendar_names(state: &AppState, visitor: &Visitor) -> Result<Vec<String>> {
    Ok(state
        .store
        .read()?
        .calendars(visitor.org())?
        .into_iter()
        .map(|c| c.name)
        .collect())
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
            Ok(id) => return Ok(respond::redirect(&super::routes::campaign_path(&id, ""))),
            Err(refusals) => shown.refusals = refusals,
        },
        "preview" => shown.preview = Some(preview(state, visitor, &draft, None)?),
        op if op.starts_with("preview:") => {
            let chosen = op.trim_start_matches("preview:");
            shown.preview = Some(preview(state, visitor, &draft, Some(chosen))?)
        }
        "try" => shown.tried = Some(try_assistant(state, visitor, &form, &mut draft).await?),
        "replay" => match replay(state, visitor, &draft).await? {
            Ok(id) => {
                // The form waits for the way back; the results are a page of their own.
                shown.notice = Some(
                    "Your change is not saved yet: save it below once you have read how it answers."
                        .into(),
                );
                state
                    .flash
                    .put(visitor.token_hash, &action_url(&draft), (draft, shown));
                return Ok(respond::redirect(&format!("/console/replays/{id}")));
            }
            Err(Refused::Fields(refusals)) => shown.refusals = refusals,
            Err(Refused::Words(words)) => shown.notice = Some(words),
        },
        op => edit_steps(&mut draft, op),
    }
    // Post/Redirect/Get: the form as it now stands waits for the page the 303 leads to.
    let path = action_url(&draft);
    state.flash.put(visitor.token_hash, &path, (draft, shown));
    Ok(respond::redirect(&path))
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

/// "Save": the profile written as `PUT /v1/profiles/{name}` writes it (a new
/// campaign under an id derived from its name, `profiles::create_or_refusals`), its id;
/// or every refusal at once as (the field it names, or "", its words) and nothing
/// written.
async fn save(
    state: &AppState,
    visitor: &Visitor,
    draft: &Draft,
) -> Result<std::result::Result<String, Vec<(String, String)>>> {
    let (caller, name, input, new) = (
        visitor.caller(),
        draft.name.clone(),
        draft.input(),
        draft.new,
    );
    let failures = tests_before_save(state, visitor, draft, &input).await?;
    if !failures.is_empty() {
        let words = format!(
            "The campaign's tests failed, so it was not saved: {}",
            failures.join("; ")
        );
        return Ok(Err(vec![("instructions".into(), words)]));
    }
    let saved = state
        .store
        .write(move |tx| {
            if new {
                profiles::create_or_refusals(tx, &caller, &input)
            } else {
                Ok(profiles::put_or_refusals(tx, &caller, &name, &input)?.map(|p| p.name))
            }
        })
        .await?;
    Ok(saved.map_err(|refusals| refusals.into_iter().map(|r| (r.field, r.words)).collect()))
}

/// `requireTestsPass` on the stored profile: a save that changes the instructions or
/// the calendar runs its tests first (`engine::replay`); each failed expectation in
/// words. Nothing when the form will be refused anyway.
async fn tests_before_save(
    state: &AppState,
    visitor: &Visitor,
    draft: &Draft,
    input: &ProfileInput,
) -> Result<Vec<String>> {
    let Some(stored) = state.store.read()?.profile(visitor.org(), &draft.name)? else {
        return Ok(Vec::new());
    };
    let Ok(mut profile) = input.record(&draft.name) else {
        return Ok(Vec::new());
    };
    profile.tests = stored.tests.clone();
    if input.calendar.is_none() {
        profile.calendar = stored.calendar.clone();
    }
    let changed =
        stored.instructions != profile.instructions || stored.calendar != profile.calendar;
    if !stored.require_tests_pass || stored.tests.is_empty() || !changed {
        return Ok(Vec::new());
    }
    let results = state
        .engine
        .run_tests(visitor.org(), &profile, &profile.tests)
        .await?;
    Ok(results
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.name)))
        .collect())
}

/// Why "Try this change" started nothing.
enum Refused {
    /// The form's refusals, as "Save" shows them.
    Fields(Vec<(String, String)>),
    /// Another replay runs, or no assistant is configured.
    Words(String),
}

/// "Try this change": a replay of the form as it stands over the campaign's recent
/// conversations (`engine::replay`); its id, or why none started.
async fn replay(
    state: &AppState,
    visitor: &Visitor,
    draft: &Draft,
) -> Result<std::result::Result<String, Refused>> {
    let input = draft.input();
    let refusals = input.refusals(&draft.name);
    if !refusals.is_empty() {
        return Ok(Err(Refused::Fields(
            refusals.into_iter().map(|r| (r.field, r.words)).collect(),
        )));
    }
    let mut profile = match input.record(&draft.name) {
        Ok(profile) => profile,
        Err(e) => return Ok(Err(Refused::Words(e.to_string()))),
    };
    // The editor shows neither the tests nor the calendar's absence: the stored ones.
    if let Some(stored) = state.store.read()?.profile(visitor.org(), &draft.name)? {
        profile.tests = stored.tests;
        if input.calendar.is_none() {
            profile.calendar = stored.calendar;
        }
    }
    let request = crate::engine::ReplayRequest {
        profile: draft.name.clone(),
        draft: profile,
        selection: crate::domain::settings::replays::Selection::Recent(
            crate::domain::settings::replays::DEFAULT_CONVERSATIONS,
        ),
    };
    match state.engine.start_replay(visitor.org(), request).await {
        Ok(replay) => Ok(Ok(replay.id)),
        Err(Error::Conflict(words)) => Ok(Err(Refused::Words(words))),
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

/// Each step's text rendered for a lead: the one `chosen` among earlier matches, else
/// the first the "Preview for lead" text finds (a name, email or phone, searched as the
/// leads list's search box searches), else a sample lead when the text is empty.
/// Placeholders that render empty are named beside each step.
fn preview(
    state: &AppState,
    visitor: &Visitor,
    draft: &Draft,
    chosen: Option<&str>,
) -> Result<Preview> {
    let read = state.store.read()?;
    let org_id = visitor.org();
    let live = |id: &str| -> Result<Option<LeadRecord>> {
        Ok(read.lead(org_id, id)?.filter(|l| l.deleted_at.is_none()))
    };
    let mut others = Vec::new();
    let lead = match chosen {
        Some(id) => live(id)?,
        None if draft.preview_lead.trim().is_empty() => Some(LeadRecord {
            first_name: "Sam".into(),
            last_name: "Sample".into(),
            phone: "+15125550100".into(),
            email: "sam@example.com".into(),
            ..LeadRecord::default()
        }),
        None => {
            let filter = LeadFilter {
                q: Some(draft.preview_lead.trim().to_string()),
                ..LeadFilter::default()
            };
            let found = search::search(&read, org_id, &filter, PREVIEW_MATCHES + 1, None)?;
            let mut leads = Vec::with_capacity(found.leads.len());
            for indexed in &found.leads {
                if let Some(lead) = live(&indexed.id)? {
                    leads.push(lead);
                }
            }
            let mut leads = leads.into_iter();
            let first = leads.next();
            others = leads.map(|l| (l.id.clone(), who(&l))).collect();
            first
        }
    };
    let Some(lead) = lead else {
        return Ok(Preview {
            heading: format!(
                "No lead matches \"{}\": write a name, an email or a phone number, or leave it empty for a sample lead.",
                draft.preview_lead.trim()
            ),
            ..Preview::default()
        });
    };
    let business = org::business_name(&read, org_id)?;
    let heading = if lead.id.is_empty() {
        "Previewed for a sample lead (Sam Sample).".to_string()
    } else {
        format!("Previewed for {}.", who(&lead))
    };
    let steps = draft
        .steps
        .iter()
        .map(|s| {
            let email = s.channel == "email";
            let mut empty = templates::empty_placeholders(&s.text, &lead, &business);
            let subject = if email {
                for missing in templates::empty_placeholders(&s.subject, &lead, &business) {
                    if !empty.contains(&missing) {
                        empty.push(missing);
                    }
                }
                templates::render(&s.subject, &lead, &business)
            } else {
                String::new()
            };
            StepPreview {
                subject,
                text: templates::render(&s.text, &lead, &business),
                empty,
            }
        })
        .collect();
    Ok(Preview {
        heading,
        others,
        steps,
    })
}

/// A lead named for people: its name, with its phone or email when it has them.
fn who(lead: &LeadRecord) -> String {
    let name = layout::lead_name(lead);
    let contact = if !lead.phone.is_empty() {
        &lead.phone
    } else {
        &lead.email
    };
    if contact.is_empty() || *contact == name {
        name
    } else {
        format!("{name} ({contact})")
    }
}

/// The editor page: the form's state and what came of the last action, each refusal
/// beside the field it names (a refusal naming no field of the form shows at the top),
/// help beside the durations and the texts (the organization's own fields offered as
/// placeholders).
struct ProfileEditorView<'a> {
    visitor: &'a Visitor,
    draft: &'a Draft,
    shown: &'a Shown,
    /// The `additionalInfo` keys the organization's leads use.
    keys: &'a [String],
    title: String,
}

/// The fields of the form that show their refusal beside them (the cadence's steps
/// and the dispositions' lines besides, by prefix).
const PLACED: [&str; 10] = [
    "name",
    "displayName",
    "instructions",
    "replyDelay",
    "voiceGreeting",
    "transferNumber",
    "fallbackTransferNumber",
    "calendar",
    "screeningReply",
    "voicemail.text",
];

/// Whether a refusal of `field` shows beside a field of the form.
fn placed(field: &str) -> bool {
    PLACED.contains(&field) || field.starts_with("cadence") || field.starts_with("dispositions")
}

impl<'a> ProfileEditorView<'a> {
    fn of(
        visitor: &'a Visitor,
        draft: &'a Draft,
        shown: &'a Shown,
        keys: &'a [String],
    ) -> ProfileEditorView<'a> {
        let title = if draft.new {
            "New campaign".to_string()
        } else {
            format!("Edit {}", draft.display_name)
        };
        ProfileEditorView {
            visitor,
            draft,
            shown,
            keys,
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
                (self.refusal_summary())
                @if let Some(notice) = &self.shown.notice { p.notice role="status" { (notice) } }
                form.stack.wide method="post" action=(action_url(draft)) {
                    (layout::csrf_field(self.visitor))
                    input type="hidden" name="steps" value=(draft.steps.len());
                    @for (from_lead, text) in &draft.chat {
                        input type="hidden" name="chat" value={ (if *from_lead { "lead" } else { "assistant" }) ":" (text) };
                    }
                    (self.profile_fields())
                    h2 { "Cadence" }
                    (self.described("cadence", |f| f == "cadence"))
                    @for (i, step) in draft.steps.iter().enumerate() { (self.step(i, step)) }
                    div.actions { button.secondary type="submit" name="op" value="add" { "Add step" } }
                    div.field {
                        label for="preview-lead" { "Preview for lead" }
                        div {
                            input #preview-lead type="search" name="preview-lead" value=(draft.preview_lead) aria-describedby="preview-lead-help";
                            p.muted #preview-lead-help { "A name, email or phone number, as in the leads list's search; empty: a sample lead." }
                        }
                    }
                    (self.preview_heading())
                    div.actions {
                        button type="submit" name="op" value="save" { "Save" }
                        button.secondary type="submit" name="op" value="preview" { "Preview" }
                        @if !draft.new {
                            button.secondary type="submit" name="op" value="replay" { "Try this change" }
                        }
                    }
                    @if !draft.new {
                        p.muted { "“Try this change” asks the assistant, with this form as it stands, to answer the campaign's last 20 conversations again, and shows what it would say beside what was said. Nothing is sent or saved." }
                    }
                    (self.playground())
                }
            },
        )
    }

    /// The refusals whose field `matches`, one paragraph each, in a block `id`d for the
    /// input's `aria-describedby`.
    fn described(&self, id: &str, matches: impl Fn(&str) -> bool) -> Markup {
        let refusals: Vec<&str> = self
            .shown
            .refusals
            .iter()
            .filter(|(f, _)| matches(f))
            .map(|(_, words)| words.as_str())
            .collect();
        html! {
            @if !refusals.is_empty() {
                div.field-error id={ (id) "-error" } {
                    @for words in refusals { p { (words) } }
                }
            }
        }
    }

    /// Whether a refusal names the field `path`.
    fn refused(&self, path: &str) -> bool {
        self.shown.refusals.iter().any(|(f, _)| f == path)
    }

    /// At the top, after a refused "Save": how many fields need a change, and the
    /// refusals no field of the form shows.
    fn refusal_summary(&self) -> Markup {
        let refusals = &self.shown.refusals;
        html! {
            @if !refusals.is_empty() {
                div.notice.refused role="alert" {
                    p {
                        strong { "Not saved." }
                        @if refusals.len() == 1 { " One field needs a change; it is marked below." }
                        @else { " " (refusals.len()) " fields need a change; each is marked below." }
                    }
                    @for words in refusals.iter().filter(|(f, _)| !placed(f)).map(|(_, w)| w) {
                        p.field-error { (words) }
                    }
                }
            }
        }
    }

    /// A labelled single-line input with its help and its refusals.
    fn input(&self, id: &str, label: Markup, value: &str, path: &str, help: Markup) -> Markup {
        let refused = self.refused(path);
        html! {
            div.field {
                label for=(id) { (label) }
                div {
                    input id=(id) type="text" name=(id) value=(value)
                        aria-invalid=[refused.then_some("true")] aria-describedby={ (id) "-help" @if refused { " " (id) "-error" } };
                    p.muted id={ (id) "-help" } { (help) }
                    (self.described(id, |f| f == path))
                }
            }
        }
    }

    /// A labelled textarea with its help and its refusals (those whose field `matches`).
    fn textarea(
        &self,
        id: &str,
        label: Markup,
        value: &str,
        rows: u8,
        matches: impl Fn(&str) -> bool,
        help: Markup,
    ) -> Markup {
        self.text_box(id, label, value, rows, matches, help, false)
    }

    /// [`Self::textarea`], with its SMS segments counted beside it when `sms`.
    #[allow(clippy::too_many_arguments)]
    fn text_box(
        &self,
        id: &str,
        label: Markup,
        value: &str,
        rows: u8,
        matches: impl Fn(&str) -> bool,
        help: Markup,
        sms: bool,
    ) -> Markup {
        let refused = self.shown.refusals.iter().any(|(f, _)| matches(f));
        let max = sms.then_some(crate::domain::records::limits::MAX_SMS_SEGMENTS);
        html! {
            div.field {
                label for=(id) { (label) }
                div {
                    textarea id=(id) name=(id) rows=(rows) data-sms-count=[max]
                        aria-invalid=[refused.then_some("true")] aria-describedby={ (id) "-help" @if refused { " " (id) "-error" } } { (value) }
                    @if let Some(max) = max {
                        p.muted id={ (id) "-segments" } aria-live="polite" { (crate::sms_segments::words(value, max)) }
                    }
                    p.muted id={ (id) "-help" } { (help) }
                    (self.described(id, matches))
                }
            }
        }
    }

    /// The placeholders a text may hold: every lead's, then the organization's own
    /// additional fields.
    fn placeholders(&self) -> Markup {
        html! {
            "Placeholders: "
            @for (i, p) in templates::PLACEHOLDERS.iter().enumerate() {
                @if i > 0 { ", " }
                code { (p) }
            }
            @if self.keys.is_empty() {
                ", and " code { "{{additionalInfo.KEY}}" } " for a lead's additional field."
            } @else {
                "; your leads' additional fields: "
                @for (i, key) in self.keys.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { "{{additionalInfo." (key) "}}" }
                }
                "."
            }
        }
    }

    /// The profile's own members: its name (a new one), instructions, reply delay,
    /// greeting, transfer numbers and dispositions.
    fn profile_fields(&self) -> Markup {
        let draft = self.draft;
        let default_delay = format!("{}s", profiles::DEFAULT_REPLY_DELAY_MS / 1000);
        html! {
            (self.input("display-name", html! { "Campaign name" }, &draft.display_name, "displayName",
                html! {
                    @if draft.new { "The name your team sees, such as Spring Solar Push." }
                    @else { "The name your team sees. ID for integrations: " code { (draft.name) } }
                }))
            (self.textarea("instructions", html! { "Instructions" }, &draft.instructions, 6,
                |f| f == "instructions", html! { "What the assistant knows and how it answers." }))
            div.field {
                label for="reply-delay" { "Reply delay" }
                div {
                    input #reply-delay type="text" name="reply-delay" value=(draft.reply_delay) placeholder=(default_delay)
                        aria-invalid=[self.refused("replyDelay").then_some("true")]
                        aria-describedby={ "reply-delay-help" @if self.refused("replyDelay") { " reply-delay-error" } };
                    p.muted #reply-delay-help { "How long the assistant waits before it answers: a duration such as 30s, 5m or 1h (s seconds, m minutes, h hours); empty: " (default_delay) "." }
                    (self.described("reply-delay", |f| f == "replyDelay"))
                }
            }
            (self.textarea("voice-greeting", html! { "Voice greeting" }, &draft.voice_greeting, 2,
                |f| f == "voiceGreeting", self.placeholders()))
            (self.input("transfer", html! { "Transfer number" }, &draft.transfer, "transferNumber",
                html! { "Where a call is transferred, such as +1 512 555 0100; empty: none." }))
            (self.input("fallback", html! { "Fallback transfer number" }, &draft.fallback, "fallbackTransferNumber",
                html! { "Tried when the transfer number does not answer; empty: none." }))
            div.field {
                label for="calendar" { "Calendar" }
                div {
                    select #calendar name="calendar" aria-describedby="calendar-help" {
                        option value="" selected[draft.calendar.is_empty()] { "None: the assistant books no meetings" }
                        @for c in &draft.calendar_choices { option value=(c) selected[*c == draft.calendar] { (c) } }
                        @if !draft.calendar.is_empty() && !draft.calendar_choices.contains(&draft.calendar) {
                            option value=(draft.calendar) selected { (draft.calendar) " (not found)" }
                        }
                    }
                    p.muted #calendar-help { "The calendar the assistant offers times from and books meetings on." }
                    (self.described("calendar", |f| f == "calendar"))
                }
            }
            (self.textarea("screening-reply", html! { "What a call screener hears" }, &draft.screening_reply, 2,
                |f| f == "screeningReply", html! { "When a phone's call screener answers (\u{201c}Please state your name and why you're calling\u{201d}); empty: \u{201c}Hi, this is your business calling for the lead about the campaign.\u{201d}" }))
            div.field {
                label for="on-machine" { "When a machine answers" }
                div {
                    select #on-machine name="on-machine" {
                        option value="hang_up" selected[draft.on_machine != "leave"] { "Hang up" }
                        option value="leave" selected[draft.on_machine == "leave"] { "Leave the voicemail below" }
                    }
                }
            }
            (self.textarea("voicemail", html! { "Voicemail" }, &draft.voicemail, 2,
                |f| f.starts_with("voicemail"), html! { "Said once after the beep, then the call ends. " (self.placeholders()) }))
            (self.textarea("dispositions", html! { "Dispositions" }, &draft.dispositions, 3,
                |f| f.starts_with("dispositions"), html! { "One per line: id | name | description." }))
        }
    }

    /// Step `i` of the cadence: its fields, its preview, and its buttons.
    fn step(&self, i: usize, step: &Step) -> Markup {
        let id = |member: &str| format!("step-{i}-{member}");
        let path = |member: &str| format!("cadence[{i}].{member}");
        let n = i + 1;
        html! {
            fieldset.step {
                legend { "Step " (n) }
                div.field {
                    label for=(id("channel")) { "Channel of step " (n) }
                    div {
                        select id=(id("channel")) name=(id("channel")) {
                            @for c in ["sms", "email", "voice"] { option value=(c) selected[step.channel == c] { (c) } }
                        }
                        (self.described(&id("channel"), |f| f == path("channel")))
                    }
                }
                (self.input(&id("after"), html! { "After (step " (n) ")" }, &step.after, &path("after"),
                    html! { @if i == 0 { "After enrolment" } @else { "After step " (i) } ": a duration such as 2d, 3h or 30m (d days, h hours, m minutes); 0s: at once." }))
                (self.input(&id("subject"), html! { "Subject (step " (n) ")" }, &step.subject, &path("subject"),
                    html! { "Email steps only." }))
                (self.text_box(&id("text"), html! { "Text (step " (n) ")" }, &step.text, 3,
                    |f| f == path("text"), self.placeholders(), step.channel == "sms"))
                input type="hidden" name=(id("purpose")) value=(step.purpose);
                (self.step_preview(i))
                div.actions {
                    button.secondary type="submit" name="op" value={ "remove:" (i) } { "Remove step " (n) }
                    @if i > 0 { button.secondary type="submit" name="op" value={ "up:" (i) } { "Move step " (n) " up" } }
                    @if i + 1 < self.draft.steps.len() { button.secondary type="submit" name="op" value={ "down:" (i) } { "Move step " (n) " down" } }
                }
            }
        }
    }

    /// Whom "Preview" rendered the steps for, and the other matches to choose from.
    fn preview_heading(&self) -> Markup {
        html! {
            @if let Some(preview) = &self.shown.preview {
                div.notice role="status" {
                    p { (preview.heading) }
                    @if !preview.others.is_empty() {
                        p { "Also matching; preview for:" }
                        div.actions {
                            @for (id, words) in &preview.others {
                                button.secondary type="submit" name="op" value={ "preview:" (id) } { (words) }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Step `i` rendered for the preview's lead, after "Preview", with the placeholders
    /// that rendered empty flagged.
    fn step_preview(&self, i: usize) -> Markup {
        html! {
            @if let Some(step) = self.shown.preview.as_ref().and_then(|p| p.steps.get(i)) {
                div.preview {
                    p.muted { "Preview" }
                    @for missing in &step.empty {
                        p.field-error { (missing) " is empty for this lead" }
                    }
                    @if !step.subject.is_empty() { p { strong { (step.subject) } } }
                    p { (step.text) }
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
