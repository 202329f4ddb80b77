//! Profiles: what the engagement engine does for the leads whose `customerProfile` names
//! one. A profile holds the assistant's instructions, a follow-up cadence (timed steps on
//! a channel with a text template), the reply delay, the call dispositions and the
//! transfer numbers.
//!
//! This module turns a `PUT /v1/profiles/{name}` body into a
//! [`ProfileRecord`] (refusing anything malformed with the interface's exact messages),
//! renders a record back to its wire shape; `put`, `delete` and `find` store and read
//! them. Templates (`settings::templates`) are checked when the profile is written, so
//! an unknown placeholder is a 400 at PUT time rather than a surprise in a lead's inbox.

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::cursor::CursorKey;
use crate::domain::records::limits;
use crate::domain::records::listing;
use crate::domain::records::written::{Reaction, Written};
use crate::domain::settings::templates::{self, check_placeholders};
use crate::domain::settings::transfer;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::calendars::CalendarReader;
use crate::store::rows::{
    DispositionRecord, OnMachine, ProfileRecord, ProfileTest, Purpose, StepRecord,
    TransferSettings, VoicemailRecord,
};
use crate::store::{Flow, ReadTx, Reader, WriteTx};

/// The most steps one cadence may hold.
pub const MAX_STEPS: usize = 20;

/// The reply delay of a lead without a profile that sets one (a profile's default).
pub const DEFAULT_REPLY_DELAY_MS: u64 = 5_000;

/// The reply delay when a profile sets none, as its `replyDelay` text: the one default
/// (`DEFAULT_REPLY_DELAY_MS`) in whole seconds.
pub fn default_reply_delay() -> String {
    format!("{}s", DEFAULT_REPLY_DELAY_MS / 1000)
}

/// The longest profile name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

const MEMBERS: &[&str] = &[
    "displayName",
    "instructions",
    "cadence",
    "replyDelay",
    "dispositions",
    "transferNumber",
    "fallbackTransferNumber",
    "voiceGreeting",
    "calendar",
    "screeningReply",
    "voicemail",
    "transfer",
    "tests",
    "requireTestsPass",
];
const VOICEMAIL_MEMBERS: &[&str] = &["text", "onMachine"];
const STEP_MEMBERS: &[&str] = &["after", "channel", "text", "subject", "purpose"];
const DISPOSITION_MEMBERS: &[&str] = &["id", "name", "description"];

/// The longest display name of a campaign, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 80;

/// 400 `Invalid format for field: displayName` unless `label` may be a campaign's
/// display name: at most [`MAX_DISPLAY_NAME_CHARS`] characters, no control character
/// (blank says none: the campaign is named by its id).
pub fn check_display_name(label: &str) -> Result<()> {
    if label.chars().count() <= MAX_DISPLAY_NAME_CHARS && !label.chars().any(char::is_control) {
        Ok(())
    } else {
        Err(Error::invalid_field("displayName"))
    }
}

/// The id a new campaign named `label` takes: its words in lower case joined by `-`
/// ("Spring Solar Push" → `spring-solar-push`), cut to [`MAX_NAME_CHARS`], followed by
/// `-2`, `-3` … while `taken` says the id is used; `campaign` when no letter or digit
/// is left.
pub fn id_for(label: &str, mut taken: impl FnMut(&str) -> Result<bool>) -> Result<String> {
    let mut base = String::new();
    for word in label
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !base.is_empty() {
            base.push('-');
        }
        base.extend(word.chars().flat_map(char::to_lowercase));
    }
    let mut base: String = base.chars().take(MAX_NAME_CHARS - 4).collect();
    if base.ends_with('-') {
        base.pop();
    }
    if base.is_empty() || base == RESERVED_NAME {
        base = "campaign".to_string();
    }
    let mut id = base.clone();
    let mut n = 2;
    while taken(&id)? {
        id = format!("{base}-{n}");
        n += 1;
    }
    Ok(id)
}

/// A name no profile may take: the console's path of the new profile's editor.
pub const RESERVED_NAME: &str = "new";

/// Whether `name` may name a profile: 1 to 64 characters, none of them whitespace, a
/// control character or `/` (it is a path segment), and not [`RESERVED_NAME`].
pub fn is_valid_name(name: &str) -> bool {
    let count = name.chars().count();
    name != RESERVED_NAME
        && (1..=MAX_NAME_CHARS).contains(&count)
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '/')
}

/// 400 `Invalid format for field: name` unless `name` may name a profile
/// ([`is_valid_name`]): the first check of a profile's write.
pub fn check_name(name: &str) -> Result<()> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(Error::invalid_field("name"))
    }
}

/// A profile's members as a `PUT /v1/profiles/{name}` body or the console's editor
/// gives them, typed but not yet held to the profile's rules: [`ProfileInput::record`]
/// checks them (and `put` through it), in a fixed order (as listed in the interface), so
/// a profile with several faults always gets the same message, each naming its field
/// (`cadence[2].text`) when it has one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileInput {
    /// The name people read (blank: the id); `None` keeps the one stored.
    pub display_name: Option<String>,
    pub instructions: String,
    pub cadence: Vec<StepInput>,
    /// A duration (`30s`); none: the default.
    pub reply_delay: Option<String>,
    pub dispositions: Vec<DispositionInput>,
    /// Blank: none; otherwise normalised to E.164 like a lead's phone.
    pub transfer_number: String,
    pub fallback_transfer_number: String,
    pub voice_greeting: String,
    /// The calendar the assistant books on (blank: none); it must exist when saved.
    /// `None` keeps the one stored (the console's editor, which does not show it).
    pub calendar: Option<String>,
    /// What a call screener hears (blank: the default); `None` keeps the one stored.
    pub screening_reply: Option<String>,
    /// What a call answered by a machine does (`Some(None)`: hang up); `None` keeps the
    /// one stored.
    pub voicemail: Option<Option<VoicemailRecord>>,
    /// How a transfer reaches a person (`Some(None)`: cold, as the numbers say); `None`
    /// keeps the one stored.
    pub transfer: Option<Option<TransferSettings>>,
    /// The test conversations (`domain::settings::replays`); `None` keeps the ones
    /// stored (the console's editor, which does not show them).
    pub tests: Option<Vec<ProfileTest>>,
    /// Whether a save that changes the instructions or tools must pass the tests;
    /// `None` keeps the one stored.
    pub require_tests_pass: Option<bool>,
}

/// One step of a cadence, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepInput {
    /// A duration after the previous step (`1d`).
    pub after: String,
    /// None: missing or not a channel (refused).
    pub channel: Option<Channel>,
    pub text: String,
    /// Required for email; empty for the others.
    pub subject: String,
    /// None: `marketing`.
    pub purpose: Option<Purpose>,
}

/// One call disposition, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispositionInput {
    pub id: String,
    pub name: String,
    pub description: String,
}

impl ProfileInput {
    /// Reads a `PUT` body with the interface's messages: unknown members first, then
    /// each member's type and rules as [`ProfileInput::record`] checks them, member by
    /// member. The profile's name is checked before (`check_name`).
    pub fn from_json(body: &Map<String, Value>) -> Result<ProfileInput> {
        ProfileInput::read_json(body, Rules::Check)
    }

