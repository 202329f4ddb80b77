//! Reading requests: bounded JSON bodies and query parameters.

use std::collections::HashMap;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{Map, Value};

use crate::domain::listing::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::error::{Error, Result};
use crate::time::{self, Micros};

/// Reads the whole body, refusing more than `max` bytes with 413.
pub async fn read_body(body: Incoming, max: usize) -> Result<Bytes> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(Error::PayloadTooLarge)
        }
        Err(e) => Err(Error::BadRequest(format!(
            "Could not read the request body: {e}"
        ))),
    }
}

/// Parses a body that must be a JSON object; an empty body is `{}`.
pub fn json_object(bytes: &[u8]) -> Result<Map<String, Value>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::BadRequest(
            "Request body must be a JSON object".into(),
        )),
        Err(e) => Err(Error::BadRequest(format!("Invalid JSON: {e}"))),
    }
}

/// Query parameters, percent-decoded. A `+` stays a `+` (it is not a space here), so a
/// timestamp offset survives even when a client forgets to encode it.
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Result<Query> {
        let mut map = HashMap::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8()
                    .map(|c| c.into_owned())
                    .map_err(|_| Error::BadRequest("Query string is not valid UTF-8".into()))
            };
            map.insert(decode(k)?, decode(v)?);
        }
        Ok(Query(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn timestamp(&self, name: &str) -> Result<Option<Micros>> {
        match self.get(name) {
            None => Ok(None),
            Some(raw) => time::parse(raw)
                .map(Some)
                .ok_or_else(|| Error::invalid_field(name)),
        }
    }

    /// `limit`, 1 to 1000; `None` when absent.
    pub fn limit(&self) -> Result<Option<usize>> {
        match self.get("limit") {
            None => Ok(None),
            Some(raw) => match raw.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(Some(n)),
                _ => Err(Error::BadRequest(format!(
                    "limit must be an integer between 1 and {MAX_LIMIT}"
                ))),
            },
        }
    }

    pub fn limit_or_default(&self) -> Result<usize> {
        Ok(self.limit()?.unwrap_or(DEFAULT_LIMIT))
    }

    /// `nextToken`; an empty value counts as absent.
    pub fn next_token(&self) -> Option<String> {
        self.get("nextToken")
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decodes_percent_but_keeps_plus() {
        let q = Query::parse(Some(
            "updatedSince=2026-11-22T10:00:00+01:00&a=%2B1%20x&flag",
        ))
        .unwrap();
        assert_eq!(q.get("updatedSince"), Some("2026-11-22T10:00:00+01:00"));
        assert_eq!(q.get("a"), Some("+1 x"));
        assert_eq!(q.get("flag"), Some(""));
        assert!(q.timestamp("updatedSince").unwrap().is_some());
    }

    #[test]
    fn limit_is_an_integer_in_range() {
        for bad in ["0", "1001", "abc", "1.5", "-1", ""] {
            let q = Query::parse(Some(&format!("limit={bad}"))).unwrap();
            assert_eq!(
                q.limit().unwrap_err().to_string(),
                "limit must be an integer between 1 and 1000"
            );
        }
        assert_eq!(
            Query::parse(Some("limit=1000")).unwrap().limit().unwrap(),
            Some(1000)
        );
        assert_eq!(Query::parse(None).unwrap().limit_or_default().unwrap(), 100);
    }

    #[test]
    fn bodies_must_be_objects() {
        assert!(json_object(b"").unwrap().is_empty());
        assert!(json_object(b"[1]").is_err());
        assert!(json_object(b"{")
            .unwrap_err()
            .to_string()
            .starts_with("Invalid JSON"));
    }
}
