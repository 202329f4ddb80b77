//! The replica's objects as bytes: a fixed header that names the database, the
//! generation and the batches an object holds, under checksums, then the body (a
//! snapshot's database file, or a segment's batches), encrypted with
//! XChaCha20-Poly1305 when a key is set. Pure encoding and parsing: nothing here
//! touches the network or a file.
//!
//! The header ([`HEADER_LEN`] bytes, little-endian): `magic` (8), `format: u32`,
//! `kind: u8` (1 snapshot, 2 segment, 3 a snapshot's part), `encrypted: u8`,
//! `compressed: u8` (format 2: 1 when the plain body is an LZ4 block after its length
//! as a `u32`), a zero byte, the database's
//! id (16), the generation (`started_ms: u64`, `nonce: u64`), `first: u64` and `last:
//! u64` (the batches' sequence numbers; a snapshot's are both the last batch it holds),
//! `written_ms: i64` (a segment's last batch's commit; a snapshot's copy), `body_len:
//! u64`, the body's SHA-256 (32), then the CRC-32 of everything before it. An
//! encrypted body is a 24-byte nonce then the ciphertext, authenticated with the
//! header's first 72 bytes: an object moved to another name, generation or database
//! does not decrypt. The body is compressed before it is encrypted, and kept plain
//! when compression would not make it shorter. Format 1 (the first builds) is format 2
//! without compression; both read back.
//!
//! A segment's plain body is its batches one after another: `seq: u64`, `at_ms: i64`
//! (its commit), `len: u32`, then the batch's row operations as the write-ahead log
//! holds them.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

/// The header's length.
pub const HEADER_LEN: usize = 128;

const MAGIC: [u8; 8] = *b"engdREPL";

/// The format this build writes; it reads it and format 1 (never compressed).
pub const FORMAT: u32 = 2;

/// The first builds' format: a body never compressed.
const FORMAT_UNCOMPRESSED: u32 = 1;

/// The largest plain body a compressed one may claim for each stored byte (LZ4 makes
/// at most about 255 bytes of one): a damaged or forged length is refused before
/// anything is allocated for it.
const MAX_EXPANSION: usize = 256;

/// The bytes of the header the AEAD authenticates (all but the checksums).
const AUTHENTICATED: usize = 72;

/// What an object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The database file whole (as the first builds wrote it), or its [`Parts`].
    Snapshot,
    Segment,
    /// One part of a snapshot's database file (`first` is its index).
    Part,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Snapshot => 1,
            Kind::Segment => 2,
            Kind::Part => 3,
        }
    }
}

/// A snapshot uploaded in parts: its body names how many parts there are, the
/// database file's length and its SHA-256, so a restore that joins the parts checks
/// it has the whole file. The parts go up before it: a snapshot object means every
/// part is there. (A database file never begins with its magic (`engdPRTS`), so a snapshot's
/// body is one or the other.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    pub count: u64,
    pub file_len: u64,
    pub sha256: [u8; 32],
}

const PARTS_MAGIC: [u8; 8] = *b"engdPRTS";
const PARTS_LEN: usize = 8 + 8 + 8 + 32;

impl Parts {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PARTS_LEN);
        out.extend_from_slice(&PARTS_MAGIC);
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.file_len.to_le_bytes());
        out.extend_from_slice(&self.sha256);
        out
    }

    /// The parts a snapshot's body names; `None`: the body is the database itself.
    pub fn read(body: &[u8]) -> Option<Parts> {
        if body.len() != PARTS_LEN || body[..8] != PARTS_MAGIC {
            return None;
        }
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&body[24..56]);
        Some(Parts {
            count: u64_at(body, 8),
            file_len: u64_at(body, 16),
            sha256,
        })
    }
}

/// The object name of a snapshot's part `index`.
pub fn part_name(index: u64) -> String {
    format!("snapshot.{index:06}.part")
}

/// A generation: a snapshot and the segments that follow it, named by when it
/// started and a random nonce, so names sort by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Generation {
    pub started_ms: u64,
    pub nonce: u64,
}

impl Generation {
    pub fn new(now_ms: u64) -> Generation {
        Generation {
            started_ms: now_ms,
            nonce: rand::random(),
        }
    }

    /// Its name: the folder of its objects.
    pub fn name(&self) -> String {
        format!("{:015}-{:016x}", self.started_ms, self.nonce)
    }

    /// Reads a name back.
    pub fn parse(name: &str) -> Option<Generation> {
        let (ms, nonce) = name.split_once('-')?;
        if ms.len() != 15 || nonce.len() != 16 {
            return None;
        }
        Some(Generation {
            started_ms: ms.parse().ok()?,
            nonce: u64::from_str_radix(nonce, 16).ok()?,
        })
    }
}

