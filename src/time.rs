//! Timestamps: microseconds since the Unix epoch inside, RFC 3339 on the wire.
//!
//! Stored times are plain `i64` microseconds so they sort as keys in redb and compare
//! cheaply. The wire format is always UTC with exactly six fractional digits
//! (`2026-11-22T10:15:30.123456Z`); input accepts any RFC 3339 date-time.

use chrono::{DateTime, Datelike, SecondsFormat, Utc};

/// Microseconds since the Unix epoch.
pub type Micros = i64;

pub fn now_micros() -> Micros {
    Utc::now().timestamp_micros()
}

/// Formats as RFC 3339 UTC with microseconds.
pub fn format(t: Micros) -> String {
    with_formatted(t, str::to_string)
}

/// Calls `f` with `t` formatted as RFC 3339 UTC with microseconds, written into a stack
/// buffer: a page of leads formats three hundred times, and chrono's general formatter
/// (then its date conversion) was a twentieth of the page's cost.
pub fn with_formatted<R>(t: Micros, f: impl FnOnce(&str) -> R) -> R {
    const MICROS_PER_DAY: i64 = 86_400_000_000;
    let (days, micros_of_day) = (t.div_euclid(MICROS_PER_DAY), t.rem_euclid(MICROS_PER_DAY));
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return match DateTime::<Utc>::from_timestamp_micros(t) {
            Some(dt) => f(&dt.to_rfc3339_opts(SecondsFormat::Micros, true)),
            // Unreachable for times we produce; keep the output well-formed anyway.
            None => f("1970-01-01T00:00:00.000000Z"),
        };
    }
    let seconds_of_day = micros_of_day / 1_000_000;
    let mut buf = *b"0000-00-00T00:00:00.000000Z";
    let fields = [
        (0, 4, year),
        (5, 2, month),
        (8, 2, day),
        (11, 2, seconds_of_day / 3600),
        (14, 2, seconds_of_day / 60 % 60),
        (17, 2, seconds_of_day % 60),
        (20, 6, micros_of_day % 1_000_000),
    ];
    for (at, width, mut value) in fields {
        for digit in buf[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    match std::str::from_utf8(&buf) {
        Ok(text) => f(text),
        Err(_) => f("1970-01-01T00:00:00.000000Z"),
    }
}

/// (year, month, day) of the proleptic Gregorian calendar for days since 1970-01-01,
/// by Howard Hinnant's `civil_from_days`: whole 400-year eras, then the day of the era.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses any RFC 3339 date-time. Sub-microsecond digits are truncated, which keeps an
/// inclusive `since` filter inclusive of the instant the client saw. An offset that moves
/// the instant out of years 0000..=9999 in UTC is refused: `format` could not write it
/// back as RFC 3339, and a stored value must read back the way it was written.
pub fn parse(s: &str) -> Option<Micros> {
    let utc = DateTime::parse_from_rfc3339(s.trim())
        .ok()?
        .with_timezone(&Utc);
    (0..=9999)
        .contains(&utc.year())
        .then(|| utc.timestamp_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_six_fraction_digits_in_utc() {
        assert_eq!(format(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(format(1_795_342_530_123_456), "2026-11-22T10:15:30.123456Z");
    }

    #[test]
    fn formats_like_chrono_across_the_calendar() {
        let mut t: i64 = -62_167_219_200_000_000; // 0000-01-01
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        while t < 253_402_300_799_999_999 {
            let expected = DateTime::<Utc>::from_timestamp_micros(t)
                .unwrap()
                .to_rfc3339_opts(SecondsFormat::Micros, true);
            assert_eq!(format(t), expected);
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            t += (seed % 400_000_000_000_000) as i64 + 1;
        }
        // Leap days and the last microsecond of a year.
        for text in ["2024-02-29T23:59:59.999999Z", "2000-12-31T23:59:59.999999Z"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
        // Just outside the four-digit years, chrono's own form.
        for t in [-62_167_219_200_000_001, 253_402_300_800_000_000] {
            let expected = DateTime::<Utc>::from_timestamp_micros(t)
                .unwrap()
                .to_rfc3339_opts(SecondsFormat::Micros, true);
            assert_eq!(format(t), expected);
        }
    }

    #[test]
    fn parses_offsets_and_round_trips() {
        let t = parse("2026-11-22T11:15:30.123456+01:00").unwrap();
        assert_eq!(format(t), "2026-11-22T10:15:30.123456Z");
        assert_eq!(parse(&format(t)), Some(t));
        assert_eq!(parse("2026-11-22T10:15:30Z"), Some(1_795_342_530_000_000));
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for bad in [
            "",
            "yesterday",
            "2026-11-22",
            "2026-11-22 10:15:30",
            "1795342530",
            "9999-12-31T23:59:59-01:00",
            "0000-01-01T00:00:00+01:00",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}

/// A stored time that is RFC 3339 text in JSON and an `i64` of microseconds in postcard,
/// so one struct can serve as both the stored record and the wire shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub Micros);

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            with_formatted(self.0, |text| s.serialize_str(text))
        } else {
            s.serialize_i64(self.0)
        }
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            parse(&text)
                .map(Timestamp)
                .ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 date-time"))
        } else {
            i64::deserialize(d).map(Timestamp)
        }
    }
}
