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

/// A time of day as a person types it ("9pm", "9:00 PM", "21:00", "9 a.m.", "noon") as
/// `HH:MM`; `None` when it is not one. The console reads forms with it; the API keeps
/// `HH:MM` only.
pub fn read_time_of_day(text: &str) -> Option<String> {
    let lower: String = text
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '.')
        .collect();
    match lower.as_str() {
        "noon" | "midday" => return Some("12:00".into()),
        "midnight" => return Some("00:00".into()),
        _ => {}
    }
    let (clock, half) = if let Some(c) = lower.strip_suffix("am") {
        (c, Some(false))
    } else if let Some(c) = lower.strip_suffix("pm") {
        (c, Some(true))
    } else {
        (lower.as_str(), None)
    };
    let (h, m) = clock.split_once(':').unwrap_or((clock, "00"));
    let digits = |s: &str, max: usize| {
        !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 2) || !digits(m, 2) || m.len() != 2 {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    let h = match half {
        None if h < 24 => h,
        Some(pm) if (1..=12).contains(&h) => (h % 12) + if pm { 12 } else { 0 },
        _ => return None,
    };
    (m < 60).then(|| format!("{h:02}:{m:02}"))
}

/// A span of the day as a person types it ("9am-5pm", "9:00 AM to 5:00 PM", "09:00–17:00")
/// as two `HH:MM`; `None` when it is not one.
pub fn read_span(text: &str) -> Option<(String, String)> {
    let text = text.replace(['\u{2013}', '\u{2014}'], "-");
    let (start, end) = text.split_once('-').or_else(|| {
        let lower = text.to_ascii_lowercase();
        let at = lower.find(" to ")?;
        Some((&text[..at], &text[at + 4..]))
    })?;
    Some((read_time_of_day(start)?, read_time_of_day(end)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_people_type_them() {
        for (typed, read) in [
            ("9pm", "21:00"),
            ("9:00 PM", "21:00"),
            ("21:00", "21:00"),
            ("9", "09:00"),
            ("9:30 a.m.", "09:30"),
            ("12am", "00:00"),
            ("12pm", "12:00"),
            ("noon", "12:00"),
            ("08:05", "08:05"),
        ] {
            assert_eq!(read_time_of_day(typed).as_deref(), Some(read), "{typed}");
        }
        for bad in ["13pm", "0am", "25:00", "9:5pm", "nine", "", "9:60", "+9"] {
            assert_eq!(read_time_of_day(bad), None, "{bad}");
        }
        assert_eq!(
            read_span("9am-5pm"),
            Some(("09:00".to_string(), "17:00".to_string()))
        );
        assert_eq!(
            read_span("9:00 AM to 5:00 PM"),
            Some(("09:00".to_string(), "17:00".to_string()))
        );
        assert_eq!(read_span("9am"), None);
    }

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
