//! Versioned postcard encoding of stored records.
//!
//! postcard is compact and fast but not self-describing: a record written by one layout
//! cannot be read by another. Every stored value therefore starts with a format byte.
//! A release that changes a record bumps that record's format and teaches `decode` to
//! read the old one, so old files keep opening.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// Format byte of every record written by this release.
pub const RECORD_FORMAT: u8 = 1;

pub fn encode<T: Serialize>(record: &T) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    out.push(RECORD_FORMAT);
    postcard::to_io(record, &mut out)
        .map_err(|e| Error::Internal(format!("record encoding: {e}")))?;
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    match bytes.split_first() {
        Some((&RECORD_FORMAT, rest)) => Ok(postcard::from_bytes(rest)?),
        Some((other, _)) => Err(Error::Internal(format!(
            "record format {other} is not known to this release"
        ))),
        None => Err(Error::Internal("empty record".into())),
    }
}

/// The records of `org` in a table keyed (organization, name), in name order.
pub(super) fn org_records<T, R>(table: &R, org: &str) -> Result<Vec<T>>
where
    T: DeserializeOwned,
    R: redb::ReadableTable<(&'static str, &'static str), &'static [u8]>,
{
    let mut out = Vec::new();
    for row in table.range((org, "")..)? {
        let (key, value) = row?;
        if key.value().0 != org {
            break;
        }
        out.push(decode(value.value())?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Sample {
        a: i64,
        b: String,
        c: Option<Vec<u8>>,
    }

    #[test]
    fn round_trips_behind_the_format_byte() {
        let s = Sample {
            a: -5,
            b: "x".into(),
            c: Some(vec![1, 2]),
        };
        let bytes = encode(&s).unwrap();
        assert_eq!(bytes[0], RECORD_FORMAT);
        assert_eq!(decode::<Sample>(&bytes).unwrap(), s);
    }

    #[test]
    fn refuses_unknown_formats_and_truncation() {
        let mut bytes = encode(&Sample {
            a: 1,
            b: "y".into(),
            c: None,
        })
        .unwrap();
        assert!(decode::<Sample>(&[]).is_err());
        assert!(decode::<Sample>(&bytes[..2]).is_err());
        bytes[0] = 99;
        assert!(decode::<Sample>(&bytes).is_err());
    }
}
