//! The output guard: what the model says is made fit for a real person's phone before
//! it leaves. Every assistant reply passes [`guard`] (an SMS or email reply in
//! `reply`, each spoken turn in `voice`); nothing the model writes is sent otherwise.
//!
//! In order: control characters other than a newline are removed (a tab and the
//! Unicode line separators count as whitespace; invisible direction and width marks
//! and noncharacters go: `carrier_text::clean`, which rendered templates take too),
//! runs of whitespace collapse (to one space, or to one newline, or one blank
//! line, when the run held newlines), and the text is cut at the last sentence or word
//! boundary to its channel's cap (`Cap`): an SMS to two segments (306 GSM-7
//! characters, the extension table's counting two, or 134 UTF-16 units when the text
//! needs UCS-2), an email to 5,000 characters, a voice turn to 600. An empty result
//! means nothing is sent.

use crate::channel::Channel;
use crate::sms_segments::gsm7_cost;

/// Two concatenated GSM-7 segments hold 153 septets each.
pub const SMS_GSM7_CAP: usize = 306;
/// Two concatenated UCS-2 segments hold 67 UTF-16 units each.
pub const SMS_UCS2_CAP: usize = 134;
/// The longest emailed reply, in characters.
pub const EMAIL_CAP: usize = 5_000;
/// The longest spoken turn, in characters.
pub const VOICE_CAP: usize = 600;

/// How a channel measures its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    /// GSM-7 septets: a basic character is one, an extension character two.
    Gsm7(usize),
    /// UTF-16 code units (UCS-2 as phones count it: an emoji is two).
    Ucs2(usize),
    /// Characters.
    Chars(usize),
}

impl Cap {
    fn of(channel: Channel, text: &str) -> Cap {
        match channel {
            Channel::Sms if text.chars().all(|c| gsm7_cost(c).is_some()) => Cap::Gsm7(SMS_GSM7_CAP),
            Channel::Sms => Cap::Ucs2(SMS_UCS2_CAP),
            Channel::Email => Cap::Chars(EMAIL_CAP),
            Channel::Voice => Cap::Chars(VOICE_CAP),
        }
    }

    fn limit(self) -> usize {
        match self {
            Cap::Gsm7(n) | Cap::Ucs2(n) | Cap::Chars(n) => n,
        }
    }

    fn cost(self, c: char) -> usize {
        match self {
            Cap::Gsm7(_) => gsm7_cost(c).unwrap_or(2),
            Cap::Ucs2(_) => c.len_utf16(),
            Cap::Chars(_) => 1,
        }
    }
}

/// The one output guard: `text` as it may be sent on `channel`; empty when nothing
/// should be sent.
pub fn guard(text: &str, channel: Channel) -> String {
    let clean = crate::carrier_text::clean(text);
    cut(&clean, Cap::of(channel, &clean))
}

