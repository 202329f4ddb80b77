//! The voice side of the fake Twilio (`testkit::twilio`): TwiML read as Twilio reads it,
//! conferences with their participants, and the webhooks Twilio sends about them.
//!
//! [`parse`] reads a TwiML document with quick-xml and refuses (panics, in a test)
//! anything malformed, a verb Twilio does not document, or an attribute a verb does not
//! have. [`Conferences`] runs documents on calls: `<Dial><Conference>` puts a call in a
//! conference (which starts once a participant with `startConferenceOnEnter="true"`
//! joins), a document without one takes it out, a hang-up leaves it (ending the
//! conference when the participant had `endConferenceOnExit="true"`). Each change queues
//! the conference status callbacks the conference asked for (`statusCallbackEvent`
//! `join`, `leave`, `end`), with Twilio's documented parameters, for the test to deliver.
//! The fake's `Calls/{sid}.json` updates run here too (new `Twiml`, or `Status`
//! `canceled`/`completed`). The forms of a person's leg answered with answering-machine
//! detection ([`answered_form`]) and of a `<Gather>`'s action ([`gather_form`]) are here.

use std::collections::BTreeMap;

use quick_xml::events::Event;
use quick_xml::Reader;

/// One TwiML element: its name, attributes (in order), text, and children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first element named `name` at or below this one, depth first.
    pub fn find(&self, name: &str) -> Option<&Element> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// Every element named `name` at or below this one, in document order.
    pub fn all(&self, name: &str) -> Vec<&Element> {
        let mut out = Vec::new();
        if self.name == name {
            out.push(self);
        }
        for c in &self.children {
            out.extend(c.all(name));
        }
        out
    }
}

/// The verbs and nouns Twilio documents, with the attributes each has (those engaged
/// may use; any other is refused).
const DOCUMENTED: &[(&str, &[&str])] = &[
    ("Response", &[]),
    ("Say", &["voice", "language", "loop"]),
    ("Hangup", &[]),
    ("Pause", &["length"]),
    ("Redirect", &["method"]),
    (
        "Dial",
        &[
            "action",
            "method",
            "timeout",
            "callerId",
            "record",
            "hangupOnStar",
            "timeLimit",
        ],
    ),
    (
        "Number",
        &[
            "sendDigits",
            "url",
            "method",
            "statusCallback",
            "statusCallbackEvent",
        ],
    ),
    (
        "Conference",
        &[
            "muted",
            "beep",
            "startConferenceOnEnter",
            "endConferenceOnExit",
            "waitUrl",
            "waitMethod",
            "maxParticipants",
            "record",
            "region",
            "trim",
            "coach",
            "statusCallbackEvent",
            "statusCallback",
            "statusCallbackMethod",
            "recordingStatusCallback",
            "recordingStatusCallbackMethod",
            "recordingStatusCallbackEvent",
            "eventCallbackUrl",
            "jitterBufferSize",
            "participantLabel",
        ],
    ),
    (
        "Gather",
        &[
            "action",
            "actionOnEmptyResult",
            "finishOnKey",
            "hints",
            "input",
            "language",
            "method",
            "numDigits",
            "partialResultCallback",
            "partialResultCallbackMethod",
            "profanityFilter",
            "speechTimeout",
            "timeout",
        ],
    ),
    ("Connect", &["action", "method"]),
    (
        "ConversationRelay",
        &[
            "url",
            "welcomeGreeting",
            "dtmfDetection",
            "interruptible",
            "language",
            "voice",
        ],
    ),
    ("Start", &["action", "method"]),
    (
        "Recording",
        &[
            "recordingStatusCallback",
            "recordingStatusCallbackMethod",
            "recordingStatusCallbackEvent",
            "trim",
            "track",
            "channels",
        ],
    ),
];

