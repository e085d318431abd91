//! The client of a child of `fork` (`Client::after_fork`, what the
//! interception library makes in every new PostgreSQL backend), against
//! the in-process test server, which counts what it receives: the child's
//! first connection sends no NULL probe, and the child runs without the
//! client's threads until one of their duties comes up — a timeout, the
//! transport's first second being over — with every guarantee kept. And
//! the spare connections a parent keeps for its children (`io/spare.rs`):
//! taken instead of connecting, handed back clean, the next child's XIDs
//! continuing where the last one's stopped; not handed on after a call
//! that went unanswered, nor after the server reset it.

use std::time::{Duration, Instant};

#[path = "common/in_child.rs"]
mod in_child;

use directnfs::Client;
use directnfs_testkit::hostile::{pattern_at, Fault, HostileServer, Plan, Proc, FILE};
use in_child::in_child;

// The parent keeps no spare connections in these (each counts what its
// children connect); the spare connections' own tests use SPARES.
const SOFT: &str = "timeo=10&retrans=1&soft&connections=1&fork_spares=off";
const FOUR: &str = "timeo=10&retrans=1&soft&connections=4&fork_spares=off";
const SPARES: &str = "timeo=10&retrans=1&soft&connections=1";
const OFF: u64 = 8192;
const LEN: usize = 4096;

/// Threads of this process now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// The states of the client's channels (`up`, `idle`, ...).
fn channel_states(c: &Client) -> Vec<String> {
    c.stats().servers[0].paths[0]
        .channels
        .iter()
        .map(|ch| ch.state.clone())
        .collect()
}

fn check(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

#[test]
fn a_forked_childs_first_calls_send_no_null_and_start_no_thread() {
    let server = HostileServer::start(Plan::none());
    let parent = Client::connect(&server.url(SOFT)).expect("mount");
    parent.open(FILE).expect("open in the parent");
    let nulls = server.count(Proc::NULL);
    let reads = server.count(Proc::READ);
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        for _ in 0..3 {
            let mut buf = vec![0u8; LEN];
            f.read_exact_at(&mut buf, OFF)
                .map_err(|e| format!("read: {e}"))?;
            check("the data read", buf == pattern_at(OFF, LEN))?;
        }
        check(
            &format!("one thread in the child, found {}", threads()),
            threads() == 1,
        )
    });
    assert_eq!(server.count(Proc::READ), reads + 3, "the child's READs");
    assert_eq!(
        server.count(Proc::NULL),
        nulls,
        "the child's connection was not probed"
    );
    assert!(server.connections() >= 2, "the child connected on its own");
}

#[test]
fn a_forked_childs_read_without_a_reply_still_times_out_on_a_soft_mount() {
    let server = HostileServer::start(Plan::always(Proc::READ, Fault::Silent));
    let parent = Client::connect(&server.url(SOFT)).expect("mount");
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        let start = Instant::now();
        let mut buf = vec![0u8; LEN];
        let r = f.read_at(&mut buf, OFF);
        let took = start.elapsed();
        let e = match r {
            Ok(n) => return Err(format!("a read of a silent server returned {n} bytes")),
            Err(e) => e,
        };
        check(&format!("ETIMEDOUT, not {e}"), e.errno() == libc::ETIMEDOUT)?;
        // timeo 1 s, retrans 1: two tries, then the error.
        check(
            &format!("timed out in {took:?}"),
            took >= Duration::from_millis(1900) && took < Duration::from_secs(6),
        )?;
        // Waiting a tick started the threads that time calls out.
        check(
            &format!("the client's threads started, found {}", threads()),
            threads() >= 3,
        )
    });
    assert!(server.count(Proc::READ) >= 2, "sent and re-sent");
}

#[test]
fn a_forked_child_starts_its_threads_at_its_first_call_after_a_second() {
    let server = HostileServer::start(Plan::none());
    let parent = Client::connect(&server.url(SOFT)).expect("mount");
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; LEN];
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))?;
        check("no thread in the first second", threads() == 1)?;
        std::thread::sleep(Duration::from_millis(1100));
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))?;
        check(
            &format!("the client's threads started, found {}", threads()),
            threads() >= 3,
        )
    });
}

