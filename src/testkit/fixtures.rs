//! Request bodies the tests share: settings that many tests start from, written once.

use serde_json::{json, Value};

/// A calendar open every day, all day, in UTC, with no notice: any half hour from now
/// on is free. 30-minute meetings, no buffer, 14 days ahead, "Phone call", owned by
/// Ana Ruiz (ana@acme.example); its meetings are called `title`.
pub fn always_open_calendar(title: &str) -> Value {
    let day = json!([["00:00", "24:00"]]);
    json!({"timeZone": "UTC",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day},
        "meetingMinutes": 30, "bufferMinutes": 0, "minNoticeMinutes": 0, "daysAhead": 14,
        "title": title, "location": "Phone call",
        "owner": {"name": "Ana Ruiz", "email": "ana@acme.example"}})
}