/// Reads a TwiML document: well-formed XML with the declaration, a `<Response>` root,
/// only documented verbs and attributes. Panics otherwise, saying why.
pub fn parse(doc: &str) -> Element {
    assert!(
        doc.starts_with(r#"<?xml version="1.0" encoding="UTF-8"?>"#),
        "TwiML opens with the XML declaration: {doc}"
    );
    let mut reader = Reader::from_str(doc);
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|e| panic!("malformed TwiML ({e}): {doc}"));
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).to_string();
                let known = DOCUMENTED
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("<{name}> is no TwiML verb: {doc}"))
                    .1;
                let mut element = Element {
                    name: name.clone(),
                    ..Element::default()
                };
                for attr in e.attributes() {
                    let attr =
                        attr.unwrap_or_else(|e| panic!("a malformed attribute ({e}): {doc}"));
                    let key = String::from_utf8_lossy(attr.key.as_ref()).to_string();
                    assert!(
                        known.contains(&key.as_str()),
                        "<{name}> has no attribute {key}: {doc}"
                    );
                    let value = attr
                        .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .unwrap_or_else(|e| panic!("a malformed value ({e}): {doc}"))
                        .to_string();
                    element.attrs.push((key, value));
                }
                if matches!(event, Event::Empty(_)) {
                    close(&mut stack, &mut root, element, doc);
                } else {
                    stack.push(element);
                }
            }
            Event::End(_) => {
                let element = stack
                    .pop()
                    .unwrap_or_else(|| panic!("an unmatched end: {doc}"));
                close(&mut stack, &mut root, element, doc);
            }
            Event::Text(ref t) => {
                let text = t
                    .xml10_content()
                    .unwrap_or_else(|e| panic!("malformed text ({e}): {doc}"));
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&text);
                }
            }
            Event::GeneralRef(ref r) => {
                let c = match r.resolve_char_ref().ok().flatten() {
                    Some(c) => c,
                    None => match String::from_utf8_lossy(r.as_ref()).as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("an unknown entity &{other};: {doc}"),
                    },
                };
                if let Some(top) = stack.last_mut() {
                    top.text.push(c);
                }
            }
            Event::Eof => break,
            Event::Decl(_) => {}
            other => panic!("unexpected XML in TwiML ({other:?}): {doc}"),
        }
    }
    assert!(stack.is_empty(), "TwiML ends early: {doc}");
    let root = root.unwrap_or_else(|| panic!("no element: {doc}"));
    assert_eq!(root.name, "Response", "TwiML's root is <Response>: {doc}");
    root
}

fn close(stack: &mut [Element], root: &mut Option<Element>, element: Element, doc: &str) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => {
            assert!(root.is_none(), "TwiML has one root: {doc}");
            *root = Some(element);
        }
    }
}

/// A webhook Twilio sends: where, and its form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    pub url: String,
    pub form: Vec<(String, String)>,
}

impl Callback {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, Default)]
struct Member {
    starts: bool,
    ends: bool,
}

#[derive(Debug, Clone, Default)]
struct Room {
    sid: String,
    started: bool,
    ended: bool,
    callback: String,
    events: Vec<String>,
    members: BTreeMap<String, Member>,
    sequence: u32,
}

/// The conferences of the fake account, by name, and the callbacks they queued.
#[derive(Debug, Default)]
pub struct Conferences {
    rooms: BTreeMap<String, Room>,
    queued: Vec<Callback>,
    count: usize,
}

/// The account every fake callback names.
pub const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";

impl Conferences {
    fn room_of(&self, call_sid: &str) -> Option<String> {
        self.rooms
            .iter()
            .find(|(_, r)| !r.ended && r.members.contains_key(call_sid))
            .map(|(name, _)| name.clone())
    }

    fn event(&mut self, name: &str, event: &str, call_sid: Option<&str>, extra: &[(&str, &str)]) {
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let short = event.rsplit('-').next().unwrap_or(event);
        if !room.events.iter().any(|e| e == short) || room.callback.is_empty() {
            return;
        }
        room.sequence += 1;
        let mut form = vec![
            ("AccountSid".to_string(), ACCOUNT.to_string()),
            ("ConferenceSid".to_string(), room.sid.clone()),
            ("FriendlyName".to_string(), name.to_string()),
            ("StatusCallbackEvent".to_string(), event.to_string()),
            ("SequenceNumber".to_string(), room.sequence.to_string()),
            (
                "Timestamp".to_string(),
                "Sat, 28 Nov 2026 10:00:00 +0000".to_string(),
            ),
        ];
        if let Some(sid) = call_sid {
            form.push(("CallSid".to_string(), sid.to_string()));
            let member = room.members.get(sid).cloned().unwrap_or_default();
            form.push(("Muted".into(), "false".into()));
            form.push(("Hold".into(), "false".into()));
            form.push(("Coaching".into(), "false".into()));
            form.push(("StartConferenceOnEnter".into(), member.starts.to_string()));
            form.push(("EndConferenceOnExit".into(), member.ends.to_string()));
        }
        form.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let url = room.callback.clone();
        self.queued.push(Callback { url, form });
    }

