//! Open files on NFSv4.1: OPEN (CLAIM_NULL, share access read and write,
//! falling back to read only; deny none; no delegation wanted) and CLOSE,
//! the open stateid on READ, WRITE and SETATTR, COMMIT.
//!
//! The READ, WRITE and COMMIT operations themselves are `io.rs`'s (one
//! piece each); which commitment a WRITE asks, the write log, `fsync`'s
//! COMMIT and the repair after a server restart are the version-neutral
//! `file.rs` and `fsync.rs`, as on NFSv3.
//!
//! What a server restart needs of an open file — its handle, access, open
//! stateid and locks — is an `OpenState` (`open_state.rs`) the session
//! keeps a weak list of, for `reclaim.rs`. A lock that could not be reclaimed makes every
//! I/O on the file fail with [`Error::LockLost`] until `unlock`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use directnfs_wire::nfs4::{
    createhow4, decode_commit_reply, decode_read_reply, decode_write_reply, encode_commit_compound,
    encode_read_compound, encode_write_compound_header, fattr4, nfs_argop4, nfs_fh4, nfs_opnum4,
    nfs_resop4, nfsstat4, open_claim4, openflag4, owner_id4, stable_how4, state_owner4, stateid4,
    verifier4, CLOSE4args, GETATTR4args, Nfs4Res, OPEN4args, PUTFH4args, SequencedReply,
    OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
    OPEN4_SHARE_DENY_NONE,
};
use directnfs_wire::XdrReader;

use super::open_state::OpenState;
use super::ops::{self, Ops, STAT_COMMIT, STAT_GETATTR, STAT_READ, STAT_WRITE};
use super::sequence::{nfs4_error, Request, Settled, STAT_OTHER};
use super::session::Session;
use super::Host;
use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::open_options::OpenOptions;
use crate::remote::Remote;

/// The NFSv4.1 state of one open file: its handle and open stateid. CLOSE
/// is sent when the last clone of the `File` is dropped.
#[derive(Debug)]
pub(crate) struct OpenFile {
    /// The client it was opened through: kept alive as long as the file,
    /// so that CLOSE goes before the session's DESTROY.
    host: Arc<dyn Host>,
    pub(crate) fh: nfs_fh4,
    pub(crate) state: Arc<OpenState>,
    pub(crate) path: String,
    /// One LOCK or LOCKU of this file at a time (`lock.rs`), and one
    /// `reopen`: held across their requests, so never taken by a reclaim.
    pub(crate) lock_op: Mutex<()>,
    reopen_op: Mutex<()>,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        let Some(s) = self.host.session().filter(|s| s.ours()) else {
            return;
        };
        if let Err(e) = self.release_locks() {
            tracing::debug!("unlocking {} before CLOSE: {e}", self.path);
        }
        let mut ops = Ops::default();
        ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: self.fh }));
        ops.push(nfs_argop4::OP_CLOSE(CLOSE4args {
            seqid: 0,
            open_stateid: self.open_stateid(),
        }));
        if let Err(e) = ops.run(s, self.host.remote(), "CLOSE", &self.path, STAT_OTHER, true) {
            tracing::debug!("CLOSE {}: {e}", self.path);
        }
    }
}

/// Opens (or creates) `path` as `opts` says, on `host`'s session.
pub(crate) fn open(host: &Arc<dyn Host>, path: &str, opts: OpenOptions) -> Result<OpenFile> {
    let Some(s) = host.session() else {
        return Err(Error::InvalidInput("not an NFSv4.1 client".into()));
    };
    match open_once(host, s, path, opts, OPEN4_SHARE_ACCESS_BOTH) {
        // No write permission: read only, as a read-only open would be.
        Err(Error::Nfs4 {
            status: nfsstat4::NFS4ERR_ACCESS,
            ..
        }) if !opts.create && !opts.create_new && !opts.truncate => {
            open_once(host, s, path, opts, OPEN4_SHARE_ACCESS_READ)
        }
        other => other,
    }
}

