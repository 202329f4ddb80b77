//! The log's bytes: the header that names a database, a record (a batch's sequence
//! number and row operations under a checksum salted by the file), and the walk that
//! reads records back. Pure encoding and parsing: nothing here touches a file.

use std::ops::Range;

use super::MAX_LOGGED_BATCH;
use crate::error::{Error, Result};

/// The header's length; the first record starts after it.
pub(super) const HEADER_LEN: u64 = 64;

/// The header's first bytes.
const MAGIC: [u8; 8] = *b"engdWAL\n";

/// The format of the header and records this build writes and reads.
pub(super) const FORMAT: u32 = 1;

/// A record's fixed part: `len`, `crc32`, `seq`.
const RECORD_HEAD: usize = 16;

const INSERT: u8 = 0;
const REMOVE: u8 = 1;

/// A database's identity: 128 random bits made at its first open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DbId(pub(super) [u8; 16]);

impl DbId {
    /// The id's 16 bytes.
    pub(crate) fn bytes(&self) -> [u8; 16] {
        self.0
    }
}

impl std::fmt::Display for DbId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// The operations of one write transaction, encoded as they happen, after room for
/// the record's head: [`OpLog::sealed`] fills the head in and the buffer is the record,
/// with no copy. The writer hands each batch's buffer on to the next
/// ([`OpLog::recycled`]), so a batch's log neither allocates nor grows its buffer anew.
pub(crate) struct OpLog {
    /// [`RECORD_HEAD`] bytes for the head, then the operations.
    bytes: Vec<u8>,
    /// Set when the operations outgrew [`MAX_LOGGED_BATCH`]: they are no longer
    /// recorded and the batch must commit as a checkpoint.
    overflowed: bool,
}

impl Default for OpLog {
    fn default() -> Self {
        OpLog::recycled(Vec::new())
    }
}

/// A buffer larger than this is not kept for the next batch (an import part's log).
const KEPT_BUFFER: usize = 1 << 20;

impl OpLog {
    /// An empty log that records into `buffer` (a last batch's, from
    /// [`OpLog::into_buffer`]).
    pub(crate) fn recycled(mut buffer: Vec<u8>) -> Self {
        buffer.clear();
        buffer.resize(RECORD_HEAD, 0);
        OpLog {
            bytes: buffer,
            overflowed: false,
        }
    }

    /// The log's buffer, to record the next batch into; nothing when it grew large.
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        if self.bytes.capacity() > KEPT_BUFFER {
            Vec::new()
        } else {
            self.bytes
        }
    }

    /// Records that `table` got `value` at `key` (`None`: the key was removed).
    pub(crate) fn record(&mut self, table: &str, key: &[u8], value: Option<&[u8]>) {
        if self.overflowed {
            return;
        }
        let added = 10 + table.len() + key.len() + value.map_or(0, |v| v.len());
        let ops = self.bytes.len() - RECORD_HEAD;
        if ops + added > MAX_LOGGED_BATCH || table.len() > usize::from(u8::MAX) {
            self.overflowed = true;
            self.bytes = vec![0; RECORD_HEAD];
            return;
        }
        self.bytes.push(table.len() as u8);
        self.bytes.extend_from_slice(table.as_bytes());
        self.bytes
            .push(if value.is_some() { INSERT } else { REMOVE });
        self.bytes
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(key);
        if let Some(value) = value {
            self.bytes
                .extend_from_slice(&(value.len() as u32).to_le_bytes());
            self.bytes.extend_from_slice(value);
        }
    }

    /// Whether the batch must be written as a checkpoint rather than logged.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes().is_empty() && !self.overflowed
    }

    /// The operations' bytes, as a record holds them.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[RECORD_HEAD..]
    }

    /// The record numbered `seq` holding these operations, checksummed under the
    /// file's `salt`: the head filled in before them.
    pub(super) fn sealed(&mut self, salt: u64, seq: u64) -> &[u8] {
        seal(&mut self.bytes, salt, seq);
        &self.bytes
    }
}

