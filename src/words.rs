//! How a person's words are read before any rule looks at them: Unicode NFKC, case
//! folded, apostrophes dropped, every other mark a space, zero-width characters gone
//! (`domain::contact::revocation` reads opt-outs in them; the organization's own opt-out
//! keywords are stored in this form).

use unicode_normalization::UnicodeNormalization;

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

/// Zero-width and other format characters, dropped without leaving a space.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}' | '\u{034f}' | '\u{180e}')
}
