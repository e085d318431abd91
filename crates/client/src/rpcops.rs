//! The per-version operations of an open file, the one place the version
//! of its I/O is asked — as the Linux client's `struct nfs_rpc_ops`
//! (`nfs_v3_clientops`, `nfs_v4_clientops`): each version supplies the
//! per-RPC steps, and the policy that uses them lives once, in `file.rs`
//! (splitting a transfer, sending a round of pieces at once, the write
//! log, a FILE_SYNC write the server downgraded) and `fsync.rs` (COMMIT,
//! the verifier check, the repair), which never name a version.
//!
//! | step | NFSv3 | NFSv4.1 (`v4/io.rs`) |
//! |---|---|---|
//! | [`File::lanes`]: how many pieces go at once | all of them (the transport bounds the calls in flight) | one slot of the session each: the first waited for, the others if free now |
//! | [`File::start_read`] / [`File::start_write`] | a READ3 / WRITE3 call (`file.rs`'s encoders) | a COMPOUND (SEQUENCE, PUTFH, READ/WRITE) on its slot |
//! | [`File::settle_round`], once the round's calls completed | nothing to do | the slots released: at once where nothing in the reply may block, then the others (a re-send on the same slot, a session recovery) |
//! | [`File::finish_read_piece`] / [`File::finish_write_piece`] | the reply decoded | the reply decoded; a stateid the server lost or a request to send again redone on the blocking path |
//! | [`File::commit_file`] | COMMIT3 (`fsync.rs`) | COMMIT in a COMPOUND |
//! | [`File::start_write_behind`]: an UNSTABLE WRITE `write_at` does not wait for (`writebehind.rs`) | a WRITE3 call | a COMPOUND on a slot taken as a pipelined batch's (`Session::try_batch_slot`: a quarter of the slots stays for blocking calls), held until the reply is reaped; none free: `None`, and the write waits for its reply |
//! | [`File::finish_write_behind`], once reaped | the reply decoded and logged | the slot released, the reply decoded (or the piece redone on the blocking path) and logged |
//! | [`File::set_size_op`], [`File::getattr_op`], [`File::set_attrs_op`] | SETATTR3, GETATTR3 on the handle | SETATTR with the open stateid, GETATTR (a file opened by handle whose OPEN was refused, a directory or a link: SETATTR by handle) |
//!
//! Static dispatch: a `match` on a two-variant enum per step.

use std::sync::Arc;

use directnfs_wire::nfs3::{stable_how, writeverf3};

use crate::attrs::SetAttrs;
use crate::error::Result;
use crate::file::inflight::InFlight;
use crate::file::{File, ReadPiece};
use crate::io::call::{Call, Notify, ReadDest};
use crate::metadata::Metadata;
use crate::v4::io::{Answer, Later, Settling};
use crate::v4::open_file::OpenFile;
use crate::v4::session::Session;
use crate::v4::slots::Slot;
use crate::written::Written;

/// The protocol version of an open file, chosen when it was opened.
pub(crate) enum Proto<'a> {
    V3,
    V41(&'a OpenFile),
}

/// Room for the pieces of one round: see [`File::lanes`].
pub(crate) enum Lanes<'a> {
    V3(usize),
    V41(&'a OpenFile, &'a Session, std::vec::IntoIter<Slot>),
}

impl Lanes<'_> {
    /// How many pieces go in this round.
    pub(crate) fn len(&self) -> usize {
        match self {
            Lanes::V3(n) => *n,
            Lanes::V41(_, _, slots) => slots.len(),
        }
    }
}

/// A piece's reply once its round is settled.
pub(crate) enum Outcome {
    V3(Arc<Call>),
    V41(Answer),
}