/// Fills in the head of `record` ([`RECORD_HEAD`] bytes, then the operations): the
/// body's length and checksum, and `seq`.
fn seal(record: &mut [u8], salt: u64, seq: u64) {
    record[8..16].copy_from_slice(&seq.to_le_bytes());
    let body_len = (record.len() - 8) as u32;
    let crc = record_crc(salt, &record[8..]);
    record[..4].copy_from_slice(&body_len.to_le_bytes());
    record[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// The checksum of a record's body under `salt`.
fn record_crc(salt: u64, body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&salt.to_le_bytes());
    hasher.update(body);
    hasher.finalize()
}

/// The record numbered `seq` holding `ops` (an [`OpLog`]'s bytes), checksummed
/// under the file's `salt`.
#[cfg(test)]
pub(super) fn record(salt: u64, seq: u64, ops: &[u8]) -> Vec<u8> {
    let mut record = vec![0; RECORD_HEAD];
    record.extend_from_slice(ops);
    seal(&mut record, salt, seq);
    record
}

/// The log's header, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Head {
    /// No file.
    Missing,
    /// A file shorter than a header (emptied).
    Empty,
    /// A header that is not one: the reason.
    Unreadable(String),
    /// A header of a newer format than this build reads.
    Newer(u32),
    /// A sound header: the database it names and the file's salt.
    Names(DbId, u64),
}

/// The header of a log of database `id` whose records are checksummed under `salt`.
pub(super) fn header(id: DbId, salt: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    h[16..32].copy_from_slice(&id.0);
    h[32..40].copy_from_slice(&salt.to_le_bytes());
    let crc = crc32fast::hash(&h[..60]);
    h[60..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Reads the header of a log file's bytes (`None`: there is no file).
pub(super) fn read_head(file: Option<&[u8]>) -> Head {
    let Some(bytes) = file else {
        return Head::Missing;
    };
    let Some(h) = bytes.get(..HEADER_LEN as usize) else {
        return Head::Empty;
    };
    if h[..8] != MAGIC {
        return Head::Unreadable("it does not start as an engaged write-ahead log".into());
    }
    let crc = u32::from_le_bytes([h[60], h[61], h[62], h[63]]);
    if crc32fast::hash(&h[..60]) != crc {
        return Head::Unreadable("its header's checksum does not match".into());
    }
    let format = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    if format != FORMAT {
        return Head::Newer(format);
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&h[16..32]);
    let mut salt = [0u8; 8];
    salt.copy_from_slice(&h[32..40]);
    Head::Names(DbId(id), u64::from_le_bytes(salt))
}

/// The record at `at` if it is whole and its checksum holds: its sequence number,
/// its operations' range and where the next record starts.
pub(super) fn record_at(bytes: &[u8], at: usize, salt: u64) -> Option<(u64, Range<usize>, usize)> {
    let head = bytes.get(at..at.checked_add(RECORD_HEAD)?)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len < 8 {
        return None;
    }
    let end = at.checked_add(8)?.checked_add(len)?;
    let body = bytes.get(at + 8..end)?;
    if record_crc(salt, body) != crc {
        return None;
    }
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&body[..8]);
    Some((u64::from_le_bytes(seq), at + RECORD_HEAD..end, end))
}

/// The records of a log numbered on one by one after `held`, read from where the
/// checkpoint says the next starts.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Chain {
    /// Each record's sequence number and its operations' range.
    pub(super) records: Vec<(u64, Range<usize>)>,
    /// Where the chain ends: the byte after its last record.
    pub(super) end: usize,
    /// The sequence number of a valid record at `end` numbered past the next.
    pub(super) numbered_past: Option<u64>,
}

