//! `fsync` and the repair of the write log: COMMIT, then sending again
//! what a restarted server may have lost (a changed write verifier, RFC
//! 1813 §3.3.21), until every byte is proven durable. The log itself
//! (which writes are kept, which bytes a repair may send) is the pure
//! bookkeeping of `writelog.rs`; the writes that fill it are in `file.rs`.
//! The same on both protocol versions: the COMMIT and the re-sent WRITEs
//! go through the file's per-version operations (`rpcops.rs`).

use std::sync::Arc;

use directnfs_wire::nfs3::{self, stable_how, writeverf3, Nfs3Res};

use crate::error::{Error, Result};
use crate::file::File;
use crate::writelog::{Entry, Segment};

/// Uncommitted data kept in unstable mode is flushed (COMMIT) once it
/// exceeds this, so memory stays bounded between two `fsync`s.
const MAX_UNCOMMITTED_BYTES: usize = 64 << 20;

/// How many times an `fsync` sends data again after a change of the write
/// verifier (a server restart) before it gives up: each round's WRITEs may
/// be answered UNSTABLE and lost to yet another restart before the COMMIT
/// that follows them.
const MAX_REPAIR_ROUNDS: usize = 3;

impl File {
    /// COMMITs once the log holds more than [`MAX_UNCOMMITTED_BYTES`].
    /// Write-behind writes are not waited for and their errors stay kept
    /// for the caller's own `fsync`.
    pub(crate) fn maybe_flush(&self) -> Result<()> {
        let over = self.log().logged() > MAX_UNCOMMITTED_BYTES;
        if over {
            let _serial = self
                .shared
                .fsync_lock
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            self.fsync_logged()?;
        }
        Ok(())
    }

    /// Makes every write acknowledged so far durable. In FILE_SYNC mode
    /// there is usually nothing to do. In unstable mode this sends COMMIT
    /// and compares the server's write verifier with the one each WRITE
    /// returned: writes whose verifier differs (the server restarted and
    /// may have lost them) are sent again with FILE_SYNC — except bytes a
    /// later write covers, acknowledged or still in flight — and if the
    /// server answers those UNSTABLE too, committed again, until a COMMIT's
    /// verifier matches theirs. Returns only once every byte is proven
    /// durable; when that fails (a COMMIT or WRITE error, or the verifier
    /// changing again after each of three re-sends: [`Error::NotDurable`])
    /// every write stays logged, and the next
    /// `fsync` tries again. Writes of other threads to bytes being sent
    /// again wait until that is over; writes still in flight (a `Batch` not
    /// yet reaped, even this thread's) are not waited for.
    ///
    /// Write-behind writes sent before the call are waited for first. If
    /// one of them failed since the last `fsync`, its error is returned
    /// (once: the next `fsync` does not report it again), after the COMMIT
    /// of everything else.
    pub fn fsync(&self) -> Result<()> {
        let _serial = self
            .shared
            .fsync_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let behind = self.wb_barrier();
        let result = self.fsync_logged();
        match behind {
            Some(e) => Err(e),
            None => result,
        }
    }

    /// COMMITs what the write log holds (`fsync` without the write-behind
    /// barrier; called with `fsync_lock` held).
    fn fsync_logged(&self) -> Result<()> {
        let snapshot = self.log().snapshot();
        let result = if snapshot.is_empty() {
            Ok(())
        } else {
            self.commit_and_repair(&snapshot)
        };
        // On failure nothing is dropped: every write stays logged where it
        // was, in order, for the next fsync.
        if result.is_ok() {
            let mut log = self.log();
            log.committed(&snapshot);
            self.update_tracked(&log);
        }
        result
    }

