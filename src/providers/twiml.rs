//! TwiML answers to Twilio's voice webhooks: the few documents the voice paths send back
//! (`<Response/>`, `<Say>` then `<Hangup/>`, `<Connect>` to a ConversationRelay,
//! `<Dial>` of a transfer number, and a warm transfer's: the lead held in a
//! `<Conference>`, the person's whisper in a `<Gather>`, the person joining). An inbound call's answer opens with
//! `<Start><Recording>` (its recording reported to the call's `recording` path), since
//! only an outbound call is recorded by its `Calls.json` request; `<Start>` does not
//! block, so the relay or the `<Say>` follows at once.
//!
//! Each is written through a tiny XML writer that escapes `& < > " '` in every text and
//! attribute value (and drops the characters XML 1.0 forbids, so every answer parses): a step's text, a greeting or a number comes from organization
//! settings and leads, and must never add a verb of its own (an injected `<Dial>` would
//! place a call the organization never asked for).

/// The declaration every document opens with.
const DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;

/// An XML document written in order: `start` an element, add its `attr`ibutes, then
/// `text` or children, and `end` it; `empty` writes an element without content.
struct XmlWriter {
    out: String,
    /// Names of the open elements, innermost last.
    open: Vec<&'static str>,
    /// Whether the innermost start tag still waits for its `>`.
    in_tag: bool,
}

impl XmlWriter {
    fn new() -> XmlWriter {
        XmlWriter {
            out: String::from(DECLARATION),
            open: Vec::new(),
            in_tag: false,
        }
    }

    /// Closes a pending start tag before content is written.
    fn close_tag(&mut self) {
        if self.in_tag {
            self.out.push('>');
            self.in_tag = false;
        }
    }

    fn start(&mut self, name: &'static str) -> &mut XmlWriter {
        self.close_tag();
        self.out.push('<');
        self.out.push_str(name);
        self.open.push(name);
        self.in_tag = true;
        self
    }

    /// An attribute of the element just started (ignored once its content began).
    fn attr(&mut self, name: &'static str, value: &str) -> &mut XmlWriter {
        if self.in_tag {
            self.out.push(' ');
            self.out.push_str(name);
            self.out.push_str("=\"");
            escape_into(&mut self.out, value);
            self.out.push('"');
        }
        self
    }

    fn text(&mut self, text: &str) -> &mut XmlWriter {
        self.close_tag();
        escape_into(&mut self.out, text);
        self
    }

    /// Ends the innermost open element: `<a/>` when it has no content.
    fn end(&mut self) -> &mut XmlWriter {
        if let Some(name) = self.open.pop() {
            if self.in_tag {
                self.out.push_str("/>");
                self.in_tag = false;
            } else {
                self.out.push_str("</");
                self.out.push_str(name);
                self.out.push('>');
            }
        }
        self
    }

    /// An element without attributes or content: `<name/>`.
    fn empty(&mut self, name: &'static str) -> &mut XmlWriter {
        self.start(name).end()
    }

    /// The document, every element still open ended.
    fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.end();
        }
        self.out
    }
}

/// A character XML 1.0 allows in a document (its `Char` production): any other (most
/// control characters, U+FFFE, U+FFFF) is dropped, so every document parses.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            c if !is_xml_char(c) => {}
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            other => out.push(other),
        }
    }
}

/// `<Response/>`: nothing to do (an inbound SMS answered).
pub fn empty() -> String {
    let mut w = XmlWriter::new();
    w.empty("Response");
    w.finish()
}

/// `<Start><Recording recordingStatusCallback="..." .../></Start>` when `record` says
/// where the finished recording is reported: the whole call, both sides, recorded from
/// here on (Twilio goes on with the next verb at once).
fn start_recording(w: &mut XmlWriter, record: Option<&str>) {
    if let Some(callback) = record {
        w.start("Start")
            .start("Recording")
            .attr("recordingStatusCallback", callback)
            .attr("recordingStatusCallbackMethod", "POST")
            .attr("recordingStatusCallbackEvent", "completed")
            .end()
            .end();
    }
}

