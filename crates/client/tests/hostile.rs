//! The client against a hostile server (`directnfs_testkit::hostile`): every test
//! mounts a fake export on 127.0.0.1, has the server misbehave in one
//! way, and checks the client's documented reaction — an error or a retry,
//! never a panic, never a hang past its configured timeout, never an
//! allocation sized by the server, never wrong data.
//!
//! Unless a test says otherwise the client is mounted `soft`, `timeo=10`
//! (1 s), `retrans=1`, one connection: an attempt that gets no usable reply
//! is retried once, and a call gives up after about 2 s. Each operation
//! runs on its own thread under a hard deadline ([`SOFT_LIMIT`]); passing
//! it fails the test as a hang. No real NFS server is needed.
//!
//! | fault | expected client behaviour | test |
//! |---|---|---|
//! | complete record with a truncated reply, then close | that call fails `Protocol` (EIO); next call reconnects | `truncated_record_then_close_*` |
//! | close mid-record / after a non-last fragment / before replying | connection failed, call re-sent on a new connection, succeeds | `close_*_is_retried_*` |
//! | the same, every time | soft: `TimedOut` (ETIMEDOUT) after retrans+1 attempts | `close_mid_record_every_time_*` |
//! | reply, then close (server restart) | next call reconnects transparently | `reply_then_close_*` |
//! | fragment header of 2 GiB (data path, NULL probe, MNT) | refused before allocating: connection failed and retried / connect or mount fails | `fragment_of_2gib_*` |
//! | endless non-last fragments | cut at the record limit (rsize + 64 KiB), connection failed and retried | `endless_fragments_*` |
//! | wrong XID | reply dropped; call times out after `timeo` and is retried | `reply_with_wrong_xid_*` |
//! | duplicate reply | second copy dropped; never completes another call | `duplicate_reply_*` |
//! | unsolicited XIDs, empty and 3-byte records, a CALL | dropped; the real reply completes the call | `unsolicited_*` |
//! | legal reply in many small fragments, slowly | reassembled (data path, NULL, MNT) | `*_split_into_fragments_*` |
//! | READ with more data than asked / count ≠ data length | `Protocol` (EIO); nothing written past the caller's buffer | `read_reply_*` |
//! | READ `eof` mid-file / short without `eof` / 0 bytes without `eof` | a short read at the EOF the server claims (never wrong bytes) / the rest asked for again, the buffer filled (`read_at` and batch) / `Protocol` (EIO), never a loop | `read_reply_with_eof_*`, `short_read*`, `read_reply_of_zero_bytes_*` |
//! | garbage after an accepted SUCCESS header | `Protocol` (EIO) | `accepted_reply_with_garbage_*` |
//! | WRITE reply cut short after its status | `Protocol` (EIO), blocking and batch | `malformed_write_reply_*` |
//! | absurd attributes (size u64::MAX, type 0xffff, ns > 1e9) | reported as they are (type `Other`), no panic | `absurd_attributes_*` |
//! | FSINFO rtmax/wtmax u32::MAX, 0 or 1 | clamped to 512 B ..= 1 MiB | `fsinfo_*` |
//! | MSG_DENIED RPC_MISMATCH | `Rpc` (EIO) at once, no retry; at NULL: `Connect`; at MNT: `Rpc` | `*_mismatch_*`, `denied_*` |
//! | MSG_DENIED AUTH_ERROR (BADCRED, REJECTEDCRED, TOOWEAK, ...) | `Auth` (EACCES) at once, no retry; at MNT too | `auth_error_*` |
//! | every accept_stat ≠ SUCCESS | `Rpc` (EIO) at once, no retry | `every_accept_stat_*`, `accept_errors_at_mount_*` |
//! | EXPORT refused, garbled or unanswered | mount falls back to MNT on each prefix of the path | `refused_or_garbled_export_list_*` |
//! | accepts and never answers | soft: `TimedOut` in timeo×(retrans+1); hard: waits, resumes when the server answers | `silent_*` |
//! | trickles one byte per second | soft: `TimedOut` on time; once: retried | `trickled_*` |
//! | NFS3ERR_JUKEBOX (blocking, batch, the fsync repair's re-sends) | retried after a pause; soft gives up after `retrans` | `jukebox_*`, `persistent_jukebox_*` |
//! | NFS3ERR_ACCES / STALE / unknown status, MNT3ERR_ACCES | `Nfs`/`Mount` error with the POSIX errno | `*_is_eacces`, `*_is_estale`, `unknown_nfs_status_*`, `mnt_access_*` |
//! | WRITE reply claiming 0 / fewer / more bytes than sent | 0: error; fewer: rest re-sent; more: clamped | `write_reply_*`, `short_write_*` |
//! | READDIRPLUS that never reaches EOF (cookie loop, endless entries) | an error in bounded time and memory | `directory_*`, `endless_directory_*` |
//! | retransmitted REMOVE / RMDIR / RENAME / MKDIR whose first copy ran | NOENT on the retry is success / EXIST is confirmed by LOOKUP; sent once, errors are as they are | `retransmitted_remove_*`, `retransmitted_rmdir_*`, `retransmitted_rename_*`, `retransmitted_mkdir_*`, `*_sent_once_is_*` |
//! | retransmitted EXCLUSIVE CREATE whose first copy ran | the same verifier is sent again: the server's match gives OK; a server that answers EXIST gets EEXIST, never a false success | `retransmitted_exclusive_create_*`, `exclusive_create_*` |
//! | server killed (connections reset, port closed) and restarted | hard: the load resumes with no error and no wrong data; soft: ETIMEDOUT while down, recovers after | `server_killed_*`, `server_down_*` |
//! | COMMIT verifier differs from the WRITEs' (restart lost unstable data) | every unstable write re-sent FILE_SYNC before fsync returns | `commit_with_a_new_verifier_*` |
//! | COMMIT fails (error status, no reply) | fsync fails; the data is kept and the next fsync commits (or re-sends) it | `failed_fsync_keeps_*` |
//! | FILE_SYNC WRITE answered UNSTABLE | COMMIT before `write_at` returns; if it fails, the write fails and the data is kept | `file_sync_write_answered_unstable_*`, `file_sync_write_downgraded_across_a_restart_*` |
//! | fsync's re-sent WRITEs answered UNSTABLE, or lost to another restart | committed again until a COMMIT's verifier matches theirs; after three rounds `NotDurable` (EIO), data kept | `fsync_repair_*` |
//! | newer writes in flight when a repair starts, or submitted during it | their bytes are not re-sent / they wait and land after it | `write_in_flight_when_a_repair_*`, `batch_write_not_yet_reaped_*`, `writes_submitted_during_a_repair_*` |
//! | more than 64 MiB written unstable without fsync | committed when it passes 64 MiB | `uncommitted_data_is_committed_*` |
//! | write-behind (unstable mode): a WRITE failing after `write_at` returned (NOSPC, DQUOT, IO) | reported by the next `fsync` (and `flush_write_behind`) once, never dropped | `write_behind_error_*` |
//! | write-behind: a short WRITE reply reaped after `write_at` returned | the rest is sent again; `fsync` waits for it; a 0-byte reply is an error for `fsync` | `short_write_behind_*` |
//! | write-behind: the server restarts (new verifier, unstable data lost) while WRITEs are in flight, before `fsync` | `fsync` waits for them, re-sends what the restart lost FILE_SYNC; all durable when it returns | `write_behind_writes_in_flight_across_a_restart_*` |
//! | write-behind: a `Batch` read or write over a write-behind WRITE the server holds a second before executing (two connections), or over writes held for coalescing | the held writes are sent, and the batch's READ/WRITE waits for them: the read returns the new data, the batch's data lands last and `fsync` commits it | `batch_write_over_a_write_behind_*`, `batch_read_over_a_write_behind_*`, `batch_read_and_write_over_held_*` |
//! | more than 65,536 paths looked up | the handle cache is cleared, not grown | `handle_cache_*` |
//! | more distinct files opened than `MAX_FILE_STATS` | closed files' statistics summed in one record, not grown | `file_statistics_stay_bounded_*` |
//! | a path longer than MNTPATHLEN (1,024 bytes) | longer prefixes are never sent to MOUNT; a longer export is refused before sending | `mount_path_*` |
//! | 16 callers, `max_inflight=4`, a server that stops answering | 4 calls on the wire, 12 callers wait (no unbounded queue); all complete when it answers | `full_in_flight_table_*` |
//! | 8 threads of I/O while connections keep breaking | no error, no wrong data, every call completed once | `concurrent_io_through_*` |
//! | names over 255 bytes, removing the export root | `InvalidInput` before anything is sent | `names_longer_than_255_*` |
//! | offsets near u64::MAX from the caller | error, no panic, no wrap-around | `*_offset_near_u64_max_*` |

use directnfs_testkit::hostile as harness;

// `watch::largest_allocation` counts through this allocator.
#[global_allocator]
static ALLOCATOR: harness::watch::Counting = harness::watch::Counting;

use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use directnfs::config::NfsUrl;
use directnfs::{Client, Error, File, FileType, OpenOptions, Target};
use directnfs_wire::mount::mountstat3;
use directnfs_wire::nfs3::nfsstat3;
use directnfs_wire::rpc::{AcceptStat, AcceptedReply, AuthStat, RejectedReply};

use harness::watch::{
    allocations_on_this_thread, assert_no_internal_panic, largest_allocation, memory_lock,
    peak_rss_kib, within, within_or,
};
use harness::{
    absurd_attr, pattern_at, Fault, HostileServer, Options, Plan, Proc, ReadShape, DIR_NAME, FILE,
};

/// Soft mount: 1 s per attempt, one retransmission, one connection.
const SOFT: &str = "timeo=10&retrans=1&soft&connections=1";
/// Hard mount with a 1 s timeout.
const HARD: &str = "timeo=10&retrans=1&hard&connections=1";
/// Hard deadline for one soft operation: timeo × (retrans + 1) = 2 s, plus
/// reconnect backoff and scheduling slack.
const SOFT_LIMIT: Duration = Duration::from_secs(6);
/// Hard deadline for mounting.
const MOUNT_LIMIT: Duration = Duration::from_secs(10);
/// Memory a hostile reply may cost at most.
const MEMORY_BOUND: usize = 64 << 20;
/// A single-piece READ: offset and length (below rtmax).
const OFF: u64 = 8192;
const LEN: usize = 4096;

fn connect(server: &HostileServer, options: &str) -> directnfs::Result<Client> {
    let url = server.url(options);
    within("connect", MOUNT_LIMIT, move || Client::connect(&url)).0
}

/// Unstable mode without write-behind: `write_at` returns once its WRITE
/// is answered. For the tests that make the server lose acknowledged data
/// right after `write_at` returns (with write-behind the WRITEs could still
/// be in flight then: `write_behind_*` tests cover that case).
const UNSTABLE_SYNC: &str = "stable=unstable&write_behind=0";

fn mount(server: &HostileServer, options: &str) -> (Client, File) {
    let client = connect(server, options).unwrap_or_else(|e| panic!("mount failed: {e}"));
    let c = client.clone();
    let file = within("open", SOFT_LIMIT, move || c.open(FILE))
        .0
        .unwrap_or_else(|e| panic!("open failed: {e}"));
    (client, file)
}

fn read(file: &File, offset: u64, len: usize) -> (directnfs::Result<Vec<u8>>, Duration) {
    let f = file.clone();
    within("read_at", SOFT_LIMIT, move || {
        let mut buf = vec![0u8; len];
        f.read_at(&mut buf, offset).map(|n| {
            buf.truncate(n);
            buf
        })
    })
}

fn read_exact(file: &File, offset: u64, len: usize) -> (directnfs::Result<Vec<u8>>, Duration) {
    let f = file.clone();
    within("read_exact_at", SOFT_LIMIT, move || {
        let mut buf = vec![0u8; len];
        f.read_exact_at(&mut buf, offset).map(|()| buf)
    })
}

fn write(file: &File, offset: u64, len: usize) -> (directnfs::Result<usize>, Duration) {
    let f = file.clone();
    within("write_at", SOFT_LIMIT, move || {
        f.write_at(&pattern_at(offset, len), offset)
    })
}

/// Asserts a correct read of the file's pattern.
fn assert_reads_ok(file: &File, offset: u64, len: usize) {
    let (r, _) = read(file, offset, len);
    let data = r.unwrap_or_else(|e| panic!("read at {offset} failed: {e}"));
    assert_eq!(data.len(), len, "short read at {offset}");
    assert!(data == pattern_at(offset, len), "wrong data at {offset}");
}

fn is_protocol(e: &Error) -> bool {
    matches!(e, Error::Protocol { .. }) && e.errno() == libc::EIO
}

fn is_timeout(e: &Error) -> bool {
    matches!(e, Error::TimedOut { .. }) && e.kind() == ErrorKind::TimedOut
}

fn is_rpc(e: &Error) -> bool {
    matches!(e, Error::Rpc { .. }) && e.errno() == libc::EIO
}

/// A mount with `plan` applied from the start, and a read at [`OFF`].
fn read_with(
    plan: Plan,
    options: &str,
) -> (HostileServer, File, directnfs::Result<Vec<u8>>, Duration) {
    let server = HostileServer::start(plan);
    let (_client, file) = mount(&server, options);
    let (r, t) = read(&file, OFF, LEN);
    (server, file, r, t)
}

// ---------------------------------------------------------------------------
// Broken records and connections

#[test]
fn truncated_record_then_close_is_a_protocol_error_and_the_next_read_reconnects() {
    let (server, file, r, _) = read_with(
        Plan::once(Proc::READ, Fault::TruncatedRecordThenClose),
        SOFT,
    );
    let e = r.unwrap_err();
    assert!(is_protocol(&e), "{e:?}");
    assert_reads_ok(&file, OFF, LEN);
    assert!(server.connections() >= 2, "no reconnect");
    assert_no_internal_panic();
}

