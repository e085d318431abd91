//! TCP record marking (RFC 5531 §11).
//!
//! On a stream transport each RPC message is a *record* sent as one or more
//! *fragments*; every fragment starts with a 4-byte header whose high bit
//! says "last fragment" and whose low 31 bits give the fragment length.
//!
//! [`RecordReader`] reassembles records from stream bytes. A record that
//! arrives as a single fragment (the common case) is handed out as a slice of
//! the caller's buffer, with no copy; multi-fragment records are gathered into
//! an owned buffer. The total record length is bounded by `max_record`
//! before any byte is buffered, so a peer announcing a 2 GiB fragment is an
//! error, not an allocation.

use std::borrow::Cow;

/// The largest fragment length the header can express (2^31 - 1).
pub const MAX_FRAGMENT_LEN: usize = 0x7fff_ffff;
const LAST_FRAGMENT: u32 = 0x8000_0000;

/// Why the incoming byte stream cannot be turned into records. The stream is
/// unusable after this: the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record would exceed the configured maximum.
    #[error("RPC record of at least {len} bytes exceeds the limit of {max} bytes")]
    TooLong {
        /// Record length so far, including the new fragment.
        len: u64,
        /// The configured limit.
        max: u64,
    },
}

/// Encodes a fragment header.
#[inline]
pub fn fragment_header(len: usize, last: bool) -> [u8; 4] {
    debug_assert!(len <= MAX_FRAGMENT_LEN);
    let mut v = len as u32 & !LAST_FRAGMENT;
    if last {
        v |= LAST_FRAGMENT;
    }
    v.to_be_bytes()
}

/// Splits a record into fragments for sending.
#[derive(Debug, Clone, Copy)]
pub struct RecordWriter {
    max_fragment: usize,
}

impl Default for RecordWriter {
    fn default() -> Self {
        Self {
            max_fragment: MAX_FRAGMENT_LEN,
        }
    }
}

impl RecordWriter {
    /// A writer that never makes a fragment longer than `max_fragment`
    /// bytes (at least 1, at most 2^31 - 1).
    pub fn with_max_fragment(max_fragment: usize) -> Self {
        Self {
            max_fragment: max_fragment.clamp(1, MAX_FRAGMENT_LEN),
        }
    }

    /// Appends `record` to `out` as one or more fragments.
    pub fn write_record(&self, record: &[u8], out: &mut Vec<u8>) {
        if record.is_empty() {
            out.extend_from_slice(&fragment_header(0, true));
            return;
        }
        let mut chunks = record.chunks(self.max_fragment).peekable();
        while let Some(chunk) = chunks.next() {
            out.extend_from_slice(&fragment_header(chunk.len(), chunks.peek().is_none()));
            out.extend_from_slice(chunk);
        }
    }
}

/// Reassembles records from a byte stream. See the module documentation.
#[derive(Debug)]
pub struct RecordReader {
    max_record: usize,
    /// Fragments of the current record received so far (multi-fragment only).
    partial: Vec<u8>,
    /// True while `partial` holds at least one non-last fragment.
    in_record: bool,
}

/// One step of [`RecordReader::next`].
#[derive(Debug, PartialEq, Eq)]
pub struct Step<'a> {
    /// Bytes of the input consumed; drop them before the next call.
    pub consumed: usize,
    /// A complete record, if one finished in this step.
    pub record: Option<Cow<'a, [u8]>>,
}

impl RecordReader {
    /// A reader that refuses records longer than `max_record` bytes.
    pub fn new(max_record: usize) -> Self {
        Self {
            max_record,
            partial: Vec::new(),
            in_record: false,
        }
    }

    /// True while the fragments of a multi-fragment record are being
    /// gathered (a driver must not take bytes past the reader then).
    pub fn is_mid_record(&self) -> bool {
        self.in_record
    }

    /// The configured record limit.
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// How many bytes of `input` are needed before [`next`](Self::next) can
    /// make progress: 4 for a header, or the header plus the whole fragment.
    /// Lets a driver size its receive buffer exactly.
    pub fn bytes_needed(&self, input: &[u8]) -> Result<usize, RecordError> {
        match Self::header(input) {
            None => Ok(4),
            Some((len, _)) => {
                self.check_len(len)?;
                Ok(4 + len)
            }
        }
    }

    fn header(input: &[u8]) -> Option<(usize, bool)> {
        let h = input.get(..4)?;
        let v = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        Some(((v & !LAST_FRAGMENT) as usize, v & LAST_FRAGMENT != 0))
    }