#[test]
fn a_forked_child_opens_one_connection_until_its_threads_start_then_all() {
    let server = HostileServer::start(Plan::none());
    let parent = Client::connect(&server.url(FOUR)).expect("mount");
    parent.open(FILE).expect("open in the parent");
    let before = server.connections();
    // A child that makes its calls within its first second and exits.
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; LEN];
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))?;
        let states = channel_states(c);
        check(
            &format!("one channel up and three idle, found {states:?}"),
            states == ["up", "idle", "idle", "idle"],
        )
    });
    assert_eq!(
        server.connections(),
        before + 1,
        "a short-lived child connected once"
    );
    // A child that lives on: its threads start, and the idle channels
    // connect at the maintenance thread's first tick.
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; LEN];
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))?;
        std::thread::sleep(Duration::from_millis(1100));
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while channel_states(c).iter().any(|s| s != "up") && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let states = channel_states(c);
        check(
            &format!("every channel up once the threads run, found {states:?}"),
            states.iter().all(|s| s == "up"),
        )?;
        for i in 0..16 {
            let off = OFF + (i % 4) * LEN as u64;
            f.read_exact_at(&mut buf, off)
                .map_err(|e| format!("read: {e}"))?;
            check("the data read", buf == pattern_at(off, LEN))?;
        }
        Ok(())
    });
    assert_eq!(
        server.connections(),
        before + 1 + 4,
        "the long-lived child connected all four"
    );
}

#[test]
fn a_forked_childs_read_moves_to_its_idle_channels_when_its_one_connection_goes_silent() {
    let server = HostileServer::start(Plan::once(Proc::READ, Fault::Silent));
    let parent = Client::connect(&server.url(FOUR)).expect("mount");
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; LEN];
        // The one connected channel never answers this READ: waiting
        // starts the threads, whose first tick connects the idle
        // channels; the timeout (1 s) fails channel 0 and the READ is
        // sent again on one of them.
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))?;
        check("the data read", buf == pattern_at(OFF, LEN))?;
        let states = channel_states(c);
        check(
            &format!("the idle channels connected, found {states:?}"),
            states[1..].iter().all(|s| s == "up"),
        )
    });
    assert!(server.count(Proc::READ) >= 2, "sent and re-sent");
}

/// Waits (at most 5 s) until `cond` holds.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Waits until the parent has made one more spare than `before` NULL
/// calls say: its probe answered, then a moment for the parent to put it
/// in its slot.
fn spare_ready(server: &HostileServer, nulls_before: usize) -> bool {
    let made = eventually(|| server.count(Proc::NULL) > nulls_before);
    std::thread::sleep(Duration::from_millis(300));
    made
}

/// A child's reads of FILE, checked, then its spares handed back (in_child
/// leaves with `_exit`, which runs no exit handler).
fn read_and_hand_back(c: &Client) -> Result<(), String> {
    let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
    for i in 0..3 {
        let off = OFF + i * LEN as u64;
        let mut buf = vec![0u8; LEN];
        f.read_exact_at(&mut buf, off)
            .map_err(|e| format!("read: {e}"))?;
        check("the data read", buf == pattern_at(off, LEN))?;
    }
    directnfs::process::hand_back_spare_connections();
    Ok(())
}

/// A server with `plan`, a parent client of it, and the parent's first
/// spare: no spare yet, so the first child connects, and its miss asks the
/// parent for one, which the parent has made (and probed) within a tick.
/// Returns the server's connections before that child.
fn parent_with_a_spare(plan: Plan) -> (HostileServer, Client, usize) {
    let server = HostileServer::start(plan);
    let parent = Client::connect(&server.url(SPARES)).unwrap_or_else(|e| panic!("mount: {e}"));
    if let Err(e) = parent.open(FILE) {
        panic!("open in the parent: {e}");
    }
    let before = server.connections();
    let nulls = server.count(Proc::NULL);
    in_child(&parent, read_and_hand_back);
    assert!(server.connections() > before, "the first child connected");
    // The spare comes within a tick of the child's miss: after the child,
    // or while a slow child still ran.
    assert!(spare_ready(&server, nulls), "the parent made a spare");
    assert_eq!(
        server.connections(),
        before + 2,
        "the first child's connection and one spare"
    );
    (server, parent, before)
}

/// The spare tests, one at a time: they share the process's slot area
/// and count what the server sees against time (a parent's tick).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn forked_children_take_the_parents_spare_connection_one_after_the_other() {
    let _serial = one_at_a_time();
    let (server, parent, before) = parent_with_a_spare(Plan::none());
    let spare_conn = server.connections() - 1;
    // The next children take it and hand it back: no new connection, and
    // each one's calls on it.
    for _ in 0..3 {
        in_child(&parent, read_and_hand_back);
    }
    assert_eq!(server.connections(), before + 2, "the children connected");
    let on_spare: Vec<_> = server
        .calls()
        .into_iter()
        .filter(|c| c.conn == spare_conn && c.proc_ == Some(Proc::READ))
        .collect();
    assert_eq!(on_spare.len(), 9, "three children's READs on the spare");
    // One connection, three processes: no XID twice (a server's duplicate
    // request cache would take a repeat for a retransmission).
    let mut xids: Vec<u32> = on_spare.iter().map(|c| c.xid).collect();
    xids.sort_unstable();
    xids.dedup();
    assert_eq!(xids.len(), 9, "an XID repeated on the spare connection");
}