#[test]
fn close_mid_record_is_retried_on_a_new_connection() {
    let (server, file, r, t) = read_with(Plan::once(Proc::READ, Fault::CloseMidRecord), SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    // Retried at once on reconnect, not after waiting out timeo.
    assert!(t < Duration::from_millis(900), "{t:?}");
    assert_eq!(server.count(Proc::READ), 2);
    assert!(server.connections() >= 2);
    assert_reads_ok(&file, 0, LEN);
    assert_no_internal_panic();
}

#[test]
fn close_after_first_fragment_is_retried_on_a_new_connection() {
    let (server, _file, r, _) =
        read_with(Plan::once(Proc::READ, Fault::CloseAfterFirstFragment), SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn close_without_reply_is_retried_on_a_new_connection() {
    let (server, _file, r, _) = read_with(Plan::once(Proc::READ, Fault::CloseWithoutReply), SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn close_mid_record_every_time_fails_a_soft_mount_with_etimedout() {
    let (server, _file, r, t) = read_with(Plan::always(Proc::READ, Fault::CloseMidRecord), SOFT);
    let e = r.unwrap_err();
    assert!(is_timeout(&e), "{e:?}");
    assert_eq!(e.errno(), libc::ETIMEDOUT);
    // retrans=1: the first send and one retransmission.
    assert_eq!(server.count(Proc::READ), 2);
    assert!(t < SOFT_LIMIT);
    assert_no_internal_panic();
}

#[test]
fn reply_then_close_next_call_reconnects_transparently() {
    let (server, file, r, _) = read_with(Plan::times(Proc::READ, Fault::ReplyThenClose, 3), SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_reads_ok(&file, 0, LEN);
    assert_reads_ok(&file, 65536, LEN);
    assert_reads_ok(&file, 3 * 65536, LEN);
    assert!(server.connections() >= 4, "{}", server.connections());
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Record marking: huge and endless fragments, legal small fragments

fn assert_memory_bounded(largest_before: usize, rss_before: u64) {
    let largest = largest_allocation();
    assert!(
        largest < MEMORY_BOUND || largest == largest_before,
        "an allocation of {largest} bytes was made"
    );
    let grown = peak_rss_kib().saturating_sub(rss_before) * 1024;
    assert!(
        grown < MEMORY_BOUND as u64,
        "peak RSS grew by {grown} bytes"
    );
}

#[test]
fn fragment_of_2gib_is_refused_without_allocating_it() {
    let _serial = memory_lock();
    for last in [true, false] {
        let (largest, rss) = (largest_allocation(), peak_rss_kib());
        let server = HostileServer::start(Plan::once(Proc::READ, Fault::HugeFragment { last }));
        // timeo 5 s: a retry well before it proves the header was refused
        // on sight, not waited for.
        let (_client, file) = mount(&server, "timeo=50&retrans=1&soft&connections=1");
        let (r, t) = read(&file, OFF, LEN);
        assert!(r.unwrap() == pattern_at(OFF, LEN), "last={last}");
        assert!(
            t < Duration::from_millis(2500),
            "waited {t:?} (last={last})"
        );
        assert_eq!(server.count(Proc::READ), 2);
        assert_memory_bounded(largest, rss);
    }
    assert_no_internal_panic();
}

#[test]
fn fragment_of_2gib_every_time_fails_a_soft_read() {
    let _serial = memory_lock();
    let (largest, rss) = (largest_allocation(), peak_rss_kib());
    let (_server, _file, r, _) = read_with(
        Plan::always(Proc::READ, Fault::HugeFragment { last: true }),
        SOFT,
    );
    assert!(is_timeout(&r.unwrap_err()));
    assert_memory_bounded(largest, rss);
    assert_no_internal_panic();
}

#[test]
fn fragment_of_2gib_in_the_null_probe_fails_connect() {
    let _serial = memory_lock();
    let (largest, rss) = (largest_allocation(), peak_rss_kib());
    let server = HostileServer::start(Plan::always(Proc::NULL, Fault::HugeFragment { last: true }));
    let e = connect(&server, SOFT).unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    assert_memory_bounded(largest, rss);
    assert_no_internal_panic();
}

#[test]
fn fragment_of_2gib_in_the_mnt_reply_fails_mount() {
    let _serial = memory_lock();
    let (largest, rss) = (largest_allocation(), peak_rss_kib());
    let server = HostileServer::start(Plan::always(Proc::MNT, Fault::HugeFragment { last: true }));
    let e = connect(&server, SOFT).unwrap_err();
    assert!(is_protocol(&e), "{e:?}");
    assert_memory_bounded(largest, rss);
    assert_no_internal_panic();
}

#[test]
fn endless_fragments_are_cut_at_the_record_limit_and_retried() {
    let _serial = memory_lock();
    let (largest, rss) = (largest_allocation(), peak_rss_kib());
    let (server, _file, r, _) = read_with(Plan::once(Proc::READ, Fault::FragmentFlood), SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 2);
    assert_memory_bounded(largest, rss);
    assert_no_internal_panic();
}

#[test]
fn read_reply_split_into_fragments_is_reassembled() {
    let plan = Plan::always(
        Proc::READ,
        Fault::SplitFragments {
            size: 100,
            gap: Duration::from_millis(1),
        },
    );
    let (server, _file, r, _) = read_with(plan, SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 1);
    assert_no_internal_panic();
}

#[test]
fn null_reply_split_into_fragments_is_reassembled() {
    let split = Fault::SplitFragments {
        size: 8,
        gap: Duration::from_millis(30),
    };
    let server = HostileServer::start(Plan::always(Proc::NULL, split));
    let (_client, file) = mount(&server, SOFT);
    assert_reads_ok(&file, OFF, LEN);
    assert_no_internal_panic();
}

#[test]
fn mnt_reply_split_into_fragments_is_reassembled() {
    let split = Fault::SplitFragments {
        size: 8,
        gap: Duration::from_millis(30),
    };
    let server = HostileServer::start(Plan::always(Proc::MNT, split));
    let (_client, file) = mount(&server, SOFT);
    assert_reads_ok(&file, OFF, LEN);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// XIDs

#[test]
fn reply_with_wrong_xid_is_dropped_and_the_call_retried_after_timeo() {
    let (server, _file, r, t) = read_with(Plan::once(Proc::READ, Fault::WrongXid), SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert!(
        t >= Duration::from_millis(900),
        "retried before timeo: {t:?}"
    );
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn reply_with_wrong_xid_every_time_fails_a_soft_read() {
    let (server, _file, r, t) = read_with(Plan::always(Proc::READ, Fault::WrongXid), SOFT);
    assert!(is_timeout(&r.unwrap_err()));
    assert!(t >= Duration::from_millis(1900), "{t:?}");
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn duplicate_reply_is_dropped_and_completes_no_other_call() {
    let plan = Plan::always(
        Proc::READ,
        Fault::Duplicate {
            gap: Duration::from_millis(5),
        },
    );
    let server = HostileServer::start(plan);
    let (_client, file) = mount(&server, SOFT);
    // Each read's duplicate arrives while the next read is in flight.
    for i in 0..40u64 {
        assert_reads_ok(&file, i * 4096 + 17, 1000 + i as usize);
    }
    assert_eq!(server.count(Proc::READ), 40);
    assert_no_internal_panic();
}

#[test]
fn unsolicited_replies_and_runt_records_are_dropped() {
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Unsolicited));
    let (_client, file) = mount(&server, SOFT);
    for i in 0..20u64 {
        assert_reads_ok(&file, i * 8192, LEN);
    }
    assert_eq!(server.count(Proc::READ), 20);
    assert_no_internal_panic();
}

#[test]
fn flood_of_unsolicited_replies_is_dropped_in_bounded_memory() {
    let _serial = memory_lock();
    let (largest, rss) = (largest_allocation(), peak_rss_kib());
    let server = HostileServer::start(Plan::once(Proc::READ, Fault::UnsolicitedFlood(20_000)));
    let (_client, file) = mount(&server, SOFT);
    let (r, _) = read(&file, OFF, 512);
    assert!(r.unwrap() == pattern_at(OFF, 512));
    assert_eq!(server.count(Proc::READ), 1);
    assert_memory_bounded(largest, rss);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// READ payloads

#[test]
fn read_reply_with_more_data_than_asked_is_an_error_and_writes_nothing_past_the_buffer() {
    let shape = ReadShape {
        data_len: Some(LEN as u32 + 100),
        ..Default::default()
    };
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Read(shape)));
    let (_client, file) = mount(&server, SOFT);
    let f = file.clone();
    let (r, _) = within("read_at into a sub-slice", SOFT_LIMIT, move || {
        let mut big = vec![0xa5u8; LEN + 4096];
        let r = f.read_at(&mut big[..LEN], OFF);
        (r, big)
    });
    let (r, big) = r;
    assert!(is_protocol(&r.unwrap_err()));
    assert!(
        big[LEN..].iter().all(|&b| b == 0xa5),
        "bytes written past the buffer"
    );
    // A protocol error is not retried: the reply was delivered, and wrong.
    assert_eq!(server.count(Proc::READ), 1);
    assert_no_internal_panic();
}

#[test]
fn read_reply_whose_count_exceeds_its_data_is_an_error() {
    let shape = ReadShape {
        count: Some(LEN as u32),
        data_len: Some(LEN as u32 - 8),
        ..Default::default()
    };
    let (_s, _f, r, _) = read_with(Plan::always(Proc::READ, Fault::Read(shape)), SOFT);
    assert!(is_protocol(&r.unwrap_err()));
    assert_no_internal_panic();
}

#[test]
fn read_reply_whose_count_is_less_than_its_data_is_an_error() {
    let shape = ReadShape {
        count: Some(LEN as u32 - 8),
        ..Default::default()
    };
    let (_s, _f, r, _) = read_with(Plan::always(Proc::READ, Fault::Read(shape)), SOFT);
    assert!(is_protocol(&r.unwrap_err()));
    assert_no_internal_panic();
}

#[test]
fn read_reply_with_eof_mid_file_is_a_short_read_never_wrong_data() {
    let shape = ReadShape {
        eof: Some(true),
        ..Default::default()
    };
    // 192 KiB = three 64 KiB pieces; the first says EOF.
    let server = HostileServer::start(Plan::once(Proc::READ, Fault::Read(shape)));
    let (_client, file) = mount(&server, SOFT);
    let len = 3 * 65536;
    let (r, _) = read(&file, 0, len);
    let data = r.unwrap();
    assert!(data.len() <= len);
    assert!(data == pattern_at(0, data.len()), "wrong bytes");
    assert_no_internal_panic();
}

#[test]
fn short_read_without_eof_is_completed_by_read_exact_at() {
    let shape = ReadShape {
        data_len: Some(100),
        eof: Some(false),
        ..Default::default()
    };
    let server = HostileServer::start(Plan::once(Proc::READ, Fault::Read(shape)));
    let (_client, file) = mount(&server, SOFT);
    let (r, _) = read_exact(&file, OFF, LEN);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn short_reads_before_eof_are_completed_by_read_at_and_by_a_batch() {
    // A server that returns 512 bytes per READ (without EOF), whatever
    // was asked: read_at and a batch read still fill the whole buffer,
    // asking for the rest again and again, and never return a short count.
    // (Lengths are multiples of 512: this server would send 512 bytes for
    // a smaller request too, which is an error of its own.)
    let shape = ReadShape {
        data_len: Some(512),
        eof: Some(false),
        ..Default::default()
    };
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Read(shape)));
    let (_client, file) = mount(&server, SOFT);
    let (r, _) = read(&file, OFF, LEN);
    assert!(
        r.unwrap() == pattern_at(OFF, LEN),
        "read_at: full, right bytes"
    );
    assert_eq!(server.count(Proc::READ), LEN / 512);
    // Three pieces (rtmax is 64 KiB), each answered 512 bytes at a time.
    let len = 2 * 65536 + 4096;
    let (r, _) = read(&file, 0, len);
    assert!(
        r.unwrap() == pattern_at(0, len),
        "a split read_at: full, right bytes"
    );
    let r = batch_reads(&file, 3);
    for (i, r) in r.into_iter().enumerate() {
        let offset = OFF + (i * LEN) as u64;
        assert!(r.unwrap() == pattern_at(offset, LEN), "batch read {i}");
    }
    assert_no_internal_panic();
}

#[test]
fn read_reply_of_zero_bytes_without_eof_reads_as_zero_and_never_loops() {
    let shape = ReadShape {
        data_len: Some(0),
        eof: Some(false),
        ..Default::default()
    };
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Read(shape)));
    let (_client, file) = mount(&server, SOFT);
    // read_at: an error (EIO, as in the Linux client): a read is short
    // only at end of file, and asking again would loop for ever. Never a
    // loop, never bytes.
    let (r, _) = read(&file, OFF, LEN);
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Protocol { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EIO);
    let (r, _) = read_exact(&file, OFF, LEN);
    let e = r.unwrap_err();
    assert!(
        matches!(e, Error::InvalidInput(_) | Error::Protocol { .. }),
        "{e:?}"
    );
    assert!(server.count(Proc::READ) <= 4);
    assert_no_internal_panic();
}

#[test]
fn accepted_reply_with_garbage_results_is_a_protocol_error() {
    // NFS3_OK, then a post_op_attr boolean of 9.
    let garbage = vec![0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff];
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Results(garbage.clone())));
    let (client, file) = mount(&server, SOFT);
    let (r, _) = read(&file, OFF, LEN);
    assert!(is_protocol(&r.unwrap_err()));
    server.set_plan(Plan::always(
        Proc::GETATTR,
        Fault::Results(vec![0, 0, 0, 0, 1, 2]),
    ));
    let (r, _) = within("metadata", SOFT_LIMIT, move || client.metadata(FILE));
    assert!(is_protocol(&r.unwrap_err()));
    assert_no_internal_panic();
}

#[test]
fn malformed_write_reply_is_a_protocol_error_for_write_at_and_batch() {
    // NFS3_OK, a pre_op_attr boolean of 1, then the record ends: WRITE
    // replies are decoded where they are received, and a broken one must
    // still reach the caller as `Protocol` (EIO), from both entry points.
    let server = HostileServer::start(Plan::always(
        Proc::WRITE,
        Fault::Results(vec![0, 0, 0, 0, 0, 0, 0, 1, 0, 0]),
    ));
    let (client, file) = mount(&server, SOFT);
    let (r, _) = write(&file, OFF, LEN);
    let e = r.unwrap_err();
    assert!(is_protocol(&e), "write_at: {e:?}");
    let data = vec![3u8; LEN];
    let mut batch = directnfs::Batch::new(&client);
    batch.write(&file, OFF, &data, 7).unwrap();
    let done = batch.wait(1, Some(SOFT_LIMIT));
    assert_eq!(done.len(), 1, "one completion");
    assert_eq!(done[0].token, 7);
    let e = done[0].result.as_ref().unwrap_err();
    assert!(is_protocol(e), "batch: {e:?}");
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Attributes and transfer sizes

#[test]
fn absurd_attributes_are_reported_as_they_are_without_panic() {
    let server = HostileServer::start(Plan::always(Proc::GETATTR, Fault::Attrs(absurd_attr())));
    let (client, file) = mount(&server, SOFT);
    let f = file.clone();
    let (m, _) = within("metadata", SOFT_LIMIT, move || f.metadata());
    let m = m.unwrap();
    assert_eq!(m.size, u64::MAX);
    assert_eq!(m.file_type, FileType::Other);
    assert_eq!(m.mode, 0o7777);
    assert_eq!(m.nlink, u32::MAX);
    let (m2, _) = within("client.metadata", SOFT_LIMIT, move || client.metadata(FILE));
    assert_eq!(m2.unwrap().size, u64::MAX);
    // The size is not trusted for I/O: reads still return what READ says.
    assert_reads_ok(&file, OFF, LEN);
    assert_no_internal_panic();
}

#[test]
fn absurd_attributes_in_lookup_do_not_break_open() {
    let server = HostileServer::start(Plan::always(Proc::LOOKUP, Fault::Attrs(absurd_attr())));
    let (_client, file) = mount(&server, SOFT);
    assert_reads_ok(&file, OFF, LEN);
    assert_no_internal_panic();
}

#[test]
fn fsinfo_with_huge_transfer_sizes_is_clamped_to_one_mib() {
    let fault = Fault::Fsinfo {
        rtmax: u32::MAX,
        wtmax: u32::MAX,
    };
    let opts = Options {
        size: 4 << 20,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::always(Proc::FSINFO, fault));
    let (client, file) = mount(&server, SOFT);
    let l = client.limits();
    assert_eq!((l.server_rtmax, l.server_wtmax), (u32::MAX, u32::MAX));
    assert!(l.rtmax <= 1 << 20 && l.wtmax <= 1 << 20, "{l:?}");
    assert_reads_ok(&file, 0, 3 << 20);
    let (w, _) = write(&file, 0, 2 << 20);
    assert_eq!(w.unwrap(), 2 << 20);
    assert_no_internal_panic();
}

#[test]
fn fsinfo_with_zero_or_tiny_transfer_sizes_falls_back_to_a_floor() {
    let fault = Fault::Fsinfo { rtmax: 0, wtmax: 1 };
    let server = HostileServer::start(Plan::always(Proc::FSINFO, fault));
    let (client, file) = mount(&server, SOFT);
    let l = client.limits();
    assert!(l.rtmax >= 512 && l.wtmax >= 512, "{l:?}");
    assert_reads_ok(&file, OFF, LEN);
    let (w, _) = write(&file, 0, 3000);
    assert_eq!(w.unwrap(), 3000);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// MSG_DENIED and accept_stat

#[test]
fn rpc_version_mismatch_is_an_rpc_error_without_retry() {
    let fault = Fault::Denied(RejectedReply::RpcMismatch { low: 3, high: 4 });
    let (server, _f, r, t) = read_with(Plan::always(Proc::READ, fault), SOFT);
    let e = r.unwrap_err();
    assert!(is_rpc(&e), "{e:?}");
    assert!(e.to_string().contains("mismatch"), "{e}");
    assert_eq!(server.count(Proc::READ), 1);
    assert!(t < Duration::from_millis(900));
    assert_no_internal_panic();
}

/// An `Auth` error (EACCES, PermissionDenied) naming `stat`.
fn assert_auth_error(e: &Error, stat: AuthStat) {
    assert!(
        matches!(e, Error::Auth { status, .. } if *status == stat),
        "{stat:?}: {e:?}"
    );
    assert_eq!(e.errno(), libc::EACCES, "{stat:?}: {e}");
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{stat:?}: {e}");
    let msg = e.to_string();
    assert!(
        msg.contains("rejected the credentials") && msg.contains(&stat.to_string()),
        "{msg}"
    );
}

#[test]
fn auth_error_is_eacces_without_retry() {
    let server = HostileServer::start(Plan::none());
    let (_client, file) = mount(&server, SOFT);
    for stat in [
        AuthStat::AUTH_BADCRED,
        AuthStat::AUTH_REJECTEDCRED,
        AuthStat::AUTH_TOOWEAK,
        AuthStat(0x1234),
    ] {
        // The data path (READ, WRITE) and the record path (GETATTR).
        for proc_ in [Proc::READ, Proc::WRITE, Proc::GETATTR] {
            server.set_plan(Plan::always(
                proc_,
                Fault::Denied(RejectedReply::AuthError(stat)),
            ));
            let before = server.count(proc_);
            let e = match proc_ {
                Proc::READ => read(&file, OFF, LEN).0.unwrap_err(),
                Proc::WRITE => write(&file, OFF, LEN).0.unwrap_err(),
                _ => {
                    let f = file.clone();
                    within("metadata", SOFT_LIMIT, move || f.metadata())
                        .0
                        .unwrap_err()
                }
            };
            assert_auth_error(&e, stat);
            assert_eq!(
                server.count(proc_),
                before + 1,
                "{proc_:?} {stat:?} was retried"
            );
        }
    }
    assert_no_internal_panic();
}

#[test]
fn auth_error_at_mnt_fails_mount_with_eacces() {
    for stat in [AuthStat::AUTH_BADCRED, AuthStat::AUTH_TOOWEAK] {
        let server = HostileServer::start(Plan::always(
            Proc::MNT,
            Fault::Denied(RejectedReply::AuthError(stat)),
        ));
        let e = connect(&server, SOFT).unwrap_err();
        assert_auth_error(&e, stat);
    }
    assert_no_internal_panic();
}

#[test]
fn every_accept_stat_is_an_rpc_error_without_retry() {
    let server = HostileServer::start(Plan::none());
    let (client, file) = mount(&server, SOFT);
    let stats = [
        AcceptedReply::Error(AcceptStat::PROG_UNAVAIL),
        AcceptedReply::ProgMismatch { low: 2, high: 2 },
        AcceptedReply::Error(AcceptStat::PROC_UNAVAIL),
        AcceptedReply::Error(AcceptStat::GARBAGE_ARGS),
        AcceptedReply::Error(AcceptStat::SYSTEM_ERR),
        AcceptedReply::Error(AcceptStat(77)),
    ];
    for stat in stats {
        for on in [Proc::READ, Proc::WRITE, Proc::GETATTR] {
            server.set_plan(Plan::always(on, Fault::Accepted(stat.clone())));
            let before = server.count(on);
            let e = match on {
                Proc::READ => read(&file, OFF, LEN).0.unwrap_err(),
                Proc::WRITE => write(&file, OFF, LEN).0.unwrap_err(),
                _ => {
                    let c = client.clone();
                    within("metadata", SOFT_LIMIT, move || c.metadata(FILE))
                        .0
                        .unwrap_err()
                }
            };
            assert!(is_rpc(&e), "{stat:?} on {on:?}: {e:?}");
            assert_eq!(
                server.count(on),
                before + 1,
                "{stat:?} on {on:?} was retried"
            );
        }
    }
    assert_no_internal_panic();
}

#[test]
fn denied_or_refused_null_probe_fails_connect() {
    for fault in [
        Fault::Denied(RejectedReply::AuthError(AuthStat::AUTH_TOOWEAK)),
        Fault::Denied(RejectedReply::RpcMismatch { low: 3, high: 3 }),
        Fault::Accepted(AcceptedReply::Error(AcceptStat::PROG_UNAVAIL)),
        Fault::Accepted(AcceptedReply::ProgMismatch { low: 4, high: 4 }),
    ] {
        let server = HostileServer::start(Plan::always(Proc::NULL, fault.clone()));
        let e = connect(&server, SOFT).unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{fault:?}: {e:?}");
    }
    assert_no_internal_panic();
}

#[test]
fn denied_mnt_fails_mount_with_an_rpc_error() {
    // (AUTH_ERROR at MNT: `auth_error_at_mnt_fails_mount_with_eacces`.)
    let fault = Fault::Denied(RejectedReply::RpcMismatch { low: 3, high: 3 });
    let server = HostileServer::start(Plan::always(Proc::MNT, fault));
    let e = connect(&server, SOFT).unwrap_err();
    assert!(is_rpc(&e), "{e:?}");
    assert!(e.to_string().contains("mismatch"), "{e}");
    assert_no_internal_panic();
}

#[test]
fn refused_or_garbled_export_list_falls_back_to_probing_prefixes() {
    for fault in [
        Fault::Accepted(AcceptedReply::Error(AcceptStat::PROC_UNAVAIL)),
        Fault::Results(vec![0, 0, 0, 1, 0xff]),
        Fault::Silent,
    ] {
        let server = HostileServer::start(Plan::always(Proc::EXPORT, fault.clone()));
        let (client, file) = mount(&server, &format!("{SOFT}&mnt_timeout=1"));
        assert_eq!(client.export(), "/export", "{fault:?}");
        assert_reads_ok(&file, OFF, LEN);
    }
    assert_no_internal_panic();
}

#[test]
fn accept_errors_at_mount_fail_it_with_an_rpc_error() {
    for stat in [
        AcceptedReply::Error(AcceptStat::PROG_UNAVAIL),
        AcceptedReply::ProgMismatch { low: 1, high: 2 },
        AcceptedReply::Error(AcceptStat::SYSTEM_ERR),
    ] {
        let server = HostileServer::start(Plan::always(Proc::MNT, Fault::Accepted(stat.clone())));
        let e = connect(&server, SOFT).unwrap_err();
        assert!(is_rpc(&e), "{stat:?}: {e:?}");
    }
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Silence and trickles

#[test]
fn silent_server_fails_a_soft_read_with_etimedout_on_time() {
    let (server, _f, r, t) = read_with(Plan::always(Proc::READ, Fault::Silent), SOFT);
    let e = r.unwrap_err();
    assert!(is_timeout(&e), "{e:?}");
    // timeo × (retrans + 1) = 2 s.
    assert!(t >= Duration::from_millis(1900), "gave up early: {t:?}");
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn silent_server_fails_a_soft_write_with_etimedout_on_time() {
    let server = HostileServer::start(Plan::always(Proc::WRITE, Fault::Silent));
    let (_client, file) = mount(&server, SOFT);
    let (r, _) = write(&file, OFF, LEN);
    assert!(is_timeout(&r.unwrap_err()));
    assert_eq!(server.count(Proc::WRITE), 2);
    assert_no_internal_panic();
}

#[test]
fn silent_server_is_retried_until_it_answers_on_a_hard_mount() {
    let server = HostileServer::start(Plan::times(Proc::READ, Fault::Silent, 3));
    let (_client, file) = mount(&server, HARD);
    let f = file.clone();
    let (r, t) = within("hard read", Duration::from_secs(10), move || {
        let mut b = vec![0u8; LEN];
        f.read_at(&mut b, OFF).map(|_| b)
    });
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert!(t >= Duration::from_millis(2900), "{t:?}");
    assert_eq!(server.count(Proc::READ), 4);
    assert_no_internal_panic();
}

#[test]
fn hard_mount_waits_while_the_server_is_silent_and_resumes_when_it_answers() {
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Silent));
    let (_client, file) = mount(&server, HARD);
    let (tx, rx) = std::sync::mpsc::channel();
    let f = file.clone();
    std::thread::spawn(move || {
        let mut b = vec![0u8; LEN];
        let _ = tx.send(f.read_at(&mut b, OFF).map(|_| b));
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(4)).is_err(),
        "a hard mount returned while the server was silent"
    );
    server.set_plan(Plan::none());
    let r = rx
        .recv_timeout(Duration::from_secs(6))
        .expect("did not resume after the server answered again");
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_no_internal_panic();
}

#[test]
fn silent_null_probe_fails_connect_within_timeo() {
    let server = HostileServer::start(Plan::always(Proc::NULL, Fault::Silent));
    let url = server.url(SOFT);
    let (r, t) = within("connect", Duration::from_secs(5), move || {
        Client::connect(&url)
    });
    assert!(matches!(r.unwrap_err(), Error::Connect { .. }));
    assert!(t < Duration::from_secs(3), "{t:?}");
    assert_no_internal_panic();
}

#[test]
fn silent_mnt_fails_mount_within_mnt_timeout() {
    let server = HostileServer::start(Plan::always(Proc::MNT, Fault::Silent));
    let url = server.url(&format!("{SOFT}&mnt_timeout=2"));
    let (r, _) = within("connect", Duration::from_secs(7), move || {
        Client::connect(&url)
    });
    assert!(r.is_err());
    assert_no_internal_panic();
}

#[test]
fn trickled_read_reply_fails_a_soft_read_on_time() {
    let plan = Plan::always(Proc::READ, Fault::Trickle(Duration::from_secs(1)));
    let (server, _f, r, _) = read_with(plan, SOFT);
    assert!(is_timeout(&r.unwrap_err()));
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn trickled_read_reply_once_is_retried() {
    let plan = Plan::once(Proc::READ, Fault::Trickle(Duration::from_secs(1)));
    let (server, _f, r, _) = read_with(plan, SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn trickled_null_probe_fails_connect_within_timeo() {
    let server = HostileServer::start(Plan::always(
        Proc::NULL,
        Fault::Trickle(Duration::from_secs(1)),
    ));
    let url = server.url("timeo=20&retrans=1&soft&connections=1");
    let (r, _) = within("connect", Duration::from_secs(7), move || {
        Client::connect(&url)
    });
    assert!(r.is_err());
    assert_no_internal_panic();
}

#[test]
fn trickled_mnt_reply_fails_mount_within_mnt_timeout() {
    let server = HostileServer::start(Plan::always(
        Proc::MNT,
        Fault::Trickle(Duration::from_secs(1)),
    ));
    let url = server.url(&format!("{SOFT}&mnt_timeout=2"));
    let (r, _) = within("connect", Duration::from_secs(7), move || {
        Client::connect(&url)
    });
    assert!(r.is_err());
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// NFS statuses

#[test]
fn jukebox_on_read_is_retried_until_it_clears() {
    // Hard mount: JUKEBOX ("try again later") is retried for as long as it lasts.
    let plan = Plan::times(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_JUKEBOX), 3);
    let (server, _f, r, _) = read_with(plan, HARD);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 4);
    // Soft mount, retrans=1: one JUKEBOX is retried.
    let plan = Plan::once(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_JUKEBOX));
    let (server, _f, r, _) = read_with(plan, SOFT);
    assert!(r.unwrap() == pattern_at(OFF, LEN));
    assert_eq!(server.count(Proc::READ), 2);
    assert_no_internal_panic();
}

#[test]
fn persistent_jukebox_fails_a_soft_read() {
    let plan = Plan::always(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_JUKEBOX));
    let server = Arc::new(HostileServer::start(plan));
    let (_client, file) = mount(&server, SOFT);
    let s = Arc::clone(&server);
    let (r, _) = within_or(
        "read_at",
        SOFT_LIMIT,
        move || file.read_at(&mut [0u8; LEN], OFF),
        move || format!("after {} READs", s.count(Proc::READ)),
    );
    let e = r.unwrap_err();
    assert_eq!(e.nfs_status(), Some(nfsstat3::NFS3ERR_JUKEBOX));
    assert_no_internal_panic();
}

#[test]
fn persistent_jukebox_fails_a_soft_write_and_getattr_with_eagain() {
    let server = HostileServer::start(Plan::always(
        Proc::WRITE,
        Fault::Status(nfsstat3::NFS3ERR_JUKEBOX),
    ));
    let (client, file) = mount(&server, SOFT);
    let e = write(&file, OFF, LEN).0.unwrap_err();
    assert_eq!(e.nfs_status(), Some(nfsstat3::NFS3ERR_JUKEBOX), "{e:?}");
    assert_eq!(e.errno(), libc::EAGAIN);
    server.set_plan(Plan::always(
        Proc::GETATTR,
        Fault::Status(nfsstat3::NFS3ERR_JUKEBOX),
    ));
    let (r, _) = within("metadata", SOFT_LIMIT, move || client.metadata(FILE));
    assert_eq!(r.unwrap_err().nfs_status(), Some(nfsstat3::NFS3ERR_JUKEBOX));
    assert_no_internal_panic();
}

/// Reads `n` blocks of `LEN` (at `OFF`, `OFF + LEN`, ...) through one
/// batch and returns each completion's result and data, by token.
fn batch_reads(file: &File, n: usize) -> Vec<directnfs::Result<Vec<u8>>> {
    let f = file.clone();
    within("batch reads", SOFT_LIMIT, move || {
        let mut batch = directnfs::Batch::new(f.client());
        for i in 0..n {
            let offset = OFF + (i * LEN) as u64;
            batch
                .read_owned(&f, offset, vec![0u8; LEN], i as u64)
                .unwrap_or_else(|e| panic!("read_owned: {e}"));
        }
        let mut out: Vec<Option<directnfs::Result<Vec<u8>>>> = (0..n).map(|_| None).collect();
        let mut done = 0;
        while done < n {
            for c in batch.wait(n, None) {
                let buf = c.buffer.unwrap_or_default();
                out[c.token as usize] = Some(c.result.map(|k| buf[..k].to_vec()));
                done += 1;
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| panic!("a completion is missing")))
            .collect()
    })
    .0
}

#[test]
fn jukebox_on_batch_reads_and_writes_is_retried_on_a_hard_mount() {
    // The engine retries JUKEBOX for every request: a Batch's (and so the
    // C library's dnfs_batch_*) as well as the blocking calls'.
    let plan = Plan::times(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_JUKEBOX), 3);
    let server = HostileServer::start(plan);
    let (client, file) = mount(&server, HARD);
    for (i, r) in batch_reads(&file, 4).into_iter().enumerate() {
        let offset = OFF + (i * LEN) as u64;
        assert!(r.unwrap() == pattern_at(offset, LEN), "read {i}");
    }
    assert_eq!(
        server.count(Proc::READ),
        4 + 3,
        "each JUKEBOX answer was re-sent"
    );
    server.set_plan(Plan::times(
        Proc::WRITE,
        Fault::Status(nfsstat3::NFS3ERR_JUKEBOX),
        2,
    ));
    let f = file.clone();
    let (results, _) = within("batch writes", SOFT_LIMIT, move || {
        let mut batch = directnfs::Batch::new(&client);
        for i in 0..2u64 {
            batch
                .write(&f, OFF + i * LEN as u64, &pattern_at(OFF, LEN), i)
                .unwrap();
        }
        let mut results = Vec::new();
        while results.len() < 2 {
            results.extend(batch.wait(2, None).into_iter().map(|c| c.result));
        }
        results
    });
    for r in results {
        assert_eq!(r.unwrap(), LEN);
    }
    assert_eq!(server.count(Proc::WRITE), 2 + 2);
    assert_no_internal_panic();
}

/// The book's "Getting started": a batch reuses its finished calls and buffers, so in a
/// steady stream of I/O a read allocates nothing and a write one block
/// (the copy of its data that is sent). Counted on the thread that
/// submits and reaps (it also receives the replies while it waits); the
/// server's threads are not counted.
#[test]
fn a_steady_stream_of_batch_reads_allocates_nothing_and_a_write_one_block() {
    let server = HostileServer::start(Plan::none());
    let (_client, file) = mount(&server, HARD);
    let ((warm, steady, ops), _) = within("steady batch I/O", Duration::from_secs(60), move || {
        let mut batch = directnfs::Batch::new(file.client());
        let mut done = Vec::with_capacity(64);
        let mut bufs: Vec<Vec<u8>> = (0..16).map(|_| vec![0u8; LEN]).collect();
        let mut round = |batch: &mut directnfs::Batch, bufs: &mut Vec<Vec<u8>>| {
            for (i, buf) in bufs.drain(..).enumerate() {
                let at = OFF + (i * LEN) as u64;
                if i % 4 == 3 {
                    batch.write_owned(&file, at, buf, i as u64).unwrap();
                } else {
                    batch.read_owned(&file, at, buf, i as u64).unwrap();
                }
            }
            while batch.outstanding() > 0 {
                done.clear();
                batch.wait_into(&mut done, 1, None);
                for c in done.drain(..) {
                    assert_eq!(c.result.unwrap(), LEN);
                    bufs.push(c.buffer.expect("owned buffer back"));
                }
            }
        };
        let start = allocations_on_this_thread();
        for _ in 0..50 {
            round(&mut batch, &mut bufs);
        }
        let warm = allocations_on_this_thread() - start;
        let start = allocations_on_this_thread();
        let rounds = 500;
        for _ in 0..rounds {
            round(&mut batch, &mut bufs);
        }
        (warm, allocations_on_this_thread() - start, rounds * 16)
    });
    assert!(warm > 0, "the counting allocator is installed");
    // One per write (a quarter of the operations), nothing per read: a
    // stray allocation now and then (a table growing once) is allowed, one
    // per 100 operations is not.
    let writes = ops / 4;
    assert!(
        steady >= writes && steady - writes < ops / 100,
        "{steady} allocations for {ops} operations ({writes} writes) in steady state \
         ({warm} while warming up)"
    );
    assert_no_internal_panic();
}

#[test]
fn persistent_jukebox_fails_a_soft_batch_read_with_eagain_after_retrans() {
    let plan = Plan::always(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_JUKEBOX));
    let server = HostileServer::start(plan);
    let (_client, file) = mount(&server, SOFT);
    let r = batch_reads(&file, 1).remove(0);
    let e = r.unwrap_err();
    assert_eq!(e.nfs_status(), Some(nfsstat3::NFS3ERR_JUKEBOX), "{e:?}");
    assert_eq!(e.errno(), libc::EAGAIN);
    assert_eq!(
        server.count(Proc::READ),
        2,
        "sent once, retried retrans=1 times"
    );
    assert_no_internal_panic();
}

#[test]
fn jukebox_on_the_fsync_repairs_resent_writes_is_retried_on_a_hard_mount() {
    // The server restarts between the WRITEs and fsync's COMMIT (losing
    // them), then answers the repair's first re-sent WRITEs with JUKEBOX:
    // they are sent again after the pause and fsync makes it all durable.
    let len = 3 * 65536;
    let data = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, &format!("{HARD}&{UNSTABLE_SYNC}"));
    write_data(&file, 0, &data);
    server.lose_unstable_data(*b"reboot-1");
    server.set_plan(Plan::times(
        Proc::WRITE,
        Fault::Status(nfsstat3::NFS3ERR_JUKEBOX),
        3,
    ));
    fsync(&file).unwrap();
    assert_eq!(
        count_writes(&server, FILE_SYNC),
        3 + 3,
        "{:?}",
        writes_seen(&server)
    );
    assert_eq!(file.uncommitted_bytes(), 0);
    assert!(
        durable_after_a_crash(&server, 0, len) == data,
        "fsync returned before the data was durable"
    );
    assert_no_internal_panic();
}

#[test]
fn jukebox_for_ever_on_the_repair_fails_a_soft_fsync_and_keeps_the_data() {
    let len = 3 * 65536;
    let data = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, &format!("{SOFT}&{UNSTABLE_SYNC}"));
    write_data(&file, 0, &data);
    server.lose_unstable_data(*b"reboot-1");
    server.set_plan(Plan::always(
        Proc::WRITE,
        Fault::Status(nfsstat3::NFS3ERR_JUKEBOX),
    ));
    let e = fsync(&file).unwrap_err();
    assert_eq!(e.nfs_status(), Some(nfsstat3::NFS3ERR_JUKEBOX), "{e:?}");
    assert_eq!(e.errno(), libc::EAGAIN);
    assert_eq!(file.uncommitted_bytes(), len, "every byte kept");
    server.set_plan(Plan::none());
    fsync(&file).unwrap();
    assert!(durable_after_a_crash(&server, 0, len) == data);
    assert_no_internal_panic();
}

#[test]
fn permission_denied_on_read_and_write_is_eacces() {
    let plan = Plan::always(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_ACCES));
    let (server, file, r, _) = read_with(plan, SOFT);
    let e = r.unwrap_err();
    assert_eq!(e.errno(), libc::EACCES);
    assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    server.set_plan(Plan::always(
        Proc::WRITE,
        Fault::Status(nfsstat3::NFS3ERR_ACCES),
    ));
    assert_eq!(write(&file, OFF, LEN).0.unwrap_err().errno(), libc::EACCES);
    assert_no_internal_panic();
}