fn open_once(
    host: &Arc<dyn Host>,
    s: &Session,
    path: &str,
    opts: OpenOptions,
    access: u32,
) -> Result<OpenFile> {
    let remote = host.remote();
    let (parent, name) = ops::split(path)?;
    let attrs = fattr4 {
        mode: Some(opts.mode.unwrap_or(0o644) & 0o7777),
        ..Default::default()
    };
    // GUARDED for an exclusive create: the session's reply cache answers
    // a re-sent OPEN with its first reply, so the v3 EXCLUSIVE-verifier
    // dance is not needed (RFC 8881 §18.16.3 prefers GUARDED4 then too).
    let openhow = if opts.create_new {
        openflag4::OPEN4_CREATE(createhow4::GUARDED4(attrs))
    } else if opts.create {
        openflag4::OPEN4_CREATE(createhow4::UNCHECKED4(attrs))
    } else {
        openflag4::OPEN4_NOCREATE
    };
    let mut ops = Ops::default();
    ops.walk(&s.root, &parent);
    ops.push(open_op(s, access, openhow, open_claim4::CLAIM_NULL(name)));
    ops.push(nfs_argop4::OP_GETFH);
    if opts.truncate {
        ops.push(nfs_argop4::OP_SETATTR(directnfs_wire::nfs4::SETATTR4args {
            stateid: stateid4::CURRENT,
            obj_attributes: fattr4 {
                size: Some(0),
                ..Default::default()
            },
        }));
    }
    let res = ops.run(s, remote, "OPEN", path, STAT_OTHER, true)?;
    let mut stateid = None;
    let mut fh = None;
    for r in res {
        match r {
            nfs_resop4::OP_OPEN(Nfs4Res::Ok(ok)) => stateid = Some(ok.stateid),
            nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok)) => fh = Some(ok.object),
            _ => {}
        }
    }
    let (Some(stateid), Some(fh)) = (stateid, fh) else {
        return Err(ops::missing("OPEN", path));
    };
    Ok(OpenFile::opened(host, s, fh, stateid, access, path))
}

/// An OPEN for `access` under a fresh open owner of the session (each
/// open its own owner; seqids are ignored in NFSv4.1, RFC 8881 §18.16.3),
/// deny none, no delegation wanted.
pub(crate) fn open_op(
    s: &Session,
    access: u32,
    openhow: openflag4,
    claim: open_claim4,
) -> nfs_argop4 {
    let n = s.next_open_owner.fetch_add(1, Ordering::Relaxed);
    nfs_argop4::OP_OPEN(OPEN4args {
        seqid: 0,
        share_access: access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        share_deny: OPEN4_SHARE_DENY_NONE,
        owner: state_owner4 {
            clientid: 0, // ignored in NFSv4.1 (RFC 8881 §18.16.3)
            owner: owner_id4::from(format!("open-{n}").as_str()),
        },
        openhow,
        claim,
    })
}

impl OpenFile {
    /// The state of a file the server just opened with `access` (here, or
    /// by handle in `handles.rs`), registered with the session so that a
    /// server restart reclaims it.
    pub(crate) fn opened(
        host: &Arc<dyn Host>,
        s: &Session,
        fh: nfs_fh4,
        stateid: stateid4,
        access: u32,
        path: &str,
    ) -> OpenFile {
        let state = Arc::new(OpenState::new(fh, access, path, stateid));
        s.register(&state);
        OpenFile {
            host: Arc::clone(host),
            fh,
            state,
            path: path.to_string(),
            lock_op: Mutex::new(()),
            reopen_op: Mutex::new(()),
        }
    }
}

impl OpenFile {
    /// The open stateid now.
    pub(crate) fn open_stateid(&self) -> stateid4 {
        self.state.stateid()
    }