    /// Reads a `PUT` body for every refusal at once: `Err` with the first refusal as
    /// [`ProfileInput::from_json`] answers it, beside the list of all of them when its
    /// members are well typed ([`ProfileInput::refusals`], the first being the same),
    /// else that one alone.
    pub fn from_json_all(
        body: &Map<String, Value>,
        name: &str,
    ) -> std::result::Result<ProfileInput, (Error, Vec<Refusal>)> {
        let first = match check_name(name).and_then(|()| ProfileInput::from_json(body)) {
            Ok(input) => return Ok(input),
            Err(first) => first,
        };
        let refusals = match ProfileInput::read_json(body, Rules::Skip) {
            Ok(typed) => typed.refusals(name),
            Err(_) => Vec::new(),
        };
        let refusals = match refusals.first() {
            Some(r) if r.error.to_string() == first.to_string() => refusals,
            _ => vec![Refusal {
                field: first.refused_field().unwrap_or_default().to_string(),
                words: first.to_string(),
                error: first.clone(),
            }],
        };
        Err((first, refusals))
    }

    /// Reads a body's members and their types, and their rules too when `rules` says.
    fn read_json(body: &Map<String, Value>, rules: Rules) -> Result<ProfileInput> {
        refuse_unknown(body, MEMBERS, "")?;

        let display_name = match present(body, "displayName") {
            None => None,
            Some(Value::String(text)) => Some(text.trim().to_string()),
            Some(_) => return Err(Error::invalid_field("displayName")),
        };
        if let Some(label) = &display_name {
            rules.hold(check_display_name(label))?;
        }

        let instructions = optional_text(body, "instructions", "instructions")?;
        rules.hold(check_instructions(&instructions))?;

        let cadence = match present(body, "cadence") {
            None => Vec::new(),
            Some(Value::Array(steps)) => {
                rules.hold(check_step_count(steps.len()))?;
                steps
                    .iter()
                    .enumerate()
                    .map(|(i, step)| StepInput::from_json(i, step, rules))
                    .collect::<Result<Vec<_>>>()?
            }
            Some(_) => return Err(Error::invalid_field("cadence")),
        };

        let reply_delay = match present(body, "replyDelay") {
            None => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => return Err(Error::invalid_field("replyDelay")),
        };
        rules.hold(reply_delay_of(reply_delay.as_deref()).map(drop))?;

        let dispositions = match present(body, "dispositions") {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                rules.hold(limits::count(
                    "dispositions",
                    items.len(),
                    limits::DISPOSITIONS,
                ))?;
                let mut out: Vec<DispositionInput> = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let disposition = DispositionInput::from_json(i, item, rules)?;
                    rules.hold(refuse_duplicate(i, &out, &disposition))?;
                    out.push(disposition);
                }
                out
            }
            Some(_) => return Err(Error::invalid_field("dispositions")),
        };

        let transfer = transfer::read(body)?;
        let (number, fallback_number) = match &transfer {
            Some(t) => (t.number.clone(), t.fallback_number.clone()),
            None => (None, None),
        };
        let transfer_number =
            transfer::merged(phone_text(body, "transferNumber")?, number, "number")?;
        rules.hold(phone("transferNumber", &transfer_number).map(drop))?;
        let fallback_transfer_number = transfer::merged(
            phone_text(body, "fallbackTransferNumber")?,
            fallback_number,
            "fallbackNumber",
        )?;
        rules.hold(phone("fallbackTransferNumber", &fallback_transfer_number).map(drop))?;
        let transfer = transfer.map(|t| t.settings);
        rules.hold(transfer::check(transfer.as_ref(), transfer_number.trim()))?;

        let voice_greeting = optional_text(body, "voiceGreeting", "voiceGreeting")?;
        rules.hold(check_greeting(&voice_greeting))?;

        let calendar = Some(optional_text(body, "calendar", "calendar")?);

        let screening_reply = optional_text(body, "screeningReply", "screeningReply")?;
        rules.hold(check_spoken("screeningReply", &screening_reply))?;
        let voicemail = voicemail_of(body)?;
        if let Some(voicemail) = &voicemail {
            rules.hold(check_spoken("voicemail.text", &voicemail.text))?;
        }

        let tests = super::replays::tests_of(present(body, "tests"))?;
        let require_tests_pass = match present(body, "requireTestsPass") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(Error::invalid_field("requireTestsPass")),
        };

        Ok(ProfileInput {
            display_name,
            instructions,
            cadence,
            reply_delay,
            dispositions,
            transfer_number,
            fallback_transfer_number,
            voice_greeting,
            calendar,
            screening_reply: Some(screening_reply),
            voicemail: Some(voicemail),
            transfer: Some(transfer),
            tests: Some(tests),
            require_tests_pass: Some(require_tests_pass),
        })
    }

    /// The profile named `name` these members make, held to the profile's rules.
    /// `created_at` and `updated_at` are left 0 for the caller to set.
    pub fn record(&self, name: &str) -> Result<ProfileRecord> {
        check_name(name)?;
        if let Some(label) = &self.display_name {
            check_display_name(label)?;
        }
        check_instructions(&self.instructions)?;
        check_step_count(self.cadence.len())?;
        let cadence = self
            .cadence
            .iter()
            .enumerate()
            .map(|(i, step)| step.record(i))
            .collect::<Result<Vec<_>>>()?;
        let (reply_delay, reply_delay_ms) = reply_delay_of(self.reply_delay.as_deref())?;
        limits::count(
            "dispositions",
            self.dispositions.len(),
            limits::DISPOSITIONS,
        )?;
        let mut dispositions: Vec<DispositionRecord> = Vec::with_capacity(self.dispositions.len());
        for (i, d) in self.dispositions.iter().enumerate() {
            let disposition = d.record(i)?;
            if dispositions.iter().any(|d| d.id == disposition.id) {
                return Err(duplicate(i, &disposition.id));
            }
            dispositions.push(disposition);
        }
        let transfer_number = phone("transferNumber", &self.transfer_number)?;
        let fallback_transfer_number =
            phone("fallbackTransferNumber", &self.fallback_transfer_number)?;
        let transfer = self.transfer.clone().flatten();
        transfer::check(transfer.as_ref(), &transfer_number)?;
        check_greeting(&self.voice_greeting)?;
        let screening_reply = self.screening_reply.as_deref().unwrap_or("").trim();
        check_spoken("screeningReply", screening_reply)?;
        let voicemail = self.voicemail.clone().flatten();
        if let Some(voicemail) = &voicemail {
            check_spoken("voicemail.text", &voicemail.text)?;
        }
        Ok(ProfileRecord {
            name: name.to_string(),
            instructions: self.instructions.clone(),
            cadence,
            reply_delay_ms,
            reply_delay,
            dispositions,
            transfer_number,
            fallback_transfer_number,
            voice_greeting: self.voice_greeting.clone(),
            created_at: 0,
            updated_at: 0,
            calendar: self.calendar.as_deref().unwrap_or("").trim().to_string(),
            screening_reply: screening_reply.to_string(),
            voicemail,
            transfer,
            tests: self.tests.clone().unwrap_or_default(),
            require_tests_pass: self.require_tests_pass.unwrap_or(false),
        })
    }
}

/// One refusal of a profile's members, for a form: the field it refuses (the
/// interface's path, `cadence[1].after`), the error the interface answers with, and the
/// words a person reads beside the field ("Step 2 · After: write a duration such as 2d,
/// 3h or 30m").
#[derive(Debug, Clone)]
pub struct Refusal {
    pub field: String,
    pub error: Error,
    pub words: String,
}

/// How durations are written, for people.
pub const DURATION_HELP: &str =
    "a duration such as 2d, 3h or 30m (d days, h hours, m minutes, s seconds)";

/// The placeholders a text may hold, for people.
fn placeholder_help() -> String {
    format!(
        "the placeholders are {} and {{{{additionalInfo.KEY}}}} for a lead's additional field",
        templates::PLACEHOLDERS.join(", ")
    )
}

/// Collects refusals, each field's first.
#[derive(Default)]
struct Refusals(Vec<Refusal>);

