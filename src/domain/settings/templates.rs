//! The template engine of profile texts (cadence steps, subjects, the voice greeting):
//! `{{firstName}}`, `{{lastName}}`, `{{phone}}`, `{{email}}`, `{{additionalInfo.KEY}}`
//! and `{{business.name}}`. [`check_placeholders`] refuses an unknown placeholder when a
//! profile is written; [`render`] fills a template for one lead, a missing value as
//! empty text.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::store::rows::LeadRecord;
use crate::store::{ReadTx, Reader};

/// How many of an organization's most recently active leads [`additional_keys`] reads.
const KEYS_SAMPLE_LEADS: usize = 200;
/// The most additional fields [`additional_keys`] offers.
const MAX_OFFERED_KEYS: usize = 30;

/// A part of a template: literal text or the inside of a `{{...}}`.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// Splits a template into literal text and placeholders. A `{{` without a later `}}` is
/// literal text.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let after_open = &rest[open + 2..];
        let Some(close) = after_open.find("}}") else {
            break;
        };
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        out.push(Piece::Placeholder(&after_open[..close]));
        rest = &after_open[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// What a placeholder stands for.
#[derive(Debug, PartialEq)]
enum Placeholder<'a> {
    FirstName,
    LastName,
    Phone,
    Email,
    AdditionalInfo(&'a str),
    BusinessName,
}

fn recognise(inner: &str) -> Option<Placeholder<'_>> {
    match inner {
        "firstName" => Some(Placeholder::FirstName),
        "lastName" => Some(Placeholder::LastName),
        "phone" => Some(Placeholder::Phone),
        "email" => Some(Placeholder::Email),
        "business.name" => Some(Placeholder::BusinessName),
        _ => inner
            .strip_prefix("additionalInfo.")
            .filter(|key| !key.is_empty())
            .map(Placeholder::AdditionalInfo),
    }
}

/// The placeholders every lead has, as a person writes them (besides
/// `{{additionalInfo.KEY}}`, one per additional field).
pub const PLACEHOLDERS: [&str; 5] = [
    "{{firstName}}",
    "{{lastName}}",
    "{{phone}}",
    "{{email}}",
    "{{business.name}}",
];

/// The additional fields (`additionalInfo` keys) `org`'s leads use, for an editor to
/// offer as `{{additionalInfo.KEY}}`: read from its most recently active leads (at most
/// `KEYS_SAMPLE_LEADS` of them, so the cost is bounded whatever the organization's
/// size), at most `MAX_OFFERED_KEYS`, sorted.
pub fn additional_keys(read: &ReadTx, org: &str) -> Result<Vec<String>> {
    let index = read.lead_index(org)?;
    let mut keys: Vec<String> = Vec::new();
    let mut seen = 0;
    index.walk(false, None, |indexed| {
        seen += 1;
        if let Some(lead) = read.lead(org, &indexed.id)? {
            if let Value::Object(info) = &lead.additional_info.0 {
                for key in info.keys() {
                    if keys.len() < MAX_OFFERED_KEYS && !keys.contains(key) {
                        keys.push(key.clone());
                    }
                }
            }
        }
        Ok(seen < KEYS_SAMPLE_LEADS && keys.len() < MAX_OFFERED_KEYS)
    })?;
    keys.sort();
    Ok(keys)
}

/// The inside of the first placeholder of `template` that is not one of the six.
pub fn unknown_placeholder(template: &str) -> Option<&str> {
    pieces(template).into_iter().find_map(|piece| match piece {
        Piece::Placeholder(inner) if recognise(inner).is_none() => Some(inner),
        _ => None,
    })
}

/// `Unknown placeholder: {{...}}` for the first placeholder that is not one of the six.
pub fn check_placeholders(template: &str) -> Result<()> {
    match unknown_placeholder(template) {
        Some(inner) => Err(Error::BadRequest(format!(
            "Unknown placeholder: {{{{{inner}}}}}"
        ))),
        None => Ok(()),
    }
}

/// The placeholders of `template` that [`render`] fills with empty text for `lead`
/// (as written, `{{additionalInfo.City}}`), each once, in order: what a preview flags.
pub fn empty_placeholders(template: &str, lead: &LeadRecord, business_name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in pieces(template) {
        let Piece::Placeholder(inner) = piece else {
            continue;
        };
        let empty = match recognise(inner) {
            Some(Placeholder::FirstName) => lead.first_name.is_empty(),
            Some(Placeholder::LastName) => lead.last_name.is_empty(),
            Some(Placeholder::Phone) => lead.phone.is_empty(),
            Some(Placeholder::Email) => lead.email.is_empty(),
            Some(Placeholder::BusinessName) => business_name.is_empty(),
            Some(Placeholder::AdditionalInfo(key)) => match lead.additional_info.0.get(key) {
                Some(Value::String(text)) => text.is_empty(),
                Some(Value::Number(_) | Value::Bool(_)) => false,
                _ => true,
            },
            None => true,
        };
        let written = format!("{{{{{inner}}}}}");
        if empty && !out.contains(&written) {
            out.push(written);
        }
    }
    out
}

