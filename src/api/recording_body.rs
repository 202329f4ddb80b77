//! The body of a recording download: the `Range` a client asked for, and a stream
//! that reads the audio chunk by chunk, each from its own short read transaction, one
//! chunk ahead, so neither memory nor a snapshot grows with the file.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};

use crate::domain::records::recordings::CHUNK_BYTES;
use crate::error::Result;
use crate::store::rows::RecordingRecord;
use crate::store::Store;

/// What a `Range` header asks of a file of a given size. Only single `bytes` ranges are
/// honoured; anything else is answered with the whole file, as RFC 9110 allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    Full,
    /// Inclusive byte positions, within the file.
    Partial {
        first: u64,
        last: u64,
    },
    Unsatisfiable,
}

impl ByteRange {
    pub fn parse(header: Option<&str>, size: u64) -> ByteRange {
        let Some(header) = header else {
            return ByteRange::Full;
        };
        let Some((unit, spec)) = header.trim().split_once('=') else {
            return ByteRange::Full;
        };
        if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
            return ByteRange::Full;
        }
        let Some((first, last)) = spec.trim().split_once('-') else {
            return ByteRange::Full;
        };
        let number = |s: &str| {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                s.parse::<u64>().ok()
            }
        };
        match (first.trim().is_empty(), last.trim().is_empty()) {
            // bytes=-n: the last n bytes.
            (true, false) => match number(last) {
                None => ByteRange::Full,
                Some(0) => ByteRange::Unsatisfiable,
                Some(_) if size == 0 => ByteRange::Unsatisfiable,
                Some(n) => ByteRange::Partial {
                    first: size.saturating_sub(n),
                    last: size - 1,
                },
            },
            // bytes=a-: from a to the end.
            (false, true) => match number(first) {
                None => ByteRange::Full,
                Some(a) if a >= size => ByteRange::Unsatisfiable,
                Some(a) => ByteRange::Partial {
                    first: a,
                    last: size - 1,
                },
            },
            // bytes=a-b, b clamped to the end.
            (false, false) => match (number(first), number(last)) {
                (Some(a), Some(b)) if a <= b => {
                    if a >= size {
                        ByteRange::Unsatisfiable
                    } else {
                        ByteRange::Partial {
                            first: a,
                            last: b.min(size - 1),
                        }
                    }
                }
                _ => ByteRange::Full,
            },
            (true, true) => ByteRange::Full,
        }
    }
}

/// A response body that reads an upload's chunks one at a time, each from its own
/// short read transaction on the blocking pool, reading one chunk ahead. It holds at
/// most two chunks, and no snapshot stays open while a slow client drains the stream.
pub struct ChunkReader {
    store: Arc<Store>,
    upload_id: Arc<str>,
    next_index: u64,
    /// Bytes to leave out at the start of the next chunk (a range's offset).
    skip: usize,
    remaining: u64,
    pending: Option<tokio::task::JoinHandle<Result<Option<Vec<u8>>>>>,
}

impl ChunkReader {
    /// Bytes `start..end` of `record`'s audio.
    pub fn new(store: Arc<Store>, record: &RecordingRecord, start: u64, end: u64) -> Self {
        let chunk = CHUNK_BYTES as u64;
        ChunkReader {
            store,
            upload_id: Arc::from(record.upload_id.as_str()),
            next_index: start / chunk,
            skip: (start % chunk) as usize,
            remaining: end.saturating_sub(start),
            pending: None,
        }
    }

    fn read_next(&mut self) {
        let (store, upload_id, index) =
            (self.store.clone(), self.upload_id.clone(), self.next_index);
        self.pending = Some(tokio::task::spawn_blocking(move || {
            store.read()?.recording_chunk(&upload_id, index)
        }));
    }

    fn fail(
        &mut self,
        cause: String,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, std::io::Error>>> {
        tracing::warn!(upload = %self.upload_id, chunk = self.next_index, %cause, "recording download cut short");
        self.remaining = 0;
        self.pending = None;
        Poll::Ready(Some(Err(std::io::Error::other(cause))))
    }
}

impl hyper::body::Body for ChunkReader {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.remaining == 0 {
            return Poll::Ready(None);
        }
        if this.pending.is_none() {
            this.read_next();
        }
        let Some(pending) = this.pending.as_mut() else {
            return Poll::Ready(None);
        };
        let joined = ready!(Pin::new(pending).poll(cx));
        this.pending = None;
        let chunk = match joined {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => return this.fail("the recording changed during the download".into()),
            Ok(Err(e)) => return this.fail(e.to_string_for_logs()),
            Err(e) => return this.fail(format!("chunk reader: {e}")),
        };
        if chunk.len() <= this.skip {
            return this.fail("a recording chunk is shorter than expected".into());
        }
        let take = ((chunk.len() - this.skip) as u64).min(this.remaining) as usize;
        let bytes = Bytes::from(chunk).slice(this.skip..this.skip + take);
        this.skip = 0;
        this.remaining -= take as u64;
        this.next_index += 1;
        if this.remaining > 0 {
            this.read_next();
        }
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::ByteRange::{self, *};

    fn p(header: &str, size: u64) -> ByteRange {
        ByteRange::parse(Some(header), size)
    }

    #[test]
    fn single_ranges_in_every_form() {
        assert_eq!(ByteRange::parse(None, 1000), Full);
        assert_eq!(p("bytes=0-0", 1000), Partial { first: 0, last: 0 });
        assert_eq!(
            p("bytes=100-199", 1000),
            Partial {
                first: 100,
                last: 199
            }
        );
        assert_eq!(
            p("bytes=-500", 1000),
            Partial {
                first: 500,
                last: 999
            }
        );
        assert_eq!(
            p("bytes=500-", 1000),
            Partial {
                first: 500,
                last: 999
            }
        );
        assert_eq!(p(" Bytes = 1 - 2 ", 1000), Partial { first: 1, last: 2 });
    }

    #[test]
    fn ranges_are_clamped_to_the_file() {
        assert_eq!(
            p("bytes=900-5000", 1000),
            Partial {
                first: 900,
                last: 999
            }
        );
        assert_eq!(
            p("bytes=-5000", 1000),
            Partial {
                first: 0,
                last: 999
            }
        );
        assert_eq!(
            p("bytes=999-", 1000),
            Partial {
                first: 999,
                last: 999
            }
        );
    }

    #[test]
    fn ranges_past_the_end_are_unsatisfiable() {
        assert_eq!(p("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(p("bytes=1000-1001", 1000), Unsatisfiable);
        assert_eq!(p("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(p("bytes=-1", 0), Unsatisfiable);
    }

    #[test]
    fn anything_else_is_answered_whole() {
        for header in [
            "bytes=0-1,5-6",
            "items=0-1",
            "bytes=5-1",
            "bytes=-",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes=1",
            "bytes",
            "bytes=99999999999999999999999-",
        ] {
            assert_eq!(p(header, 1000), Full, "{header}");
        }
    }
}