impl Refusals {
    fn check(&mut self, field: &str, result: Result<()>, words: impl FnOnce() -> String) {
        if let Err(error) = result {
            self.0.push(Refusal {
                field: field.to_string(),
                error,
                words: words(),
            });
        }
    }
}

/// The words for a refused text (`label`: "Step 2 · Text"): blank when `required`
/// says why it is needed, an unknown placeholder, or too long.
fn text_words(label: &str, text: &str, max: usize, required: Option<&str>) -> String {
    match (required, templates::unknown_placeholder(text)) {
        (Some(required), _) if text.trim().is_empty() => format!("{label}: {required}"),
        (_, Some(inner)) => format!(
            "{label}: unknown placeholder {{{{{inner}}}}}; {}",
            placeholder_help()
        ),
        _ => format!("{label}: write at most {max} characters"),
    }
}

impl ProfileInput {
    /// Every refusal of these members as the profile named `name`, each field's first,
    /// in the order [`ProfileInput::record`] checks them: empty exactly when `record`
    /// succeeds, and else the first is the error `record` returns.
    pub fn refusals(&self, name: &str) -> Vec<Refusal> {
        let mut out = Refusals::default();
        out.check("name", check_name(name), || {
            format!("Name: use 1 to {MAX_NAME_CHARS} characters without spaces or /, other than \"{RESERVED_NAME}\"")
        });
        if let Some(label) = &self.display_name {
            out.check("displayName", check_display_name(label), || {
                format!(
                    "Campaign name: write at most {MAX_DISPLAY_NAME_CHARS} characters on one line"
                )
            });
        }
        out.check(
            "instructions",
            check_instructions(&self.instructions),
            || {
                format!(
                    "Instructions: write at most {} characters",
                    limits::INSTRUCTIONS_CHARS
                )
            },
        );
        out.check("cadence", check_step_count(self.cadence.len()), || {
            format!("Cadence: at most {MAX_STEPS} steps")
        });
        for (i, step) in self.cadence.iter().enumerate() {
            let path = format!("cadence[{i}]");
            let label = |member: &str| format!("Step {} · {member}", i + 1);
            out.check(
                &format!("{path}.after"),
                step_after(&path, &step.after).map(drop),
                || format!("{}: write {DURATION_HELP}", label("After")),
            );
            out.check(
                &format!("{path}.channel"),
                step.channel
                    .map(drop)
                    .ok_or_else(|| Error::invalid_field(&format!("{path}.channel"))),
                || format!("{}: choose sms, email or voice", label("Channel")),
            );
            let channel = step.channel.unwrap_or(Channel::Sms);
            out.check(
                &format!("{path}.text"),
                step_text(&path, channel, &step.text),
                || {
                    text_words(
                        &label("Text"),
                        &step.text,
                        limits::step_text_chars(channel),
                        Some("write the message this step sends"),
                    )
                },
            );
            if step.channel.is_some() {
                out.check(
                    &format!("{path}.subject"),
                    step_subject(&path, channel, &step.subject),
                    || {
                        text_words(
                            &label("Subject"),
                            &step.subject,
                            limits::SUBJECT_CHARS,
                            Some("an email step needs a subject"),
                        )
                    },
                );
            }
        }
        out.check(
            "replyDelay",
            reply_delay_of(self.reply_delay.as_deref()).map(drop),
            || {
                "Reply delay: write a duration such as 30s, 5m or 1h (empty: the default)"
                    .to_string()
            },
        );
        out.check(
            "dispositions",
            limits::count(
                "dispositions",
                self.dispositions.len(),
                limits::DISPOSITIONS,
            ),
            || format!("Dispositions: at most {}", limits::DISPOSITIONS),
        );
        let mut ids: Vec<&str> = Vec::with_capacity(self.dispositions.len());
        for (i, d) in self.dispositions.iter().enumerate() {
            let path = format!("dispositions[{i}]");
            let line = format!("Dispositions, line {}", i + 1);
            for (member, text, max) in [
                ("id", &d.id, limits::CALL_FIELD_CHARS),
                ("name", &d.name, limits::CALL_FIELD_CHARS),
                (
                    "description",
                    &d.description,
                    limits::DISPOSITION_DESCRIPTION_CHARS,
                ),
            ] {
                out.check(
                    &format!("{path}.{member}"),
                    disposition_text(&path, member, text),
                    || {
                        if text.trim().is_empty() {
                            format!("{line}: write an {member} (id | name | description)")
                        } else {
                            format!("{line}: the {member} has at most {max} characters")
                        }
                    },
                );
            }
            if ids.contains(&d.id.as_str()) {
                out.check(&format!("{path}.id"), Err(duplicate(i, &d.id)), || {
                    format!("{line}: the id {} is already used above", d.id)
                });
            }
            ids.push(&d.id);
        }
        for (field, label, raw) in [
            ("transferNumber", "Transfer number", &self.transfer_number),
            (
                "fallbackTransferNumber",
                "Fallback transfer number",
                &self.fallback_transfer_number,
            ),
        ] {
            out.check(field, phone(field, raw).map(drop), || {
                format!("{label}: write a phone number such as +1 512 555 0100, or leave it empty")
            });
        }
        if let Some(reply) = &self.screening_reply {
            out.check(
                "screeningReply",
                check_spoken("screeningReply", reply),
                || {
                    text_words(
                        "What a call screener hears",
                        reply,
                        limits::GREETING_CHARS,
                        None,
                    )
                },
            );
        }
        if let Some(Some(voicemail)) = &self.voicemail {
            let text = voicemail.text.as_str();
            let checked = if voicemail.on_machine == OnMachine::Leave && text.trim().is_empty() {
                Err(Error::invalid_field("voicemail.text"))
            } else {
                check_spoken("voicemail.text", text)
            };
            out.check("voicemail.text", checked, || {
                if text.trim().is_empty() {
                    "Voicemail: write what is said after the beep, or choose Hang up".to_string()
                } else {
                    text_words("Voicemail", text, limits::GREETING_CHARS, None)
                }
            });
        }
        out.check(
            "voiceGreeting",
            check_greeting(&self.voice_greeting),
            || {
                text_words(
                    "Voice greeting",
                    &self.voice_greeting,
                    limits::GREETING_CHARS,
                    None,
                )
            },
        );
        out.0
    }
}

/// Whether reading a body holds its members to their rules too, or only to their types
/// (to list every refusal afterwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rules {
    Check,
    Skip,
}

impl Rules {
    fn hold(self, result: Result<()>) -> Result<()> {
        match self {
            Rules::Check => result,
            Rules::Skip => Ok(()),
        }
    }
}

fn check_instructions(instructions: &str) -> Result<()> {
    limits::text("instructions", instructions, limits::INSTRUCTIONS_CHARS)
}

fn check_step_count(count: usize) -> Result<()> {
    if count > MAX_STEPS {
        return Err(Error::field(
            "cadence",
            format!("cadence must hold at most {MAX_STEPS} steps"),
        ));
    }
    Ok(())
}

fn check_greeting(greeting: &str) -> Result<()> {
    check_spoken("voiceGreeting", greeting)
}

/// What a call says (`field`): within the bound of a spoken text, known placeholders.
fn check_spoken(field: &str, text: &str) -> Result<()> {
    limits::text(field, text, limits::GREETING_CHARS)?;
    check_placeholders(text)
}

/// The reply delay's text and milliseconds (none: the default).
fn reply_delay_of(text: Option<&str>) -> Result<(String, u64)> {
    match text {
        None => Ok((default_reply_delay(), DEFAULT_REPLY_DELAY_MS)),
        Some(text) => {
            let ms = duration_ms(text).ok_or_else(|| Error::invalid_field("replyDelay"))?;
            Ok((text.to_string(), ms))
        }
    }
}

