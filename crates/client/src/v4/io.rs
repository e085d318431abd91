//! The per-RPC operations of an open file on NFSv4.1 — this version's half
//! of `crate::rpcops` (the Linux client's `nfs_v4_clientops`): a READ or
//! WRITE piece started on a slot of the session (its own COMPOUND:
//! SEQUENCE, PUTFH, READ or WRITE), its reply settled, and COMMIT.
//!
//! No policy lives here: splitting a large transfer and sending its pieces
//! at once, the write log, the verifier check and the repair are
//! `file.rs`'s and `fsync.rs`'s, the same for both versions.
//!
//! A round of pieces is settled in three steps, so that a thread never
//! waits for a slot while it holds one: [`OpenFile::slots`] takes the
//! first slot waiting and the others only if free; once every piece's call
//! has completed, [`OpenFile::settle_now`] releases the slots whose reply
//! says nothing that may block, [`OpenFile::settle_later`] then settles the
//! others (a DELAY from SEQUENCE re-sent on its own slot, a session
//! recovery), and only then [`OpenFile::finish_read`] and
//! [`OpenFile::finish_write`] redo on the blocking path (`with_state`) a
//! piece whose stateid the server no longer knew or that must go again as
//! a new request.

use std::sync::Arc;

use directnfs_wire::nfs3::{stable_how, writeverf3};
use directnfs_wire::nfs4::{nfs_opnum4, stable_how4};

use super::open_file::{state_lost, OpenFile};
use super::ops::{STAT_READ, STAT_WRITE};
use super::recovery::Retry;
use super::sequence::{self, first_reply, First, Settled};
use super::session::Session;
use super::slots::Slot;
use crate::error::Result;
use crate::io::call::{Call, Notify, ReadDest};
use crate::written::Written;

const READ_OPS: [nfs_opnum4; 2] = [nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_READ];
const WRITE_OPS: [nfs_opnum4; 2] = [nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_WRITE];

/// A READ or WRITE piece sent on its slot, its reply not yet settled.
#[derive(Debug)]
pub(crate) struct Sent {
    pub(crate) call: Arc<Call>,
    slot: Slot,
    body: Arc<[u8]>,
    /// A WRITE's data (`None` for a READ).
    data: Option<Arc<[u8]>>,
    /// A READ's buffer, lent as the request's `read_into` (re-sent into
    /// the same buffer after a DELAY from SEQUENCE). Kept as the lent
    /// `ReadDest`, so that a WRITE's `Sent` may wait in a file's
    /// write-behind state, which threads share.
    read_into: Option<ReadDest>,
}

/// A piece's reply that [`OpenFile::settle_now`] left for
/// [`OpenFile::settle_later`].
#[derive(Debug)]
pub(crate) struct Later {
    sent: Sent,
    first: Result<First>,
}

/// What settling a piece gave: the settled reply (status not yet
/// checked), `None` when the piece must go again on the blocking path, or
/// the request's error.
pub(crate) type Answer = Result<Option<Settled>>;

/// What [`OpenFile::settle_now`] did with a piece.
pub(crate) enum Settling {
    /// Settled: its slot is released.
    Now(Answer),
    /// Left for [`OpenFile::settle_later`].
    Later(Later),
}

impl OpenFile {
    /// Slots for up to `n` pieces sent at once (at least one): the first
    /// waits for one, the others are taken only if free now (see the module
    /// doc). Refuses after a lost lock, as every I/O of the file does.
    pub(crate) fn slots(&self, n: usize, op: &'static str) -> Result<(&Session, Vec<Slot>)> {
        self.check_locks(op)?;
        let s = self.session()?;
        let mut slots = vec![s.acquire(false)];
        while slots.len() < n {
            match s.try_acquire() {
                Some(slot) => slots.push(slot),
                None => break,
            }
        }
        Ok((s, slots))
    }

    /// A READ of `dest.len()` bytes at `offset` on `slot` (not yet sent):
    /// a successful reply's data goes straight into `dest`.
    pub(crate) fn start_read(
        &self,
        slot: Slot,
        offset: u64,
        dest: ReadDest,
        notify: Notify,
    ) -> Sent {
        let stateid = self.open_stateid();
        let len = dest.len() as u32;
        let encode = |out: &mut Vec<u8>| self.encode_read(out, &stateid, offset, len);
        let mut req = self.request(&READ_OPS, &encode, "READ", STAT_READ);
        req.read_into = Some(dest.as_raw());
        let body = sequence::encode(self.remote(), &req, &slot);
        let call = sequence::start(&req, &body, notify);
        Sent {
            call,
            slot,
            body,
            data: None,
            read_into: Some(dest),
        }
    }

