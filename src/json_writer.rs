//! A JSON writer for the lead, the shape written most: at every lead write, and by the
//! hundred in a page of the sync (`store::lead_view`).
//!
//! Through serde_json, every key of every object goes through the same byte-by-byte
//! escaping scan as the values, and was the single largest cost of a page. Here keys are
//! literals joined with their punctuation at compile time (`write_object!`), strings
//! that need no escaping are copied as they are, and the buffer is sized up front. The
//! output is byte for byte what serde_json writes for the same shape (tested below).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::time::{self, Micros};

pub struct JsonWriter {
    buf: Vec<u8>,
    /// The first error from a value written through serde; reported by [`Self::finish`].
    failed: Option<serde_json::Error>,
}

impl JsonWriter {
    pub fn with_capacity(bytes: usize) -> Self {
        JsonWriter {
            buf: Vec::with_capacity(bytes),
            failed: None,
        }
    }

    /// Punctuation and keys: text that is JSON already.
    pub fn raw(&mut self, json: &'static str) {
        self.buf.extend_from_slice(json.as_bytes());
    }

    pub fn str(&mut self, s: &str) {
        // serde_json escapes exactly these bytes, and nothing else, in a string.
        if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            self.serde(s);
        } else {
            self.buf.reserve(s.len() + 2);
            self.buf.push(b'"');
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.push(b'"');
        }
    }

    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.str(s),
            None => self.raw("null"),
        }
    }

    pub fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    pub fn time(&mut self, t: Micros) {
        time::with_formatted(t, |text| self.str(text));
    }

    pub fn opt_time(&mut self, t: Option<Micros>) {
        match t {
            Some(t) => self.time(t),
            None => self.raw("null"),
        }
    }

    /// Text that is one JSON value already, such as a stored rendering.
    pub fn json_text(&mut self, json: &[u8]) {
        self.buf.extend_from_slice(json);
    }

    /// Any other value, through serde_json.
    pub fn serde<T: Serialize + ?Sized>(&mut self, value: &T) {
        if let Err(e) = serde_json::to_writer(&mut self.buf, value) {
            self.failed.get_or_insert(e);
        }
    }

    /// A nested value written by `write`.
    pub fn with(&mut self, write: impl FnOnce(&mut Self)) {
        write(self);
    }

    pub fn finish(self) -> Result<Vec<u8>> {
        match self.failed {
            None => Ok(self.buf),
            Some(e) => Err(Error::Internal(format!("response encoding: {e}"))),
        }
    }
}

/// Writes a JSON object to a [`JsonWriter`]: `write_object!(out, "key": method(value), ...)`
/// calls `out.method(value)` for each value, after the key written as one literal.
macro_rules! write_object {
    ($out:expr, $key:literal : $method:ident ($value:expr) $(, $keys:literal : $methods:ident ($values:expr))* $(,)?) => {{
        let out: &mut $crate::json_writer::JsonWriter = $out;
        out.raw(concat!("{\"", $key, "\":"));
        out.$method($value);
        $(
            out.raw(concat!(",\"", $keys, "\":"));
            out.$methods($values);
        )*
        out.raw("}");
    }};
}
pub(crate) use write_object;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_escaped_exactly_like_serde_json() {
        for s in [
            "",
            "plain",
            "quote \" and backslash \\",
            "tab\tnew\nline\r\u{1}\u{1f}",
            "unicode é ✓ 😀 and </script>",
            "\u{7f}",
        ] {
            let mut out = JsonWriter::with_capacity(0);
            out.str(s);
            assert_eq!(
                out.finish().unwrap(),
                serde_json::to_vec(s).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn objects_match_serde_json() {
        let mut out = JsonWriter::with_capacity(0);
        write_object!(&mut out,
            "a": str("x\"y"),
            "b": bool(true),
            "c": opt_str(None),
            "d": time(0),
            "e": opt_time(None),
            "f": serde(&json!({"k": [1, null]})),
            "g": with(|o| write_object!(o, "h": bool(false))),
        );
        let expected = json!({
            "a": "x\"y", "b": true, "c": null, "d": "1970-01-01T00:00:00.000000Z",
            "e": null, "f": {"k": [1, null]}, "g": {"h": false}
        });
        let written = out.finish().unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), expected.to_string());
    }
}
