//! A server played in-process for unit tests of the file and batch API
//! (`Client::detached`): it takes the calls the detached transport "sent"
//! and answers each with an encoded RPC reply record, fed through the
//! driver's real reply path (the engine matches it, the READ data is
//! written into the caller's buffer, the call completes) from its own
//! thread. No socket, so the tests run under Miri, which checks that no
//! buffer is written after its owner let it go.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use directnfs_wire::nfs3::{
    self, nfsstat3, post_op_attr, stable_how, wcc_data, writeverf3, COMMIT3resok, Nfs3Res,
    READ3resok, WRITE3resok,
};
use directnfs_wire::rpc::{AcceptedReply, OpaqueAuth, ReplyBody, ReplyHeader};
use directnfs_wire::Encode;

use crate::client::Client;
use crate::io::call::{Call, Sink};
use crate::io::receive::Replies;

/// The byte the fake file holds at `offset`.
pub(crate) fn pattern(offset: u64) -> u8 {
    (offset % 251) as u8 ^ (offset >> 8) as u8
}

/// A delay after which a caller that did not wait for its calls would be
/// gone: long under Miri, which takes a second or more to unwind a panic.
pub(crate) fn late() -> Duration {
    if cfg!(miri) {
        Duration::from_secs(5)
    } else {
        Duration::from_millis(100)
    }
}

/// How the fake server answers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Behaviour {
    /// Waits this long after taking calls before answering them (so the
    /// caller is already waiting, or dropping, or unwinding).
    pub delay: Duration,
    /// READs whose count is at least this return only half of it.
    pub short_reads_from: Option<u32>,
    /// The file ends here: READs past it return fewer bytes and EOF.
    pub eof_at: Option<u64>,
    /// WRITEs fail with this status.
    pub write_error: Option<nfsstat3>,
    /// A server that keeps UNSTABLE data until COMMIT (or a
    /// [`FakeServer::restart`] loses it): WRITEs answer with the
    /// `stable_how` asked and the current verifier, COMMIT makes the pending
    /// writes durable in the order they came. Off: every WRITE is FILE_SYNC.
    pub honest_unstable: bool,
    /// The NFSv4.1 server's `sr_target_highest_slotid` (`None`: every slot
    /// it granted): a server that wants fewer slots used.
    pub target_highest_slot: Option<u32>,
    /// Every WRITE is answered UNSTABLE and kept until COMMIT, FILE_SYNC
    /// ones too (with [`honest_unstable`](Self::honest_unstable)): a
    /// server that downgrades FILE_SYNC writes.
    pub downgrade_writes: bool,
    /// A COMMIT is carried out when it arrives but its reply is sent this
    /// much later, while the calls behind it are answered meanwhile (a
    /// WRITE the server took after the COMMIT, acknowledged before it).
    pub commit_reply_delay: Duration,
}

/// The file a [`Behaviour::honest_unstable`] server holds: durable bytes,
/// UNSTABLE writes not yet committed, the write verifier.
#[derive(Debug, Default)]
pub(crate) struct Store {
    pub durable: Vec<u8>,
    pub pending: Vec<(u64, Vec<u8>)>,
    pub verf: [u8; 8],
}

impl Store {
    fn apply(&mut self, offset: u64, data: &[u8]) {
        let end = offset as usize + data.len();
        if self.durable.len() < end {
            self.durable.resize(end, 0);
        }
        self.durable[offset as usize..end].copy_from_slice(data);
    }

    /// A WRITE: what the server answers it committed.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8], unstable: bool) -> bool {
        if unstable {
            self.pending.push((offset, data.to_vec()));
        } else {
            self.apply(offset, data);
        }
        !unstable
    }

    /// A COMMIT: the pending writes made durable in arrival order.
    pub(crate) fn commit(&mut self) {
        for (offset, data) in std::mem::take(&mut self.pending) {
            self.apply(offset, &data);
        }
    }
}