    fn check_len(&self, frag_len: usize) -> Result<(), RecordError> {
        let total = self.partial.len() as u64 + frag_len as u64;
        if total > self.max_record as u64 {
            return Err(RecordError::TooLong {
                len: total,
                max: self.max_record as u64,
            });
        }
        Ok(())
    }

    /// Consumes at most one fragment from the front of `input`.
    ///
    /// Returns `consumed == 0` when `input` does not yet hold a whole
    /// fragment. A single-fragment record is returned borrowed from `input`.
    pub fn next<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, RecordError> {
        let Some((len, last)) = Self::header(input) else {
            return Ok(Step {
                consumed: 0,
                record: None,
            });
        };
        self.check_len(len)?;
        let Some(body) = input.get(4..4 + len) else {
            return Ok(Step {
                consumed: 0,
                record: None,
            });
        };
        let consumed = 4 + len;
        if last && !self.in_record {
            return Ok(Step {
                consumed,
                record: Some(Cow::Borrowed(body)),
            });
        }
        self.partial.extend_from_slice(body);
        if !last {
            self.in_record = true;
            return Ok(Step {
                consumed,
                record: None,
            });
        }
        self.in_record = false;
        Ok(Step {
            consumed,
            record: Some(Cow::Owned(std::mem::take(&mut self.partial))),
        })
    }

    /// Drains every complete record from `input`, returning the records and
    /// the number of bytes consumed. Convenient for tests and cold paths.
    pub fn drain(&mut self, input: &[u8]) -> Result<(Vec<Vec<u8>>, usize), RecordError> {
        let mut out = Vec::new();
        let mut pos = 0;
        loop {
            let step = self.next(&input[pos..])?;
            if step.consumed == 0 {
                return Ok((out, pos));
            }
            pos += step.consumed;
            if let Some(r) = step.record {
                out.push(r.into_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn single_fragment_record_is_borrowed() {
        let mut input = fragment_header(3, true).to_vec();
        input.extend_from_slice(b"abc");
        let mut rr = RecordReader::new(100);
        let step = rr.next(&input).unwrap();
        assert_eq!(step.consumed, 7);
        assert!(matches!(step.record, Some(Cow::Borrowed(b"abc"))));
    }

    #[test]
    fn multi_fragment_record_is_reassembled() {
        let mut input = Vec::new();
        RecordWriter::with_max_fragment(2).write_record(b"hello", &mut input);
        assert_eq!(input.len(), 5 + 3 * 4);
        let (records, used) = RecordReader::new(100).drain(&input).unwrap();
        assert_eq!(records, vec![b"hello".to_vec()]);
        assert_eq!(used, input.len());
    }

    #[test]
    fn rejects_2gib_fragment_without_allocating() {
        let input = [0xff, 0xff, 0xff, 0xff];
        let mut rr = RecordReader::new(1 << 20);
        assert!(matches!(
            rr.next(&input),
            Err(RecordError::TooLong { max: 1048576, .. })
        ));
        assert!(rr.bytes_needed(&input).is_err());
    }

    #[test]
    fn limit_applies_to_the_sum_of_fragments() {
        let mut input = Vec::new();
        RecordWriter::with_max_fragment(60).write_record(&[7u8; 150], &mut input);
        assert!(RecordReader::new(100).drain(&input).is_err());
        assert_eq!(RecordReader::new(150).drain(&input).unwrap().0.len(), 1);
    }

    #[test]
    fn incomplete_fragment_consumes_nothing() {
        let mut input = fragment_header(10, true).to_vec();
        input.extend_from_slice(b"abc");
        let mut rr = RecordReader::new(100);
        assert_eq!(rr.next(&input).unwrap().consumed, 0);
        assert_eq!(rr.bytes_needed(&input).unwrap(), 14);
    }

    proptest! {
        #[test]
        #[cfg_attr(miri, ignore = "slow under Miri: property test")]
        fn records_survive_any_fragmentation_and_chunking(
            records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..6),
            frag in 1usize..64,
            chunk in 1usize..50,
        ) {
            let mut stream = Vec::new();
            for r in &records {
                RecordWriter::with_max_fragment(frag).write_record(r, &mut stream);
            }
            // Feed the stream in arbitrary chunks, as a socket would.
            let mut rr = RecordReader::new(1000);
            let mut buf = Vec::new();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                buf.extend_from_slice(piece);
                let (recs, used) = rr.drain(&buf).unwrap();
                buf.drain(..used);
                got.extend(recs);
            }
            prop_assert!(buf.is_empty());
            prop_assert_eq!(got, records);
        }
    }
}
