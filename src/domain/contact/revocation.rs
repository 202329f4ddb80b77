//! Reading a lead's words for a revocation of consent "by any reasonable means"
//! (`shared/spec/consent.md`): the text normalized (Unicode NFKC, case folded,
//! punctuation, emoji and zero-width characters dropped, whitespace collapsed), then
//! read as a definite opt-out (acted on at once), a possible one (the lead is held for a
//! person to decide) or nothing.
//!
//! Definite: the whole message is per-se words (`stop`, `quit`, `end`, `revoke`,
//! `opt out`, `cancel`, `unsubscribe`, ... and the organization's own keywords) with only
//! polite or emphatic filler around them (`Stop please`, `STOP!!!`, `Please unsubscribe
//! me`), or it starts or ends with a revocation phrase (`Remove me from your list`,
//! `Wrong number`). Possible: a per-se word used as a verb inside a longer message (`can
//! we end this`); a noun use (`at the end of the day`) is not read as one.

/// What a message says about the lead's consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Nothing: the message is not about stopping.
    Nothing,
    /// A per-se word inside a longer message: a person decides.
    Possible,
    /// An opt-out, acted on at once.
    Definite,
}

/// The per-se words and phrases: a revocation by themselves.
const PER_SE: [&str; 10] = [
    "stop",
    "stop all",
    "stopall",
    "quit",
    "end",
    "revoke",
    "opt out",
    "optout",
    "cancel",
    "unsubscribe",
];

/// Polite or emphatic filler that may surround a per-se word in a definite opt-out.
const FILLER: [&str; 10] = [
    "please",
    "pls",
    "now",
    "thanks",
    "thank you",
    "me",
    "it",
    "texting me",
    "messaging me",
    "calling me",
];

/// Phrases that revoke when a message starts or ends with them.
const PHRASES: [&str; 11] = [
    "remove me",
    "take me off",
    "do not text",
    "dont text",
    "do not contact",
    "dont contact",
    "do not call",
    "dont call",
    "leave me alone",
    "not interested stop",
    "wrong number",
];

/// Words before a per-se word that make it a noun (`the end`, `a stop`), not a request.
const DETERMINERS: [&str; 15] = [
    "the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "no", "that", "this",
    "every", "each",
];

pub use crate::words::normalize;

/// Reads `text` (an SMS, an email's first line or subject, a caller's turn) with the
/// organization's own opt-out keywords beside the per-se words.
pub fn read(text: &str, own_keywords: &[String]) -> Reading {
    let normalized = normalize(text);
    let words: Vec<&str> = normalized.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return Reading::Nothing;
    }
    let own: Vec<String> = own_keywords.iter().map(|k| normalize(k)).collect();
    let own: Vec<Vec<&str>> = own
        .iter()
        .map(|k| k.split(' ').filter(|w| !w.is_empty()).collect())
        .filter(|k: &Vec<&str>| !k.is_empty())
        .collect();
    let per_se: Vec<Vec<&str>> = PER_SE
        .iter()
        .map(|p| p.split(' ').collect())
        .chain(own.iter().cloned())
        .collect();
    if only_per_se_and_filler(&words, &per_se) || starts_or_ends_with_phrase(&words) {
        return Reading::Definite;
    }
    if per_se_used_as_verb(&words, &per_se) {
        return Reading::Possible;
    }
    Reading::Nothing
}

/// The length of `phrase` if `words` starts with it at `at`.
fn phrase_at(words: &[&str], at: usize, phrase: &[&str]) -> Option<usize> {
    let end = at + phrase.len();
    (end <= words.len() && words[at..end] == *phrase).then_some(phrase.len())
}

/// Whether `words` is a sequence of per-se phrases and filler, at least one per-se.
fn only_per_se_and_filler(words: &[&str], per_se: &[Vec<&str>]) -> bool {
    let filler: Vec<Vec<&str>> = FILLER.iter().map(|f| f.split(' ').collect()).collect();
    // reach[i]: the first i words can be covered; with[i]: covered with a per-se phrase.
    let n = words.len();
    let mut reach = vec![false; n + 1];
    let mut with = vec![false; n + 1];
    reach[0] = true;
    for at in 0..n {
        if !reach[at] {
            continue;
        }
        for p in per_se {
            if let Some(len) = phrase_at(words, at, p) {
                reach[at + len] = true;
                with[at + len] = true;
            }
        }
        for f in &filler {
            if let Some(len) = phrase_at(words, at, f) {
                reach[at + len] = true;
                with[at + len] |= with[at];
            }
        }
    }
    with[n]
}