/// Reads the chain of records numbered on from `held`, one by one, from `start` (META
/// `wal_at`) until a record is not whole, its checksum fails or its number is not the
/// next. A record follows the one before it, or starts a new cycle right after the
/// header (a checkpoint came between them): the next number is looked for at both.
pub(super) fn chain(bytes: &[u8], salt: u64, held: u64, start: u64) -> Chain {
    let header = HEADER_LEN as usize;
    let mut at = usize::try_from(start).unwrap_or(usize::MAX).max(header);
    let mut last = held;
    let mut chain = Chain::default();
    loop {
        let found = match record_at(bytes, at, salt) {
            Some((seq, ops, next)) if seq == last + 1 => Some((seq, ops, next)),
            here => {
                let wrapped = (at != header)
                    .then(|| record_at(bytes, header, salt))
                    .flatten()
                    .filter(|(seq, _, _)| *seq == last + 1);
                if wrapped.is_none() {
                    if let Some((seq, _, _)) = here.filter(|(seq, _, _)| *seq > last + 1) {
                        chain.numbered_past = Some(seq);
                    }
                }
                wrapped
            }
        };
        let Some((seq, ops, next)) = found else {
            break;
        };
        chain.records.push((seq, ops));
        last = seq;
        at = next;
    }
    chain.end = at;
    chain
}

/// The highest sequence number above `last` of a valid record anywhere after the
/// header. Looks for a plausible number first, so a byte-by-byte walk stays cheap.
pub(super) fn later_records(bytes: &[u8], salt: u64, last: u64) -> Option<u64> {
    let mut found = None;
    let mut at = HEADER_LEN as usize;
    while at + RECORD_HEAD <= bytes.len() {
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&bytes[at + 8..at + 16]);
        let seq = u64::from_le_bytes(seq);
        if seq > last && seq - last < 1 << 32 {
            if let Some((seq, _, next)) = record_at(bytes, at, salt) {
                found = Some(found.map_or(seq, |f: u64| f.max(seq)));
                at = next;
                continue;
            }
        }
        at += 1;
    }
    found
}

/// How many bytes from `from` on are neither zeros nor older records (valid, numbered
/// at or below `last`, the chain's last): what a log's end leaves unexplained, such as
/// a torn record or the tail of an older one a shorter record was written over.
pub(super) fn stray_bytes(bytes: &[u8], from: usize, salt: u64, last: u64) -> u64 {
    let mut stray = 0;
    let mut at = from;
    while at < bytes.len() {
        if bytes[at] == 0 {
            at += 1;
            continue;
        }
        if let Some(seq) = bytes.get(at + 8..at + 16) {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(seq);
            let seq = u64::from_le_bytes(raw);
            if (1..=last).contains(&seq) {
                if let Some((_, _, next)) = record_at(bytes, at, salt) {
                    at = next;
                    continue;
                }
            }
        }
        stray += 1;
        at += 1;
    }
    stray
}

/// One operation of a record.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Op<'a> {
    pub(super) table: &'a str,
    pub(super) key: &'a [u8],
    pub(super) value: Option<&'a [u8]>,
}

