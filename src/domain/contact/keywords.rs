//! The SMS keywords: a lead's whole message STOP (and its synonyms), START or HELP.
//! `conversation::inbound` acts on them; the assistant neither sees nor answers keyword
//! traffic (the keyword, and the confirmation or help text sent back).

use serde_json::Value;

use crate::channel::{Channel, Owner};
use crate::domain::contact::revocation;
use crate::domain::records::message_shape::MessageShape;
use crate::store::rows::Origin;

pub const OPT_OUT_KEYWORDS: [&str; 8] = [
    "STOP",
    "STOPALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "OPTOUT",
    "REVOKE",
];
pub const OPT_IN_KEYWORDS: [&str; 3] = ["START", "YES", "UNSTOP"];

/// Whether an SMS from a lead is a keyword (a definite opt-out as
/// `revocation::read` has it with the organization's `own` opt-out keywords, or an
/// opt-in or help word, the whole text, any case), as `inbound_sms` reads it. A
/// `cancel` that may be about a meeting (`Actually, cancel it`) is never one: the
/// assistant sees it.
pub fn is_keyword(text: &str, own: &[String]) -> bool {
    let word = text.trim().to_ascii_uppercase();
    let word = word.as_str();
    (OPT_OUT_KEYWORDS.contains(&word) && word != "CANCEL")
        || revocation::read_beside_meeting(text, own, true).is_definite()
        || OPT_IN_KEYWORDS.contains(&word)
        || HELP_KEYWORDS.contains(&word)
}

/// A keyword SMS from the lead, or a keyword's confirmation or help text to it
/// (`origin: keyword`): compliance traffic, which the assistant neither sees nor
/// answers. `own`: the organization's `optOutKeywords`.
pub fn is_keyword_traffic(shape: &MessageShape, data: &Value, own: &[String]) -> bool {
    match shape.owner {
        Owner::Lead => shape.channel == Channel::Sms && is_keyword(shape.text(), own),
        Owner::User => data.get("origin").and_then(Value::as_str) == Some(Origin::Keyword.as_str()),
    }
}

/// HELP and INFO (the whole text, any case) ask for the organization's help text.
pub const HELP_KEYWORDS: [&str; 2] = ["HELP", "INFO"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_organizations_own_keyword_is_a_keyword_only_there() {
        let own = vec!["basta".to_string()];
        assert!(is_keyword("¡Basta!", &own));
        assert!(!is_keyword("¡Basta!", &[]));
        assert!(is_keyword("Stop please", &[]));
        assert!(!is_keyword("basta de esperar, llámame", &own));
    }
}