    /// Call `call_sid` runs `doc`: into the conference its `<Dial><Conference>` names,
    /// or, with none, out of the one it was in (as a `Calls` update moves it).
    pub fn run(&mut self, call_sid: &str, doc: &str) {
        let twiml = parse(doc);
        let Some(conference) = twiml.find("Conference") else {
            if let Some(name) = self.room_of(call_sid) {
                self.leave(&name, call_sid, "participant_updated_via_api");
            }
            return;
        };
        let name = conference.text.trim().to_string();
        let member = Member {
            starts: conference.attr("startConferenceOnEnter") != Some("false"),
            ends: conference.attr("endConferenceOnExit") == Some("true"),
        };
        self.count += 1;
        let count = self.count;
        let room = self.rooms.entry(name.clone()).or_insert_with(|| Room {
            sid: format!("CF{count:032}"),
            ..Room::default()
        });
        if room.callback.is_empty() {
            room.callback = conference
                .attr("statusCallback")
                .unwrap_or_default()
                .to_string();
            room.events = conference
                .attr("statusCallbackEvent")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect();
        }
        let starts = member.starts;
        room.members.insert(call_sid.to_string(), member);
        let starting = starts && !room.started;
        if starting {
            room.started = true;
        }
        self.event(&name, "participant-join", Some(call_sid), &[]);
        if starting {
            self.event(&name, "conference-start", None, &[]);
        }
    }

    fn leave(&mut self, name: &str, call_sid: &str, reason: &str) {
        self.event(
            name,
            "participant-leave",
            Some(call_sid),
            &[
                ("ReasonParticipantLeft", reason),
                ("ParticipantCallStatus", "completed"),
            ],
        );
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let ends = room.members.remove(call_sid).is_some_and(|m| m.ends);
        if ends || room.members.is_empty() {
            let others: Vec<String> = room.members.keys().cloned().collect();
            for other in others {
                self.event(
                    name,
                    "participant-leave",
                    Some(&other),
                    &[
                        ("ReasonParticipantLeft", "conference_ended_via_participant"),
                        ("ParticipantCallStatus", "completed"),
                    ],
                );
            }
            self.event(
                name,
                "conference-end",
                None,
                &[
                    (
                        "ReasonConferenceEnded",
                        "participant-with-end-conference-on-exit-left",
                    ),
                    ("CallSidEndingConference", call_sid),
                ],
            );
            if let Some(room) = self.rooms.get_mut(name) {
                room.members.clear();
                room.ended = true;
            }
        }
    }

    /// Call `call_sid` hung up: it leaves its conference, if any.
    pub fn hang_up(&mut self, call_sid: &str) {
        if let Some(name) = self.room_of(call_sid) {
            self.leave(&name, call_sid, "participant_hung_up");
        }
    }

