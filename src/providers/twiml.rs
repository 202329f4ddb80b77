//! TwiML answers to Twilio's voice webhooks: the few documents the voice paths send back
//! (`<Response/>`, `<Say>` then `<Hangup/>`, `<Connect>` to a ConversationRelay,
//! `<Dial>` of a transfer number).
//!
//! Each is written through a tiny XML writer that escapes `& < > " '` in every text and
//! attribute value: a step's text, a greeting or a number comes from organization
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

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
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

/// `<Response><Say>text</Say><Hangup/></Response>`: a step's text read to the lead.
pub fn say_then_hangup(text: &str) -> String {
    let mut w = XmlWriter::new();
    w.start("Response").start("Say").text(text).end();
    w.empty("Hangup");
    w.finish()
}

/// `<Response><Hangup/></Response>`.
pub fn hangup() -> String {
    let mut w = XmlWriter::new();
    w.start("Response").empty("Hangup");
    w.finish()
}

/// `<Response><Connect action="..."><ConversationRelay url="..." welcomeGreeting="..."/>
/// </Connect></Response>`: the call handed to the relay WebSocket; Twilio requests
/// `action` when the session ends. `welcomeGreeting` is left out when none or empty.
pub fn relay(action: &str, relay_url: &str, welcome_greeting: Option<&str>) -> String {
    let mut w = XmlWriter::new();
    w.start("Response")
        .start("Connect")
        .attr("action", action)
        .start("ConversationRelay")
        .attr("url", relay_url);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn body(document: &str) -> &str {
        document
            .strip_prefix(DECLARATION)
            .expect("every document opens with the declaration")
    }

    #[test]
    fn each_answer_has_its_shape() {
        assert_eq!(
            empty(),
            r#"<?xml version="1.0" encoding="UTF-8"?><Response/>"#
        );
        assert_eq!(
            body(&say_then_hangup("Hi Ada, this is Acme.")),
            "<Response><Say>Hi Ada, this is Acme.</Say><Hangup/></Response>"
        );
        assert_eq!(body(&hangup()), "<Response><Hangup/></Response>");
        assert_eq!(
            body(&relay(
                "https://e.example/v1/providers/twilio/org_1/voice/call_1/transfer",
                "wss://e.example/v1/providers/twilio/org_1/voice/call_1/relay",
                Some("Hello!"),
            )),
            concat!(
                r#"<Response><Connect action="https://e.example/v1/providers/twilio/org_1/voice/call_1/transfer">"#,
                r#"<ConversationRelay url="wss://e.example/v1/providers/twilio/org_1/voice/call_1/relay" welcomeGreeting="Hello!"/>"#,
                "</Connect></Response>"
            )
        );
        let without = r#"<Response><Connect action="a"><ConversationRelay url="wss://r"/></Connect></Response>"#;
        assert_eq!(body(&relay("a", "wss://r", None)), without);
        assert_eq!(body(&relay("a", "wss://r", Some(""))), without);
        assert_eq!(
            body(&dial("https://e.example/t?step=2&x=1", 20, "+15550100000")),
            r#"<Response><Dial action="https://e.example/t?step=2&amp;x=1" timeout="20"><Number>+15550100000</Number></Dial></Response>"#
        );
    }

    #[test]
    fn injected_markup_comes_out_escaped() {
        let said = say_then_hangup("</Say><Dial>+19005550000</Dial><Say>");
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
        );
        assert_eq!(
            body(&greeted),
            concat!(
                r#"<Response><Connect action="a"><ConversationRelay url="wss://r" "#,
                r#"welcomeGreeting="Hi &quot;/&gt;&lt;Dial&gt;+19005550000&lt;/Dial&gt; it&apos;s me &amp; co"/>"#,
                "</Connect></Response>"
            )
        );
        assert_eq!(greeted.matches("<Connect").count(), 1);
        assert_eq!(greeted.matches("<ConversationRelay").count(), 1);
        assert!(!greeted.contains("<Dial"));
    }
}