/// `text` cut to `cap`: whole when it fits; else at the last sentence end within the
/// cap (when that keeps at least half of it), else at the last word boundary, else at
/// the cap itself (one endless word).
fn cut(text: &str, cap: Cap) -> String {
    let limit = cap.limit();
    let mut used = 0;
    let mut end = text.len();
    let mut fits_whole = true;
    // Byte offsets within the fitting prefix: after the last sentence end, and at the
    // last whitespace.
    let mut sentence: Option<(usize, usize)> = None;
    let mut word: Option<usize> = None;
    let mut previous: Option<char> = None;
    for (i, c) in text.char_indices() {
        let cost = cap.cost(c);
        if used + cost > limit {
            end = i;
            fits_whole = false;
            break;
        }
        if c.is_whitespace() {
            word = Some(i);
            if previous.is_some_and(|p| matches!(p, '.' | '!' | '?' | '…')) || c == '\n' {
                sentence = Some((i, used));
            }
        }
        used += cost;
        previous = Some(c);
    }
    if fits_whole {
        return text.to_string();
    }
    // The character at the cut may itself end a sentence or a word.
    let next = text[end..].chars().next();
    if next.is_some_and(char::is_whitespace) {
        word = Some(end);
        if previous.is_some_and(|p| matches!(p, '.' | '!' | '?' | '…')) {
            sentence = Some((end, used));
        }
    }
    let at = match (sentence, word) {
        (Some((at, kept)), _) if kept * 2 >= limit => at,
        (_, Some(at)) if at > 0 => at,
        _ => end,
    };
    text[..at].trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sms(text: &str) -> String {
        guard(text, Channel::Sms)
    }

    /// Septets of a GSM-7 text.
    fn septets(text: &str) -> usize {
        text.chars().map(|c| gsm7_cost(c).unwrap()).sum()
    }

    #[test]
    fn control_characters_go_but_newlines_stay() {
        assert_eq!(sms("Hi\x0e there\x1f,\x02 Ada\r\n\x07"), "Hi there, Ada");
        assert_eq!(sms("one\r\ntwo"), "one\ntwo");
        assert_eq!(sms("a\x00b\x7fc\u{9b}d"), "abcd");
        assert_eq!(
            guard("Line one\nLine two", Channel::Email),
            "Line one\nLine two"
        );
        assert_eq!(sms("\u{202E}evil\u{200B}text\u{FEFF}"), "eviltext");
        // An emoji's joiner is not a control character.
        assert_eq!(sms("👩\u{200D}🔧"), "👩\u{200D}🔧");
    }

    #[test]
    fn whitespace_runs_collapse() {
        assert_eq!(sms("  a   b\t\tc  "), "a b c");
        assert_eq!(sms("a \n \n\n b"), "a\n\nb");
        assert_eq!(sms("a \n  b"), "a\nb");
        assert_eq!(sms("a\u{2028}b"), "a\nb");
        assert_eq!(sms("a\u{00A0}\u{3000} b"), "a b");
        assert_eq!(sms("\n\n  Hello  \n"), "Hello");
    }

    #[test]
    fn empty_or_invisible_text_is_empty() {
        for empty in ["", "   ", "\x0e\x1f\x02\r", "\n\t\n", "\u{200B}\u{FEFF}"] {
            assert_eq!(sms(empty), "", "{empty:?}");
            assert_eq!(guard(empty, Channel::Email), "");
            assert_eq!(guard(empty, Channel::Voice), "");
        }
    }

    #[test]
    fn short_text_is_untouched() {
        let text = "Hi Ada! A quote for 10 panels is about $9,000. Shall I book a visit?";
        assert_eq!(sms(text), text);
        assert_eq!(guard(text, Channel::Email), text);
        assert_eq!(guard(text, Channel::Voice), text);
    }

    #[test]
    fn gsm7_sms_is_cut_to_306_septets_at_a_word() {
        let exactly = "a".repeat(306);
        assert_eq!(sms(&exactly), exactly);
        let words = "word ".repeat(100);
        let cut = sms(&words);
        assert!(septets(&cut) <= 306, "{}", septets(&cut));
        assert!(cut.ends_with("word"), "{cut}");
        // 61 words of 4 letters and the 60 spaces between them: 304 septets.
        assert_eq!(cut, vec!["word"; 61].join(" "));
    }

    #[test]
    fn extension_characters_count_two() {
        let euros = "€".repeat(200);
        let cut = sms(&euros);
        assert_eq!(cut.chars().count(), 153);
        assert_eq!(septets(&cut), 306);
        let braces = format!("{}{}", "a".repeat(300), "{}[]");
        assert_eq!(sms(&braces), format!("{}{}", "a".repeat(300), "{}["));
    }

    #[test]
    fn ucs2_sms_is_cut_to_134_units() {
        let text = format!("ü{}", "ж".repeat(200));
        let cut = sms(&text);
        assert_eq!(cut.encode_utf16().count(), 134);
        // An emoji is two UTF-16 units.
        let emoji = "😀".repeat(100);
        let cut = sms(&emoji);
        assert_eq!(cut.chars().count(), 67);
        assert_eq!(cut.encode_utf16().count(), 134);
        // One character outside GSM-7 makes the whole text UCS-2.
        let mixed = format!("{} ok 😀", "word ".repeat(40));
        let cut = sms(&mixed);
        assert!(cut.encode_utf16().count() <= 134, "{cut}");
        assert!(cut.ends_with("word"), "{cut}");
    }

    #[test]
    fn the_cut_prefers_a_sentence_end() {
        let first = format!("{}.", "a".repeat(200));
        let text = format!("{first} {}", "b ".repeat(100));
        assert_eq!(sms(&text), first);
        let question = format!("{}? Yes!", "x ".repeat(80));
        let long = format!("{question} {}", "more words ".repeat(40));
        assert_eq!(sms(&long), question.trim_start());
        // A sentence end too early (before half the cap) gives way to a word boundary.
        let early = format!("Hi. {}", "word ".repeat(100));
        let cut = sms(&early);
        assert!(cut.len() > 250, "{cut}");
        assert!(cut.ends_with("word"), "{cut}");
        // A newline ends a sentence.
        let lines = format!("{}\n{}", "c".repeat(250), "d ".repeat(60));
        assert_eq!(sms(&lines), "c".repeat(250));
    }

    #[test]
    fn a_sentence_ending_exactly_at_the_cap_is_kept() {
        let text = format!("{}. And more.", "a".repeat(305));
        assert_eq!(sms(&text), format!("{}.", "a".repeat(305)));
    }

    #[test]
    fn one_endless_word_is_cut_at_the_cap() {
        let cut = sms(&"a".repeat(2 * 1024 * 1024));
        assert_eq!(cut, "a".repeat(306));
        assert_eq!(guard(&"a".repeat(9000), Channel::Email).len(), 5_000);
        assert_eq!(guard(&"a".repeat(9000), Channel::Voice).len(), 600);
    }

    #[test]
    fn email_and_voice_count_characters() {
        let text = "é ".repeat(4000);
        let email = guard(&text, Channel::Email);
        assert!(email.chars().count() <= 5_000);
        assert!(email.chars().count() >= 4_990);
        let voice = guard(&text, Channel::Voice);
        assert!(voice.chars().count() <= 600);
        assert!(voice.ends_with('é'));
    }

    #[test]
    fn a_control_laden_460_character_answer_goes_out_guarded() {
        let mut answer = String::new();
        while answer.chars().count() < 460 {
            answer.push_str("Great\x0e news\x1f! \x02Panels\r are\r\n cheap. ");
        }
        let answer: String = answer.chars().take(460).collect();
        let cut = sms(&answer);
        assert!(!cut.is_empty());
        assert!(cut.chars().all(|c| c == '\n' || !c.is_control()), "{cut:?}");
        assert!(!cut.contains("  "), "{cut:?}");
        assert!(septets(&cut) <= 306, "{}", septets(&cut));
        assert!(cut.ends_with('.') || cut.ends_with('!'), "{cut:?}");
    }
}