    /// The error of a lost lock not yet acknowledged by `unlock`.
    pub(crate) fn check_locks(&self, op: &'static str) -> Result<()> {
        match &self.state.locks().lost {
            Some(detail) => Err(Error::LockLost {
                op,
                path: self.path.clone(),
                detail: detail.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs `op` with the open stateid (after checking no lock was lost);
    /// if the server no longer knows the stateid, runs it again with the
    /// one a reclaim put in its place meanwhile or, when there is none
    /// (the reclaim failed, or the server revoked the state), opens the
    /// file again by its handle (OPEN CLAIM_FH) — its locks are lost then
    /// and reported.
    pub(crate) fn with_state<T>(
        &self,
        name: &'static str,
        mut op: impl FnMut(&stateid4) -> Result<T>,
    ) -> Result<T> {
        self.check_locks(name)?;
        let id = self.open_stateid();
        match op(&id) {
            Err(Error::Nfs4 { status, .. }) if state_lost(status) => {
                self.reopen(&id, status)?;
                self.check_locks(name)?;
                op(&self.open_stateid())
            }
            other => other,
        }
    }

    /// OPEN CLAIM_FH with the file's access, replacing `lost` (unless a
    /// reclaim or another thread replaced it already).
    fn reopen(&self, lost: &stateid4, status: nfsstat4) -> Result<()> {
        let s = self.session()?;
        let _one = self.reopen_op.lock().unwrap_or_else(|p| p.into_inner());
        s.wait_reclaimed();
        if self.open_stateid() != *lost {
            return Ok(());
        }
        let mut ops = Ops::default();
        ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: self.fh }));
        ops.push(open_op(
            s,
            self.state.access,
            openflag4::OPEN4_NOCREATE,
            open_claim4::CLAIM_FH,
        ));
        let res = ops.run(s, self.remote(), "OPEN", &self.path, STAT_OTHER, true)?;
        match res.last() {
            Some(nfs_resop4::OP_OPEN(Nfs4Res::Ok(ok))) => {
                tracing::info!(
                    "{}: opened again after the server lost its open state ({status})",
                    self.path
                );
                self.state.set_stateid(ok.stateid);
                self.state.lose_locks(&format!(
                    "the server no longer knew the open state ({status}); the file was opened again"
                ));
                Ok(())
            }
            _ => Err(ops::missing("OPEN", &self.path)),
        }
    }

    pub(crate) fn session(&self) -> Result<&Session> {
        self.host
            .session()
            .ok_or_else(|| Error::InvalidInput("not an NFSv4.1 client".into()))
    }

    /// The server end of the client it was opened through.
    pub(crate) fn remote(&self) -> &Remote {
        self.host.remote()
    }

    /// One READ into `buf` at `offset` on the blocking path (the open
    /// stateid renewed if the server lost it): bytes got and EOF.
    pub(crate) fn read_once(&self, buf: &mut [u8], offset: u64) -> Result<(usize, bool)> {
        let s = self.session()?;
        let settled = self.with_state("READ", |stateid| {
            self.read_compound(s, stateid, buf, offset)
        })?;
        self.read_data(&settled, buf)
    }

    /// The data of a settled READ reply (status checked) in `buf` (the
    /// buffer the request named in `read_into`, where a successful
    /// reply's data went as it was received; otherwise copied from the
    /// record): bytes got and EOF.
    pub(crate) fn read_data(&self, settled: &Settled, buf: &mut [u8]) -> Result<(usize, bool)> {
        if let Some(got) = settled.read {
            return Ok(((got.count as usize).min(buf.len()), got.eof));
        }
        let count = buf.len() as u32;
        let reply = decode_read_reply(&mut XdrReader::new(&settled.record), count)
            .map_err(|e| self.protocol("READ", e))?;
        let ok = self.ok("READ", &reply)?;
        let n = ok.data.len().min(buf.len());
        buf[..n].copy_from_slice(&ok.data[..n]);
        Ok((n, ok.eof))
    }

    /// A READ COMPOUND into `buf`, settled, with its status checked.
    fn read_compound(
        &self,
        s: &Session,
        stateid: &stateid4,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<Settled> {
        let len = buf.len() as u32;
        let encode = |out: &mut Vec<u8>| self.encode_read(out, stateid, offset, len);
        let mut req = self.request(
            &[nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_READ],
            &encode,
            "READ",
            STAT_READ,
        );
        // `compound` returns only once every call it made has completed,
        // and `buf` is ours (borrowed mutably) until then.
        req.read_into = Some((buf.as_mut_ptr(), buf.len()));
        self.checked(s.compound(self.remote(), &req)?, "READ")
    }

    /// PUTFH and READ, to follow the SEQUENCE the session has written.
    pub(crate) fn encode_read(
        &self,
        out: &mut Vec<u8>,
        stateid: &stateid4,
        offset: u64,
        count: u32,
    ) {
        // The hot path encoder writes all three; keep only what follows.
        let mut tmp = Vec::with_capacity(160);
        encode_read_compound(
            &mut tmp,
            &zero_sequence(),
            self.fh.as_bytes(),
            stateid,
            offset,
            count,
        );
        out.extend_from_slice(&tmp[SEQ_PREFIX..]);
    }

    /// A settled reply whose COMPOUND failed is that failure's error.
    pub(crate) fn checked(&self, settled: Settled, op: &'static str) -> Result<Settled> {
        if settled.status.is_ok() {
            Ok(settled)
        } else {
            Err(nfs4_error(op, &self.path, settled.status))
        }
    }

    /// One WRITE of `data` at `offset` asking `stable`, on the blocking
    /// path (the open stateid renewed if the server lost it): bytes taken,
    /// commitment and verifier.
    pub(crate) fn write_once(
        &self,
        data: &Arc<[u8]>,
        offset: u64,
        stable: stable_how4,
    ) -> Result<(usize, stable_how4, directnfs_wire::nfs4::verifier4)> {
        let s = self.session()?;
        let settled = self.with_state("WRITE", |stateid| {
            self.write_compound(s, stateid, data, offset, stable)
        })?;
        self.write_result(&settled, data.len())
    }

    /// Bytes taken (at most `len`), commitment and verifier of a settled
    /// WRITE reply (status checked).
    pub(crate) fn write_result(
        &self,
        settled: &Settled,
        len: usize,
    ) -> Result<(usize, stable_how4, verifier4)> {
        let reply = decode_write_reply(&mut XdrReader::new(&settled.record))
            .map_err(|e| self.protocol("WRITE", e))?;
        let ok = self.ok("WRITE", &reply)?;
        Ok(((ok.count as usize).min(len), ok.committed, ok.writeverf))
    }

    /// A WRITE COMPOUND (the data as its payload), settled, status checked.
    fn write_compound(
        &self,
        s: &Session,
        stateid: &stateid4,
        data: &Arc<[u8]>,
        offset: u64,
        stable: stable_how4,
    ) -> Result<Settled> {
        let encode =
            |out: &mut Vec<u8>| self.encode_write(out, stateid, offset, stable, data.len() as u32);
        let mut req = self.request(
            &[nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_WRITE],
            &encode,
            "WRITE",
            STAT_WRITE,
        );
        req.payload = Some(Arc::clone(data));
        self.checked(s.compound(self.remote(), &req)?, "WRITE")
    }

    /// PUTFH and the WRITE header (its data goes as the call's payload),
    /// to follow the SEQUENCE the session has written.
    pub(crate) fn encode_write(
        &self,
        out: &mut Vec<u8>,
        stateid: &stateid4,
        offset: u64,
        stable: stable_how4,
        len: u32,
    ) {
        let mut tmp = Vec::with_capacity(200);
        encode_write_compound_header(
            &mut tmp,
            &zero_sequence(),
            self.fh.as_bytes(),
            stateid,
            offset,
            stable,
            len,
        );
        out.extend_from_slice(&tmp[SEQ_PREFIX..]);
    }

    /// COMMIT of a range, its calls of `class` (the file's): the server's
    /// write verifier.
    pub(crate) fn commit(
        &self,
        offset: u64,
        count: u32,
        class: directnfs_engine::IoClass,
    ) -> Result<directnfs_wire::nfs4::verifier4> {
        let s = self.session()?;
        let encode = |out: &mut Vec<u8>| {
            let mut tmp = Vec::with_capacity(200);
            encode_commit_compound(
                &mut tmp,
                &zero_sequence(),
                self.fh.as_bytes(),
                offset,
                count,
            );
            out.extend_from_slice(&tmp[SEQ_PREFIX..]);
        };
        let mut req = self.request(
            &[nfs_opnum4::OP_PUTFH, nfs_opnum4::OP_COMMIT],
            &encode,
            "COMMIT",
            STAT_COMMIT,
        );
        req.class = class;
        let settled = s.compound(self.remote(), &req)?;
        let reply = decode_commit_reply(&mut XdrReader::new(&settled.record))
            .map_err(|e| self.protocol("COMMIT", e))?;
        self.ok("COMMIT", &reply)
    }

    /// Truncates or extends the file (SETATTR size with the open stateid).
    pub(crate) fn set_len(&self, size: u64) -> Result<()> {
        let s = self.session()?;
        self.with_state("SETATTR", |stateid| {
            ops::setattr(
                s,
                self.remote(),
                Some(&self.fh),
                &self.path,
                *stateid,
                fattr4 {
                    size: Some(size),
                    ..Default::default()
                },
            )
        })
    }

    /// Attributes of the open file.
    pub(crate) fn metadata(&self) -> Result<Metadata> {
        let s = self.session()?;
        let mut ops = Ops::default();
        ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: self.fh }));
        ops.push(nfs_argop4::OP_GETATTR(GETATTR4args {
            attr_request: ops::stat_attrs(),
        }));
        let res = ops.run(s, self.remote(), "GETATTR", &self.path, STAT_GETATTR, false)?;
        match res.last() {
            Some(nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok))) => {
                Ok(ops::from_fattr(&ok.obj_attributes))
            }
            _ => Err(ops::missing("GETATTR", &self.path)),
        }
    }

    pub(crate) fn request<'a>(
        &'a self,
        nums: &'a [nfs_opnum4],
        encode: &'a dyn Fn(&mut Vec<u8>),
        op: &'static str,
        stat: u32,
    ) -> Request<'a> {
        let mut req = Request::ops(&[], &[], encode, op, &self.path);
        req.ops = nums;
        req.stat = stat;
        // WRITE and COMMIT replies are small: cached, so a re-send after a
        // lost reply is answered without writing twice. READ's are not.
        req.cache = op != "READ";
        req
    }

    fn ok<T: Clone>(&self, op: &'static str, reply: &SequencedReply<T>) -> Result<T> {
        match &reply.ok {
            Some(v) => Ok(v.clone()),
            None => Err(nfs4_error(op, &self.path, non_ok(reply.status))),
        }
    }

    fn protocol(&self, op: &'static str, e: directnfs_wire::DecodeError) -> Error {
        Error::Protocol {
            op,
            path: self.path.clone(),
            detail: e.to_string(),
        }
    }
}