/// What a header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub encrypted: bool,
    pub db_id: [u8; 16],
    pub generation: Generation,
    pub first: u64,
    pub last: u64,
    pub written_ms: i64,
}

/// A 256-bit key for the replica's objects.
#[derive(Clone)]
pub struct Key(chacha20poly1305::Key);

impl Key {
    /// From a key file's text: 64 hexadecimal digits (whitespace around is ignored).
    pub fn from_hex(text: &str) -> Result<Key, String> {
        let bytes = hex::decode(text.trim())
            .map_err(|_| "the key file must hold 64 hexadecimal digits".to_string())?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| "the key file must hold 64 hexadecimal digits (32 bytes)".to_string())?;
        Ok(Key(bytes.into()))
    }
}

/// An object: the header, then the body (compressed when that makes it shorter,
/// encrypted when `key` is set).
pub fn encode(header: &Header, body: Vec<u8>, key: Option<&Key>) -> Result<Vec<u8>, String> {
    let (head, stored) = seal(header, body, key)?;
    let mut out = Vec::with_capacity(HEADER_LEN + stored.len());
    out.extend_from_slice(&head);
    out.extend_from_slice(&stored);
    Ok(out)
}

/// An object as its two parts, the header and the stored body, so that the two are
/// uploaded without being joined into one buffer.
pub fn seal(
    header: &Header,
    body: Vec<u8>,
    key: Option<&Key>,
) -> Result<([u8; HEADER_LEN], Vec<u8>), String> {
    let mut head = [0u8; HEADER_LEN];
    head[..8].copy_from_slice(&MAGIC);
    head[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    head[12] = header.kind.byte();
    head[13] = u8::from(key.is_some());
    let packed = lz4_flex::block::compress_prepend_size(&body);
    let body = if packed.len() < body.len() {
        head[14] = 1;
        drop(body);
        packed
    } else {
        body
    };
    head[16..32].copy_from_slice(&header.db_id);
    head[32..40].copy_from_slice(&header.generation.started_ms.to_le_bytes());
    head[40..48].copy_from_slice(&header.generation.nonce.to_le_bytes());
    head[48..56].copy_from_slice(&header.first.to_le_bytes());
    head[56..64].copy_from_slice(&header.last.to_le_bytes());
    head[64..72].copy_from_slice(&header.written_ms.to_le_bytes());
    let stored = match key {
        Some(key) => {
            let cipher = XChaCha20Poly1305::new(&key.0);
            let nonce: [u8; 24] = rand::random();
            let sealed = cipher
                .encrypt(
                    XNonce::from_slice(&nonce),
                    Payload {
                        msg: &body,
                        aad: &head[..AUTHENTICATED],
                    },
                )
                .map_err(|_| "cannot encrypt".to_string())?;
            drop(body);
            let mut stored = Vec::with_capacity(24 + sealed.len());
            stored.extend_from_slice(&nonce);
            stored.extend_from_slice(&sealed);
            stored
        }
        None => body,
    };
    head[72..80].copy_from_slice(&(stored.len() as u64).to_le_bytes());
    head[80..112].copy_from_slice(&Sha256::digest(&stored));
    let crc = crc32fast::hash(&head[..112]);
    head[112..116].copy_from_slice(&crc.to_le_bytes());
    Ok((head, stored))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

/// Reads and verifies an object: its header's checksum, its body's SHA-256 and, when
/// encrypted, its authentication; returns the header and the plain body. The error
/// says what is wrong in words.
pub fn decode(object: &[u8], key: Option<&Key>) -> Result<(Header, Vec<u8>), String> {
    if object.len() < HEADER_LEN || object[..8] != MAGIC {
        return Err("is not an engaged replica object".into());
    }
    let head = &object[..HEADER_LEN];
    let crc = u32::from_le_bytes([head[112], head[113], head[114], head[115]]);
    if crc32fast::hash(&head[..112]) != crc {
        return Err("its header fails its checksum (damaged or altered)".into());
    }
    let format = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if format != FORMAT && format != FORMAT_UNCOMPRESSED {
        return Err(format!(
            "is of format {format}; this build reads formats {FORMAT_UNCOMPRESSED} and {FORMAT}"
        ));
    }
    let compressed = match head[14] {
        0 => false,
        1 if format == FORMAT => true,
        other => return Err(format!("is compressed in an unknown way ({other})")),
    };
    let kind = match head[12] {
        1 => Kind::Snapshot,
        2 => Kind::Segment,
        3 => Kind::Part,
        other => return Err(format!("is of an unknown kind {other}")),
    };
    let encrypted = head[13] == 1;
    let mut db_id = [0u8; 16];
    db_id.copy_from_slice(&head[16..32]);
    let header = Header {
        kind,
        encrypted,
        db_id,
        generation: Generation {
            started_ms: u64_at(head, 32),
            nonce: u64_at(head, 40),
        },
        first: u64_at(head, 48),
        last: u64_at(head, 56),
        written_ms: u64_at(head, 64) as i64,
    };
    let body_len = u64_at(head, 72);
    let stored = &object[HEADER_LEN..];
    if stored.len() as u64 != body_len {
        return Err(format!(
            "holds {} bytes after its header where it says {body_len} (cut short or altered)",
            stored.len()
        ));
    }
    if Sha256::digest(stored).as_slice() != &head[80..112] {
        return Err("its body fails its checksum (damaged or altered)".into());
    }
    let body = match (encrypted, key) {
        (false, _) => stored.to_vec(),
        (true, None) => {
            return Err("is encrypted: set the replica's encryption_key_file".into());
        }
        (true, Some(key)) => {
            if stored.len() < 24 {
                return Err("is encrypted but too short".into());
            }
            let cipher = XChaCha20Poly1305::new(&key.0);
            cipher
                .decrypt(
                    XNonce::from_slice(&stored[..24]),
                    Payload {
                        msg: &stored[24..],
                        aad: &head[..AUTHENTICATED],
                    },
                )
                .map_err(|_| {
                    "does not decrypt with this key (another key, or altered)".to_string()
                })?
        }
    };
    if !compressed {
        return Ok((header, body));
    }
    let claimed = body
        .get(..4)
        .map(|len| u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize);
    match claimed {
        Some(len) if len <= body.len().saturating_mul(MAX_EXPANSION) => {}
        _ => return Err("its compressed body names an impossible length (damaged)".into()),
    }
    let plain = lz4_flex::block::decompress_size_prepended(&body)
        .map_err(|e| format!("its compressed body does not decompress (damaged): {e}"))?;
    Ok((header, plain))
}

/// One committed batch, as a segment holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub seq: u64,
    pub at_ms: i64,
    pub ops: Vec<u8>,
}

/// A segment's plain body.
pub fn segment_body(batches: &[Batch]) -> Vec<u8> {
    let len = batches.iter().map(|b| 20 + b.ops.len()).sum();
    let mut out = Vec::with_capacity(len);
    for batch in batches {
        out.extend_from_slice(&batch.seq.to_le_bytes());
        out.extend_from_slice(&batch.at_ms.to_le_bytes());
        out.extend_from_slice(&(batch.ops.len() as u32).to_le_bytes());
        out.extend_from_slice(&batch.ops);
    }
    out
}

/// A segment's batches, read back from its plain body.
pub fn batches(mut body: &[u8]) -> Result<Vec<Batch>, String> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if body.len() < 20 {
            return Err("ends inside a batch".into());
        }
        let seq = u64_at(body, 0);
        let at_ms = u64_at(body, 8) as i64;
        let len = u32::from_le_bytes([body[16], body[17], body[18], body[19]]) as usize;
        let Some(ops) = body.get(20..20 + len) else {
            return Err("ends inside a batch".into());
        };
        out.push(Batch {
            seq,
            at_ms,
            ops: ops.to_vec(),
        });
        body = &body[20 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: Kind) -> Header {
        Header {
            kind,
            encrypted: false,
            db_id: [7; 16],
            generation: Generation {
                started_ms: 1_700_000_000_000,
                nonce: 42,
            },
            first: 3,
            last: 4,
            written_ms: 1_700_000_000_500,
        }
    }

    #[test]
    fn a_snapshots_parts_read_back_and_a_database_file_is_no_parts() {
        let parts = Parts {
            count: 3,
            file_len: 150 << 20,
            sha256: [7; 32],
        };
        assert_eq!(Parts::read(&parts.encode()), Some(parts));
        assert_eq!(Parts::read(b"redb\x1a\x0a\xa9\x0d\x0a"), None);
        assert_eq!(part_name(12), "snapshot.000012.part");
        let sealed = encode(&header(Kind::Part), b"page".to_vec(), None).unwrap();
        assert_eq!(decode(&sealed, None).unwrap().0.kind, Kind::Part);
    }

    #[test]
    fn an_object_reads_back_and_any_flipped_byte_is_refused() {
        let batches_in = vec![
            Batch {
                seq: 3,
                at_ms: 10,
                ops: b"abc".to_vec(),
            },
            Batch {
                seq: 4,
                at_ms: 11,
                ops: Vec::new(),
            },
        ];
        let object = encode(&header(Kind::Segment), segment_body(&batches_in), None).unwrap();
        let (read, body) = decode(&object, None).unwrap();
        assert_eq!(read, header(Kind::Segment));
        assert_eq!(batches(&body).unwrap(), batches_in);
        for at in [0, 20, 60, 100, HEADER_LEN + 2] {
            let mut bad = object.clone();
            bad[at] ^= 1;
            assert!(decode(&bad, None).is_err(), "a flip at {at} is refused");
        }
    }

    #[test]
    fn an_encrypted_object_holds_no_plaintext_and_needs_its_key() {
        let key = Key::from_hex(&"ab".repeat(32)).unwrap();
        let other = Key::from_hex(&"cd".repeat(32)).unwrap();
        let body = b"Ana Ruiz, a lead's name".to_vec();
        let object = encode(&header(Kind::Snapshot), body.clone(), Some(&key)).unwrap();
        assert!(!object.windows(8).any(|w| w == b"Ana Ruiz"));
        let (read, plain) = decode(&object, Some(&key)).unwrap();
        assert!(read.encrypted);
        assert_eq!(plain, body);
        assert!(decode(&object, None).unwrap_err().contains("encrypted"));
        assert!(decode(&object, Some(&other))
            .unwrap_err()
            .contains("does not decrypt"));
        assert!(Key::from_hex("abc").is_err());
    }

    #[test]
    fn a_body_that_compresses_is_stored_compressed_and_reads_back() {
        let body = br#"{"type":"note","data":{"text":"called back"}}"#.repeat(200);
        let object = encode(&header(Kind::Segment), body.clone(), None).unwrap();
        assert_eq!(object[14], 1, "compressed");
        assert!(object.len() < body.len() / 4, "{} bytes", object.len());
        assert_eq!(decode(&object, None).unwrap().1, body);
        let key = Key::from_hex(&"ab".repeat(32)).unwrap();
        let sealed = encode(&header(Kind::Segment), body.clone(), Some(&key)).unwrap();
        assert_eq!(decode(&sealed, Some(&key)).unwrap().1, body);
        // A body that compression would not shorten is kept plain.
        let noise: Vec<u8> = (0..4096).map(|_| rand::random::<u8>()).collect();
        let plain = encode(&header(Kind::Part), noise.clone(), None).unwrap();
        assert_eq!(plain[14], 0);
        assert_eq!(decode(&plain, None).unwrap().1, noise);
    }

    /// Rewrites a header's byte and its checksums, as a forger (not damage) would.
    fn forge(object: &mut [u8], at: usize, value: u8) {
        object[at] = value;
        let stored = object[HEADER_LEN..].to_vec();
        object[80..112].copy_from_slice(&Sha256::digest(&stored));
        let crc = crc32fast::hash(&object[..112]);
        object[112..116].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn the_first_format_reads_back_and_a_forged_length_is_refused() {
        let body = b"abc".repeat(100);
        let mut object = encode(&header(Kind::Segment), body.clone(), None).unwrap();
        // Format 1: the same object uncompressed.
        let mut old = encode(&header(Kind::Segment), b"abc".to_vec(), None).unwrap();
        assert_eq!(old[14], 0);
        old[8..12].copy_from_slice(&1u32.to_le_bytes());
        forge(&mut old, 8, 1);
        assert_eq!(decode(&old, None).unwrap().1, b"abc");
        // Format 1 knows no compression.
        let mut odd = object.clone();
        odd[8..12].copy_from_slice(&1u32.to_le_bytes());
        forge(&mut odd, 8, 1);
        assert!(decode(&odd, None)
            .unwrap_err()
            .contains("compressed in an unknown way"));
        // A plain length far beyond what the stored bytes can hold.
        object[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        forge(&mut object, 14, 1);
        assert!(decode(&object, None)
            .unwrap_err()
            .contains("impossible length"));
    }

    #[test]
    fn generation_names_sort_by_time_and_read_back() {
        let a = Generation {
            started_ms: 999,
            nonce: u64::MAX,
        };
        let b = Generation {
            started_ms: 1000,
            nonce: 0,
        };
        assert!(a.name() < b.name());
        assert_eq!(Generation::parse(&a.name()), Some(a));
        assert_eq!(Generation::parse("nope"), None);
    }
}