    /// COMMITs, then sends again as FILE_SYNC every write of `snapshot`
    /// whose verifier differs from the COMMIT's (the server restarted
    /// since and may have lost it) — only the bytes no later write covers —
    /// and repeats COMMIT and re-send for whatever the server answered
    /// UNSTABLE with a verifier the next COMMIT does not confirm.
    fn commit_and_repair(&self, snapshot: &[Entry]) -> Result<()> {
        let verf = self.commit_file()?;
        let stale: Vec<Entry> = snapshot
            .iter()
            .filter(|w| w.verf() != Some(verf))
            .cloned()
            .collect();
        if stale.is_empty() {
            return Ok(());
        }
        let mut pending = self.log().begin_repair(&stale);
        let _repair = RepairGuard { file: self };
        for round in 1..=MAX_REPAIR_ROUNDS {
            let unstable = self.resend(&pending, round)?;
            if unstable.is_empty() {
                return Ok(());
            }
            // Answered UNSTABLE: durable only once a COMMIT returns the
            // verifier those WRITEs did.
            let verf = self.commit_file()?;
            pending = unstable
                .into_iter()
                .filter(|(_, v)| *v != verf)
                .map(|(seg, _)| seg)
                .collect();
            if pending.is_empty() {
                return Ok(());
            }
        }
        let bytes: usize = pending.iter().map(|s| s.data.len()).sum();
        Err(Error::NotDurable {
            op: "COMMIT",
            path: self.path().to_string(),
            detail: format!(
                "the server's write verifier changed again after each of {MAX_REPAIR_ROUNDS} \
                 re-sends of data a restart lost ({bytes} bytes unconfirmed); \
                 the data is kept for the next fsync"
            ),
        })
    }

    /// Sends `segments` again with FILE_SYNC; returns the pieces the server
    /// took only UNSTABLE, with the verifier it gave them.
    fn resend(&self, segments: &[Segment], round: usize) -> Result<Vec<(Segment, writeverf3)>> {
        let mut unstable = Vec::new();
        for seg in segments {
            tracing::warn!(
                path = self.path(),
                offset = seg.offset,
                round,
                "write verifier changed (server restart?): re-sending {} bytes with FILE_SYNC",
                seg.data.len()
            );
            let mut off = seg.offset;
            let mut rest = Arc::clone(&seg.data);
            while !rest.is_empty() {
                let piece = [(off, Arc::clone(&rest))];
                let w = self
                    .write_round(&piece, stable_how::FILE_SYNC)
                    .pop()
                    .unwrap_or_else(|| Err(self.no_reply("WRITE")))?;
                if w.count == 0 {
                    return Err(Error::Protocol {
                        op: "WRITE",
                        path: self.path().to_string(),
                        detail: "server wrote 0 bytes".into(),
                    });
                }
                if !w.durable {
                    let data = if w.count == rest.len() {
                        Arc::clone(&rest)
                    } else {
                        Arc::from(&rest[..w.count])
                    };
                    unstable.push((Segment { offset: off, data }, w.verf));
                }
                off += w.count as u64;
                rest = Arc::from(&rest[w.count..]);
            }
        }
        Ok(unstable)
    }

    /// A round that answered nothing for a piece (it cannot happen: one
    /// result per piece).
    fn no_reply(&self, op: &'static str) -> Error {
        Error::Protocol {
            op,
            path: self.path().to_string(),
            detail: "no reply for a piece sent".into(),
        }
    }

    /// NFSv3's COMMIT of the whole file (`rpcops.rs` `commit_file`), of
    /// the file's I/O class;
    /// returns the server's write verifier. (NFS3ERR_JUKEBOX was retried
    /// by the engine; RPC errors are turned into `Error`s by `Inner::call`.)
    pub(crate) fn commit_v3(&self) -> Result<writeverf3> {
        let args = nfs3::COMMIT3args {
            file: self.shared.fh,
            offset: 0,
            count: 0,
        };
        // The file's class: a log file's COMMIT takes its lane.
        match self
            .inner()
            .call_classed::<nfs3::Commit>(&args, self.path(), self.io_class())?
            .0
        {
            Nfs3Res::Ok(ok) => {
                self.inner().note_verifier(ok.verf);
                Ok(ok.verf)
            }
            Nfs3Res::Fail(status, _) => Err(Error::Nfs {
                op: "COMMIT",
                path: self.path().to_string(),
                status,
            }),
        }
    }
}

/// A repair in progress (see
/// [`crate::writelog::WriteLog::begin_repair`]): when it ends, however it
/// ends, writes held back by it may go.
struct RepairGuard<'a> {
    file: &'a File,
}

impl Drop for RepairGuard<'_> {
    fn drop(&mut self) {
        self.file.log().end_repair();
        self.file.shared.repaired.notify_all();
    }
}