/// Reads a record's operations.
pub(super) fn ops(mut bytes: &[u8]) -> Result<Vec<Op<'_>>> {
    fn damaged() -> Error {
        Error::Internal("a write-ahead log record is damaged".into())
    }
    fn take<'a>(n: usize, bytes: &mut &'a [u8]) -> Result<&'a [u8]> {
        let (head, rest) = bytes.split_at_checked(n).ok_or_else(damaged)?;
        *bytes = rest;
        Ok(head)
    }
    fn length(bytes: &mut &[u8]) -> Result<usize> {
        let raw: [u8; 4] = take(4, bytes)?.try_into().map_err(|_| damaged())?;
        Ok(u32::from_le_bytes(raw) as usize)
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let name_len = take(1, &mut bytes)?[0] as usize;
        let table = std::str::from_utf8(take(name_len, &mut bytes)?).map_err(|_| damaged())?;
        let op = take(1, &mut bytes)?[0];
        let key_len = length(&mut bytes)?;
        let key = take(key_len, &mut bytes)?;
        let value = match op {
            INSERT => {
                let len = length(&mut bytes)?;
                Some(take(len, &mut bytes)?)
            }
            REMOVE => None,
            _ => return Err(damaged()),
        };
        out.push(Op { table, key, value });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn operations_read_back_as_written() {
        let mut log = OpLog::default();
        log.record("leads", b"k1", Some(b"v1"));
        log.record("events", b"k2", None);
        let read = ops(log.bytes()).unwrap();
        assert_eq!(
            read,
            vec![
                Op {
                    table: "leads",
                    key: b"k1",
                    value: Some(b"v1")
                },
                Op {
                    table: "events",
                    key: b"k2",
                    value: None
                },
            ]
        );
    }

    /// A row operation as generated: table, key, value (`None`: a removal).
    type RowOp = (String, Vec<u8>, Option<Vec<u8>>);

    fn row_op() -> impl Strategy<Value = RowOp> {
        (
            "[a-z_]{1,24}",
            proptest::collection::vec(any::<u8>(), 0..32),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        )
    }

    /// What a log's bytes read as: the chain's records, each one's operations.
    fn parse(bytes: &[u8]) -> Vec<Vec<RowOp>> {
        let Head::Names(_, salt) = read_head(Some(bytes)) else {
            return Vec::new();
        };
        chain(bytes, salt, 0, HEADER_LEN)
            .records
            .into_iter()
            .map(|(_, range)| {
                ops(&bytes[range])
                    .expect("a record whose checksum holds reads")
                    .into_iter()
                    .map(|op| {
                        (
                            op.table.to_string(),
                            op.key.to_vec(),
                            op.value.map(<[u8]>::to_vec),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Records cut anywhere (a crash mid-write) or with one byte flipped anywhere
        /// (damage) read as the records written wholly before the cut or the flip, in
        /// order: never more, never different.
        #[test]
        fn a_cut_or_flipped_log_reads_as_a_prefix_of_what_was_written(
            batches in proptest::collection::vec(
                proptest::collection::vec(row_op(), 1..5),
                1..6,
            ),
            salt in any::<u64>(),
            at in any::<prop::sample::Index>(),
            flip in proptest::option::of(1u8..=255),
        ) {
            let mut bytes = header(DbId([7; 16]), salt).to_vec();
            let mut ends = Vec::new();
            for (i, batch) in batches.iter().enumerate() {
                let mut log = OpLog::default();
                for (table, key, value) in batch {
                    log.record(table, key, value.as_deref());
                }
                bytes.extend_from_slice(&record(salt, i as u64 + 1, log.bytes()));
                ends.push(bytes.len());
            }
            bytes.extend_from_slice(&[0; 64]);
            prop_assert_eq!(parse(&bytes), batches.clone(), "whole, all read back");

            let at = at.index(bytes.len());
            let whole = match flip {
                Some(mask) => {
                    bytes[at] ^= mask;
                    if at < HEADER_LEN as usize {
                        0
                    } else {
                        ends.iter().filter(|end| **end <= at).count()
                    }
                }
                None => {
                    bytes.truncate(at);
                    ends.iter().filter(|end| **end <= at).count()
                }
            };
            let read = parse(&bytes);
            prop_assert_eq!(&read[..], &batches[..whole]);
        }
    }

    #[test]
    fn a_batch_too_large_to_log_overflows_and_keeps_nothing() {
        let mut log = OpLog::default();
        log.record("chunks", b"k", Some(&vec![0; MAX_LOGGED_BATCH]));
        assert!(log.overflowed());
        assert!(log.bytes().is_empty());
        log.record("chunks", b"k", Some(b"small"));
        assert!(log.bytes().is_empty());
    }

    #[test]
    fn a_sealed_log_is_the_record_and_its_buffer_serves_the_next_batch() {
        let mut log = OpLog::default();
        log.record("leads", b"k1", Some(b"v1"));
        let ops = log.bytes().to_vec();
        assert_eq!(log.sealed(9, 3), &record(9, 3, &ops)[..]);
        let buffer = log.into_buffer();
        let capacity = buffer.capacity();
        let mut next = OpLog::recycled(buffer);
        assert!(next.is_empty());
        next.record("events", b"k2", None);
        let mut fresh = OpLog::default();
        fresh.record("events", b"k2", None);
        assert_eq!(next.bytes(), fresh.bytes());
        assert_eq!(next.into_buffer().capacity(), capacity);
        // A buffer grown large is not kept.
        let mut large = OpLog::default();
        large.record("chunks", b"k", Some(&vec![0; 2 << 20]));
        assert_eq!(large.into_buffer().capacity(), 0);
    }
}