impl StepInput {
    /// Reads step `index` of a body's `cadence`, checking each member as it is read
    /// (its rules when `rules` says).
    fn from_json(index: usize, step: &Value, rules: Rules) -> Result<StepInput> {
        let path = format!("cadence[{index}]");
        let Value::Object(step) = step else {
            return Err(Error::invalid_field(&path));
        };
        refuse_unknown(step, STEP_MEMBERS, &path)?;
        let field = |member: &str| format!("{path}.{member}");
        let after = match step.get("after") {
            Some(Value::String(text)) => text.clone(),
            _ => return Err(Error::invalid_field(&field("after"))),
        };
        rules.hold(step_after(&path, &after).map(drop))?;
        let channel = step
            .get("channel")
            .and_then(Value::as_str)
            .and_then(Channel::parse)
            .ok_or_else(|| Error::invalid_field(&field("channel")))?;
        let text = match step.get("text") {
            Some(Value::String(text)) => text.clone(),
            _ => return Err(Error::invalid_field(&field("text"))),
        };
        rules.hold(step_text(&path, channel, &text))?;
        let subject = match present(step, "subject") {
            None => String::new(),
            Some(Value::String(subject)) => subject.clone(),
            Some(_) => return Err(Error::invalid_field(&field("subject"))),
        };
        rules.hold(step_subject(&path, channel, &subject))?;
        let purpose = match present(step, "purpose") {
            None => None,
            Some(value) => Some(value.as_str().and_then(Purpose::parse).ok_or_else(|| {
                Error::field(
                    &field("purpose"),
                    format!("{} is marketing or informational", field("purpose")),
                )
            })?),
        };
        Ok(StepInput {
            after,
            channel: Some(channel),
            text,
            subject,
            purpose,
        })
    }

    /// Step `index` as stored, held to the step's rules.
    fn record(&self, index: usize) -> Result<StepRecord> {
        let path = format!("cadence[{index}]");
        let after_ms = step_after(&path, &self.after)?;
        let channel = self
            .channel
            .ok_or_else(|| Error::invalid_field(&format!("{path}.channel")))?;
        step_text(&path, channel, &self.text)?;
        step_subject(&path, channel, &self.subject)?;
        Ok(StepRecord {
            after: self.after.clone(),
            after_ms,
            channel,
            text: self.text.clone(),
            subject: self.subject.clone(),
            purpose: self.purpose.unwrap_or(Purpose::Marketing),
        })
    }
}

/// A step's `after`: a duration, in milliseconds.
fn step_after(path: &str, after: &str) -> Result<u64> {
    duration_ms(after).ok_or_else(|| Error::invalid_field(&format!("{path}.after")))
}

/// A step's `text`: not blank, within the channel's bound, known placeholders only.
fn step_text(path: &str, channel: Channel, text: &str) -> Result<()> {
    let field = format!("{path}.text");
    if text.trim().is_empty() {
        return Err(Error::invalid_field(&field));
    }
    limits::channel_text(&field, channel, text)?;
    check_placeholders(text)
}

/// A step's `subject`: required for email, within its bound, known placeholders only.
fn step_subject(path: &str, channel: Channel, subject: &str) -> Result<()> {
    let field = format!("{path}.subject");
    if channel == Channel::Email && subject.trim().is_empty() {
        return Err(Error::invalid_field(&field));
    }
    limits::text(&field, subject, limits::SUBJECT_CHARS)?;
    check_placeholders(subject)
}

impl DispositionInput {
    /// Reads disposition `index` of a body's `dispositions`, member by member (their
    /// rules when `rules` says).
    fn from_json(index: usize, item: &Value, rules: Rules) -> Result<DispositionInput> {
        let path = format!("dispositions[{index}]");
        let Value::Object(item) = item else {
            return Err(Error::invalid_field(&path));
        };
        refuse_unknown(item, DISPOSITION_MEMBERS, &path)?;
        let required = |member: &str| match item.get(member) {
            Some(Value::String(text)) => {
                rules.hold(disposition_text(&path, member, text))?;
                Ok(text.clone())
            }
            _ => Err(Error::invalid_field(&format!("{path}.{member}"))),
        };
        let id = required("id")?;
        let name = required("name")?;
        let description = optional_text(item, "description", &format!("{path}.description"))?;
        rules.hold(disposition_text(&path, "description", &description))?;
        Ok(DispositionInput {
            id,
            name,
            description,
        })
    }

    /// Disposition `index` as stored, held to its rules.
    fn record(&self, index: usize) -> Result<DispositionRecord> {
        let path = format!("dispositions[{index}]");
        disposition_text(&path, "id", &self.id)?;
        disposition_text(&path, "name", &self.name)?;
        disposition_text(&path, "description", &self.description)?;
        Ok(DispositionRecord {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
        })
    }
}

/// A disposition's `id` and `name` (required, not blank) or `description`, within
/// their bounds.
fn disposition_text(path: &str, member: &str, text: &str) -> Result<()> {
    let field = format!("{path}.{member}");
    if member == "description" {
        return limits::text(&field, text, limits::DISPOSITION_DESCRIPTION_CHARS);
    }
    if text.trim().is_empty() {
        return Err(Error::invalid_field(&field));
    }
    limits::text(&field, text, limits::CALL_FIELD_CHARS)
}

/// `Duplicate disposition id: ID`, refusing disposition `index`'s id.
fn duplicate(index: usize, id: &str) -> Error {
    Error::field(
        &format!("dispositions[{index}].id"),
        format!("Duplicate disposition id: {id}"),
    )
}

fn refuse_duplicate(
    index: usize,
    earlier: &[DispositionInput],
    disposition: &DispositionInput,
) -> Result<()> {
    if earlier.iter().any(|d| d.id == disposition.id) {
        return Err(duplicate(index, &disposition.id));
    }
    Ok(())
}

/// `Unknown field: {prefix}.{member}` for the first member not in `known`.
fn refuse_unknown(object: &Map<String, Value>, known: &[&str], prefix: &str) -> Result<()> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(unknown) if prefix.is_empty() => {
            Err(Error::BadRequest(format!("Unknown field: {unknown}")))
        }
        Some(unknown) => Err(Error::BadRequest(format!(
            "Unknown field: {prefix}.{unknown}"
        ))),
    }
}

/// The member's value, `None` when absent or `null`.
fn present<'a>(object: &'a Map<String, Value>, member: &str) -> Option<&'a Value> {
    object.get(member).filter(|v| !v.is_null())
}

/// The `voicemail` member: `None` when absent or `null` (a machine gets a hang-up);
/// `text` is required and not blank, `onMachine` is `leave` (the default) or `hang_up`.
fn voicemail_of(body: &Map<String, Value>) -> Result<Option<VoicemailRecord>> {
    let object = match present(body, "voicemail") {
        None => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(Error::invalid_field("voicemail")),
    };
    refuse_unknown(object, VOICEMAIL_MEMBERS, "voicemail")?;
    let text = optional_text(object, "text", "voicemail.text")?;
    if text.trim().is_empty() {
        return Err(Error::invalid_field("voicemail.text"));
    }
    let on_machine = match present(object, "onMachine") {
        None => OnMachine::Leave,
        Some(Value::String(s)) => {
            OnMachine::parse(s).ok_or_else(|| Error::invalid_field("voicemail.onMachine"))?
        }
        Some(_) => return Err(Error::invalid_field("voicemail.onMachine")),
    };
    Ok(Some(VoicemailRecord {
        text: text.trim().to_string(),
        on_machine,
    }))
}

/// An optional string member, "" when absent or `null`.
fn optional_text(object: &Map<String, Value>, member: &str, path: &str) -> Result<String> {
    match present(object, member) {
        None => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(Error::invalid_field(path)),
    }
}