#[test]
fn stale_handle_on_read_is_estale() {
    let plan = Plan::always(Proc::READ, Fault::Status(nfsstat3::NFS3ERR_STALE));
    let (_s, _f, r, _) = read_with(plan, SOFT);
    assert_eq!(r.unwrap_err().errno(), libc::ESTALE);
    assert_no_internal_panic();
}

#[test]
fn unknown_nfs_status_is_eio_and_named_in_hex() {
    let plan = Plan::always(Proc::READ, Fault::Status(nfsstat3(0x7777)));
    let (_s, _f, r, _) = read_with(plan, SOFT);
    let e = r.unwrap_err();
    assert_eq!(e.errno(), libc::EIO);
    assert!(e.to_string().contains("0x7777"), "{e}");
    assert_no_internal_panic();
}

#[test]
fn mnt_access_denied_is_a_mount_error_with_eacces() {
    let server = HostileServer::start(Plan::always(
        Proc::MNT,
        Fault::MountStatus(mountstat3::MNT3ERR_ACCES),
    ));
    let e = connect(&server, SOFT).unwrap_err();
    assert!(matches!(e, Error::Mount { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EACCES);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// WRITE counts

#[test]
fn write_reply_claiming_zero_bytes_is_an_error_not_a_loop() {
    let server = Arc::new(HostileServer::start(Plan::always(
        Proc::WRITE,
        Fault::WriteCount(0),
    )));
    let (_client, file) = mount(&server, SOFT);
    let s = Arc::clone(&server);
    let (r, _) = within_or(
        "write_at",
        SOFT_LIMIT,
        move || file.write_at(&[7u8; LEN], OFF),
        move || format!("after {} WRITEs", s.count(Proc::WRITE)),
    );
    assert!(r.is_err());
    assert_no_internal_panic();
}

#[test]
fn write_reply_claiming_more_than_sent_is_clamped() {
    let server = HostileServer::start(Plan::always(Proc::WRITE, Fault::WriteCount(u32::MAX)));
    let (_client, file) = mount(&server, SOFT);
    assert_eq!(write(&file, OFF, LEN).0.unwrap(), LEN);
    assert_eq!(server.count(Proc::WRITE), 1);
    assert_no_internal_panic();
}

#[test]
fn short_write_sends_the_rest_again() {
    let server = HostileServer::start(Plan::once(Proc::WRITE, Fault::WriteCount(100)));
    let (_client, file) = mount(&server, SOFT);
    assert_eq!(write(&file, OFF, LEN).0.unwrap(), LEN);
    assert_eq!(server.count(Proc::WRITE), 2);
    assert_no_internal_panic();
}

#[test]
fn short_write_behind_sends_the_rest_before_fsync_returns() {
    // Write-behind: the short reply is reaped after write_at returned; the
    // rest is sent again, and fsync waits for it as part of that write.
    let server = storing_server();
    server.set_plan(Plan::once(Proc::WRITE, Fault::WriteCount(100)));
    let (_client, file) = mount(&server, &format!("{SOFT}&stable=unstable"));
    let data = distinct_data(LEN);
    write_data(&file, OFF, &data);
    fsync(&file).unwrap();
    assert_eq!(server.count(Proc::WRITE), 2);
    assert_eq!(file.uncommitted_bytes(), 0);
    assert!(durable_after_a_crash(&server, OFF as usize, LEN) == data);
    // A zero-byte reply is an error for the next fsync, not a loop.
    server.set_plan(Plan::always(Proc::WRITE, Fault::WriteCount(0)));
    write_data(&file, OFF, &data);
    assert!(fsync(&file).is_err());
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Retransmitted non-idempotent calls

#[test]
fn retransmitted_remove_whose_first_copy_ran_is_success() {
    // The server removes the file and loses the reply; the retransmission
    // on a new connection (no duplicate request cache) finds nothing.
    let server = HostileServer::start(Plan::once(Proc::REMOVE, Fault::Silent));
    let client = connect(&server, SOFT).unwrap();
    let (r, _) = within("remove", SOFT_LIMIT, move || client.remove(FILE));
    r.unwrap();
    assert_eq!(server.count(Proc::REMOVE), 2);
    assert_no_internal_panic();
}

#[test]
fn remove_of_a_missing_file_sent_once_is_enoent() {
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, SOFT).unwrap();
    let c = client.clone();
    within("remove", SOFT_LIMIT, move || c.remove(FILE))
        .0
        .unwrap();
    let (r, _) = within("remove again", SOFT_LIMIT, move || client.remove(FILE));
    assert_eq!(r.unwrap_err().kind(), ErrorKind::NotFound);
    assert_no_internal_panic();
}

#[test]
fn retransmitted_mkdir_whose_first_copy_ran_is_confirmed_by_lookup() {
    let server = HostileServer::start(Plan::once(Proc::MKDIR, Fault::Silent));
    let client = connect(&server, SOFT).unwrap();
    let c = client.clone();
    within("mkdir", SOFT_LIMIT, move || c.mkdir("/newdir"))
        .0
        .unwrap();
    assert_eq!(server.count(Proc::MKDIR), 2);
    // Sent once, EXIST is EXIST.
    let (r, _) = within("mkdir again", SOFT_LIMIT, move || client.mkdir("/newdir"));
    assert_eq!(r.unwrap_err().kind(), ErrorKind::AlreadyExists);
    assert_no_internal_panic();
}

/// The faults that make the server execute a call and lose its reply: the
/// connection closed at once (re-sent at once on a new connection), or
/// silence (re-sent after `timeo`, on a new connection).
const LOST_REPLY: [Fault; 2] = [Fault::CloseWithoutReply, Fault::Silent];

#[test]
fn retransmitted_rmdir_whose_first_copy_ran_is_success() {
    for fault in LOST_REPLY {
        let server = HostileServer::start(Plan::once(Proc::RMDIR, fault.clone()));
        server.make_dir();
        let client = connect(&server, SOFT).unwrap();
        let path = format!("/{DIR_NAME}");
        let (r, _) = within("rmdir", SOFT_LIMIT, move || client.rmdir(&path));
        r.unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        // The first copy removed it; the second found nothing (NOENT).
        assert_eq!(server.count(Proc::RMDIR), 2, "{fault:?}");
        assert!(!server.dir_exists());
    }
    assert_no_internal_panic();
}

#[test]
fn rmdir_of_a_missing_directory_sent_once_is_enoent() {
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, SOFT).unwrap();
    let (r, _) = within("rmdir", SOFT_LIMIT, move || client.rmdir("/newdir"));
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("RMDIR /newdir"), "{e}");
    assert_eq!(server.count(Proc::RMDIR), 1);
    assert_no_internal_panic();
}

#[test]
fn retransmitted_rename_whose_first_copy_ran_is_success() {
    for fault in LOST_REPLY {
        let server = HostileServer::start(Plan::once(Proc::RENAME, fault.clone()));
        let client = connect(&server, SOFT).unwrap();
        let c = client.clone();
        let (r, _) = within("rename", SOFT_LIMIT, move || c.rename(FILE, "/renamed"));
        r.unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert_eq!(server.count(Proc::RENAME), 2, "{fault:?}");
        assert_eq!(server.file_name().as_deref(), Some("renamed"));
        // The client's view agrees: the old name is gone, the new one reads.
        let c = client.clone();
        let (r, _) = within("open old name", SOFT_LIMIT, move || c.open(FILE));
        assert_eq!(r.unwrap_err().kind(), ErrorKind::NotFound);
        let (r, _) = within("open new name", SOFT_LIMIT, move || client.open("/renamed"));
        assert_reads_ok(&r.unwrap(), OFF, LEN);
    }
    assert_no_internal_panic();
}

#[test]
fn rename_of_a_missing_file_sent_once_is_enoent() {
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, SOFT).unwrap();
    let (r, _) = within("rename", SOFT_LIMIT, move || {
        client.rename("/missing", "/renamed")
    });
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("RENAME /missing"), "{e}");
    assert_eq!(server.count(Proc::RENAME), 1);
    assert_eq!(server.file_name().as_deref(), Some("data"));
    assert_no_internal_panic();
}