/// What the fake server saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// Every READ: offset and count.
    pub reads: Vec<(u64, u32)>,
    /// Every WRITE: offset and data.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// Every WRITE's `stable_how`, in the same order.
    pub stables: Vec<stable_how>,
    /// COMMITs answered.
    pub commits: usize,
    /// The next this many COMMITs fail (NFS3ERR_IO, NFS4ERR_IO): see
    /// [`FakeServer::fail_commits`].
    pub failing_commits: usize,
    /// The file of an honest server (`Behaviour::honest_unstable`).
    pub store: Store,
}

/// The fake server's thread; stopped when dropped (what it did not answer
/// fails with `Shutdown` when the client is dropped).
#[derive(Debug)]
pub(crate) struct FakeServer {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    taken: Arc<AtomicUsize>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    pub(crate) fn start(client: &Client, behaviour: Behaviour) -> Self {
        Self::start_on(client.inner.transport(), behaviour)
    }

    /// Plays the server of `transport` (a detached one), before a client
    /// is made of it: the NFSv4.1 client's session is established through
    /// it. Calls of program NFSv4 are answered by `testing_v41.rs`.
    pub(crate) fn start_on(
        transport: &crate::io::transport::Transport,
        behaviour: Behaviour,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let thread = {
            let shared = Arc::clone(transport.shared());
            let (stop, answered, taken, seen) = (
                Arc::clone(&stop),
                Arc::clone(&answered),
                Arc::clone(&taken),
                Arc::clone(&seen),
            );
            std::thread::spawn(move || {
                let take = || -> Vec<crate::io::transport::Sent> {
                    match &shared.detached {
                        Some(wire) => {
                            std::mem::take(&mut *wire.lock().unwrap_or_else(|p| p.into_inner()))
                        }
                        None => Vec::new(),
                    }
                };
                // COMMIT replies held back (`Behaviour::commit_reply_delay`):
                // when each is due, and where it goes.
                let mut deferred: Vec<(std::time::Instant, usize, u64, Vec<u8>)> = Vec::new();
                let deliver = |channel: usize, epoch: u64, rec: &[u8]| {
                    // Counted before the reply is delivered: a caller
                    // woken by it must already see it counted.
                    answered.fetch_add(1, Ordering::Release);
                    let mut replies = shared.replies(channel, epoch);
                    let now = replies.now();
                    replies.record(rec, now);
                };
                while !stop.load(Ordering::Acquire) {
                    let now = std::time::Instant::now();
                    deferred.retain(|(due, channel, epoch, rec)| {
                        let keep = *due > now;
                        if !keep {
                            deliver(*channel, *epoch, rec);
                        }
                        keep
                    });
                    let sent = take();
                    if sent.is_empty() {
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    taken.fetch_add(sent.len(), Ordering::Release);
                    std::thread::sleep(behaviour.delay);
                    for (channel, epoch, xid, call) in sent {
                        let commits = seen.lock().unwrap_or_else(|p| p.into_inner()).commits;
                        let rec = if crate::testing_v41::is_v4(&call) {
                            crate::testing_v41::answer(xid, &call, &behaviour, &seen)
                        } else {
                            answer(xid, &call, &behaviour, &seen)
                        };
                        let committed =
                            seen.lock().unwrap_or_else(|p| p.into_inner()).commits > commits;
                        if committed && !behaviour.commit_reply_delay.is_zero() {
                            let due = std::time::Instant::now() + behaviour.commit_reply_delay;
                            deferred.push((due, channel, epoch, rec));
                        } else {
                            deliver(channel, epoch, &rec);
                        }
                    }
                }
            })
        };
        Self {
            stop,
            answered,
            taken,
            seen,
            thread: Some(thread),
        }
    }

    /// Calls answered so far.
    pub(crate) fn answered(&self) -> usize {
        self.answered.load(Ordering::Acquire)
    }

    /// Calls taken off the wire so far (answered, or being answered once
    /// [`Behaviour::delay`] passed).
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }

    /// The next `n` COMMITs fail with an I/O error (the data is kept
    /// pending, as a server whose COMMIT failed).
    pub(crate) fn fail_commits(&self, n: usize) {
        self.seen().failing_commits = n;
    }

    /// A server restart: a new write verifier, the UNSTABLE data not yet
    /// committed lost.
    pub(crate) fn restart(&self) {
        let mut seen = self.seen();
        seen.store.pending.clear();
        seen.store.verf[0] = seen.store.verf[0].wrapping_add(1);
    }

    /// What it saw so far.
    pub(crate) fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// READ3args and the head of WRITE3args end with offset (u64) and count
/// (u32) after the handle: read them from the end of the body.
fn offset_and_count(call: &Call) -> (u64, u32) {
    let b = &call.body;
    let n = b.len();
    let word = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    match call.proc_ {
        // offset, count
        nfs3::NFSPROC3_READ => (
            (word(n - 12) as u64) << 32 | word(n - 8) as u64,
            word(n - 4),
        ),
        // offset, count, stable, data length
        _ => (
            (word(n - 20) as u64) << 32 | word(n - 16) as u64,
            word(n - 12),
        ),
    }
}

/// The header of an accepted, successful RPC reply to `xid` (results follow).
pub(crate) fn success_header(xid: u32) -> Vec<u8> {
    let mut rec = Vec::new();
    ReplyHeader {
        xid,
        body: ReplyBody::Accepted {
            verf: OpaqueAuth::none(),
            stat: AcceptedReply::Success,
        },
    }
    .encode(&mut rec);
    rec
}

/// A successful READ reply record (without record mark) carrying `data`.
pub(crate) fn read_reply(xid: u32, data: &[u8], eof: bool) -> Vec<u8> {
    let mut rec = success_header(xid);
    let res: Nfs3Res<READ3resok, post_op_attr> = Nfs3Res::Ok(READ3resok {
        file_attributes: post_op_attr::default(),
        count: data.len() as u32,
        eof,
        data: data.to_vec(),
    });
    res.encode(&mut rec);
    rec
}

/// The reply record (without record mark) to one call.
fn answer(xid: u32, call: &Call, behaviour: &Behaviour, seen: &Mutex<Seen>) -> Vec<u8> {
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    let mut rec = success_header(xid);
    match (&call.sink, call.proc_) {
        (Sink::Read(_), nfs3::NFSPROC3_READ) => {
            let (offset, count) = offset_and_count(call);
            seen.reads.push((offset, count));
            let mut n = count;
            if behaviour.short_reads_from.is_some_and(|m| count >= m) {
                n = count / 2;
            }
            let mut eof = false;
            if let Some(end) = behaviour.eof_at {
                let left = end.saturating_sub(offset);
                if left <= n as u64 {
                    n = left as u32;
                    eof = true;
                }
            }
            let data: Vec<u8> = (0..n as u64).map(|i| pattern(offset + i)).collect();
            return read_reply(xid, &data, eof);
        }
        (Sink::Write, nfs3::NFSPROC3_WRITE) => {
            let (offset, count) = offset_and_count(call);
            let data = call.payload.as_deref().unwrap_or(&[]).to_vec();
            seen.writes.push((offset, data));
            let b = &call.body;
            let at = b.len() - 8;
            seen.stables.push(stable_how(u32::from_be_bytes([
                b[at],
                b[at + 1],
                b[at + 2],
                b[at + 3],
            ])));
            if let Some(status) = behaviour.write_error {
                let res: Nfs3Res<WRITE3resok, wcc_data> =
                    Nfs3Res::Fail(status, wcc_data::default());
                res.encode(&mut rec);
                return rec;
            }
            if behaviour.honest_unstable {
                let unstable = behaviour.downgrade_writes
                    || seen.stables.last() == Some(&stable_how::UNSTABLE);
                let data = call.payload.as_deref().unwrap_or(&[]);
                let durable = seen.store.write(offset, data, unstable);
                let res: Nfs3Res<WRITE3resok, wcc_data> = Nfs3Res::Ok(WRITE3resok {
                    file_wcc: wcc_data::default(),
                    count,
                    committed: if durable {
                        stable_how::FILE_SYNC
                    } else {
                        stable_how::UNSTABLE
                    },
                    verf: writeverf3(seen.store.verf),
                });
                res.encode(&mut rec);
                return rec;
            }
            let res: Nfs3Res<WRITE3resok, wcc_data> = Nfs3Res::Ok(WRITE3resok {
                file_wcc: wcc_data::default(),
                count,
                committed: stable_how::FILE_SYNC,
                verf: writeverf3(*b"testing!"),
            });
            res.encode(&mut rec);
        }
        (_, nfs3::NFSPROC3_COMMIT) if seen.failing_commits > 0 => {
            seen.failing_commits -= 1;
            let res: Nfs3Res<COMMIT3resok, wcc_data> =
                Nfs3Res::Fail(nfsstat3::NFS3ERR_IO, wcc_data::default());
            res.encode(&mut rec);
        }
        (_, nfs3::NFSPROC3_COMMIT) if behaviour.honest_unstable => {
            seen.commits += 1;
            seen.store.commit();
            let res: Nfs3Res<COMMIT3resok, wcc_data> = Nfs3Res::Ok(COMMIT3resok {
                file_wcc: wcc_data::default(),
                verf: writeverf3(seen.store.verf),
            });
            res.encode(&mut rec);
        }
        // Anything else: a status the caller reports.
        _ => nfsstat3::NFS3ERR_NOTSUPP.encode(&mut rec),
    }
    rec
}

/// The protocol version a test body runs over (`file/versions_tests.rs`,
/// the write-behind tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V3,
    V41,
}