/// A transfer number member's text: "" when absent or `null`.
fn phone_text(object: &Map<String, Value>, member: &str) -> Result<String> {
    optional_text(object, member, member)
}

/// A transfer number: blank is "none"; anything else must normalise to E.164 like a
/// lead's phone.
fn phone(member: &str, raw: &str) -> Result<String> {
    if raw.trim().is_empty() {
        return Ok(String::new());
    }
    crate::phone::normalize(raw).ok_or_else(|| Error::invalid_field(member))
}

fn duration_ms(text: &str) -> Option<u64> {
    let duration = crate::duration::parse(text).ok()?;
    u64::try_from(duration.as_millis()).ok()
}

/// The wire shape of a profile whose display name is `label` (none: its name).
pub fn view(p: &ProfileRecord, label: Option<&str>) -> Value {
    let cadence: Vec<Value> = p
        .cadence
        .iter()
        .map(|step| {
            let mut out = Map::new();
            out.insert("after".into(), json!(step.after));
            out.insert("channel".into(), json!(step.channel.as_str()));
            out.insert("text".into(), json!(step.text));
            if !step.subject.is_empty() {
                out.insert("subject".into(), json!(step.subject));
            }
            // `marketing`, the default, is left out.
            if step.purpose != Purpose::Marketing {
                out.insert("purpose".into(), json!(step.purpose.as_str()));
            }
            Value::Object(out)
        })
        .collect();
    let dispositions: Vec<Value> = p
        .dispositions
        .iter()
        .map(|d| json!({"id": d.id, "name": d.name, "description": d.description}))
        .collect();
    json!({
        "name": p.name,
        "displayName": label.unwrap_or(&p.name),
        "instructions": p.instructions,
        "cadence": cadence,
        "replyDelay": p.reply_delay,
        "dispositions": dispositions,
        "transferNumber": non_empty(&p.transfer_number),
        "fallbackTransferNumber": non_empty(&p.fallback_transfer_number),
        "voiceGreeting": non_empty(&p.voice_greeting),
        "calendar": non_empty(&p.calendar),
        "screeningReply": non_empty(&p.screening_reply),
        "voicemail": p.voicemail.as_ref().map(|v| json!({"text": v.text, "onMachine": v.on_machine.as_str()})),
        "transfer": transfer::view(p.transfer.as_ref(), &p.transfer_number, &p.fallback_transfer_number),
        "tests": super::replays::tests_view(&p.tests),
        "requireTestsPass": p.require_tests_pass,
        "createdAt": crate::time::format(p.created_at),
        "updatedAt": crate::time::format(p.updated_at),
    })
}

fn non_empty(text: &str) -> Value {
    if text.is_empty() {
        Value::Null
    } else {
        Value::String(text.to_string())
    }
}

pub fn not_found() -> Error {
    Error::NotFound("Profile not found".into())
}

/// `PUT /v1/profiles/{name}`: replaces the whole profile (keeping its `createdAt`).
pub fn put(
    tx: &mut WriteTx,
    caller: &Caller,
    name: &str,
    input: &ProfileInput,
) -> Result<ProfileRecord> {
    let mut profile = input.record(name)?;
    if !profile.calendar.is_empty() && tx.calendar(&caller.org_id, &profile.calendar)?.is_none() {
        return Err(Error::field("calendar", "Calendar not found"));
    }
    let old = tx.profile(&caller.org_id, name)?;
    if input.calendar.is_none() {
        profile.calendar = old.as_ref().map(|o| o.calendar.clone()).unwrap_or_default();
    }
    if input.transfer.is_none() {
        profile.transfer = old.as_ref().and_then(|o| o.transfer.clone());
        transfer::check(profile.transfer.as_ref(), &profile.transfer_number)?;
    }
    if input.voicemail.is_none() {
        profile.voicemail = old.as_ref().and_then(|o| o.voicemail.clone());
    }
    if input.tests.is_none() {
        profile.tests = old.as_ref().map(|o| o.tests.clone()).unwrap_or_default();
    }
    if input.require_tests_pass.is_none() {
        profile.require_tests_pass = old.as_ref().is_some_and(|o| o.require_tests_pass);
    }
    if input.screening_reply.is_none() {
        profile.screening_reply = old
            .as_ref()
            .map(|o| o.screening_reply.clone())
            .unwrap_or_default();
    }
    if old.is_none() && tx.profile_count(&caller.org_id)? >= limits::PROFILES {
        return Err(limits::too_many("profiles", limits::PROFILES));
    }
    let now = tx.tick();
    profile.created_at = old.map_or(now, |old| old.created_at);
    profile.updated_at = now;
    tx.put_profile(&caller.org_id, &profile)?;
    if let Some(label) = &input.display_name {
        tx.put_profile_label(
            &caller.org_id,
            name,
            Some(label.as_str()).filter(|l| !l.is_empty()),
        )?;
    }
    Ok(profile)
}

/// The console editor's "Save": the profile written as [`put`] writes it, or, when its
/// members are refused, every refusal at once ([`ProfileInput::refusals`]) and nothing
/// written. A refusal of the write itself (too many profiles) is one refusal.
pub fn put_or_refusals(
    tx: &mut WriteTx,
    caller: &Caller,
    name: &str,
    input: &ProfileInput,
) -> Result<std::result::Result<ProfileRecord, Vec<Refusal>>> {
    let refusals = input.refusals(name);
    if !refusals.is_empty() {
        return Ok(Err(refusals));
    }
    match put(tx, caller, name, input) {
        Ok(profile) => Ok(Ok(profile)),
        Err(error) if error.is_bad_request() => Ok(Err(vec![Refusal {
            field: error.refused_field().unwrap_or_default().to_string(),
            words: error.to_string(),
            error,
        }])),
        Err(error) => Err(error),
    }
}

/// The console's "New campaign": the profile written under an id derived from its
/// display name ([`id_for`]; never one in use, so no campaign is replaced), its id; or
/// every refusal at once, a blank name among them.
pub fn create_or_refusals(
    tx: &mut WriteTx,
    caller: &Caller,
    input: &ProfileInput,
) -> Result<std::result::Result<String, Vec<Refusal>>> {
    let label = input.display_name.as_deref().unwrap_or_default().trim();
    if label.is_empty() {
        let mut refusals = vec![Refusal {
            field: "displayName".to_string(),
            error: Error::invalid_field("displayName"),
            words: "Campaign name: write the name your team will see, such as Spring Solar Push"
                .to_string(),
        }];
        refusals.extend(input.refusals("campaign"));
        return Ok(Err(refusals));
    }
    let org = caller.org_id.clone();
    let id = id_for(label, |id| tx.profile_exists(&org, id))?;
    Ok(put_or_refusals(tx, caller, &id, input)?.map(|p| p.name))
}

/// `DELETE /v1/profiles/{name}`: the cadences that follow it stop (`profile_deleted`,
/// engagement's reaction owed).
pub fn delete(tx: &mut WriteTx, caller: &Caller, name: &str) -> Result<Written<()>> {
    if tx.profile(&caller.org_id, name)?.is_none() {
        return Err(not_found());
    }
    tx.delete_profile(&caller.org_id, name)?;
    Ok(Written::owing(
        (),
        Reaction::ProfileDeleted {
            org: caller.org_id.clone(),
            profile: name.to_string(),
        },
    ))
}

/// The most bytes of profiles (as JSON) one page of `GET /v1/profiles` holds, beyond
/// its first profile: a page ends early past it, with a `nextToken`.
pub const PAGE_BYTES: usize = 1024 * 1024;