/// Bytes the hot-path encoders write before PUTFH: the COMPOUND header
/// (tag, minor version, operation count) and the SEQUENCE operation, which
/// the session has written already.
const SEQ_PREFIX: usize = 12 + 36;

fn zero_sequence() -> directnfs_wire::nfs4::SEQUENCE4args {
    directnfs_wire::nfs4::SEQUENCE4args {
        sa_sessionid: Default::default(),
        sa_sequenceid: 0,
        sa_slotid: 0,
        sa_highest_slotid: 0,
        sa_cachethis: false,
    }
}

/// Statuses that say the server no longer knows the open stateid.
pub(crate) fn state_lost(status: nfsstat4) -> bool {
    matches!(
        status,
        nfsstat4::NFS4ERR_STALE_STATEID
            | nfsstat4::NFS4ERR_BAD_STATEID
            | nfsstat4::NFS4ERR_EXPIRED
            | nfsstat4::NFS4ERR_ADMIN_REVOKED
            | nfsstat4::NFS4ERR_DELEG_REVOKED
    )
}

/// A failed reply's status (a reply without a result has none: SERVERFAULT).
fn non_ok(status: nfsstat4) -> nfsstat4 {
    if status.is_ok() {
        nfsstat4::NFS4ERR_SERVERFAULT
    } else {
        status
    }
}