/// A fake server answering `behaviour`, a client of it over `version`
/// with `options`, and the file `/f` open on it (on NFSv4.1 with OPEN:
/// an open file with its stateid). The server comes first so that it is
/// dropped last (the file's CLOSE and the session's DESTROY are
/// answered, and a test that fails with writes in flight reports
/// instead of hanging in the file's drop, which waits for them).
pub(crate) fn serve(
    version: Version,
    options: crate::config::MountOptions,
    behaviour: Behaviour,
) -> (FakeServer, Client, crate::file::File) {
    match version {
        Version::V3 => {
            let client = Client::detached(options, 4096, 4096);
            let server = FakeServer::start(&client, behaviour);
            let file = crate::file::File::detached(&client, "/f");
            (server, client, file)
        }
        Version::V41 => {
            let (server, client) = Client::detached_v41(options, 4096, 4096, behaviour);
            let file = open_on(version, &client, "/f");
            (server, client, file)
        }
    }
}

/// One more file of a client [`serve`] made (on NFSv4.1 opened with
/// OPEN; the fake serves every path as the same file, with one store).
pub(crate) fn open_on(version: Version, client: &Client, path: &str) -> crate::file::File {
    match version {
        Version::V3 => crate::file::File::detached(client, path),
        Version::V41 => {
            let file = client
                .open_with(
                    path,
                    crate::open_options::OpenOptions {
                        create: true,
                        ..Default::default()
                    },
                )
                .unwrap_or_else(|e| panic!("OPEN on the fake NFSv4.1 server: {e}"));
            assert!(file.shared.v4.is_some(), "an NFSv4.1 open file");
            file
        }
    }
}

/// Runs `body` on a thread of its own and fails the test if it has not
/// returned within 30 s: a test of a hang must fail, not hang.
pub(crate) fn within_30s(what: &str, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        body();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(()) => thread
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p)),
        // The body panicked: report its panic.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => thread
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no return within 30 s (a hang)")
        }
    }
}