/// Whether `words` starts with a revocation phrase (after filler such as `please`), or
/// ends with one (before filler).
fn starts_or_ends_with_phrase(words: &[&str]) -> bool {
    let filler: Vec<Vec<&str>> = FILLER.iter().map(|f| f.split(' ').collect()).collect();
    let phrases: Vec<Vec<&str>> = PHRASES.iter().map(|p| p.split(' ').collect()).collect();
    let mut start = 0;
    while let Some(len) = filler.iter().find_map(|f| phrase_at(words, start, f)) {
        start += len;
    }
    if phrases.iter().any(|p| phrase_at(words, start, p).is_some()) {
        return true;
    }
    let mut end = words.len();
    while let Some(len) = filler
        .iter()
        .filter(|f| f.len() <= end)
        .find_map(|f| phrase_at(words, end - f.len(), f))
    {
        end -= len;
    }
    phrases
        .iter()
        .any(|p| p.len() <= end && phrase_at(words, end - p.len(), p).is_some())
}

/// Whether a per-se phrase appears in `words` other than as a noun (after a determiner,
/// or followed by `of`).
fn per_se_used_as_verb(words: &[&str], per_se: &[Vec<&str>]) -> bool {
    (0..words.len()).any(|at| {
        per_se.iter().any(|p| {
            phrase_at(words, at, p).is_some_and(|len| {
                let after_determiner = at > 0 && DETERMINERS.contains(&words[at - 1]);
                let before_of = words.get(at + len) == Some(&"of");
                !after_determiner && !before_of
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizing_folds_width_case_punctuation_and_invisible_characters() {
        let table = [
            ("ＳＴＯＰ", "stop"),
            ("stop.", "stop"),
            ("Stop!", "stop"),
            ("\"STOP\"", "stop"),
            ("STOP\u{200b}", "stop"),
            ("OPT-OUT", "opt out"),
            ("  Stop   please  ", "stop please"),
            ("Don't text me", "dont text me"),
            ("Don’t text me", "dont text me"),
            ("stop 🛑🛑", "stop"),
            ("S\u{200b}T\u{200c}OP", "stop"),
            ("ﬁne", "fine"),
            ("", ""),
        ];
        for (text, normalized) in table {
            assert_eq!(normalize(text), normalized, "{text:?}");
        }
    }

    #[test]
    fn the_definite_forms_opt_out() {
        for text in [
            "Stop please",
            "STOP!!!",
            "stop texting me",
            "Please unsubscribe me",
            "opt out",
            "OPT-OUT",
            "Remove me from your list",
            "please remove me from your list",
            "Wrong number",
            "ＳＴＯＰ",
            "stop.",
            "\"STOP\"",
            "STOP\u{200b}",
            "UNSUBSCRIBE ME",
            "STOP ALL",
            "STOP STOP",
            "quit",
            "End",
            "revoke",
            "Cancel it",
            "thank you stop",
            "do not call me again",
            "I told you already, leave me alone",
            "not interested stop",
            "dont contact",
        ] {
            assert_eq!(read(text, &[]), Reading::Definite, "{text:?}");
        }
    }

    #[test]
    fn the_possible_forms_hold() {
        for text in [
            "I want to stop getting these but call me next week",
            "can we end this",
            "how do I unsubscribe from the newsletter but keep texts",
        ] {
            assert_eq!(read(text, &[]), Reading::Possible, "{text:?}");
        }
    }

    #[test]
    fn ordinary_messages_are_nothing() {
        for text in [
            "I'll be there at the end of the day",
            "Yes, Tuesday works",
            "What's the price?",
            "",
            "!!!",
            "the stop sign by the office",
            "Can you call me tomorrow?",
        ] {
            assert_eq!(read(text, &[]), Reading::Nothing, "{text:?}");
        }
    }

    #[test]
    fn the_organizations_own_keywords_are_per_se_words() {
        let own = vec!["BASTA".to_string(), "no more".to_string()];
        assert_eq!(read("basta!", &own), Reading::Definite);
        assert_eq!(read("No more please", &own), Reading::Definite);
        assert_eq!(
            read("I said basta to him yesterday", &own),
            Reading::Possible
        );
        assert_eq!(read("basta", &[]), Reading::Nothing);
    }

    /// Any message made of one per-se word with filler and punctuation around it opts
    /// out: generated from a fixed seed, so a failure names its message.
    #[test]
    fn any_per_se_word_with_filler_and_punctuation_opts_out() {
        let punctuation = [
            "", "!", ".", "...", "?!", ",", " - ", "\"", "🙏", "\u{200b}",
        ];
        let mut seed: u64 = 0x5eed_cafe;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) as usize) % n
        };
        for _ in 0..5_000 {
            let mut message = String::new();
            let before = next(3);
            for _ in 0..before {
                message.push_str(FILLER[next(FILLER.len())]);
                message.push_str(punctuation[next(punctuation.len())]);
                message.push(' ');
            }
            let word = PER_SE[next(PER_SE.len())];
            message.push_str(&if next(2) == 0 {
                word.to_uppercase()
            } else {
                word.to_string()
            });
            message.push_str(punctuation[next(punctuation.len())]);
            for _ in 0..next(3) {
                message.push(' ');
                message.push_str(FILLER[next(FILLER.len())]);
                message.push_str(punctuation[next(punctuation.len())]);
            }
            assert_eq!(read(&message, &[]), Reading::Definite, "{message:?}");
        }
    }
}