/// `<Response><Say>text</Say><Hangup/></Response>`: a step's text read to the lead;
/// recorded first when `record` is the recording callback.
pub fn say_then_hangup(text: &str, record: Option<&str>) -> String {
    let mut w = XmlWriter::new();
    w.start("Response");
    start_recording(&mut w, record);
    w.start("Say").text(text).end();
    w.empty("Hangup");
    w.finish()
}

/// `<Response><Redirect method="POST">url</Redirect></Response>`: the live call leaves
/// what it runs (the relay session ends) for the TwiML `url` answers.
pub fn redirect(url: &str) -> String {
    let mut w = XmlWriter::new();
    w.start("Response");
    w.start("Redirect").attr("method", "POST").text(url).end();
    w.finish()
}

/// `<Response><Hangup/></Response>`.
pub fn hangup() -> String {
    let mut w = XmlWriter::new();
    w.start("Response").empty("Hangup");
    w.finish()
}

/// `<Response><Connect action="..."><ConversationRelay url="..." dtmfDetection="true"
/// welcomeGreeting="..."/></Connect></Response>`: the call handed to the relay
/// WebSocket; Twilio requests `action` when the session ends. `dtmfDetection` is always
/// on: without it the lead's keypad digits never reach the relay. `welcomeGreeting` is
/// left out when none or empty. Recorded first when `record` is the recording callback.
pub fn relay(
    action: &str,
    relay_url: &str,
    welcome_greeting: Option<&str>,
    record: Option<&str>,
) -> String {
    let mut w = XmlWriter::new();
    w.start("Response");
    start_recording(&mut w, record);
    w.start("Connect")
        .attr("action", action)
        .start("ConversationRelay")
        .attr("url", relay_url)
        .attr("dtmfDetection", "true");
    if let Some(greeting) = welcome_greeting.filter(|g| !g.is_empty()) {
        w.attr("welcomeGreeting", greeting);
    }
    w.finish()
}

/// `<Response><Dial action="..." timeout="20"><Number>+1555...</Number></Dial>
/// </Response>`: the call transferred to `number`; Twilio requests `action` with the
/// outcome of the dial.
pub fn dial(action: &str, timeout_seconds: u32, number: &str) -> String {
    let mut w = XmlWriter::new();
    w.start("Response")
        .start("Dial")
        .attr("action", action)
        .attr("timeout", &timeout_seconds.to_string())
        .start("Number")
        .text(number);
    w.finish()
}

/// The conference events a warm transfer listens to (Twilio's `statusCallbackEvent`
/// values for `<Conference>`).
const CONFERENCE_EVENTS: &str = "join leave end";

/// `<Dial><Conference ...>name</Conference></Dial>`: the caller in conference `name`,
/// which starts when `starts` (else it waits, hearing `wait_url`'s music, Twilio's
/// default when none); it ends when this participant leaves, and reports its joins,
/// leaves and end to `status_callback`.
fn conference(
    w: &mut XmlWriter,
    name: &str,
    starts: bool,
    wait_url: Option<&str>,
    status_callback: &str,
) {
    w.start("Dial")
        .start("Conference")
        .attr(
            "startConferenceOnEnter",
            if starts { "true" } else { "false" },
        )
        .attr("endConferenceOnExit", "true")
        .attr("beep", "false");
    if let Some(url) = wait_url.filter(|u| !u.is_empty()) {
        w.attr("waitUrl", url).attr("waitMethod", "GET");
    }
    w.attr("statusCallback", status_callback)
        .attr("statusCallbackMethod", "POST")
        .attr("statusCallbackEvent", CONFERENCE_EVENTS)
        .text(name)
        .end()
        .end();
}