fn create_new(client: &Client, path: &str) -> directnfs::Result<File> {
    let c = client.clone();
    let path = path.to_string();
    within("create_new", SOFT_LIMIT, move || {
        c.open_with(
            &path,
            OpenOptions {
                create_new: true,
                ..Default::default()
            },
        )
    })
    .0
}

/// The EXCLUSIVE verifiers of every CREATE the server saw.
fn create_verifiers(server: &HostileServer) -> Vec<Option<[u8; 8]>> {
    server
        .calls()
        .iter()
        .filter(|c| c.proc_ == Some(Proc::CREATE))
        .map(|c| c.verf)
        .collect()
}

#[test]
fn retransmitted_exclusive_create_is_matched_by_its_verifier() {
    for fault in LOST_REPLY {
        // The first copy creates the file and its reply is lost; the
        // retransmission carries the same verifier, which the server
        // matches (RFC 1813 §3.3.8) and answers NFS3_OK.
        let server = HostileServer::start(Plan::once(Proc::CREATE, fault.clone()));
        let client = connect(&server, SOFT).unwrap();
        let file = create_new(&client, "/fresh").unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        let verfs = create_verifiers(&server);
        assert_eq!(verfs.len(), 2, "{fault:?}");
        assert!(verfs[0].is_some(), "not an EXCLUSIVE create: {verfs:?}");
        assert_eq!(
            verfs[0], verfs[1],
            "the retransmission changed the verifier"
        );
        // The mode is set afterwards (EXCLUSIVE carries no attributes).
        assert_eq!(server.count(Proc::SETATTR), 1);
        let f = file.clone();
        within("metadata", SOFT_LIMIT, move || f.metadata())
            .0
            .unwrap();
        // A second exclusive create is a new verifier: EEXIST.
        let e = create_new(&client, "/fresh").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
        let verfs = create_verifiers(&server);
        assert_ne!(verfs[2], verfs[0], "verifiers must differ per create");
    }
    assert_no_internal_panic();
}