    /// The calls in conference `name` now.
    pub fn participants(&self, name: &str) -> Vec<String> {
        self.rooms
            .get(name)
            .filter(|r| !r.ended)
            .map(|r| r.members.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether conference `name` started (someone with `startConferenceOnEnter` came).
    pub fn started(&self, name: &str) -> bool {
        self.rooms.get(name).is_some_and(|r| r.started)
    }

    /// The callbacks queued since the last call, in order.
    pub fn take(&mut self) -> Vec<Callback> {
        std::mem::take(&mut self.queued)
    }
}

/// The form Twilio posts to a call's `Url` when it is answered, with answering-machine
/// detection's `AnsweredBy` (`MachineDetection=Enable`: `human`, `machine_start`,
/// `fax` or `unknown`).
pub fn answered_form(call_sid: &str, answered_by: &str) -> Vec<(String, String)> {
    [
        ("AccountSid", ACCOUNT),
        ("CallSid", call_sid),
        ("CallStatus", "in-progress"),
        ("Direction", "outbound-api"),
        ("AnsweredBy", answered_by),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The form of a `<Gather>`'s action: `Digits` when a key was pressed (none with
/// `actionOnEmptyResult` after the timeout).
pub fn gather_form(call_sid: &str, digits: Option<&str>) -> Vec<(String, String)> {
    let mut form: Vec<(String, String)> = [
        ("AccountSid", ACCOUNT),
        ("CallSid", call_sid),
        ("CallStatus", "in-progress"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if let Some(d) = digits {
        form.push(("Digits".into(), d.into()));
        form.push(("FinishedOnKey".into(), String::new()));
    }
    form
}

/// A call's status callback form (`CallStatus`: `busy`, `no-answer`, `completed`...).
pub fn status_form(call_sid: &str, status: &str) -> Vec<(String, String)> {
    [
        ("AccountSid", ACCOUNT),
        ("CallSid", call_sid),
        ("CallStatus", status),
        ("Direction", "outbound-api"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: &str = concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Say>Wait &amp; see</Say><Dial><Conference startConferenceOnEnter="false" "#,
        r#"endConferenceOnExit="true" statusCallback="https://e.test/c?step=conference&amp;x=1" statusCallbackEvent="join leave end">call_1</Conference></Dial></Response>"#
    );
    const JOIN: &str = concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Conference startConferenceOnEnter="true" "#,
        r#"endConferenceOnExit="true" statusCallback="https://e.test/c" statusCallbackEvent="join leave end">call_1</Conference></Dial></Response>"#
    );

    #[test]
    fn documents_are_read_with_their_text_and_attributes() {
        let doc = parse(HOLD);
        assert_eq!(doc.find("Say").unwrap().text, "Wait & see");
        assert_eq!(
            doc.find("Conference").unwrap().attr("statusCallback"),
            Some("https://e.test/c?step=conference&x=1")
        );
    }

    #[test]
    #[should_panic(expected = "no attribute")]
    fn an_undocumented_attribute_is_refused() {
        parse(r#"<?xml version="1.0" encoding="UTF-8"?><Response><Gather digits="1"/></Response>"#);
    }

    #[test]
    #[should_panic(expected = "malformed")]
    fn malformed_xml_is_refused() {
        parse(r#"<?xml version="1.0" encoding="UTF-8"?><Response><Say>a</Gather></Response>"#);
    }

    #[test]
    fn a_conference_starts_with_its_starter_and_ends_with_whoever_ends_it() {
        let mut c = Conferences::default();
        c.run("CAlead", HOLD);
        assert!(!c.started("call_1"));
        let joined = c.take();
        assert_eq!(joined.len(), 1);
        assert_eq!(
            joined[0].field("StatusCallbackEvent"),
            Some("participant-join")
        );
        assert_eq!(joined[0].url, "https://e.test/c?step=conference&x=1");
        c.run("CAagent", JOIN);
        assert!(c.started("call_1"));
        assert_eq!(c.participants("call_1"), ["CAagent", "CAlead"]);
        c.take();
        c.hang_up("CAagent");
        let events: Vec<(String, String)> = c
            .take()
            .iter()
            .map(|cb| {
                (
                    cb.field("StatusCallbackEvent").unwrap().to_string(),
                    cb.field("CallSid").unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                ("participant-leave".to_string(), "CAagent".to_string()),
                ("participant-leave".to_string(), "CAlead".to_string()),
                ("conference-end".to_string(), String::new()),
            ]
        );
        assert!(c.participants("call_1").is_empty());
    }

    #[test]
    fn new_twiml_without_the_conference_takes_a_call_out() {
        let mut c = Conferences::default();
        c.run("CAlead", HOLD);
        c.take();
        c.run(
            "CAlead",
            r#"<?xml version="1.0" encoding="UTF-8"?><Response><Say>Sorry</Say><Hangup/></Response>"#,
        );
        let left = c.take();
        assert_eq!(
            left[0].field("ReasonParticipantLeft"),
            Some("participant_updated_via_api")
        );
    }
}
