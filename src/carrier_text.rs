//! Text valid for its carrier: which characters a lead field may hold, and the one
//! cleaning every text takes before it leaves (an SMS, an email, a spoken line).
//!
//! A lead field refuses control characters (C0 and C1, but a tab, newline or carriage
//! return in a multi-line field), the noncharacters U+FFFE and U+FFFF and the bidi
//! embeddings, overrides and isolates (U+202A–202E, U+2066–2069): [`field_is_valid`].
//! Values stored before that rule, and text an operator or the model writes, are made
//! clean when rendered instead: [`clean`] drops the same characters and the invisible
//! marks, and collapses whitespace (the output guard, `engine::guard`, starts with it);
//! [`line()`] is the same for a one-line text (an email's subject).

/// Bidi embeddings, overrides and isolates: they reorder what a reader sees.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A noncharacter at the end of a plane (U+FFFE, U+FFFF, U+1FFFE ...): XML 1.0 forbids
/// the first two, and none is text.
fn is_plane_end(c: char) -> bool {
    (c as u32) & 0xFFFE == 0xFFFE
}

/// Characters that say nothing and can reorder or hide what a reader sees: bidi
/// controls, zero-width space, direction marks, the BOM.
fn is_invisible_mark(c: char) -> bool {
    is_bidi_control(c) || matches!(c, '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{FEFF}')
}

/// Whether a lead field may hold `value`: no control character (but `\t`, `\n`, `\r`
/// when `multi_line`), no U+FFFE/U+FFFF, no bidi control.
pub fn field_is_valid(value: &str, multi_line: bool) -> bool {
    value.chars().all(|c| {
        let control = c.is_control() && !(multi_line && matches!(c, '\t' | '\n' | '\r'));
        !(control || is_plane_end(c) || is_bidi_control(c))
    })
}

/// `text` as it may leave: control characters other than newlines removed (a tab and
/// the Unicode line separators count as whitespace), noncharacters and invisible marks
/// removed, whitespace runs collapsed (to one space, or to one newline, or one blank
/// line, when the run held newlines), ends trimmed.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(64 * 1024));
    // Newlines in the pending whitespace run (None: no run pending).
    let mut run: Option<usize> = None;
    for c in text.chars() {
        let newline = matches!(c, '\n' | '\u{2028}' | '\u{2029}' | '\u{85}');
        if newline || c == '\t' || (c.is_whitespace() && !c.is_control()) {
            *run.get_or_insert(0) += usize::from(newline);
            continue;
        }
        if c.is_control() || is_invisible_mark(c) || is_plane_end(c) {
            continue;
        }
        if let Some(newlines) = run.take() {
            if !out.is_empty() {
                out.push_str(match newlines {
                    0 => " ",
                    1 => "\n",
                    _ => "\n\n",
                });
            }
        }
        out.push(c);
    }
    out
}

/// [`clean`] on one line: every whitespace run, newlines too, becomes one space (no
/// header can be added through a subject).
pub fn line(text: &str) -> String {
    clean(text).replace("\n\n", " ").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_refuse_controls_noncharacters_and_bidi_controls() {
        for bad in [
            "Bob\u{1}\u{b}",
            "\u{fffe}",
            "\u{ffff}",
            "\u{1b}[2J\r\nBcc:",
            "a\u{0}b",
            "a\u{85}b",
            "\u{202e}evil",
            "x\u{2066}y",
        ] {
            assert!(!field_is_valid(bad, false), "{bad:?}");
        }
        assert!(!field_is_valid("a\u{0}b", true));
        assert!(!field_is_valid("\u{202a}", true));
        assert!(field_is_valid("line one\r\n\tline two", true));
        assert!(!field_is_valid("line one\nline two", false));
        assert!(field_is_valid("Jörg 👩\u{200D}🔧 ☀", false));
    }

    #[test]
    fn clean_drops_what_fields_refuse() {
        assert_eq!(
            clean("Hi Bob\u{1}\u{1b}[2J\r\nBcc: spy@evil.example"),
            "Hi Bob[2J\nBcc: spy@evil.example"
        );
        assert_eq!(clean("a\u{fffe}b\u{ffff}c\u{1fffe}"), "abc");
        assert_eq!(clean("\u{202e}evil\u{200b}text\u{feff}"), "eviltext");
        assert_eq!(line("Re: a\r\nBcc: b\n\nc"), "Re: a Bcc: b c");
    }
}