#[test]
fn a_spare_whose_child_left_without_handing_it_back_is_replaced_not_reused() {
    let _serial = one_at_a_time();
    let (server, parent, before) = parent_with_a_spare(Plan::none());
    // This child takes the spare and dies without handing it back (like
    // a backend killed with SIGKILL): the parent sees its claimer gone,
    // closes the spare and makes a new one once a child misses.
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; LEN];
        f.read_exact_at(&mut buf, OFF)
            .map_err(|e| format!("read: {e}"))
    });
    assert_eq!(server.connections(), before + 2, "it took the spare");
    std::thread::sleep(Duration::from_millis(300));
    let nulls = server.count(Proc::NULL);
    in_child(&parent, read_and_hand_back);
    assert_eq!(
        server.connections(),
        before + 3,
        "the next child found no spare and connected"
    );
    assert!(spare_ready(&server, nulls), "the parent made a new spare");
    assert_eq!(server.connections(), before + 4, "one new spare");
    in_child(&parent, read_and_hand_back);
    assert_eq!(server.connections(), before + 4, "the new spare was taken");
}

#[test]
fn a_spare_is_not_handed_on_after_a_call_on_it_went_unanswered() {
    let _serial = one_at_a_time();
    // The first GETATTR gets no reply: the child's call times out on the
    // spare (timeo 1 s), the connection fails and the call is answered on a
    // new one; the spare, with a call it never saw answered, is not given
    // to the next child.
    let (server, parent, before) = parent_with_a_spare(Plan::once(Proc::GETATTR, Fault::Silent));
    let spare_conn = server.connections() - 1;
    in_child(&parent, |c| {
        let f = c.open(FILE).map_err(|e| format!("open: {e}"))?;
        f.metadata().map_err(|e| format!("metadata: {e}"))?;
        directnfs::process::hand_back_spare_connections();
        Ok(())
    });
    assert!(server.faulted() >= 1, "the GETATTR went unanswered");
    let after_bad = server.connections();
    assert!(
        after_bad > before + 2,
        "the child connected again after the timeout"
    );
    std::thread::sleep(Duration::from_millis(300));
    let reads = |conn: Option<usize>| {
        server
            .calls()
            .into_iter()
            .filter(|c| c.proc_ == Some(Proc::READ) && conn.is_none_or(|n| c.conn == n))
            .count()
    };
    let (on_spare, all) = (reads(Some(spare_conn)), reads(None));
    in_child(&parent, read_and_hand_back);
    // The next child's READ went on a connection made after the bad call
    // (its own, or a new spare the parent made when the bad one was not
    // handed back: which comes first depends on how fast the child runs),
    // never on the spare whose call went unanswered.
    assert!(
        reads(None) > all,
        "the next child's READs reached the server"
    );
    assert_eq!(
        reads(Some(spare_conn)),
        on_spare,
        "the next child got the spare with the unanswered call"
    );
    assert!(
        server.connections() > after_bad,
        "the next child used a new connection"
    );
}

#[test]
fn a_spare_the_server_reset_fails_no_child_and_is_replaced() {
    let _serial = one_at_a_time();
    // The server restarts (every connection reset, as after a crash) while
    // the parent holds a free spare. The child forked at once takes the
    // dead spare or finds it gone; its reads succeed either way (on a new
    // connection). The dead spare is never handed on: the parent closes
    // it, and once a child misses it makes a new one, which the next
    // child takes without connecting.
    let (server, parent, _) = parent_with_a_spare(Plan::none());
    server.restart(Duration::from_millis(50));
    assert!(
        eventually(|| server.restarts() == 1),
        "the server restarted"
    );
    in_child(&parent, read_and_hand_back);
    // Children until one finds a new spare (each miss asks for one); the
    // spare is made within a tick of the first miss.
    let mut took_a_spare = false;
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        let nulls = server.count(Proc::NULL);
        let before = server.connections();
        in_child(&parent, read_and_hand_back);
        if server.connections() == before {
            took_a_spare = true;
            break;
        }
        assert!(spare_ready(&server, nulls), "the parent made a new spare");
    }
    assert!(took_a_spare, "no child took a new spare after the restart");
}