/// `<Response><Say>say</Say><Dial><Conference startConferenceOnEnter="false" ...>`: a
/// warm transfer's lead, told what happens, held alone in conference `name`.
pub fn hold(say: &str, name: &str, wait_url: Option<&str>, status_callback: &str) -> String {
    let mut w = XmlWriter::new();
    w.start("Response");
    if !say.is_empty() {
        w.start("Say").text(say).end();
    }
    conference(&mut w, name, false, wait_url, status_callback);
    w.finish()
}

/// `<Response><Dial><Conference startConferenceOnEnter="true" ...>`: the person who
/// accepted a warm transfer joins conference `name`, which starts: the lead is bridged.
pub fn join(name: &str, status_callback: &str) -> String {
    let mut w = XmlWriter::new();
    w.start("Response");
    conference(&mut w, name, true, None, status_callback);
    w.finish()
}

/// `<Response><Gather input="dtmf" numDigits="1" timeout="10" action="..."
/// actionOnEmptyResult="true"><Say>summary</Say><Say>prompt</Say></Gather></Response>`:
/// the whisper only the person hears; Twilio requests `action` with the digit, or
/// without one after `timeout_seconds` of silence.
pub fn whisper(summary: &str, prompt: &str, action: &str, timeout_seconds: u32) -> String {
    let mut w = XmlWriter::new();
    w.start("Response")
        .start("Gather")
        .attr("input", "dtmf")
        .attr("numDigits", "1")
        .attr("timeout", &timeout_seconds.to_string())
        .attr("action", action)
        .attr("method", "POST")
        .attr("actionOnEmptyResult", "true");
    if !summary.is_empty() {
        w.start("Say").text(summary).end();
    }
    w.start("Say").text(prompt).end();
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(document: &str) -> &str {
        document
            .strip_prefix(DECLARATION)
            .expect("every document opens with the declaration")
    }

    #[test]
    fn characters_xml_forbids_are_dropped() {
        let doc = say_then_hangup("Hi Bob\u{1}\u{b}\u{fffe}\u{ffff}\u{1b}[2J\r\n.", None);
        assert_eq!(
            body(&doc),
            "<Response><Say>Hi Bob[2J\r\n.</Say><Hangup/></Response>"
        );
        let doc = relay("a", "wss://x", Some("Hi\u{0} Bob\u{7f}\u{85}"), None);
        assert!(
            doc.contains("welcomeGreeting=\"Hi Bob\u{7f}\u{85}\""),
            "{doc:?}"
        );
        assert!(doc.chars().all(is_xml_char));
    }

    #[test]
    fn each_answer_has_its_shape() {
        assert_eq!(
            empty(),
            r#"<?xml version="1.0" encoding="UTF-8"?><Response/>"#
        );
        assert_eq!(
            body(&say_then_hangup("Hi Ada, this is Acme.", None)),
            "<Response><Say>Hi Ada, this is Acme.</Say><Hangup/></Response>"
        );
        assert_eq!(body(&hangup()), "<Response><Hangup/></Response>");
        assert_eq!(
            body(&relay(
                "https://e.example/v1/providers/twilio/org_1/voice/call_1/transfer",
                "wss://e.example/v1/providers/twilio/org_1/voice/call_1/relay",
                Some("Hello!"),
                None,
            )),
            concat!(
                r#"<Response><Connect action="https://e.example/v1/providers/twilio/org_1/voice/call_1/transfer">"#,
                r#"<ConversationRelay url="wss://e.example/v1/providers/twilio/org_1/voice/call_1/relay" dtmfDetection="true" welcomeGreeting="Hello!"/>"#,
                "</Connect></Response>"
            )
        );
        let without = r#"<Response><Connect action="a"><ConversationRelay url="wss://r" dtmfDetection="true"/></Connect></Response>"#;
        assert_eq!(body(&relay("a", "wss://r", None, None)), without);
        assert_eq!(body(&relay("a", "wss://r", Some(""), None)), without);
        let recording = concat!(
            r#"<Start><Recording recordingStatusCallback="https://e.example/rec?a=1&amp;b=2" "#,
            r#"recordingStatusCallbackMethod="POST" recordingStatusCallbackEvent="completed"/></Start>"#
        );
        assert_eq!(
            body(&relay(
                "a",
                "wss://r",
                None,
                Some("https://e.example/rec?a=1&b=2")
            )),
            format!(
                r#"<Response>{recording}<Connect action="a"><ConversationRelay url="wss://r" dtmfDetection="true"/></Connect></Response>"#
            )
        );
        assert_eq!(
            body(&say_then_hangup(
                "Hi",
                Some("https://e.example/rec?a=1&b=2")
            )),
            format!("<Response>{recording}<Say>Hi</Say><Hangup/></Response>")
        );
        assert_eq!(
            body(&dial("https://e.example/t?step=2&x=1", 20, "+15550100000")),
            r#"<Response><Dial action="https://e.example/t?step=2&amp;x=1" timeout="20"><Number>+15550100000</Number></Dial></Response>"#
        );
    }

    #[test]
    fn a_warm_transfers_documents_have_their_shape() {
        assert_eq!(
            body(&hold(
                "One moment.",
                "call_1",
                Some("https://m.example/a.mp3"),
                "https://e.example/w?step=conference"
            )),
            concat!(
                r#"<Response><Say>One moment.</Say><Dial><Conference startConferenceOnEnter="false" "#,
                r#"endConferenceOnExit="true" beep="false" waitUrl="https://m.example/a.mp3" waitMethod="GET" "#,
                r#"statusCallback="https://e.example/w?step=conference" statusCallbackMethod="POST" "#,
                r#"statusCallbackEvent="join leave end">call_1</Conference></Dial></Response>"#
            )
        );
        assert!(!hold("", "c", None, "s").contains("waitUrl"));
        assert!(join("c", "s").contains(r#"startConferenceOnEnter="true""#));
        assert_eq!(
            body(&whisper(
                "Ada asked about prices.",
                "Press 1 to take the call.",
                "https://e.example/w?a=1&b=2",
                10
            )),
            concat!(
                r#"<Response><Gather input="dtmf" numDigits="1" timeout="10" action="https://e.example/w?a=1&amp;b=2" "#,
                r#"method="POST" actionOnEmptyResult="true"><Say>Ada asked about prices.</Say>"#,
                "<Say>Press 1 to take the call.</Say></Gather></Response>"
            )
        );
    }

    #[test]
    fn injected_markup_comes_out_escaped() {
        let said = say_then_hangup("</Say><Dial>+19005550000</Dial><Say>", None);
        assert_eq!(
            body(&said),
            "<Response><Say>&lt;/Say&gt;&lt;Dial&gt;+19005550000&lt;/Dial&gt;&lt;Say&gt;</Say><Hangup/></Response>"
        );
        assert_eq!(said.matches("<Say").count(), 1);
        assert_eq!(said.matches("<Hangup").count(), 1);
        assert!(!said.contains("<Dial"));

        let greeted = relay(
            "a",
            "wss://r",
            Some(r#"Hi "/><Dial>+19005550000</Dial> it's me & co"#),
            None,
        );
        assert_eq!(
            body(&greeted),
            concat!(
                r#"<Response><Connect action="a"><ConversationRelay url="wss://r" dtmfDetection="true" "#,
                r#"welcomeGreeting="Hi &quot;/&gt;&lt;Dial&gt;+19005550000&lt;/Dial&gt; it&apos;s me &amp; co"/>"#,
                "</Connect></Response>"
            )
        );
        assert_eq!(greeted.matches("<Connect").count(), 1);
        assert_eq!(greeted.matches("<ConversationRelay").count(), 1);
        assert!(!greeted.contains("<Dial"));
    }
}