/// A page of `GET /v1/profiles` in name order: at most `limit` profiles, fewer once
/// they pass [`PAGE_BYTES`] as JSON.
pub fn list(
    read: &ReadTx,
    key: &CursorKey,
    caller: &Caller,
    limit: usize,
    token: Option<&str>,
) -> Result<listing::Page<Value>> {
    let query = ["profiles", caller.org_id.as_str()];
    let after = token.map(|t| key.open::<String>(&query, t)).transpose()?;
    let (mut items, mut bytes, mut more, mut last) = (Vec::new(), 0usize, false, None);
    read.scan_profiles(&caller.org_id, after.as_deref(), |profile| {
        if items.len() == limit || bytes > PAGE_BYTES {
            more = true;
            return Ok(Flow::Stop);
        }
        let label = read.profile_label(&caller.org_id, &profile.name)?;
        let shown = view(&profile, label.as_deref());
        bytes += serde_json::to_vec(&shown).map_or(0, |b| b.len());
        last = Some(profile.name);
        items.push(shown);
        Ok(Flow::Continue)
    })?;
    let next_token = match last {
        Some(last) if more => Some(key.seal(&query, &last)?),
        _ => None,
    };
    Ok(listing::Page { items, next_token })
}

pub fn find(read: &ReadTx, caller: &Caller, name: &str) -> Result<ProfileRecord> {
    read.profile(&caller.org_id, name)?.ok_or_else(not_found)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_campaign_id_is_derived_from_its_name_and_never_taken() {
        let free = |_: &str| Ok(false);
        let id = |label: &str| id_for(label, free).unwrap();
        assert_eq!(id("Spring Solar Push"), "spring-solar-push");
        assert_eq!(id("  Café — Été 2027! "), "café-été-2027");
        assert_eq!(id("new"), "campaign");
        assert_eq!(id("!!!"), "campaign");
        let long = id(&"word ".repeat(40));
        assert!(
            is_valid_name(&long) && long.chars().count() <= MAX_NAME_CHARS,
            "{long}"
        );
        assert!(!long.ends_with('-'));
        let taken = ["spring".to_string(), "spring-2".to_string()];
        let next = id_for("Spring", |id| Ok(taken.iter().any(|t| t == id))).unwrap();
        assert_eq!(next, "spring-3");
        assert!(check_display_name("Spring Solar Push").is_ok());
        assert!(check_display_name(&"x".repeat(81)).is_err());
        assert!(check_display_name("a\tb").is_err());
    }

    use super::*;

    /// The API's path: the name, then the body.
    fn parse(name: &str, body: Map<String, Value>) -> Result<ProfileRecord> {
        check_name(name)?;
        ProfileInput::from_json(&body)?.record(name)
    }

    fn body(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn message(name: &str, value: Value) -> String {
        match parse(name, body(value)) {
            Ok(p) => panic!("accepted: {p:?}"),
            Err(e) if e.is_bad_request() => e.to_string(),
            Err(other) => panic!("not a 400: {other:?}"),
        }
    }

    fn step_message(step: Value) -> String {
        message("p", json!({"cadence": [step]}))
    }

    fn spec_example() -> Value {
        json!({
            "instructions": "You are Sam, a friendly assistant for Acme Solar.",
            "cadence": [
                {"after": "0s", "channel": "sms", "text": "Hi {{firstName}}, Sam from Acme Solar here."},
                {"after": "1d", "channel": "email", "subject": "Your solar quote", "text": "Hi {{firstName}}, ..."},
                {"after": "2d", "channel": "voice", "text": "Hi {{firstName}}, this is Sam calling."}
            ],
            "replyDelay": "5s",
            "dispositions": [{"id": "interested", "name": "Interested", "description": "wants a quote or a visit"}],
            "transferNumber": "+1 (555) 010-0001",
            "fallbackTransferNumber": "+15550100002",
            "voiceGreeting": "Hi, this is Sam from {{business.name}}."
        })
    }

    #[test]
    fn parses_the_spec_example() {
        let p = parse("solar", body(spec_example())).unwrap();
        assert_eq!(p.name, "solar");
        assert_eq!(
            p.instructions,
            "You are Sam, a friendly assistant for Acme Solar."
        );
        assert_eq!(p.cadence.len(), 3);
        assert_eq!(p.cadence[0].after, "0s");
        assert_eq!(p.cadence[0].after_ms, 0);
        assert_eq!(p.cadence[0].channel, Channel::Sms);
        assert_eq!(p.cadence[0].subject, "");
        assert_eq!(p.cadence[1].after_ms, 86_400_000);
        assert_eq!(p.cadence[1].channel, Channel::Email);
        assert_eq!(p.cadence[1].subject, "Your solar quote");
        assert_eq!(p.cadence[2].after_ms, 2 * 86_400_000);
        assert_eq!(p.cadence[2].channel, Channel::Voice);
        assert_eq!(p.reply_delay, "5s");
        assert_eq!(p.reply_delay_ms, 5_000);
        assert_eq!(
            p.dispositions,
            vec![DispositionRecord {
                id: "interested".into(),
                name: "Interested".into(),
                description: "wants a quote or a visit".into(),
            }]
        );
        assert_eq!(p.transfer_number, "+15550100001");
        assert_eq!(p.fallback_transfer_number, "+15550100002");
        assert_eq!(p.voice_greeting, "Hi, this is Sam from {{business.name}}.");
        assert_eq!((p.created_at, p.updated_at), (0, 0));
    }

    #[test]
    fn an_empty_body_and_nulls_take_the_defaults() {
        let empty = parse("p", Map::new()).unwrap();
        let nulls = parse(
            "p",
            body(json!({
                "instructions": null, "cadence": null, "replyDelay": null,
                "dispositions": null, "transferNumber": null,
                "fallbackTransferNumber": null, "voiceGreeting": null
            })),
        )
        .unwrap();
        for p in [empty, nulls] {
            assert_eq!(p.instructions, "");
            assert!(p.cadence.is_empty());
            assert_eq!((p.reply_delay.as_str(), p.reply_delay_ms), ("5s", 5_000));
            assert!(p.dispositions.is_empty());
            assert_eq!(p.transfer_number, "");
            assert_eq!(p.fallback_transfer_number, "");
            assert_eq!(p.voice_greeting, "");
        }
    }

    #[test]
    fn names_are_short_path_safe_and_visible() {
        for good in ["solar", "a", "Solar_Leads-2.0", &"é".repeat(64)] {
            assert!(parse(good, Map::new()).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a b",
            "a/b",
            "tab\there",
            "new\nline",
            "nul\0",
            &"x".repeat(65),
        ] {
            assert_eq!(
                message(bad, json!({})),
                "Invalid format for field: name",
                "{bad:?}"
            );
        }
        // The name is checked before the body.
        assert_eq!(
            message("a b", json!({"bogus": 1})),
            "Invalid format for field: name"
        );
    }

    #[test]
    fn unknown_members_are_refused_by_path() {
        assert_eq!(
            message("p", json!({"instructions": "x", "nickname": "y"})),
            "Unknown field: nickname"
        );
        assert_eq!(message("p", json!({"name": "p"})), "Unknown field: name");
        assert_eq!(
            step_message(json!({"after": "0s", "channel": "sms", "text": "x", "foo": 1})),
            "Unknown field: cadence[0].foo"
        );
        assert_eq!(
            message(
                "p",
                json!({"dispositions": [{"id": "a", "name": "A"}, {"id": "b", "name": "B", "colour": "red"}]})
            ),
            "Unknown field: dispositions[1].colour"
        );
    }

    #[test]
    fn instructions_and_greeting_must_be_strings() {
        assert_eq!(
            message("p", json!({"instructions": 5})),
            "Invalid format for field: instructions"
        );
        assert_eq!(
            message("p", json!({"voiceGreeting": ["hi"]})),
            "Invalid format for field: voiceGreeting"
        );
    }

    #[test]
    fn cadence_must_be_an_array_of_at_most_twenty_objects() {
        assert_eq!(
            message("p", json!({"cadence": {"after": "0s"}})),
            "Invalid format for field: cadence"
        );
        let step = json!({"after": "1h", "channel": "sms", "text": "hi"});
        let twenty: Vec<Value> = (0..20).map(|_| step.clone()).collect();
        assert_eq!(
            parse("p", body(json!({ "cadence": twenty })))
                .unwrap()
                .cadence
                .len(),
            20
        );
        let twenty_one: Vec<Value> = (0..21).map(|_| step.clone()).collect();
        assert_eq!(
            message("p", json!({ "cadence": twenty_one })),
            "cadence must hold at most 20 steps"
        );
        assert_eq!(
            message("p", json!({"cadence": [step, "later"]})),
            "Invalid format for field: cadence[1]"
        );
    }

    #[test]
    fn after_is_a_duration_string() {
        for (after, ms) in [
            ("0s", 0),
            ("90m", 5_400_000),
            ("1d", 86_400_000),
            ("250ms", 250),
        ] {
            let p = parse(
                "p",
                body(json!({"cadence": [{"after": after, "channel": "sms", "text": "x"}]})),
            )
            .unwrap();
            assert_eq!(
                (p.cadence[0].after.as_str(), p.cadence[0].after_ms),
                (after, ms)
            );
        }
        for bad in [json!("soon"), json!("5"), json!(""), json!(60), json!(null)] {
            assert_eq!(
                step_message(json!({"after": bad, "channel": "sms", "text": "x"})),
                "Invalid format for field: cadence[0].after"
            );
        }
        assert_eq!(
            step_message(json!({"channel": "sms", "text": "x"})),
            "Invalid format for field: cadence[0].after"
        );
        // The index is the failing step's, 0-based.
        assert_eq!(
            message(
                "p",
                json!({"cadence": [
                    {"after": "0s", "channel": "sms", "text": "x"},
                    {"after": "1w", "channel": "sms", "text": "x"}
                ]})
            ),
            "Invalid format for field: cadence[1].after"
        );
    }

    #[test]
    fn channel_is_one_of_three() {
        for bad in [json!("SMS"), json!("fax"), json!(1), json!(null)] {
            assert_eq!(
                step_message(json!({"after": "0s", "channel": bad, "text": "x"})),
                "Invalid format for field: cadence[0].channel"
            );
        }
    }

    #[test]
    fn text_is_a_non_empty_string() {
        for bad in [json!(""), json!("   "), json!(3), json!(null)] {
            assert_eq!(
                step_message(json!({"after": "0s", "channel": "sms", "text": bad})),
                "Invalid format for field: cadence[0].text"
            );
        }
        assert_eq!(
            step_message(json!({"after": "0s", "channel": "voice"})),
            "Invalid format for field: cadence[0].text"
        );
    }

    #[test]
    fn subject_is_required_for_email_and_a_string_for_the_rest() {
        for bad in [json!(null), json!(""), json!(" "), json!(7)] {
            assert_eq!(
                step_message(
                    json!({"after": "0s", "channel": "email", "text": "x", "subject": bad})
                ),
                "Invalid format for field: cadence[0].subject"
            );
        }
        assert_eq!(
            step_message(json!({"after": "0s", "channel": "email", "text": "x"})),
            "Invalid format for field: cadence[0].subject"
        );
        assert_eq!(
            step_message(json!({"after": "0s", "channel": "sms", "text": "x", "subject": false})),
            "Invalid format for field: cadence[0].subject"
        );
        let p = parse(
            "p",
            body(json!({"cadence": [
                {"after": "0s", "channel": "sms", "text": "x", "subject": "kept"},
                {"after": "0s", "channel": "voice", "text": "x", "subject": ""},
                {"after": "0s", "channel": "sms", "text": "x", "subject": null}
            ]})),
        )
        .unwrap();
        assert_eq!(p.cadence[0].subject, "kept");
        assert_eq!(p.cadence[1].subject, "");
        assert_eq!(p.cadence[2].subject, "");
    }

    #[test]
    fn every_known_placeholder_is_accepted() {
        let text = "{{firstName}} {{lastName}} {{phone}} {{email}} {{additionalInfo.city}} \
                    {{additionalInfo.roof type}} {{business.name}} {{ unclosed";
        let p = parse(
            "p",
            body(json!({
                "cadence": [{"after": "0s", "channel": "email", "subject": text, "text": text}],
                "voiceGreeting": text
            })),
        )
        .unwrap();
        assert_eq!(p.cadence[0].text, text);
    }

    #[test]
    fn unknown_placeholders_are_refused_as_written() {
        let step = |text: &str, subject: &str| {
            step_message(
                json!({"after": "0s", "channel": "email", "text": text, "subject": subject}),
            )
        };
        assert_eq!(
            step("Hi {{nickname}}", "s"),
            "Unknown placeholder: {{nickname}}"
        );
        assert_eq!(
            step("Hi {{ firstName }}", "s"),
            "Unknown placeholder: {{ firstName }}"
        );
        assert_eq!(
            step("Hi {{additionalInfo.}}", "s"),
            "Unknown placeholder: {{additionalInfo.}}"
        );
        assert_eq!(step("{{}}", "s"), "Unknown placeholder: {{}}");
        assert_eq!(
            step("fine", "About {{business}}"),
            "Unknown placeholder: {{business}}"
        );
        assert_eq!(
            message("p", json!({"voiceGreeting": "Hello from {{company}}"})),
            "Unknown placeholder: {{company}}"
        );
        // Instructions are the model's text, not a template.
        assert!(parse("p", body(json!({"instructions": "Use {{anything}}"}))).is_ok());
    }

    #[test]
    fn the_default_reply_delay_text_says_the_default() {
        assert_eq!(
            duration_ms(&default_reply_delay()),
            Some(DEFAULT_REPLY_DELAY_MS)
        );
    }

    #[test]
    fn reply_delay_is_a_duration_string() {
        let p = parse("p", body(json!({"replyDelay": "30s"}))).unwrap();
        assert_eq!((p.reply_delay.as_str(), p.reply_delay_ms), ("30s", 30_000));
        for bad in [json!("soon"), json!(5), json!(""), json!(true)] {
            assert_eq!(
                message("p", json!({ "replyDelay": bad })),
                "Invalid format for field: replyDelay"
            );
        }
    }

    #[test]
    fn dispositions_are_checked_member_by_member() {
        assert_eq!(
            message("p", json!({"dispositions": {"id": "a"}})),
            "Invalid format for field: dispositions"
        );
        assert_eq!(
            message("p", json!({"dispositions": ["a"]})),
            "Invalid format for field: dispositions[0]"
        );
        for bad in [json!(null), json!(""), json!(1)] {
            assert_eq!(
                message("p", json!({"dispositions": [{"id": bad, "name": "A"}]})),
                "Invalid format for field: dispositions[0].id"
            );
            assert_eq!(
                message("p", json!({"dispositions": [{"id": "a", "name": bad}]})),
                "Invalid format for field: dispositions[0].name"
            );
        }
        assert_eq!(
            message("p", json!({"dispositions": [{"name": "A"}]})),
            "Invalid format for field: dispositions[0].id"
        );
        assert_eq!(
            message(
                "p",
                json!({"dispositions": [{"id": "a", "name": "A", "description": 2}]})
            ),
            "Invalid format for field: dispositions[0].description"
        );
        let p = parse(
            "p",
            body(json!({"dispositions": [
                {"id": "a", "name": "A"},
                {"id": "b", "name": "B", "description": null}
            ]})),
        )
        .unwrap();
        assert_eq!(p.dispositions[0].description, "");
        assert_eq!(p.dispositions[1].description, "");
    }

    #[test]
    fn disposition_ids_are_unique() {
        assert_eq!(
            message(
                "p",
                json!({"dispositions": [
                    {"id": "interested", "name": "A"},
                    {"id": "other", "name": "B"},
                    {"id": "interested", "name": "C"}
                ]})
            ),
            "Duplicate disposition id: interested"
        );
    }

    #[test]
    fn transfer_numbers_are_normalised_like_lead_phones() {
        let p = parse(
            "p",
            body(json!({"transferNumber": "+44 20 7946 0958", "fallbackTransferNumber": ""})),
        )
        .unwrap();
        assert_eq!(p.transfer_number, "+442079460958");
        assert_eq!(p.fallback_transfer_number, "");
        for bad in [
            json!("5550100001"),
            json!("+1"),
            json!("+1 555 abc"),
            json!(15550100001u64),
        ] {
            assert_eq!(
                message("p", json!({ "transferNumber": bad })),
                "Invalid format for field: transferNumber"
            );
            assert_eq!(
                message("p", json!({ "fallbackTransferNumber": bad })),
                "Invalid format for field: fallbackTransferNumber"
            );
        }
    }

    #[test]
    fn refusals_name_the_field_a_form_shows_them_beside() {
        let refused = |value: Value| {
            let e = ProfileInput::from_json(&body(value)).unwrap_err();
            (e.refused_field().map(str::to_string), e.to_string())
        };
        assert_eq!(
            refused(json!({"cadence": [{"after": "soon", "channel": "sms", "text": "x"}]})),
            (
                Some("cadence[0].after".into()),
                "Invalid format for field: cadence[0].after".into()
            )
        );
        assert_eq!(
            refused(json!({"instructions": "x".repeat(limits::INSTRUCTIONS_CHARS + 1)})),
            (
                Some("instructions".into()),
                "Field too long: instructions (at most 20000)".into()
            )
        );
        // Members are checked in the interface's order, whatever the body's.
        assert_eq!(
            refused(json!({"transferNumber": "nope", "replyDelay": "soon"})).1,
            "Invalid format for field: replyDelay"
        );
        assert_eq!(
            refused(json!({"nickname": 1})),
            (None, "Unknown field: nickname".into())
        );
    }

    #[test]
    fn refusals_list_every_field_in_words_the_first_being_the_records_error() {
        let input = ProfileInput {
            cadence: vec![
                StepInput {
                    after: "0s".into(),
                    channel: Some(Channel::Sms),
                    text: "Hi".into(),
                    ..StepInput::default()
                },
                StepInput {
                    after: "2 days".into(),
                    channel: Some(Channel::Sms),
                    text: String::new(),
                    ..StepInput::default()
                },
                StepInput {
                    after: "1d".into(),
                    channel: Some(Channel::Email),
                    text: "Hi {{lead.fist_name}}".into(),
                    subject: "Quote".into(),
                    ..StepInput::default()
                },
            ],
            reply_delay: Some("soon".into()),
            ..ProfileInput::default()
        };
        let refusals = input.refusals("solar");
        let listed: Vec<(&str, &str)> = refusals
            .iter()
            .map(|r| (r.field.as_str(), r.words.as_str()))
            .collect();
        assert_eq!(listed.len(), 4, "{listed:?}");
        assert_eq!(
            listed[0],
            ("cadence[1].after", "Step 2 · After: write a duration such as 2d, 3h or 30m (d days, h hours, m minutes, s seconds)")
        );
        assert_eq!(
            listed[1],
            (
                "cadence[1].text",
                "Step 2 · Text: write the message this step sends"
            )
        );
        assert_eq!(listed[2].0, "cadence[2].text");
        assert!(
            listed[2].1.starts_with("Step 3 · Text: unknown placeholder {{lead.fist_name}}; the placeholders are {{firstName}}"),
            "{}",
            listed[2].1
        );
        assert_eq!(listed[3].0, "replyDelay");
        assert_eq!(
            refusals[0].error.to_string(),
            input.record("solar").unwrap_err().to_string()
        );
        let fine = ProfileInput::from_json(&body(spec_example())).unwrap();
        assert!(fine.refusals("solar").is_empty());
        assert_eq!(fine.refusals("a b")[0].field, "name");
    }

    #[test]
    fn an_input_built_in_code_is_held_to_the_same_rules() {
        let mut input = ProfileInput::from_json(&body(spec_example())).unwrap();
        assert_eq!(
            input.record("solar").unwrap(),
            parse("solar", body(spec_example())).unwrap()
        );
        input.cadence[1].subject = " ".into();
        let e = input.record("solar").unwrap_err();
        assert_eq!(e.refused_field(), Some("cadence[1].subject"));
        input.cadence[1].subject = "Quote".into();
        input.cadence[0].channel = None;
        let e = input.record("solar").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid format for field: cadence[0].channel"
        );
        assert_eq!(
            input.record("a b").unwrap_err().to_string(),
            "Invalid format for field: name"
        );
    }

    #[test]
    fn records_round_trip_through_postcard() {
        let mut p = parse("solar", body(spec_example())).unwrap();
        p.created_at = 1_700_000_000_000_000;
        p.updated_at = 1_700_000_000_000_001;
        let bytes = postcard::to_stdvec(&p).unwrap();
        let back: ProfileRecord = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn the_view_is_the_wire_shape() {
        let mut p = parse("solar", body(spec_example())).unwrap();
        p.created_at = 0;
        p.updated_at = 1_000_000;
        assert_eq!(
            view(&p, None),
            json!({
                "name": "solar",
                "displayName": "solar",
                "instructions": "You are Sam, a friendly assistant for Acme Solar.",
                "cadence": [
                    {"after": "0s", "channel": "sms", "text": "Hi {{firstName}}, Sam from Acme Solar here."},
                    {"after": "1d", "channel": "email", "text": "Hi {{firstName}}, ...", "subject": "Your solar quote"},
                    {"after": "2d", "channel": "voice", "text": "Hi {{firstName}}, this is Sam calling."}
                ],
                "replyDelay": "5s",
                "dispositions": [{"id": "interested", "name": "Interested", "description": "wants a quote or a visit"}],
                "transferNumber": "+15550100001",
                "fallbackTransferNumber": "+15550100002",
                "voiceGreeting": "Hi, this is Sam from {{business.name}}.",
                "calendar": null,
                "screeningReply": null,
                "voicemail": null,
                "transfer": null,
                "tests": [],
                "requireTestsPass": false,
                "createdAt": "1970-01-01T00:00:00.000000Z",
                "updatedAt": "1970-01-01T00:00:01.000000Z"
            })
        );
        let empty = view(&parse("bare", Map::new()).unwrap(), None);
        assert_eq!(empty["transferNumber"], Value::Null);
        assert_eq!(empty["fallbackTransferNumber"], Value::Null);
        assert_eq!(empty["voiceGreeting"], Value::Null);
        assert_eq!(empty["instructions"], json!(""));
        assert_eq!(empty["cadence"], json!([]));
        assert_eq!(empty["replyDelay"], json!("5s"));
        // What GET answers is what PUT takes (members the server owns aside).
        let mut again = view(&parse("solar", body(spec_example())).unwrap(), None);
        let again = again.as_object_mut().unwrap();
        for owned in ["name", "createdAt", "updatedAt"] {
            again.remove(owned);
        }
        let reparsed = parse("solar", again.clone()).unwrap();
        assert_eq!(reparsed, parse("solar", body(spec_example())).unwrap());
    }
}
