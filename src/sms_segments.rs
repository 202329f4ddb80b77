//! How many SMS segments a text takes, as phones and carriers count them (3GPP TS
//! 23.038 and 23.040): a text whose every character is in the GSM 03.38 alphabet is
//! sent in GSM-7 (an extension character such as `€` or `{` takes two septets), one
//! segment holding 160 septets, or 153 each when concatenated; any other character
//! (an emoji, most accented letters, Cyrillic) makes the whole text UCS-2, 70 UTF-16
//! units alone or 67 each concatenated (an emoji is two). A pure leaf: the output
//! guard cuts the assistant's texts by it and the limits refuse longer texts by it.

/// The GSM 03.38 basic character set (one septet each).
const GSM7_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?\
¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
/// The extension table (an escape and the character: two septets each).
const GSM7_EXTENSION: &str = "^{}\\[~]|€\u{0C}";

/// Septets one GSM-7 segment holds alone, and each of a concatenated message.
pub const GSM7_SINGLE: usize = 160;
pub const GSM7_PART: usize = 153;
/// UTF-16 units one UCS-2 segment holds alone, and each of a concatenated message.
pub const UCS2_SINGLE: usize = 70;
pub const UCS2_PART: usize = 67;

/// Septets `c` takes in GSM-7; `None` when the text needs UCS-2 for it.
pub fn gsm7_cost(c: char) -> Option<usize> {
    if GSM7_BASIC.contains(c) {
        Some(1)
    } else if GSM7_EXTENSION.contains(c) {
        Some(2)
    } else {
        None
    }
}

/// The encoding a text is sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gsm7,
    Ucs2,
}

/// What a text takes as an SMS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segments {
    pub encoding: Encoding,
    /// Septets (GSM-7) or UTF-16 units (UCS-2).
    pub units: usize,
    /// Segments: 0 for an empty text.
    pub count: usize,
}

impl Segments {
    pub fn of(text: &str) -> Segments {
        let septets: Option<usize> = text.chars().map(gsm7_cost).sum();
        let (encoding, units, single, part) = match septets {
            Some(septets) => (Encoding::Gsm7, septets, GSM7_SINGLE, GSM7_PART),
            None => (
                Encoding::Ucs2,
                text.encode_utf16().count(),
                UCS2_SINGLE,
                UCS2_PART,
            ),
        };
        let count = match units {
            0 => 0,
            n if n <= single => 1,
            n => n.div_ceil(part),
        };
        Segments {
            encoding,
            units,
            count,
        }
    }
}

/// The characters `segments` concatenated segments hold: (GSM-7, UCS-2).
pub fn capacity(segments: usize) -> (usize, usize) {
    match segments {
        0 => (0, 0),
        1 => (GSM7_SINGLE, UCS2_SINGLE),
        n => (n * GSM7_PART, n * UCS2_PART),
    }
}

/// What a text box under an SMS shows: "2 SMS segments", and past `max` that it is too
/// long. The console's script (`console.js`, `[data-sms-count]`) says the same as the
/// text changes.
pub fn words(text: &str, max: usize) -> String {
    let count = Segments::of(text).count;
    let counted = if count == 1 {
        "1 SMS segment".to_string()
    } else {
        format!("{count} SMS segments")
    };
    if count > max {
        format!("{counted}: too long, at most {max}")
    } else {
        counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consoles_script_counts_with_the_same_alphabets() {
        let script = include_str!("console/assets/console.js");
        for table in [GSM7_BASIC, GSM7_EXTENSION] {
            let quoted = serde_json::to_string(table).unwrap();
            assert!(script.contains(&quoted), "console.js holds {quoted}");
        }
        assert_eq!(words("", 10), "0 SMS segments");
        assert_eq!(words(&"a".repeat(160), 10), "1 SMS segment");
        assert_eq!(words(&"a".repeat(161), 10), "2 SMS segments");
        assert_eq!(
            words(&"😀".repeat(700), 10),
            "21 SMS segments: too long, at most 10"
        );
    }

    #[test]
    fn segments_are_counted_as_phones_count_them() {
        assert_eq!(Segments::of("").count, 0);
        assert_eq!(Segments::of(&"a".repeat(160)).count, 1);
        assert_eq!(Segments::of(&"a".repeat(161)).count, 2);
        assert_eq!(Segments::of(&"a".repeat(306)).count, 2);
        assert_eq!(Segments::of(&"a".repeat(307)).count, 3);
        // An extension character takes two septets.
        assert_eq!(Segments::of(&"€".repeat(80)).units, 160);
        assert_eq!(Segments::of(&"€".repeat(81)).count, 2);
        // One character outside GSM-7 makes the whole text UCS-2.
        let s = Segments::of(&format!("{}ł", "a".repeat(69)));
        assert_eq!((s.encoding, s.units, s.count), (Encoding::Ucs2, 70, 1));
        assert_eq!(Segments::of(&"a".repeat(70).replace('a', "ł")).count, 1);
        assert_eq!(Segments::of(&"ł".repeat(71)).count, 2);
        // An emoji is two UTF-16 units: 1,600 of them are 48 segments.
        assert_eq!(Segments::of(&"😀".repeat(1_600)).count, 48);
        assert_eq!(capacity(10), (1_530, 670));
    }
}
