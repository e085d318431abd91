//! What a batch hands back, for both protocol versions: a finished
//! operation ([`Completion`]) and how its pieces add up. `batch.rs` and its
//! NFSv4.1 half `batch/v41.rs` share it; it names only the error type.

use crate::error::Result;

/// One finished operation.
#[derive(Debug)]
pub struct Completion {
    /// The token given at submission.
    pub token: u64,
    /// Bytes transferred, or the error.
    pub result: Result<usize>,
    /// The buffer of a [`read_owned`](crate::Batch::read_owned) or
    /// [`write_owned`](crate::Batch::write_owned), handed back for reuse.
    pub buffer: Option<Vec<u8>>,
}

/// One piece of an operation: bytes asked, and once done, bytes got and EOF.
pub(crate) type PieceResult = (usize, Option<(usize, bool)>);

/// Bytes read from the start of the operation up to the first short piece.
pub(crate) fn contiguous(got: &[PieceResult]) -> usize {
    let mut total = 0;
    for (want, got) in got {
        let (n, eof) = got.unwrap_or((0, true));
        total += n;
        if n < *want || eof {
            break;
        }
    }
    total
}