    /// A WRITE of `data` at `offset` asking `stable`, on `slot` (not yet
    /// sent).
    pub(crate) fn start_write(
        &self,
        slot: Slot,
        offset: u64,
        data: &Arc<[u8]>,
        stable: stable_how,
        notify: Notify,
    ) -> Sent {
        let stateid = self.open_stateid();
        let stable = stable_how4(stable.0);
        let len = data.len() as u32;
        let encode = |out: &mut Vec<u8>| self.encode_write(out, &stateid, offset, stable, len);
        let mut req = self.request(&WRITE_OPS, &encode, "WRITE", STAT_WRITE);
        req.payload = Some(Arc::clone(data));
        let body = sequence::encode(self.remote(), &req, &slot);
        let call = sequence::start(&req, &body, notify);
        Sent {
            call,
            slot,
            body,
            data: Some(Arc::clone(data)),
            read_into: None,
        }
    }

    /// Settles a completed piece if nothing in its reply may block (its slot
    /// is released); otherwise leaves it for [`settle_later`](Self::settle_later).
    pub(crate) fn settle_now(&self, sent: Sent) -> Settling {
        let first = first_reply(&sent.call, op_name(&sent), &self.path);
        if !sequence::settles_at_once(&first) {
            return Settling::Later(Later { sent, first });
        }
        Settling::Now(self.settle(sent, first))
    }

    /// Settles what [`settle_now`](Self::settle_now) left (may block: a
    /// pause and a re-send on the same slot, a session recovery).
    pub(crate) fn settle_later(&self, later: Later) -> Answer {
        self.settle(later.sent, later.first)
    }

    fn settle(&self, sent: Sent, first: Result<First>) -> Answer {
        let s = self.session()?;
        let encode = |_: &mut Vec<u8>| {};
        let (ops, stat) = match sent.data {
            Some(_) => (&WRITE_OPS, STAT_WRITE),
            None => (&READ_OPS, STAT_READ),
        };
        let mut req = self.request(ops, &encode, op_name(&sent), stat);
        req.payload = sent.data.clone();
        req.read_into = sent.read_into.as_ref().map(ReadDest::as_raw);
        let mut retry = Retry::new(self.remote());
        let settled = s.settle(
            self.remote(),
            &req,
            sent.slot,
            &sent.body,
            first,
            &mut retry,
        )?;
        // A stateid the server no longer knows: the blocking path opens
        // the file again (or takes a reclaim's stateid) and redoes it.
        Ok(settled.filter(|st| !state_lost(st.status)))
    }

    /// The outcome of a settled READ piece into `buf` (the buffer it was
    /// started with): bytes read and EOF. A piece to redo goes again on
    /// the blocking path.
    pub(crate) fn finish_read(
        &self,
        answer: Answer,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<(usize, bool)> {
        match answer? {
            Some(settled) => {
                let settled = self.checked(settled, "READ")?;
                self.read_data(&settled, buf)
            }
            None => self.read_once(buf, offset),
        }
    }

    /// The outcome of a settled WRITE piece of `data` at `offset` that asked
    /// `stable`. A piece to redo goes again on the blocking path.
    pub(crate) fn finish_write(
        &self,
        answer: Answer,
        offset: u64,
        data: &Arc<[u8]>,
        stable: stable_how,
    ) -> Result<Written> {
        let (count, committed, verf) = match answer? {
            Some(settled) => {
                let settled = self.checked(settled, "WRITE")?;
                self.write_result(&settled, data.len())?
            }
            None => self.write_once(data, offset, stable_how4(stable.0))?,
        };
        Ok(Written {
            count,
            durable: committed == stable_how4::FILE_SYNC4 || committed == stable_how4::DATA_SYNC4,
            verf: writeverf3(verf.0),
        })
    }

    /// COMMIT of the whole file, its calls of `class` (the file's): the
    /// server's write verifier. Refused after a lost lock, as every I/O of
    /// the file is.
    pub(crate) fn commit_file(&self, class: directnfs_engine::IoClass) -> Result<writeverf3> {
        self.check_locks("COMMIT")?;
        self.commit(0, 0, class).map(|v| writeverf3(v.0))
    }
}

fn op_name(sent: &Sent) -> &'static str {
    match sent.data {
        Some(_) => "WRITE",
        None => "READ",
    }
}