/// Fills a template for `lead`. A missing value is empty text; `additionalInfo.KEY`
/// takes a string as it is and a number or boolean as its JSON text, anything else as
/// empty. Unknown placeholders (refused when the profile is written) render as empty.
pub fn render(template: &str, lead: &LeadRecord, business_name: &str) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    for piece in pieces(template) {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(inner) => match recognise(inner) {
                Some(Placeholder::FirstName) => out.push_str(&lead.first_name),
                Some(Placeholder::LastName) => out.push_str(&lead.last_name),
                Some(Placeholder::Phone) => out.push_str(&lead.phone),
                Some(Placeholder::Email) => out.push_str(&lead.email),
                Some(Placeholder::BusinessName) => out.push_str(business_name),
                Some(Placeholder::AdditionalInfo(key)) => match lead.additional_info.0.get(key) {
                    Some(Value::String(text)) => out.push_str(text),
                    Some(value @ (Value::Number(_) | Value::Bool(_))) => {
                        out.push_str(&value.to_string())
                    }
                    _ => {}
                },
                None => {}
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::JsonBlob;
    use serde_json::json;

    fn lead() -> LeadRecord {
        LeadRecord {
            first_name: "Ada".into(),
            last_name: "Lovelace".into(),
            phone: "+15551234567".into(),
            email: "ada@example.com".into(),
            additional_info: JsonBlob(json!({
                "city": "London",
                "panels": 12,
                "ratio": 0.5,
                "owner": true,
                "none": null,
                "list": [1, 2],
                "nested": {"a": 1},
                "roof type": "slate"
            })),
            ..LeadRecord::default()
        }
    }

    #[test]
    fn render_fills_every_placeholder() {
        let lead = lead();
        assert_eq!(
            render(
                "Hi {{firstName}} {{lastName}} ({{phone}}, {{email}}), {{business.name}} here.",
                &lead,
                "Acme Solar"
            ),
            "Hi Ada Lovelace (+15551234567, ada@example.com), Acme Solar here."
        );
        assert_eq!(
            render(
                "{{additionalInfo.city}}|{{additionalInfo.panels}}|{{additionalInfo.ratio}}|\
                 {{additionalInfo.owner}}|{{additionalInfo.roof type}}",
                &lead,
                ""
            ),
            "London|12|0.5|true|slate"
        );
    }

    #[test]
    fn render_leaves_missing_and_structured_values_empty() {
        let lead = lead();
        assert_eq!(
            render(
                "[{{additionalInfo.none}}][{{additionalInfo.list}}][{{additionalInfo.nested}}]\
                 [{{additionalInfo.absent}}][{{business.name}}]",
                &lead,
                ""
            ),
            "[][][][][]"
        );
        let blank = LeadRecord::default();
        assert_eq!(
            render("Hi {{firstName}}{{lastName}}!", &blank, "Acme"),
            "Hi !"
        );
        assert_eq!(render("Hi {{additionalInfo.city}}", &blank, "Acme"), "Hi ");
    }

    #[test]
    fn empty_placeholders_are_named_once_as_written() {
        let lead = lead();
        assert_eq!(
            empty_placeholders(
                "Homes in {{additionalInfo.City}} {{additionalInfo.city}} {{additionalInfo.City}} \
                 {{additionalInfo.panels}} {{business.name}} {{lastName}}",
                &lead,
                ""
            ),
            vec!["{{additionalInfo.City}}", "{{business.name}}"]
        );
        assert!(empty_placeholders("Hi {{firstName}}", &lead, "A").is_empty());
        assert_eq!(
            unknown_placeholder("a {{firstName}} {{lead.x}} {{y}}"),
            Some("lead.x")
        );
        assert_eq!(unknown_placeholder("{{additionalInfo.x}}"), None);
    }

    #[test]
    fn render_keeps_literal_text_and_drops_unknown_placeholders() {
        let lead = lead();
        assert_eq!(render("", &lead, "A"), "");
        assert_eq!(render("no placeholders", &lead, "A"), "no placeholders");
        assert_eq!(render("{{nickname}}!", &lead, "A"), "!");
        assert_eq!(render("a {{ b", &lead, "A"), "a {{ b");
        assert_eq!(render("a }} b {{", &lead, "A"), "a }} b {{");
        assert_eq!(render("{{firstName}}{{firstName}}", &lead, "A"), "AdaAda");
        assert_eq!(render("ünï {{firstName}} ✓", &lead, "A"), "ünï Ada ✓");
    }
}
