//! An import file cut into lines and CSV records without ever holding more than a row:
//! a line (ended by `\n`, `\r\n` or a lone `\r`) longer than `MAX_ROW_BYTES` is
//! skipped to its end and reported as such, and a CSV record is the lines from one that
//! opens a quote to the one that closes it.
//! A record still in quotes after `MAX_ROW_BYTES`, or at the end of the file, is an
//! unclosed quote: its first line is reported, and the lines read after it are read
//! again as records of their own (they are at most `MAX_ROW_BYTES`, kept meanwhile).

use std::collections::VecDeque;
use std::io::{self, BufRead};

use super::MAX_ROW_BYTES;

/// A line of the file, its end (`\n`) included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Text(Vec<u8>),
    /// Longer than `MAX_ROW_BYTES`: skipped.
    TooLong,
}

/// A CSV record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Its bytes, line ends included.
    Fields(Vec<u8>),
    TooLong,
    /// A quote opened and not closed within `MAX_ROW_BYTES`: the first line.
    Unclosed(Vec<u8>),
}

pub struct Records<R> {
    reader: R,
    /// Lines read ahead while looking for a closing quote, to be read again.
    again: VecDeque<Line>,
}

impl<R: BufRead> Records<R> {
    pub fn new(reader: R) -> Records<R> {
        Records {
            reader,
            again: VecDeque::new(),
        }
    }

    /// The next line; `None` at the end. A line ends at `\n`, `\r\n` or a lone `\r`
    /// (old Mac files), its end kept.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        if let Some(line) = self.again.pop_front() {
            return Ok(Some(line));
        }
        let mut line = Vec::new();
        let (mut read, mut too_long) = (false, false);
        let mut keep = |line: &mut Vec<u8>, bytes: &[u8]| {
            if too_long || line.len() + bytes.len() > MAX_ROW_BYTES {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(bytes);
            }
        };
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            read = true;
            match buf.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    let cr = buf[end] == b'\r';
                    keep(&mut line, &buf[..=end]);
                    self.reader.consume(end + 1);
                    if cr && self.reader.fill_buf()?.first() == Some(&b'\n') {
                        keep(&mut line, b"\n");
                        self.reader.consume(1);
                    }
                    break;
                }
                None => {
                    let n = buf.len();
                    keep(&mut line, buf);
                    self.reader.consume(n);
                }
            }
        }
        Ok(match (read, too_long) {
            (false, _) => None,
            (true, true) => Some(Line::TooLong),
            (true, false) => Some(Line::Text(line)),
        })
    }

    /// The next CSV record; `None` at the end.
    pub fn next_record(&mut self) -> io::Result<Option<Record>> {
        let first = match self.next_line()? {
            None => return Ok(None),
            Some(Line::TooLong) => return Ok(Some(Record::TooLong)),
            Some(Line::Text(line)) => line,
        };
        if !opens(&first, false) {
            return Ok(Some(Record::Fields(first)));
        }
        let mut ahead: Vec<Line> = Vec::new();
        let mut size = first.len();
        let mut quoted = true;
        while let Some(line) = self.next_line()? {
            let Line::Text(text) = &line else {
                ahead.push(line);
                break;
            };
            size += text.len();
            quoted = opens(text, quoted);
            ahead.push(line);
            if size > MAX_ROW_BYTES {
                break;
            }
            if !quoted {
                let mut record = first;
                for line in ahead {
                    if let Line::Text(text) = line {
                        record.extend_from_slice(&text);
                    }
                }
                return Ok(Some(Record::Fields(record)));
            }
        }
        for line in ahead.into_iter().rev() {
            self.again.push_front(line);
        }
        Ok(Some(Record::Unclosed(first)))
    }
}

/// Whether a record is inside quotes after `line`, given whether it was before: each
/// `"` toggles (an escaped `""` toggles twice).
fn opens(line: &[u8], quoted: bool) -> bool {
    let quotes = line.iter().filter(|b| **b == b'"').count();
    quoted ^ (quotes % 2 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &[u8]) -> Vec<Record> {
        let mut records = Records::new(io::BufReader::new(text));
        let mut out = Vec::new();
        while let Some(r) = records.next_record().unwrap() {
            out.push(r);
        }
        out
    }

    fn fields(text: &str) -> Record {
        Record::Fields(text.as_bytes().to_vec())
    }

    #[test]
    fn a_quoted_line_end_stays_in_its_record() {
        assert_eq!(
            records(b"a,\"b\nc\",d\ne,f"),
            [fields("a,\"b\nc\",d\n"), fields("e,f")]
        );
        assert_eq!(records(b"a,\"say \"\"hi\"\"\"\nb\n").len(), 2);
    }

    #[test]
    fn an_unclosed_quote_refuses_its_own_line_only() {
        assert_eq!(
            records(b"a,\"b\nc,d\ne,f\n"),
            [
                Record::Unclosed(b"a,\"b\n".to_vec()),
                fields("c,d\n"),
                fields("e,f\n")
            ]
        );
        // Far from the end of the file: given up after MAX_ROW_BYTES.
        let mut text = b"x,\"open\n".to_vec();
        for i in 0..20_000 {
            text.extend_from_slice(format!("row{i},y\n").as_bytes());
        }
        let all = records(&text);
        assert_eq!(all[0], Record::Unclosed(b"x,\"open\n".to_vec()));
        assert_eq!(all[1], fields("row0,y\n"));
        assert_eq!(all.len(), 20_001);
    }

    #[test]
    fn lines_end_at_lf_crlf_or_a_lone_cr() {
        assert_eq!(
            records(b"a,b\rc,d\r\ne,\"f\rg\"\nh"),
            [
                fields("a,b\r"),
                fields("c,d\r\n"),
                fields("e,\"f\rg\"\n"),
                fields("h")
            ]
        );
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_to_its_end() {
        let mut text = vec![b'a'; MAX_ROW_BYTES + 10];
        text.extend_from_slice(b"\nb,c\n");
        assert_eq!(records(&text), [Record::TooLong, fields("b,c\n")]);
        let exact = vec![b'a'; MAX_ROW_BYTES];
        assert_eq!(records(&exact), [Record::Fields(exact.clone())]);
    }
}