#[test]
fn exclusive_create_of_an_existing_file_sent_once_is_eexist() {
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, SOFT).unwrap();
    let e = create_new(&client, FILE).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    assert_eq!(e.errno(), libc::EEXIST);
    assert!(e.to_string().contains("CREATE /data"), "{e}");
    assert_eq!(server.count(Proc::CREATE), 1);
    assert_no_internal_panic();
}

#[test]
fn exclusive_create_retransmitted_to_a_server_that_answers_exist_is_eexist_not_success() {
    // A server that does not keep EXCLUSIVE verifiers answers the
    // retransmission of our own create with EXIST. The client cannot tell
    // that from someone else's file, and `create_new` promises the caller
    // that *it* created the file (lock files, new datafiles): it reports
    // EEXIST rather than claim a success it cannot prove.
    let opts = Options {
        forget_verifiers: true,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::once(Proc::CREATE, Fault::CloseWithoutReply));
    let client = connect(&server, SOFT).unwrap();
    let e = create_new(&client, "/fresh").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    assert_eq!(server.count(Proc::CREATE), 2);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Directory listings

#[test]
fn directory_listing_lists_the_file() {
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, SOFT).unwrap();
    let (r, _) = within("read_dir", SOFT_LIMIT, move || client.read_dir("/"));
    let names: Vec<String> = r.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, vec!["data".to_string()]);
    assert_no_internal_panic();
}

#[test]
fn directory_cookie_loop_is_an_error_not_a_hang() {
    let server = Arc::new(HostileServer::start(Plan::always(
        Proc::READDIRPLUS,
        Fault::DirCookieLoop,
    )));
    let client = connect(&server, SOFT).unwrap();
    let s = Arc::clone(&server);
    let (r, _) = within_or(
        "read_dir",
        SOFT_LIMIT,
        move || client.read_dir("/").map(|v| v.len()),
        move || format!("after {} READDIRPLUS", s.count(Proc::READDIRPLUS)),
    );
    assert!(r.is_err());
    assert_no_internal_panic();
}

