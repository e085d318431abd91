//! A piece of I/O sent and not yet settled, in the form each protocol
//! version keeps it: `rpcops.rs` makes and settles them, and the
//! write-behind state of an open file (`writebehind.rs`) holds them. It
//! sits under `file` so that the write-behind state does not name
//! `rpcops` (which names `File`): the import graph stays one way.

use std::sync::Arc;

use crate::io::call::Call;
use crate::v4::io::{Sent, Settling};
use crate::v4::open_file::OpenFile;

/// A piece sent (or about to be), its reply not yet settled.
#[derive(Debug)]
pub(crate) enum InFlight {
    V3(Arc<Call>),
    V41(Sent),
}

impl InFlight {
    /// The piece's call, to send and wait for.
    pub(crate) fn call(&self) -> &Arc<Call> {
        match self {
            InFlight::V3(call) => call,
            InFlight::V41(sent) => &sent.call,
        }
    }
}

/// A write-behind WRITE whose file is gone, its call completed: its
/// NFSv4.1 slot is released (the reply has nobody left to be reported
/// to). `open` is the file's NFSv4.1 state, if any.
pub(crate) fn release_unreaped(open: Option<&OpenFile>, piece: InFlight) {
    if let (Some(open), InFlight::V41(sent)) = (open, piece) {
        if let Settling::Later(later) = open.settle_now(sent) {
            // The outcome is dropped: nobody is left to be told.
            let _ = open.settle_later(later);
        }
    }
}