impl File {
    /// This file's protocol version.
    pub(crate) fn proto(&self) -> Proto<'_> {
        match &self.shared.v4 {
            Some(open) => Proto::V41(open),
            None => Proto::V3,
        }
    }

    /// Room for up to `n` pieces sent at once (at least one; `op` names
    /// the operation in an error, such as a lost lock on NFSv4.1).
    pub(crate) fn lanes(&self, n: usize, op: &'static str) -> Result<Lanes<'_>> {
        match self.proto() {
            Proto::V3 => Ok(Lanes::V3(n)),
            Proto::V41(open) => {
                let (s, slots) = open.slots(n, op)?;
                Ok(Lanes::V41(open, s, slots.into_iter()))
            }
        }
    }

    /// A READ piece of `dest.len()` bytes at `offset` into `dest`, on the
    /// next lane of `lanes` (there must be one left).
    pub(crate) fn start_read(
        &self,
        lanes: &mut Lanes<'_>,
        offset: u64,
        dest: ReadDest,
        notify: Notify,
    ) -> InFlight {
        match lanes {
            Lanes::V3(_) => InFlight::V3(self.read_call(offset, dest, notify)),
            Lanes::V41(open, s, slots) => {
                // A round takes no more pieces than it has slots; one more
                // would wait for a slot.
                let slot = slots.next().unwrap_or_else(|| s.acquire(false));
                let sent = open.start_read(slot, offset, dest, notify);
                sent.call.set_class(self.io_class());
                InFlight::V41(sent)
            }
        }
    }

    /// A WRITE piece of `data` at `offset` asking `stable`, on the next
    /// lane of `lanes` (there must be one left).
    pub(crate) fn start_write(
        &self,
        lanes: &mut Lanes<'_>,
        offset: u64,
        data: &Arc<[u8]>,
        stable: stable_how,
        notify: Notify,
    ) -> InFlight {
        match lanes {
            Lanes::V3(_) => {
                InFlight::V3(self.write_call_with(offset, Arc::clone(data), notify, stable))
            }
            Lanes::V41(open, s, slots) => {
                let slot = slots.next().unwrap_or_else(|| s.acquire(false));
                let sent = open.start_write(slot, offset, data, stable, notify);
                sent.call.set_class(self.io_class());
                InFlight::V41(sent)
            }
        }
    }

    /// Settles a round whose calls have all completed, in order. On
    /// NFSv4.1 every slot of the round is released before this returns,
    /// so the finishing steps may block (a redo takes a slot of its own).
    pub(crate) fn settle_round(&self, round: Vec<InFlight>) -> Vec<Outcome> {
        // A round has NFSv4.1 pieces only on an NFSv4.1 file (its lanes).
        let open = match self.proto() {
            Proto::V41(open) => Some(open),
            Proto::V3 => None,
        };
        let mut later: Vec<(usize, Later)> = Vec::new();
        let mut out: Vec<Option<Outcome>> = Vec::with_capacity(round.len());
        for (i, piece) in round.into_iter().enumerate() {
            match piece {
                InFlight::V3(call) => out.push(Some(Outcome::V3(call))),
                InFlight::V41(sent) => match open.map(|o| o.settle_now(sent)) {
                    Some(Settling::Now(answer)) => out.push(Some(Outcome::V41(answer))),
                    Some(Settling::Later(l)) => {
                        out.push(None);
                        later.push((i, l));
                    }
                    None => out.push(Some(Outcome::V41(Ok(None)))),
                },
            }
        }
        if let Some(open) = open {
            for (i, l) in later {
                if let Some(slot) = out.get_mut(i) {
                    *slot = Some(Outcome::V41(open.settle_later(l)));
                }
            }
        }
        out.into_iter().flatten().collect()
    }

    /// The outcome of a settled READ piece into `buf` (the buffer its
    /// `dest` lent) at `offset`.
    pub(crate) fn finish_read_piece(
        &self,
        outcome: Outcome,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<ReadPiece> {
        match (outcome, self.proto()) {
            (Outcome::V41(answer), Proto::V41(open)) => open
                .finish_read(answer, buf, offset)
                .map(|(count, eof)| ReadPiece { count, eof }),
            (Outcome::V3(call), _) => self.finish_read(&call),
            (Outcome::V41(answer), Proto::V3) => answer.map(|_| ReadPiece {
                count: 0,
                eof: false,
            }),
        }
    }

    /// The outcome of a settled WRITE piece of `data` at `offset` that
    /// asked `stable`: the server's verifier noted (`Inner::note_verifier`).
    pub(crate) fn finish_write_piece(
        &self,
        outcome: Outcome,
        offset: u64,
        data: &Arc<[u8]>,
        stable: stable_how,
    ) -> Result<Written> {
        let written = match (outcome, self.proto()) {
            (Outcome::V41(answer), Proto::V41(open)) => {
                let w = open.finish_write(answer, offset, data, stable)?;
                self.inner().note_verifier(w.verf);
                w
            }
            // `decode_write` notes the verifier itself.
            (Outcome::V3(call), _) => self.decode_write(&call, data)?,
            (Outcome::V41(answer), Proto::V3) => {
                answer?;
                return Err(crate::error::Error::InvalidInput(
                    "an NFSv4.1 reply on an NFSv3 file".into(),
                ));
            }
        };
        Ok(written)
    }

    /// COMMIT of the whole file: the server's write verifier.
    pub(crate) fn commit_file(&self) -> Result<writeverf3> {
        match self.proto() {
            Proto::V3 => self.commit_v3(),
            Proto::V41(open) => {
                let verf = open.commit_file(self.io_class())?;
                self.inner().note_verifier(verf);
                Ok(verf)
            }
        }
    }

    /// SETATTR of the size (`File::set_len`).
    pub(crate) fn set_size_op(&self, size: u64) -> Result<()> {
        match self.proto() {
            Proto::V3 => self.set_size_v3(size),
            Proto::V41(open) => open.set_len(size),
        }
    }

    /// The file's attributes from the server (`File::metadata`).
    pub(crate) fn getattr_op(&self) -> Result<Metadata> {
        match self.proto() {
            Proto::V3 => {
                let a = self.inner().getattr(&self.shared.fh, self.path())?;
                Ok(Metadata::from_fattr(&a))
            }
            Proto::V41(open) => open.metadata(),
        }
    }

    /// SETATTR of `attrs` on the file (`File::set_attrs`).
    pub(crate) fn set_attrs_op(&self, attrs: &SetAttrs) -> Result<()> {
        match (self.proto(), &self.inner().v4, self.shared.v4_handle) {
            (Proto::V41(open), _, _) => crate::v4::attrs::set_file_attrs(open, attrs),
            // NFSv4.1, a handle that has no open state: OPEN refuses a
            // directory or a link (`Client::open_handle` of one).
            (Proto::V3, Some(s), handle) => crate::v4::attrs::set_handle_attrs(
                s,
                self.inner(),
                &handle.unwrap_or_default(),
                self.path(),
                attrs,
            ),
            (Proto::V3, None, _) => self.set_attrs_v3(attrs),
        }
    }

    /// A write-behind WRITE of `data` at `offset`, UNSTABLE, its
    /// completion sent to `notify` (not yet sent). On NFSv4.1 it takes a
    /// slot as a pipelined batch does, so that the slots it holds until it
    /// is reaped never include the quarter kept for blocking calls;
    /// `None` when no such slot is free now (the caller then waits for
    /// the write's reply).
    pub(crate) fn start_write_behind(
        &self,
        offset: u64,
        data: &Arc<[u8]>,
        notify: Notify,
    ) -> Option<InFlight> {
        match self.proto() {
            Proto::V3 => Some(InFlight::V3(self.write_call_with(
                offset,
                Arc::clone(data),
                notify,
                stable_how::UNSTABLE,
            ))),
            Proto::V41(open) => {
                let slot = open.session().ok()?.try_batch_slot()?;
                let sent = open.start_write(slot, offset, data, stable_how::UNSTABLE, notify);
                sent.call.set_class(self.io_class());
                Some(InFlight::V41(sent))
            }
        }
    }

    /// What the version refuses before a write-behind WRITE is made, as
    /// [`lanes`](Self::lanes) does for one that waits: on NFSv4.1, a file
    /// whose lock was lost.
    pub(crate) fn check_write_behind(&self) -> Result<()> {
        match self.proto() {
            Proto::V3 => Ok(()),
            Proto::V41(open) => open.check_locks("WRITE"),
        }
    }

    /// The outcome of a completed write-behind WRITE of `data` at `offset`
    /// (see [`start_write_behind`](Self::start_write_behind)), entered in
    /// the write log: bytes the server took and whether they are durable.
    /// On NFSv4.1 its slot is released first; a piece the session must
    /// send again goes on the blocking path.
    pub(crate) fn finish_write_behind(
        &self,
        piece: InFlight,
        offset: u64,
        data: &Arc<[u8]>,
    ) -> Result<(usize, bool)> {
        let result = match piece {
            InFlight::V3(call) => self.decode_write(&call, data),
            v41 => {
                let outcome = self.settle_round(vec![v41]).pop();
                match outcome {
                    Some(outcome) => {
                        self.finish_write_piece(outcome, offset, data, stable_how::UNSTABLE)
                    }
                    None => Err(crate::error::Error::InvalidInput(
                        "a write-behind WRITE without an outcome".into(),
                    )),
                }
            }
        };
        self.record_write(offset, data, result)
    }
}
