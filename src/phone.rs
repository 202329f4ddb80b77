//! Phone numbers: the interface's loose input form normalised to E.164.
//!
//! Input begins with `+` and may contain digits, spaces, parentheses and hyphens. The
//! normal form keeps the `+` and the digits only; E.164 allows at most 15 digits, and we
//! require at least 7 so that a stray `+1` is not taken for a number.

/// Returns the E.164 form, or `None` when the input is not a phone number.
pub fn normalize(input: &str) -> Option<String> {
    let rest = input.trim().strip_prefix('+')?;
    let mut out = String::with_capacity(16);
    out.push('+');
    for c in rest.chars() {
        match c {
            '0'..='9' => out.push(c),
            ' ' | '(' | ')' | '-' => {}
            _ => return None,
        }
    }
    let digits = out.len() - 1;
    let first_digit_ok = !out[1..].starts_with('0');
    ((7..=15).contains(&digits) && first_digit_ok).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn accepts_the_interface_punctuation() {
        assert_eq!(
            normalize("+1 (555) 123-4567").as_deref(),
            Some("+15551234567")
        );
        assert_eq!(
            normalize("+44 20 7946 0958").as_deref(),
            Some("+442079460958")
        );
        assert_eq!(normalize(" +15551234567 ").as_deref(), Some("+15551234567"));
    }

    #[test]
    fn rejects_everything_else() {
        for bad in [
            "",
            "+",
            "15551234567",
            "+1.555.123.4567",
            "+1555abc4567",
            "+1234",
            "+1234567890123456",
            "+0123456789",
            "++15551234567",
        ] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }
}
