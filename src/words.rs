//! How a person's words are read before any rule looks at them. [`normalize`]: Unicode
//! NFKC, case folded, apostrophes dropped, every other mark a space, zero-width
//! characters gone (the organization's own opt-out keywords are stored in this form).
//! [`fold`]: what `domain::contact::revocation` reads, disguises undone (confusable
//! letters of other scripts, combining marks, regional-indicator letters), punctuation
//! kept.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

/// `text` as it is read: NFKC, lower case, apostrophes dropped (`don't` is `dont`), every
/// other character that is not a letter or a digit a space, whitespace collapsed.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.nfkc().flat_map(char::to_lowercase) {
        if is_invisible(c) || matches!(c, '\'' | '\u{2019}' | '\u{02bc}' | '`') {
            continue;
        }
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        } else {
            space = true;
        }
    }
    out
}

/// `text` folded for reading what a person meant, whatever letters they wrote it in:
/// NFKC (`ＳＴＯＰ` is `STOP`), regional-indicator letters as letters (`🇸🇹🇴🇵`),
/// zero-width and format characters gone, combining marks stripped (`S̶T̶O̶P̶`, `arrêt` is
/// `arret`, `más` is `mas`), a letter of another script that is confusable with Latin
/// folded to its UTS #39 skeleton (Cyrillic `ЅТОР` is `STOP`), then lower case.
/// Punctuation, spaces and line breaks stay (a reader splits sentences at them); ASCII
/// is never folded (the skeleton of `m` is `rn`, of `0` is `O`: leetspeak is the
/// reader's to undo, word by word).
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut one = [0u8; 4];
    for c in text.nfkc() {
        if is_invisible(c) {
            continue;
        }
        if let Some(letter) = regional_indicator(c) {
            out.push(letter);
            continue;
        }
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
            continue;
        }
        for d in c.encode_utf8(&mut one).nfd() {
            if is_combining_mark(d) || is_invisible(d) {
                continue;
            }
            if d.is_ascii() || !d.is_alphanumeric() {
                // Marks stay marks: `¡` is no `i`, though it looks like one.
                out.extend(d.to_lowercase());
                continue;
            }
            // A small letter's prototype may be another small letter (Cyrillic `т` is
            // `ᴛ`); its capital's is then the Latin one (`Т` is `T`).
            let latin = latin_skeleton(d.to_string())
                .or_else(|| latin_skeleton(d.to_uppercase().collect()));
            match latin {
                Some(latin) => out.push_str(&latin),
                None => out.extend(d.to_lowercase()),
            }
        }
    }
    out
}

/// The UTS #39 skeleton of `letter` in lower case, when it is Latin letters or digits.
fn latin_skeleton(letter: String) -> Option<String> {
    let skeleton: String = skeleton(&letter).collect();
    (!skeleton.is_empty() && skeleton.chars().all(|s| s.is_ascii_alphanumeric()))
        .then(|| skeleton.to_ascii_lowercase())
}

/// A regional-indicator symbol (`🇸`, the halves of a flag) as the letter it shows.
fn regional_indicator(c: char) -> Option<char> {
    let offset = u32::from(c).checked_sub(0x1F1E6)?;
    (offset < 26)
        .then(|| char::from_u32(u32::from('a') + offset))
        .flatten()
}

/// Zero-width and other format characters, dropped without leaving a space.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}' | '\u{034f}' | '\u{180e}' | '\u{fe00}'..='\u{fe0f}' | '\u{e0000}'..='\u{e007f}')
}