#[test]
fn endless_directory_is_an_error_in_bounded_memory() {
    let _serial = memory_lock();
    let rss = peak_rss_kib();
    let server = Arc::new(HostileServer::start(Plan::always(
        Proc::READDIRPLUS,
        Fault::EndlessDir,
    )));
    let client = connect(&server, SOFT).unwrap();
    let s = Arc::clone(&server);
    let (r, _) = within_or(
        "read_dir",
        Duration::from_secs(20),
        move || client.read_dir("/").map(|v| v.len()),
        move || {
            format!(
                "after {} READDIRPLUS, peak RSS +{} MiB",
                s.count(Proc::READDIRPLUS),
                peak_rss_kib().saturating_sub(rss) / 1024
            )
        },
    );
    assert!(r.is_err());
    // The listing is capped (1M entries: about +160 MiB measured).
    let grown = peak_rss_kib().saturating_sub(rss) / 1024;
    eprintln!("endless directory: peak RSS +{grown} MiB");
    assert!(grown < 384, "peak RSS grew by {grown} MiB");
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Server restarts, lost unstable writes, concurrency through failures

/// Reads (checked) and FILE_SYNC writes from `threads` threads until `stop`;
/// returns the errors seen.
fn load(file: &File, threads: usize, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<Vec<String>>> {
    (0..threads)
        .map(|t| {
            let (f, stop) = (file.clone(), Arc::clone(stop));
            std::thread::spawn(move || {
                let mut errors = Vec::new();
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let off = (t as u64 * 7919 + n * 4099) % ((1 << 20) - 8192);
                    let len = 512 + (n as usize * 97) % 7680;
                    let r = if t % 2 == 0 {
                        let mut b = vec![0u8; len];
                        f.read_at(&mut b, off).map(|k| {
                            if b[..k] != pattern_at(off, k)[..] {
                                errors.push(format!("wrong data at {off}"));
                            }
                        })
                    } else {
                        f.write_at(&pattern_at(off, len), off).map(|_| ())
                    };
                    if let Err(e) = r {
                        errors.push(e.to_string());
                    }
                    n += 1;
                }
                errors
            })
        })
        .collect()
}

fn wait_for(what: &str, limit: Duration, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn server_killed_and_restarted_mid_load_is_invisible_on_a_hard_mount() {
    let server = HostileServer::start(Plan::none());
    let (_client, file) = mount(&server, "timeo=10&retrans=1&hard&connections=2");
    let stop = Arc::new(AtomicBool::new(false));
    let workers = load(&file, 4, &stop);
    std::thread::sleep(Duration::from_millis(500));
    server.restart(Duration::from_secs(2));
    wait_for("restart", Duration::from_secs(10), || {
        server.restarts() == 1
    });
    let (reads, writes) = (server.count(Proc::READ), server.count(Proc::WRITE));
    // Reconnect backoff after 2 s of refused connects is at most 1.6 s.
    wait_for("load to resume", Duration::from_secs(8), || {
        server.count(Proc::READ) > reads + 10 && server.count(Proc::WRITE) > writes + 10
    });
    stop.store(true, Ordering::SeqCst);
    let (errors, _) = within("join the load", Duration::from_secs(10), move || {
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(errors.is_empty(), "errors: {errors:?}");
    assert_no_internal_panic();
}

#[test]
fn server_down_longer_than_the_soft_deadline_fails_soft_io_then_recovers() {
    let server = HostileServer::start(Plan::none());
    let (_client, file) = mount(&server, SOFT);
    server.restart(Duration::from_secs(6));
    std::thread::sleep(Duration::from_millis(300));
    let (r, t) = read(&file, OFF, LEN);
    let e = r.unwrap_err();
    assert!(is_timeout(&e), "{e:?}");
    assert!(t < Duration::from_secs(4), "{t:?}");
    wait_for("restart", Duration::from_secs(10), || {
        server.restarts() == 1
    });
    // Back within the reconnect backoff cap (5 s) plus one soft deadline.
    let f = file.clone();
    let (data, _) = within("recovery", Duration::from_secs(12), move || loop {
        let mut b = vec![0u8; LEN];
        if let Ok(n) = f.read_at(&mut b, OFF) {
            b.truncate(n);
            return b;
        }
    });
    assert!(data == pattern_at(OFF, LEN));
    assert_no_internal_panic();
}

#[test]
fn commit_with_a_new_verifier_resends_unstable_writes_with_file_sync() {
    let plan = Plan::always(Proc::COMMIT, Fault::CommitVerifier(*b"rebooted"));
    let server = HostileServer::start(plan);
    let (_client, file) = mount(&server, &format!("{SOFT}&stable=unstable"));
    let len = 3 * 65536;
    assert_eq!(write(&file, 0, len).0.unwrap(), len);
    let f = file.clone();
    within("fsync", SOFT_LIMIT, move || f.fsync()).0.unwrap();
    let writes: Vec<(u64, u32)> = server
        .calls()
        .iter()
        .filter(|c| c.proc_ == Some(Proc::WRITE))
        .map(|c| (c.offset.unwrap(), c.stable.unwrap()))
        .collect();
    let unstable: Vec<u64> = writes.iter().filter(|w| w.1 == 0).map(|w| w.0).collect();
    let mut resent: Vec<u64> = writes.iter().filter(|w| w.1 == 2).map(|w| w.0).collect();
    resent.sort_unstable();
    assert_eq!(unstable.len(), 3, "{writes:?}");
    assert_eq!(resent, vec![0, 65536, 131072], "{writes:?}");
    assert_eq!(file.uncommitted_bytes(), 0);
    assert_no_internal_panic();
}

/// Offsets and stable_how of every WRITE the server saw.
fn writes_seen(server: &HostileServer) -> Vec<(u64, u32)> {
    server
        .calls()
        .iter()
        .filter(|c| c.proc_ == Some(Proc::WRITE))
        .map(|c| (c.offset.unwrap_or(u64::MAX), c.stable.unwrap_or(u32::MAX)))
        .collect()
}

/// `len` bytes no file on the server holds: 0xA5 0x5A 'D' 'B' ... .
fn distinct_data(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| match i % 4 {
            0 => 0xa5,
            1 => 0x5a,
            2 => (i / 4) as u8,
            _ => (i / 1024) as u8,
        })
        .collect()
}

#[test]
fn failed_fsync_keeps_its_data_and_the_next_fsync_commits_it() {
    const UNSTABLE: u32 = 0;
    const FILE_SYNC: u32 = 2;
    let len = 3 * 65536;
    let data = distinct_data(len);
    for fault in [Fault::Status(nfsstat3::NFS3ERR_IO), Fault::Silent] {
        let opts = Options {
            store: true,
            ..Options::default()
        };
        let server = HostileServer::with(opts, Plan::always(Proc::COMMIT, fault.clone()));
        let (_client, file) = mount(&server, &format!("{SOFT}&stable=unstable"));
        let (f, d) = (file.clone(), data.clone());
        let (r, _) = within("write_at", SOFT_LIMIT, move || f.write_at(&d, 0));
        assert_eq!(r.unwrap(), len);
        assert_eq!(file.uncommitted_bytes(), len);

        // COMMIT fails: fsync reports it and keeps every byte.
        let f = file.clone();
        let (r, _) = within("fsync", SOFT_LIMIT, move || f.fsync());
        let e = r.unwrap_err();
        assert!(
            matches!(&fault, Fault::Silent) == is_timeout(&e),
            "{fault:?}: {e:?}"
        );
        assert_eq!(file.uncommitted_bytes(), len, "{fault:?}: data dropped");
        let commits = server.count(Proc::COMMIT);

        // The next fsync finds the server restarted (new verifier): the
        // kept data is sent again, FILE_SYNC, every byte of it.
        server.set_plan(Plan::always(
            Proc::COMMIT,
            Fault::CommitVerifier(*b"rebooted"),
        ));
        let f = file.clone();
        within("fsync again", SOFT_LIMIT, move || f.fsync())
            .0
            .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert!(server.count(Proc::COMMIT) > commits, "no COMMIT sent again");
        let writes = writes_seen(&server);
        let mut resent: Vec<u64> = writes
            .iter()
            .filter(|w| w.1 == FILE_SYNC)
            .map(|w| w.0)
            .collect();
        resent.sort_unstable();
        assert_eq!(
            writes.iter().filter(|w| w.1 == UNSTABLE).count(),
            3,
            "{writes:?}"
        );
        assert_eq!(resent, vec![0, 65536, 131072], "{fault:?}: {writes:?}");
        assert!(server.stored(0, len) == data, "{fault:?}: wrong data");
        assert_eq!(file.uncommitted_bytes(), 0);
    }
    assert_no_internal_panic();
}

#[test]
fn failed_fsync_keeps_its_data_until_a_commit_succeeds() {
    // The same with a plain successful COMMIT (same verifier) the second
    // time: nothing to re-send, and only then is the data let go.
    let server = HostileServer::start(Plan::times(
        Proc::COMMIT,
        Fault::Status(nfsstat3::NFS3ERR_IO),
        2,
    ));
    let (_client, file) = mount(&server, &format!("{SOFT}&stable=unstable"));
    assert_eq!(write(&file, 0, 65536).0.unwrap(), 65536);
    for attempt in 1..=2 {
        let f = file.clone();
        let e = within("fsync", SOFT_LIMIT, move || f.fsync())
            .0
            .unwrap_err();
        assert_eq!(e.errno(), libc::EIO, "attempt {attempt}: {e}");
        assert!(e.to_string().contains("COMMIT"), "{e}");
        assert_eq!(file.uncommitted_bytes(), 65536, "attempt {attempt}");
    }
    let f = file.clone();
    within("fsync", SOFT_LIMIT, move || f.fsync()).0.unwrap();
    assert_eq!(file.uncommitted_bytes(), 0);
    assert_eq!(server.count(Proc::COMMIT), 3);
    // Nothing is re-sent: the verifier matched.
    assert_eq!(server.count(Proc::WRITE), 1);
    assert_no_internal_panic();
}

#[test]
fn file_sync_write_answered_unstable_is_committed_before_write_returns() {
    // A FILE_SYNC write returns once the data is durable (docs/design.md
    // "Semantics"; a database in the default mode never calls fsync).
    // When the server only takes it UNSTABLE, the client COMMITs before
    // returning.
    const FILE_SYNC: u32 = 2;
    let opts = Options {
        downgrade_writes: true,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::none());
    let (_client, file) = mount(&server, SOFT);
    assert_eq!(write(&file, 0, 2 * 65536).0.unwrap(), 2 * 65536);
    assert!(
        writes_seen(&server).iter().all(|w| w.1 == FILE_SYNC),
        "{:?}",
        writes_seen(&server)
    );
    assert_eq!(server.count(Proc::COMMIT), 1, "not committed");
    assert_eq!(file.uncommitted_bytes(), 0);

    // If that COMMIT fails, so does the write, and the data is kept for
    // the next fsync.
    server.set_plan(Plan::once(
        Proc::COMMIT,
        Fault::Status(nfsstat3::NFS3ERR_IO),
    ));
    let e = write(&file, 0, 65536).0.unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    assert!(e.to_string().contains("COMMIT"), "{e}");
    assert_eq!(file.uncommitted_bytes(), 65536);
    let f = file.clone();
    within("fsync", SOFT_LIMIT, move || f.fsync()).0.unwrap();
    assert_eq!(file.uncommitted_bytes(), 0);
    assert_eq!(server.count(Proc::COMMIT), 3);
    assert_no_internal_panic();
}

#[test]
fn file_sync_batch_write_answered_unstable_is_committed_before_it_completes() {
    // The same promise through the batch API: a completed FILE_SYNC write
    // is durable.
    let opts = Options {
        downgrade_writes: true,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::none());
    let (client, file) = mount(&server, SOFT);
    let data = vec![0x3cu8; 3 * 8192];
    let mut batch = directnfs::Batch::new(&client);
    for i in 0..3 {
        batch
            .write(
                &file,
                (i * 8192) as u64,
                &data[i * 8192..(i + 1) * 8192],
                i as u64,
            )
            .unwrap();
    }
    let mut done = Vec::new();
    while done.len() < 3 {
        done.extend(batch.wait(3, Some(SOFT_LIMIT)));
    }
    for c in done {
        assert_eq!(c.result.unwrap(), 8192, "token {}", c.token);
    }
    assert!(server.count(Proc::COMMIT) >= 1, "not committed");
    assert_eq!(file.uncommitted_bytes(), 0);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// A restart found by fsync: the repair itself answered UNSTABLE, restarts
// during the repair, writes concurrent with it

/// stable_how values as the server sees them.
const UNSTABLE: u32 = 0;
const FILE_SYNC: u32 = 2;

/// A server keeping the file's content and what of it is durable.
fn storing_server() -> HostileServer {
    HostileServer::with(
        Options {
            store: true,
            ..Options::default()
        },
        Plan::none(),
    )
}

/// Writes `data` at `offset` under the soft deadline.
fn write_data(file: &File, offset: u64, data: &[u8]) {
    let (f, d) = (file.clone(), data.to_vec());
    let (r, _) = within("write_at", SOFT_LIMIT, move || f.write_at(&d, offset));
    assert_eq!(r.unwrap_or_else(|e| panic!("write_at: {e}")), data.len());
}

/// [`write_data`], then waits until the server has executed the WRITEs:
/// with write-behind `write_at` returns before they are even sent, and a
/// restart staged right after must find the data there to lose.
fn write_landed(server: &HostileServer, file: &File, offset: u64, data: &[u8]) {
    write_data(file, offset, data);
    let off = usize::try_from(offset).unwrap_or_else(|e| panic!("offset {offset}: {e}"));
    wait_for("the WRITEs executed", Duration::from_secs(5), || {
        server.stored(off, data.len()) == data
    });
}

fn fsync(file: &File) -> directnfs::Result<()> {
    let f = file.clone();
    within("fsync", SOFT_LIMIT, move || f.fsync()).0
}

fn count_writes(server: &HostileServer, stable: u32) -> usize {
    writes_seen(server).iter().filter(|w| w.1 == stable).count()
}

/// What the server holds at `offset` once a crash has thrown away all it
/// had not made durable.
fn durable_after_a_crash(server: &HostileServer, offset: usize, len: usize) -> Vec<u8> {
    server.lose_unstable_data(*b"crashed!");
    server.stored(offset, len)
}

#[test]
fn fsync_repair_answered_unstable_is_committed_before_fsync_returns() {
    // The server restarts between the WRITEs and fsync's COMMIT, losing
    // them, and from then on takes even FILE_SYNC WRITEs only UNSTABLE.
    // The data fsync sends again is then durable only once a COMMIT
    // returns the verifier those WRITEs got.
    let len = 3 * 65536;
    let data = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, &format!("{SOFT}&{UNSTABLE_SYNC}"));
    write_data(&file, 0, &data);
    server.lose_unstable_data(*b"reboot-1");
    server.set_downgrade_writes(true);
    fsync(&file).unwrap();
    assert_eq!(
        count_writes(&server, FILE_SYNC),
        3,
        "{:?}",
        writes_seen(&server)
    );
    assert_eq!(
        server.count(Proc::COMMIT),
        2,
        "the data sent again was not committed"
    );
    assert_eq!(file.uncommitted_bytes(), 0);
    assert!(
        durable_after_a_crash(&server, 0, len) == data,
        "fsync returned before the data was durable"
    );
    assert_no_internal_panic();
}

#[test]
fn fsync_repair_hit_by_another_restart_is_sent_again_until_a_commit_matches() {
    // As above, and the server restarts once more before the COMMIT that
    // follows the repair: its verifier differs from the one the re-sent
    // WRITEs got, so they are sent (and committed) once more.
    let len = 3 * 65536;
    let data = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, &format!("{SOFT}&{UNSTABLE_SYNC}"));
    write_data(&file, 0, &data);
    server.lose_unstable_data(*b"reboot-1");
    server.set_downgrade_writes(true);
    let commits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = Arc::clone(&commits);
    server.on_call(move |ctl, seen| {
        if seen.proc_ == Some(Proc::COMMIT) && c.fetch_add(1, Ordering::SeqCst) == 1 {
            ctl.lose_unstable_data(*b"reboot-2");
        }
        None
    });
    fsync(&file).unwrap();
    assert_eq!(server.count(Proc::COMMIT), 3, "{:?}", server.calls());
    assert_eq!(
        count_writes(&server, FILE_SYNC),
        6,
        "{:?}",
        writes_seen(&server)
    );
    assert_eq!(file.uncommitted_bytes(), 0);
    server.clear_hook();
    assert!(
        durable_after_a_crash(&server, 0, len) == data,
        "fsync returned before the data was durable"
    );
    assert_no_internal_panic();
}

#[test]
fn fsync_repair_that_never_sticks_fails_and_keeps_the_data_for_the_next_fsync() {
    // The server restarts before every COMMIT that follows a repair: fsync
    // gives up after a bounded number of rounds with an error (EIO), keeps
    // every byte, and a later fsync, once the server is stable, makes it
    // all durable.
    let len = 3 * 65536;
    let data = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, &format!("{SOFT}&{UNSTABLE_SYNC}"));
    write_data(&file, 0, &data);
    server.lose_unstable_data(*b"reboot-0");
    server.set_downgrade_writes(true);
    let commits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = Arc::clone(&commits);
    server.on_call(move |ctl, seen| {
        if seen.proc_ == Some(Proc::COMMIT) {
            let n = c.fetch_add(1, Ordering::SeqCst);
            if n >= 1 {
                ctl.lose_unstable_data(
                    *format!("reboot-{}", n % 10)
                        .as_bytes()
                        .first_chunk()
                        .unwrap(),
                );
            }
        }
        None
    });
    let e = fsync(&file).unwrap_err();
    assert!(matches!(e, Error::NotDurable { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EIO);
    let msg = e.to_string();
    assert!(
        msg.contains("COMMIT") && msg.contains(FILE) && msg.contains("not proven durable"),
        "{msg}"
    );
    assert_eq!(file.uncommitted_bytes(), len, "data dropped");
    // Three rounds of re-sends, each followed by a COMMIT that shows
    // another restart; bounded, not a loop.
    assert_eq!(server.count(Proc::COMMIT), 4, "{:?}", server.calls());
    assert_eq!(count_writes(&server, FILE_SYNC), 9);
    server.clear_hook();
    fsync(&file).unwrap();
    assert_eq!(file.uncommitted_bytes(), 0);
    assert!(
        durable_after_a_crash(&server, 0, len) == data,
        "the kept data was not made durable"
    );
    assert_no_internal_panic();
}

#[test]
fn file_sync_write_downgraded_across_a_restart_is_durable_when_write_returns() {
    // The default mode: a WRITE answered UNSTABLE is committed before
    // `write_at` returns; the server restarts before that COMMIT and then
    // downgrades the re-sent WRITEs too. `write_at` returns only once a
    // COMMIT confirmed them.
    let len = 2 * 65536;
    let data = distinct_data(len);
    let server = HostileServer::with(
        Options {
            store: true,
            downgrade_writes: true,
            ..Options::default()
        },
        Plan::none(),
    );
    let (_client, file) = mount(&server, SOFT);
    let restarted = Arc::new(AtomicBool::new(false));
    let r = Arc::clone(&restarted);
    server.on_call(move |ctl, seen| {
        if seen.proc_ == Some(Proc::COMMIT) && !r.swap(true, Ordering::SeqCst) {
            ctl.lose_unstable_data(*b"reboot-1");
        }
        None
    });
    write_data(&file, 0, &data);
    assert!(restarted.load(Ordering::SeqCst));
    assert_eq!(
        count_writes(&server, FILE_SYNC),
        4,
        "{:?}",
        writes_seen(&server)
    );
    assert_eq!(server.count(Proc::COMMIT), 2);
    assert_eq!(file.uncommitted_bytes(), 0);
    server.clear_hook();
    assert!(
        durable_after_a_crash(&server, 0, len) == data,
        "write_at returned before the data was durable"
    );
    assert_no_internal_panic();
}

/// Mount options for the concurrency tests: two connections (a write
/// may overtake the repair on the other one), 5 s per attempt (room for
/// the replies held back).
const TWO_CONNECTIONS: &str = "timeo=50&retrans=1&soft&connections=2&stable=unstable";

#[test]
fn writes_submitted_during_a_repair_wait_and_land_after_it() {
    // fsync finds a restart and sends old data again; the server holds
    // that WRITE back for a second. Meanwhile two threads write newer data
    // over the same bytes (`write_at`, and a `Batch`). Sent at once, on the
    // other connection, they would be executed first and then overwritten
    // by the old data; they must wait and land after it.
    let len = 65536;
    let old = vec![0x11u8; len];
    let new = distinct_data(len);
    let server = storing_server();
    let (client, file) = mount(&server, TWO_CONNECTIONS);
    write_landed(&server, &file, 0, &old);
    server.lose_unstable_data(*b"reboot-1");
    let replay_seen = Arc::new(AtomicBool::new(false));
    let seen_flag = Arc::clone(&replay_seen);
    server.on_call(move |_, seen| {
        if seen.proc_ == Some(Proc::WRITE)
            && seen.stable == Some(FILE_SYNC)
            && !seen_flag.swap(true, Ordering::SeqCst)
        {
            std::thread::sleep(Duration::from_secs(1));
        }
        None
    });
    let f = file.clone();
    let syncer = std::thread::spawn(move || f.fsync());
    wait_for("the repair's WRITE", Duration::from_secs(5), || {
        replay_seen.load(Ordering::SeqCst)
    });
    let half = len / 2;
    let (f, d) = (file.clone(), new[..half].to_vec());
    let blocking = std::thread::spawn(move || f.write_at(&d, 0));
    let (f, c, d) = (file.clone(), client.clone(), new[half..].to_vec());
    let batched = std::thread::spawn(move || {
        let mut batch = directnfs::Batch::new(&c);
        batch.write_owned(&f, half as u64, d, 7)?;
        let done = batch.wait(1, Some(Duration::from_secs(10)));
        done.into_iter().next().map_or(Ok(0), |c| c.result)
    });
    let (results, _) = within("fsync and writes", Duration::from_secs(15), move || {
        (
            syncer.join().unwrap(),
            blocking.join().unwrap(),
            batched.join().unwrap(),
        )
    });
    results.0.unwrap();
    assert_eq!(results.1.unwrap(), half);
    assert_eq!(results.2.unwrap(), len - half);
    fsync(&file).unwrap();
    server.clear_hook();
    assert!(
        durable_after_a_crash(&server, 0, len) == new,
        "the repair's old data landed on newer writes"
    );
    assert_no_internal_panic();
}

#[test]
fn write_in_flight_when_a_repair_starts_is_not_overwritten_by_it() {
    // A newer write the server has executed but not yet answered (its
    // reply is held back) when fsync finds a restart: the old data under
    // it must not be sent again — it would land on top of the newer data.
    let len = 65536;
    let old = vec![0x22u8; len];
    let new = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, TWO_CONNECTIONS);
    write_landed(&server, &file, 0, &old);
    server.lose_unstable_data(*b"reboot-1");
    let held = Arc::new(AtomicBool::new(false));
    let h = Arc::clone(&held);
    server.on_call(move |_, seen| {
        (seen.proc_ == Some(Proc::WRITE)
            && seen.stable == Some(UNSTABLE)
            && !h.swap(true, Ordering::SeqCst))
        .then_some(Duration::from_millis(1500))
    });
    let (f, d) = (file.clone(), new.clone());
    let writer = std::thread::spawn(move || f.write_at(&d, 0));
    wait_for("the newer write executed", Duration::from_secs(5), || {
        server.stored(0, len) == new
    });
    fsync(&file).unwrap();
    assert_eq!(
        count_writes(&server, FILE_SYNC),
        0,
        "old data sent again over a newer write in flight: {:?}",
        writes_seen(&server)
    );
    let (r, _) = within("the newer write", SOFT_LIMIT, move || {
        writer.join().unwrap()
    });
    assert_eq!(r.unwrap(), len);
    fsync(&file).unwrap();
    server.clear_hook();
    assert!(
        durable_after_a_crash(&server, 0, len) == new,
        "the repair's old data landed on a newer write"
    );
    assert_no_internal_panic();
}

#[test]
fn batch_write_not_yet_reaped_by_the_thread_that_fsyncs_is_not_overwritten_by_the_repair() {
    // One thread submits a write through a Batch, does not reap it, and
    // calls fsync, which finds a restart: no deadlock, and the old data
    // under the batch's write is not sent again.
    let len = 65536;
    let old = vec![0x33u8; len];
    let new = distinct_data(len);
    let server = storing_server();
    let (client, file) = mount(&server, TWO_CONNECTIONS);
    write_landed(&server, &file, 0, &old);
    server.lose_unstable_data(*b"reboot-1");
    let (f, expect) = (file.clone(), new.clone());
    let (r, _) = within("batch, fsync, reap", Duration::from_secs(15), move || {
        let mut batch = directnfs::Batch::new(&client);
        batch.write(&f, 0, &new, 1)?;
        batch.submit();
        // Executed by the server, reply not reaped.
        let mut b = vec![0u8; len];
        while f.read_at(&mut b, 0)? != len || b != new {
            std::thread::sleep(Duration::from_millis(10));
        }
        f.fsync()?;
        let done = batch.wait(1, Some(Duration::from_secs(10)));
        let written = done.into_iter().next().map_or(Ok(0), |c| c.result)?;
        drop(batch);
        f.fsync()?;
        Ok::<_, Error>(written)
    });
    assert_eq!(r.unwrap(), len);
    assert_eq!(
        count_writes(&server, FILE_SYNC),
        0,
        "old data sent again over the batch's write: {:?}",
        writes_seen(&server)
    );
    assert!(durable_after_a_crash(&server, 0, len) == expect);
    assert_no_internal_panic();
}

#[test]
fn uncommitted_data_is_committed_once_it_passes_64_mib() {
    let _serial = memory_lock();
    const MIB: usize = 1 << 20;
    let opts = Options {
        rtmax: MIB as u32,
        wtmax: MIB as u32,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::none());
    let (_client, file) = mount(&server, &format!("{SOFT}&{UNSTABLE_SYNC}"));
    let f = file.clone();
    let (r, _) = within("64 MiB of writes", Duration::from_secs(60), move || {
        let block = vec![0x5au8; MIB];
        for i in 0..64 {
            f.write_at(&block, (i * MIB) as u64)?;
        }
        Ok::<_, Error>(())
    });
    r.unwrap();
    // Exactly 64 MiB is kept without a COMMIT...
    assert_eq!(server.count(Proc::COMMIT), 0);
    assert_eq!(file.uncommitted_bytes(), 64 * MIB);
    // ...one byte more is not.
    assert_eq!(write(&file, (64 * MIB) as u64, 1).0.unwrap(), 1);
    assert_eq!(server.count(Proc::COMMIT), 1);
    assert_eq!(file.uncommitted_bytes(), 0);
    assert_no_internal_panic();
}

#[test]
fn handle_cache_is_cleared_past_65536_entries() {
    // LOOKUP finds every name; 65,538 distinct directories are looked up
    // (64 levels deep, so a path costs 64 LOOKUPs and one GETATTR), then
    // the first one again. With the cache bounded at 65,536 entries it
    // has been cleared and the LOOKUP is sent again; without a bound it
    // would still be cached.
    let _serial = memory_lock();
    const BOUND: usize = 65536;
    const DEPTH: usize = 64;
    let opts = Options {
        lookup_any: true,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::none());
    let client = connect(&server, "timeo=10&retrans=1&soft&connections=2").unwrap();
    // Paths /tT/d1/d2/.../d63 for T in 0..: 64 entries each.
    let trees = (BOUND + 2).div_ceil(DEPTH);
    let path = |t: usize| {
        let mut p = format!("/t{t}");
        for d in 1..DEPTH {
            p.push_str(&format!("/d{d}"));
        }
        p
    };
    let first = path(0);
    let c = client.clone();
    let f = first.clone();
    within("first path", SOFT_LIMIT, move || c.metadata(&f))
        .0
        .unwrap();
    // Cached: looking it up again sends nothing.
    let lookups = server.count(Proc::LOOKUP);
    assert_eq!(lookups, DEPTH);
    let c = client.clone();
    let f = first.clone();
    within("first path again", SOFT_LIMIT, move || c.metadata(&f))
        .0
        .unwrap();
    assert_eq!(server.count(Proc::LOOKUP), DEPTH, "not cached");
    // Fill the cache past its bound, from 4 threads.
    let c = client.clone();
    let (r, t) = within("fill the cache", Duration::from_secs(300), move || {
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|w| {
                    let c = c.clone();
                    s.spawn(move || {
                        for t in (1..=trees).filter(|t| t % 4 == w) {
                            c.metadata(&path(t))?;
                        }
                        Ok::<_, Error>(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("worker panicked"))
        })
    });
    r.unwrap();
    eprintln!(
        "handle cache: {} LOOKUPs in {t:?}",
        server.count(Proc::LOOKUP)
    );
    assert!(server.count(Proc::LOOKUP) > BOUND + DEPTH);
    // The first path was dropped with the rest: looked up again.
    let before = server.count(Proc::LOOKUP);
    within("first path after", SOFT_LIMIT, move || {
        client.metadata(&first)
    })
    .0
    .unwrap();
    let sent = server.count(Proc::LOOKUP) - before;
    assert!(sent > 0, "the handle cache kept more than {BOUND} entries");
    assert_no_internal_panic();
}

#[test]
fn handle_cache_of_created_files_is_bounded_too() {
    // `create_new` caches the new file's handle without any LOOKUP: a
    // program that only creates files must not grow the cache forever
    // either. After 65,538 creates the first one's handle is gone and
    // opening it sends a LOOKUP.
    let _serial = memory_lock();
    const BOUND: usize = 65536;
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, "timeo=10&retrans=1&soft&connections=2").unwrap();
    let c = client.clone();
    let (r, t) = within("create files", Duration::from_secs(300), move || {
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|w| {
                    let c = c.clone();
                    s.spawn(move || {
                        for i in (0..BOUND + 2).filter(|i| i % 4 == w) {
                            c.open_with(
                                &format!("/c{i}"),
                                OpenOptions {
                                    create_new: true,
                                    ..Default::default()
                                },
                            )?;
                        }
                        Ok::<_, Error>(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().expect("worker panicked"))
        })
    });
    r.unwrap();
    eprintln!("{} creates in {t:?}", server.count(Proc::CREATE));
    assert_eq!(server.count(Proc::LOOKUP), 0);
    within("open the first", SOFT_LIMIT, move || client.open("/c0"))
        .0
        .unwrap();
    assert_eq!(
        server.count(Proc::LOOKUP),
        1,
        "the handle cache kept more than {BOUND} created files"
    );
    assert_no_internal_panic();
}

#[test]
fn file_statistics_stay_bounded_when_many_distinct_paths_are_opened() {
    // A program that opens ever new paths (one write each, then closes
    // them) must not grow the per-file statistics without bound: past
    // MAX_FILE_STATS records those of closed files are dropped and their
    // counters summed in one EVICTED_FILES record. Open files stay listed.
    use directnfs::stats::{EVICTED_FILES, MAX_FILE_STATS};
    let opts = Options {
        lookup_any: true,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::none());
    let client = connect(&server, "timeo=10&retrans=1&soft&connections=2").unwrap();
    let opened = MAX_FILE_STATS * 2 + 100;
    let c = client.clone();
    let (r, t) = within("open and write", Duration::from_secs(120), move || {
        let keep: Vec<File> = (0..10)
            .map(|i| c.open(&format!("/keep{i}")))
            .collect::<directnfs::Result<_>>()?;
        for f in &keep {
            f.write_at(b"0123456789", 0)?;
        }
        for i in 0..opened {
            c.open(&format!("/f{i}"))?.write_at(b"x", 0)?;
        }
        Ok::<_, Error>(keep)
    });
    let keep = r.unwrap();
    eprintln!("{} files opened and written in {t:?}", opened + 10);
    let stats = client.stats();
    let files = &stats.files;
    assert!(
        files.len() <= MAX_FILE_STATS + 1,
        "{} per-file records kept (bound {MAX_FILE_STATS} + the evicted total)",
        files.len()
    );
    for i in 0..10 {
        let path = format!("/keep{i}");
        let f = files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("open file {path} dropped from the statistics"));
        assert_eq!((f.totals.writes, f.totals.bytes_written), (1, 10));
    }
    let evicted = files
        .iter()
        .find(|f| f.path == EVICTED_FILES)
        .expect("no evicted-files total");
    assert!(
        evicted.totals.writes >= MAX_FILE_STATS as u64,
        "{evicted:?}"
    );
    // Nothing lost: the records and the total add up to every write.
    let writes: u64 = files.iter().map(|f| f.totals.writes).sum();
    let bytes: u64 = files.iter().map(|f| f.totals.bytes_written).sum();
    assert_eq!(writes, opened as u64 + 10);
    assert_eq!(bytes, opened as u64 + 100);
    // The renderers take it as any other file.
    let json = directnfs::stats::render_json(&stats).unwrap();
    assert!(json.contains(EVICTED_FILES));
    let prom = directnfs::stats::render_prometheus(&stats);
    assert!(
        prom.contains(&format!("file=\"{EVICTED_FILES}\"")),
        "{prom}"
    );
    drop(keep);
    assert_no_internal_panic();
}

#[test]
fn mount_path_longer_than_mntpathlen_is_never_sent_to_mount() {
    // No EXPORT list: the client probes MNT on prefixes of the path, from
    // the longest. Those longer than 1,024 bytes cannot be exports and
    // must not be sent (a server answers GARBAGE_ARGS, which would fail
    // the mount).
    let server = HostileServer::start(Plan::always(
        Proc::EXPORT,
        Fault::Accepted(AcceptedReply::Error(AcceptStat::PROC_UNAVAIL)),
    ));
    let deep: String = (0..12).map(|i| format!("/{i:0>200}")).collect();
    let p = server.port();
    let url = format!("nfs://127.0.0.1/export{deep}?nfsport={p}&mountport={p}&{SOFT}");
    let (r, _) = within("connect", MOUNT_LIMIT, move || Client::connect(&url));
    let client = r.unwrap_or_else(|e| panic!("mount failed: {e}"));
    assert_eq!(client.export(), "/export");
    let lens: Vec<usize> = server
        .calls()
        .iter()
        .filter(|c| c.proc_ == Some(Proc::MNT))
        .map(|c| c.path_len.unwrap())
        .collect();
    assert!(!lens.is_empty());
    assert!(lens.iter().all(|&l| l <= 1024), "MNT sent with {lens:?}");
    assert_no_internal_panic();
}

#[test]
fn mount_path_of_an_export_longer_than_mntpathlen_is_refused_before_sending() {
    let server = HostileServer::start(Plan::none());
    let long: String = (0..6).map(|i| format!("/{i:0>200}")).collect();
    assert!(long.len() > 1024);
    let p = server.port();
    let url = NfsUrl::parse(&format!(
        "nfs://127.0.0.1{long}/f?nfsport={p}&mountport={p}&{SOFT}"
    ))
    .unwrap();
    let mut target = Target::from_url(&url);
    target.export = Some(long.clone());
    let (r, t) = within("mount", MOUNT_LIMIT, move || Client::mount(&target));
    let e = r.unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.to_string().contains("MNTPATHLEN"), "{e}");
    assert_eq!(server.count(Proc::MNT), 0, "sent anyway");
    assert!(t < Duration::from_secs(2), "{t:?}");
    assert_no_internal_panic();
}

#[test]
fn concurrent_io_through_repeated_connection_failures_sees_no_error_and_no_wrong_data() {
    let server = HostileServer::start(Plan::times(Proc::READ, Fault::CloseMidRecord, 10));
    let (_client, file) = mount(&server, "timeo=10&retrans=1&hard&connections=2");
    let stop = Arc::new(AtomicBool::new(false));
    let workers = load(&file, 8, &stop);
    wait_for("every fault to be applied", Duration::from_secs(20), || {
        server.faulted() >= 10
    });
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let (errors, _) = within("join the load", Duration::from_secs(10), move || {
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(errors.is_empty(), "errors: {errors:?}");
    assert!(server.connections() >= 10);
    assert_no_internal_panic();
}

#[test]
fn full_in_flight_table_makes_callers_wait_instead_of_queueing_calls() {
    // timeo 5 s: the silent calls stay in flight for the whole check.
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Silent));
    let (_client, file) = mount(&server, "timeo=50&hard&connections=1&max_inflight=4");
    let workers: Vec<_> = (0..16u64)
        .map(|i| {
            let f = file.clone();
            std::thread::spawn(move || {
                let mut b = vec![0u8; LEN];
                f.read_at(&mut b, i * 8192)
                    .map(|n| b[..n] == pattern_at(i * 8192, n)[..])
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        server.count(Proc::READ),
        4,
        "max_inflight=4 but more calls were sent"
    );
    // The server answers again: the 4 silent calls are re-sent after timeo,
    // the 12 waiting callers get their turn.
    server.set_plan(Plan::none());
    let (results, _) = within("the 16 callers", Duration::from_secs(20), move || {
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    for r in results {
        assert!(r.unwrap(), "wrong data");
    }
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// Bad names and offsets from the caller

#[test]
fn names_longer_than_255_bytes_are_refused_before_any_call() {
    let server = HostileServer::start(Plan::none());
    let client = connect(&server, SOFT).unwrap();
    let before = server.calls().len();
    let long = format!("/{}", "x".repeat(256));
    let c = client.clone();
    let (r, _) = within("open", SOFT_LIMIT, move || c.open(&long).map(|_| ()));
    assert!(matches!(r.unwrap_err(), Error::InvalidInput(_)));
    let (r, _) = within("remove root", SOFT_LIMIT, move || client.remove("/"));
    assert!(matches!(r.unwrap_err(), Error::InvalidInput(_)));
    assert_eq!(server.calls().len(), before, "a call was sent");
    assert_no_internal_panic();
}

fn assert_no_wrapped_offset(server: &HostileServer) {
    let wrapped: Vec<u64> = server
        .calls()
        .iter()
        .filter_map(|c| c.offset)
        .filter(|&o| o < u64::MAX - 10)
        .collect();
    assert!(
        wrapped.is_empty(),
        "I/O sent at wrapped offsets {wrapped:?}"
    );
}

#[test]
fn read_at_offset_near_u64_max_is_an_error_not_a_panic() {
    let server = HostileServer::start(Plan::none());
    let (_client, file) = mount(&server, SOFT);
    let (r, _) = read(&file, u64::MAX - 10, 3 * 65536);
    // Either an error or at most the 10 bytes below u64::MAX: never bytes
    // from a wrapped-around offset.
    if let Ok(data) = r {
        assert!(data.len() <= 10);
    }
    assert_no_wrapped_offset(&server);
    assert_no_internal_panic();
}

#[test]
fn write_at_offset_near_u64_max_is_an_error_not_a_panic() {
    let server = HostileServer::start(Plan::none());
    let (_client, file) = mount(&server, SOFT);
    let (r, _) = write(&file, u64::MAX - 10, 3 * 65536);
    assert!(r.is_err(), "a write past u64::MAX succeeded");
    assert_no_wrapped_offset(&server);
    assert_no_internal_panic();
}

// ---------------------------------------------------------------------------
// The alert log (issue 15 item 4): events no single reply shows

#[test]
fn alert_log_names_a_jukebox_storm_and_a_server_restart() {
    // Lines of every test of this binary land in the same process-wide
    // log: look for this test's events only.
    let log = std::env::temp_dir().join(format!("dnfs-hostile-alerts-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    directnfs::alert::set_sink(directnfs::alert::Sink::File(log.clone()));

    // 40 readers answered "try again later" at once: a storm.
    let server = Arc::new(HostileServer::start(Plan::times(
        Proc::READ,
        Fault::Status(nfsstat3::NFS3ERR_JUKEBOX),
        40,
    )));
    let (_client, file) = mount(&server, HARD);
    let readers: Vec<_> = (0..40)
        .map(|_| {
            let f = file.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; LEN];
                f.read_at(&mut buf, OFF).map(|_| buf)
            })
        })
        .collect();
    for r in readers {
        assert!(r.join().expect("reader").expect("read") == pattern_at(OFF, LEN));
    }
    let lines = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        lines
            .lines()
            .any(|l| l.contains("WARNING:") && l.contains("JUKEBOX storm: 20 ")),
        "no storm line in:\n{lines}"
    );

    // The write verifier changes between two WRITEs: the server restarted.
    let (_, wfile) = mount(&server, HARD);
    write(&wfile, OFF, LEN).0.expect("first write");
    server
        .control()
        .set_verifier(*b"\x11\x22\x33\x44\x55\x66\x77\x88");
    write(&wfile, OFF, LEN).0.expect("second write");
    let lines = std::fs::read_to_string(&log).unwrap_or_default();
    let restart: Vec<&str> = lines
        .lines()
        .filter(|l| l.contains("server restart detected"))
        .collect();
    assert!(
        restart.iter().any(|l| l.contains("-> 1122334455667788)")),
        "no restart line in:\n{lines}"
    );
    // Every line: timestamp, process, level.
    let pid = format!("directnfs[{}]: ", std::process::id());
    for l in lines.lines() {
        assert!(
            l.len() > 24 && l.as_bytes()[10] == b'T' && l.contains(&pid),
            "{l}"
        );
    }
    directnfs::alert::set_sink(directnfs::alert::Sink::Stderr);
    let _ = std::fs::remove_file(&log);
    assert_no_internal_panic();
}

#[test]
fn write_behind_error_of_every_kind_is_reported_by_the_next_fsync_once() {
    for status in [
        nfsstat3::NFS3ERR_NOSPC,
        nfsstat3::NFS3ERR_DQUOT,
        nfsstat3::NFS3ERR_IO,
    ] {
        let server = HostileServer::start(Plan::none());
        let (_client, file) = mount(&server, &format!("{SOFT}&stable=unstable"));
        write_data(&file, 0, &distinct_data(65536));
        fsync(&file).unwrap();
        server.set_plan(Plan::always(Proc::WRITE, Fault::Status(status)));
        // write_at returns before the reply: no error yet.
        write_data(&file, 65536, &distinct_data(3 * 65536));
        let e = fsync(&file).unwrap_err();
        assert_eq!(e.nfs_status(), Some(status), "{e:?}");
        assert!(e.to_string().contains("WRITE"), "{e}");
        // Once: the next fsync (nothing failed since) succeeds.
        server.set_plan(Plan::none());
        fsync(&file).unwrap();
        // The same through flush_write_behind (the C library's close).
        server.set_plan(Plan::always(Proc::WRITE, Fault::Status(status)));
        write_data(&file, 0, &distinct_data(100));
        let f = file.clone();
        let e = within("flush", SOFT_LIMIT, move || f.flush_write_behind())
            .0
            .unwrap_err();
        assert_eq!(e.nfs_status(), Some(status), "{e:?}");
        server.set_plan(Plan::none());
        fsync(&file).unwrap();
    }
    assert_no_internal_panic();
}

#[test]
fn write_behind_writes_in_flight_across_a_restart_are_durable_after_fsync() {
    // Write-behind WRITEs are sent; the server restarts (new verifier,
    // unstable data lost) while some are answered and some not, before
    // fsync: fsync waits for them all, COMMITs, sees the new verifier and
    // sends again FILE_SYNC what the restart lost.
    let len = 16 * 65536;
    let data = distinct_data(len);
    let server = storing_server();
    let (_client, file) = mount(&server, &format!("{SOFT}&stable=unstable"));
    for (i, chunk) in data.chunks(65536).enumerate() {
        write_data(&file, (i * 65536) as u64, chunk);
        if i == 7 {
            server.lose_unstable_data(*b"reboot-1");
        }
    }
    fsync(&file).unwrap();
    assert_eq!(file.uncommitted_bytes(), 0);
    assert!(
        durable_after_a_crash(&server, 0, len) == data,
        "fsync returned before the data was durable"
    );
    assert_no_internal_panic();
}

/// A hook that delays the execution of the next UNSTABLE WRITE by a
/// second once armed (sleeping in the hook holds that connection back),
/// and says when that WRITE has reached the server.
struct DelayNextWrite {
    armed: Arc<AtomicBool>,
    reached: Arc<AtomicBool>,
}

impl DelayNextWrite {
    fn install(server: &HostileServer) -> Self {
        let armed = Arc::new(AtomicBool::new(false));
        let reached = Arc::new(AtomicBool::new(false));
        let (a, r) = (Arc::clone(&armed), Arc::clone(&reached));
        server.on_call(move |_, seen| {
            if seen.proc_ == Some(Proc::WRITE)
                && seen.stable == Some(UNSTABLE)
                && a.swap(false, Ordering::SeqCst)
            {
                r.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_secs(1));
            }
            None
        });
        Self { armed, reached }
    }

    /// `write_at` (write-behind) of `data` at 0, whose WRITE the server
    /// then holds before executing it; returns once it is held.
    fn write_held_at_the_server(&self, file: &File, data: &[u8]) {
        self.reached.store(false, Ordering::SeqCst);
        self.armed.store(true, Ordering::SeqCst);
        write_data(file, 0, data);
        assert!(
            file.write_behind_bytes() > 0,
            "write_at waited for its reply"
        );
        wait_for("the write-behind WRITE", Duration::from_secs(5), || {
            self.reached.load(Ordering::SeqCst)
        });
    }
}

/// One batch write of `data` at 0, waited for.
fn batch_write(client: &Client, file: &File, data: &[u8]) -> directnfs::Result<usize> {
    let (c, f, d) = (client.clone(), file.clone(), data.to_vec());
    within("batch write", SOFT_LIMIT, move || {
        let mut batch = directnfs::Batch::new(&c);
        batch.write_owned(&f, 0, d, 1)?;
        let done = batch.wait(1, None);
        done.into_iter().next().map_or(Ok(0), |c| c.result)
    })
    .0
}

/// One batch read of `len` bytes at 0, waited for.
fn batch_read(file: &File, len: usize) -> directnfs::Result<Vec<u8>> {
    let f = file.clone();
    within("batch read", SOFT_LIMIT, move || {
        let mut batch = directnfs::Batch::new(f.client());
        batch.read_owned(&f, 0, vec![0u8; len], 1)?;
        let c = batch.wait(1, None).remove(0);
        let n = c.result?;
        let mut buf = c.buffer.unwrap_or_default();
        buf.truncate(n);
        Ok(buf)
    })
    .0
}

#[test]
fn batch_write_over_a_write_behind_write_delayed_at_the_server_lands_after_it() {
    // A write-behind WRITE reaches the server, which sleeps a second
    // before executing it; a Batch write over the same bytes, sent at
    // once on the other connection, would be executed first and then
    // overwritten by the older data. It must wait and land last.
    let len = 4096;
    let server = storing_server();
    let (client, file) = mount(&server, TWO_CONNECTIONS);
    write_landed(&server, &file, 0, &vec![0x11u8; len]);
    let delay = DelayNextWrite::install(&server);
    delay.write_held_at_the_server(&file, &vec![0x22u8; len]);
    let newer = distinct_data(len);
    assert_eq!(batch_write(&client, &file, &newer).unwrap(), len);
    assert_eq!(file.write_behind_bytes(), 0);
    // Nothing else in flight: what the server has now is final.
    assert!(
        server.stored(0, len) == newer,
        "the older write-behind WRITE landed on the batch's"
    );
    // The batch's UNSTABLE WRITE is in the write log: fsync commits it.
    assert!(file.uncommitted_bytes() > 0);
    fsync(&file).unwrap();
    assert_eq!(file.uncommitted_bytes(), 0);
    server.clear_hook();
    assert!(durable_after_a_crash(&server, 0, len) == newer);
    assert_no_internal_panic();
}

#[test]
fn set_len_remove_and_rename_wait_for_write_behind_writes_in_flight() {
    // The book's "Semantics": `set_len`, `remove` and `rename` wait for the
    // WRITEs in flight. The server holds a write-behind WRITE a second
    // before executing it; sent at once on the other connection, the
    // SETATTR (a truncate the older WRITE would then undo), REMOVE or
    // RENAME would arrive while it is held.
    type Op = fn(&Client, &File) -> directnfs::Result<()>;
    let ops: [(&str, Proc, Op); 3] = [
        ("set_len", Proc::SETATTR, |_, f| f.set_len(0)),
        ("remove", Proc::REMOVE, |c, _| c.remove(FILE)),
        ("rename", Proc::RENAME, |c, _| c.rename(FILE, "/renamed")),
    ];
    for (name, proc_, op) in ops {
        let server = storing_server();
        let (client, file) = mount(&server, TWO_CONNECTIONS);
        let (armed, held, executed) = (
            Arc::new(AtomicBool::new(true)),
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let arrived_after = Arc::new(Mutex::new(None::<bool>));
        let (a, h, e, w) = (
            Arc::clone(&armed),
            Arc::clone(&held),
            Arc::clone(&executed),
            Arc::clone(&arrived_after),
        );
        server.on_call(move |_, seen| {
            if seen.proc_ == Some(Proc::WRITE) && a.swap(false, Ordering::SeqCst) {
                h.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_secs(1));
                e.store(true, Ordering::SeqCst);
            } else if seen.proc_ == Some(proc_) {
                w.lock().unwrap().get_or_insert(e.load(Ordering::SeqCst));
            }
            None
        });
        write_data(&file, 0, &[0x33u8; 4096]);
        assert!(file.write_behind_bytes() > 0, "{name}: write_at waited");
        wait_for("the held WRITE", Duration::from_secs(5), || {
            held.load(Ordering::SeqCst)
        });
        let (c, f) = (client.clone(), file.clone());
        within(name, SOFT_LIMIT, move || op(&c, &f))
            .0
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            *arrived_after.lock().unwrap(),
            Some(true),
            "{name} reached the server while the WRITE was held"
        );
        server.clear_hook();
    }
    assert_no_internal_panic();
}

#[test]
fn batch_read_over_a_write_behind_write_delayed_at_the_server_returns_the_new_data() {
    // As above, with a Batch read: sent at once on the other connection
    // it would overtake the WRITE and return the old data.
    let len = 4096;
    let server = storing_server();
    let (_client, file) = mount(&server, TWO_CONNECTIONS);
    write_landed(&server, &file, 0, &vec![0x11u8; len]);
    let delay = DelayNextWrite::install(&server);
    let newer = distinct_data(len);
    delay.write_held_at_the_server(&file, &newer);
    assert!(
        batch_read(&file, len).unwrap() == newer,
        "the batch read overtook the write-behind WRITE"
    );
    server.clear_hook();
    fsync(&file).unwrap();
    assert_no_internal_panic();
}

#[test]
fn batch_read_and_write_over_held_writes_send_them_first() {
    // Coalescing holds adjacent writes in the process until a barrier: a
    // Batch read over them must see them, and a Batch write over them
    // must not be overwritten when they are sent later.
    // Under the transfer size: held, not sent at once.
    let len = 1000;
    let server = storing_server();
    let (client, file) = mount(&server, TWO_CONNECTIONS);
    write_landed(&server, &file, 0, &vec![0x11u8; len]);
    file.set_write_coalescing(true);
    let held = distinct_data(len);
    // On this handle (dropping a clone would send them).
    assert_eq!(file.write_at(&held, 0).unwrap(), len);
    assert!(server.stored(0, len) != held, "held, not sent");
    assert!(
        batch_read(&file, len).unwrap() == held,
        "the read missed the held write"
    );
    assert_eq!(file.write_at(&[0x33u8; 1000], 0).unwrap(), len);
    assert!(server.stored(0, len) == held, "held, not sent");
    let newer: Vec<u8> = held.iter().map(|b| b ^ 0xff).collect();
    assert_eq!(batch_write(&client, &file, &newer).unwrap(), len);
    fsync(&file).unwrap();
    assert_eq!(file.write_behind_bytes(), 0);
    assert!(
        durable_after_a_crash(&server, 0, len) == newer,
        "the held write landed on the batch's"
    );
    assert_no_internal_panic();
}
