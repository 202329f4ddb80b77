//! Phone numbers: the interface's loose input form normalised to E.164, and numbers
//! written the way people write them (an import's `(512) 555-1099`) read in a country.
//!
//! Input of the API begins with `+` and may contain digits, spaces, parentheses and
//! hyphens. The normal form keeps the `+` and the digits only; E.164 allows at most 15
//! digits, and we require at least 7 so that a stray `+1` is not taken for a number.
//!
//! A number without `+` is read by libphonenumber's rules (the `phonenumber` crate) in
//! the organization's `defaultCountry`, and accepted when its length is possible for
//! that country: assigned or not (fictional `555-01xx` numbers stay usable).

/// A country phone numbers are read in: ISO 3166 alpha-2, known to the phone library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Country(phonenumber::country::Id);

impl Country {
    /// The country of a code such as `US` or `gb`; `None` when the library knows none.
    pub fn parse(code: &str) -> Option<Country> {
        let code = code.trim().to_ascii_uppercase();
        if code.len() != 2 {
            return None;
        }
        code.parse::<phonenumber::country::Id>().ok().map(Country)
    }

    /// The upper-case ISO code.
    pub fn code(&self) -> &str {
        self.0.as_ref()
    }
}

/// Why a number could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// No `+` and no country to read it in.
    NoCountry,
    /// Not a possible number.
    Invalid,
}

/// A phone written any common way: with `+`, as [`normalize`]; without, read in
/// `country` and kept when its length is possible there.
pub fn read(input: &str, country: Option<Country>) -> Result<String, Unreadable> {
    let input = input.trim();
    if input.starts_with('+') {
        return normalize(input).ok_or(Unreadable::Invalid);
    }
    let country = country.ok_or(Unreadable::NoCountry)?;
    let number = phonenumber::parse(Some(country.0), input).map_err(|_| Unreadable::Invalid)?;
    let national = number.national().value().to_string();
    let possible = number
        .metadata(&phonenumber::metadata::DATABASE)
        .is_some_and(|meta| {
            // The general descriptor's lengths are often left out of the metadata: a
            // length is possible when some kind of number of the country has it.
            let d = meta.descriptors();
            let len = national.len() as u16;
            let kinds = [
                Some(d.general()),
                d.fixed_line(),
                d.mobile(),
                d.toll_free(),
                d.premium_rate(),
                d.shared_cost(),
                d.personal_number(),
                d.voip(),
                d.pager(),
                d.uan(),
            ];
            // Local-only lengths (a US number without its area code) are not a number
            // anyone can be texted at.
            kinds
                .into_iter()
                .flatten()
                .any(|kind| kind.possible_length().contains(&len))
        });
    if !possible {
        return Err(Unreadable::Invalid);
    }
    let e164 = number.format().mode(phonenumber::Mode::E164).to_string();
    normalize(&e164).ok_or(Unreadable::Invalid)
}

/// A stored (E.164) number as people of `country` write it: national (`(512)
/// 555-0126`) when it is of that country, international (`+44 20 7946 0958`)
/// otherwise; the input itself without a country or when the library cannot read it.
pub fn shown(e164: &str, country: Option<Country>) -> String {
    // Without a country there is no national habit: the stored form.
    let (Some(_), Ok(number)) = (country, phonenumber::parse(None, e164)) else {
        return e164.to_string();
    };
    let mode = match (country, number.country().id()) {
        (Some(Country(ours)), Some(theirs)) if ours == theirs => phonenumber::Mode::National,
        _ => phonenumber::Mode::International,
    };
    number.format().mode(mode).to_string()
}

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
    use super::*;

    #[test]
    fn a_number_without_plus_is_read_in_the_country() {
        let us = Country::parse("us");
        assert_eq!(us.map(|c| c.code().to_string()).as_deref(), Some("US"));
        assert_eq!(read("(512) 555-1099", us).as_deref(), Ok("+15125551099"));
        assert_eq!(read("512.555.0142", us).as_deref(), Ok("+15125550142"));
        assert_eq!(read("+44 20 7946 0958", us).as_deref(), Ok("+442079460958"));
        let gb = Country::parse("GB");
        assert_eq!(read("020 7946 0958", gb).as_deref(), Ok("+442079460958"));
        assert_eq!(read("(512) 555-1099", None), Err(Unreadable::NoCountry));
        assert_eq!(read("555-12", us), Err(Unreadable::Invalid));
        assert_eq!(
            read("555-1099", us),
            Err(Unreadable::Invalid),
            "no area code"
        );
        assert_eq!(read("call me maybe", us), Err(Unreadable::Invalid));
        assert_eq!(Country::parse("XX"), None);
        assert_eq!(Country::parse("USA"), None);
    }

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

#[cfg(test)]
mod shown_tests {
    use super::*;

    #[test]
    fn a_number_shows_national_at_home_and_international_abroad() {
        let us = Country::parse("US");
        assert_eq!(shown("+15125550126", us), "(512) 555-0126");
        assert_eq!(shown("+442079460958", us), "+44 20 7946 0958");
        assert_eq!(shown("+15125550126", None), "+15125550126");
        assert_eq!(shown("not a number", us), "not a number");
    }
}
