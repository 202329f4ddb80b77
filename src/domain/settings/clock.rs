//! The clock values settings are written in: a time of day as `HH:MM` (`quietHours`)
//! and the days of the week (`followUpDays`). Read by the settings that store them and
//! by `contact::quiet_hours`, which applies them.

/// The days of the week, as `followUpDays` names them.
pub const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Minutes after midnight of `HH:MM`.
pub fn parse_hhmm(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    // `u32::from_str` takes a leading `+`, which is not a clock time.
    let digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || !digits(m) {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60).then_some(h * 60 + m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_times_are_hh_mm() {
        assert_eq!(parse_hhmm("21:00"), Some(1260));
        assert_eq!(parse_hhmm("08:05"), Some(485));
        for bad in [
            "24:00", "8:00", "08:60", "0800", "aa:bb", "", "+8:00", "08:+5",
        ] {
            assert_eq!(parse_hhmm(bad), None, "{bad}");
        }
    }
}
