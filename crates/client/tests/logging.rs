//! File contents are never logged.
//!
//! A database's blocks are its users' data; a client that put them in its
//! log (a debug dump of a reply, an error quoting the bytes it could not
//! decode) would leak them to wherever logs go. This test captures every
//! `tracing` event and span at every level, TRACE included, from every
//! thread (`directnfs_testkit::hostile::capture`), while a recognisable byte pattern is
//! written and read back through the blocking and the batch API — in the
//! normal case and through the faults that make the client log: broken
//! connections, retransmissions, duplicate and malformed replies, JUKEBOX,
//! a verifier change that re-sends unstable data. Then it asserts the
//! pattern appears nowhere in the log, in any spelling (text, hex, a
//! `Debug` list of bytes), nor in the message of any error returned.

// Test helpers panic on failure: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use directnfs_testkit::hostile as harness;

use std::time::Duration;

use directnfs::{Client, File};
use directnfs_wire::nfs3::nfsstat3;

use harness::capture;
use harness::watch::{internal_panics, within};
use harness::{Fault, HostileServer, Options, Plan, Proc, ReadShape, FILE};

/// The secret: printable, so it would show verbatim in any text dump.
const SECRET: &[u8] = b"DNFS-SECRET-BLOCK-7f3a9c";
const LIMIT: Duration = Duration::from_secs(10);

/// `len` bytes of the secret, repeated.
fn secret(len: usize) -> Vec<u8> {
    SECRET.iter().copied().cycle().take(len).collect()
}

/// Every way the first bytes of the secret could be spelled in a log.
fn spellings() -> Vec<String> {
    let head = &SECRET[..12];
    let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
    let dec: Vec<String> = head.iter().map(|b| b.to_string()).collect();
    let hexlist: Vec<String> = head.iter().map(|b| format!("{b:#x}")).collect();
    vec![
        String::from_utf8_lossy(head).into_owned(),
        hex.clone(),
        hex.to_uppercase(),
        dec.join(", "),
        dec.join(","),
        hexlist.join(", "),
        // The middle of the pattern too (a dump may start anywhere).
        "SECRET-BLOCK".to_string(),
        "7f3a9cDNFS".to_string(),
    ]
}

fn assert_clean(what: &str, text: &str) {
    for s in spellings() {
        assert!(
            !text.contains(&s),
            "file contents ({s:?}) appear in {what}: {text}"
        );
    }
}

/// Runs `op` on `file` under a deadline and returns its error text, if any.
fn run<T: Send + 'static>(
    what: &str,
    file: &File,
    op: impl FnOnce(File) -> directnfs::Result<T> + Send + 'static,
    errors: &mut Vec<String>,
) -> Option<T> {
    let f = file.clone();
    match within(what, LIMIT, move || op(f)).0 {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(format!("{what}: {e} / {e:?}"));
            None
        }
    }
}

fn mount(server: &HostileServer, options: &str) -> (Client, File) {
    let url = server.url(options);
    let client = within("connect", LIMIT, move || Client::connect(&url))
        .0
        .unwrap_or_else(|e| panic!("mount failed: {e}"));
    let c = client.clone();
    let file = within("open", LIMIT, move || c.open(FILE)).0.unwrap();
    (client, file)
}

#[test]
fn file_contents_never_appear_in_the_log_at_any_level() {
    capture::install();
    let opts = Options {
        store: true,
        ..Options::default()
    };
    let server = HostileServer::with(opts, Plan::none());
    let soft = "timeo=10&retrans=1&soft&connections=2";
    let (client, file) = mount(&server, soft);
    let block = secret(200 * 1024); // several WRITE/READ pieces of 64 KiB
    let mut errors = Vec::new();

    // Plain FILE_SYNC writes and reads.
    let b = block.clone();
    run("write_at", &file, move |f| f.write_at(&b, 0), &mut errors);
    let back = run(
        "read_exact_at",
        &file,
        |f| {
            let mut buf = vec![0u8; 200 * 1024];
            f.read_exact_at(&mut buf, 0).map(|()| buf)
        },
        &mut errors,
    );
    assert!(back == Some(block.clone()), "the secret did not round-trip");

    // The batch API.
    let b = block.clone();
    run(
        "batch",
        &file,
        move |f| {
            let mut rd = vec![0u8; 65536];
            f.client().batch_scope(|batch| {
                batch.write(&f, 4096, &b[..65536], 1)?;
                batch.read(&f, 4096, &mut rd, 2)?;
                for c in batch.wait(2, Some(LIMIT)) {
                    c.result?;
                }
                Ok(())
            })
        },
        &mut errors,
    );

    // Faults that make the client log, each on the data path.
    let faults = [
        (Proc::READ, Fault::CloseMidRecord),
        (Proc::READ, Fault::CloseWithoutReply),
        (
            Proc::READ,
            Fault::Duplicate {
                gap: Duration::from_millis(20),
            },
        ),
        (Proc::READ, Fault::Unsolicited),
        (
            Proc::READ,
            Fault::Read(ReadShape {
                data_len: None,
                count: Some(10),
                eof: None,
            }),
        ),
        (Proc::READ, Fault::Status(nfsstat3::NFS3ERR_JUKEBOX)),
        (Proc::READ, Fault::WrongXid),
        (Proc::WRITE, Fault::CloseWithoutReply),
        (Proc::WRITE, Fault::Silent),
        (Proc::WRITE, Fault::Status(nfsstat3::NFS3ERR_IO)),
        (Proc::WRITE, Fault::HugeFragment { last: true }),
    ];
    for (proc_, fault) in faults {
        server.set_plan(Plan::once(proc_, fault.clone()));
        let what = format!("{proc_:?} {fault:?}");
        if proc_ == Proc::READ {
            run(
                &what,
                &file,
                |f| {
                    let mut buf = vec![0u8; 100 * 1024];
                    f.read_exact_at(&mut buf, 0).map(|()| buf)
                },
                &mut errors,
            );
        } else {
            let b = block.clone();
            run(&what, &file, move |f| f.write_at(&b, 0), &mut errors);
        }
    }

    // Unstable writes re-sent after a verifier change (a logged warning).
    server.set_plan(Plan::always(
        Proc::COMMIT,
        Fault::CommitVerifier(*b"rebooted"),
    ));
    let url = server.url(&format!("{soft}&stable=unstable"));
    let unstable = within("connect", LIMIT, move || Client::connect(&url))
        .0
        .unwrap();
    let ufile = within("open", LIMIT, move || unstable.open(FILE))
        .0
        .unwrap();
    let b = block.clone();
    run(
        "unstable write + fsync",
        &ufile,
        move |f| {
            f.write_at(&b, 0)?;
            f.fsync()
        },
        &mut errors,
    );
    drop(client);

    let lines = capture::lines();
    // The capture works and saw the client's own logging at several
    // levels (else this test would prove nothing).
    for (level, needle) in [
        ("WARN ", "channel failed"),
        ("WARN ", "write verifier changed"),
        ("DEBUG ", "reply matches no call"),
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(level) && l.contains(needle)),
            "no {level}line with {needle:?} captured: {lines:#?}"
        );
    }
    eprintln!(
        "{} log lines captured, {} errors returned",
        lines.len(),
        errors.len()
    );
    assert!(!errors.is_empty(), "no fault produced an error");
    for l in &lines {
        assert_clean("the log", l);
    }
    for e in &errors {
        assert_clean("an error message", e);
    }
    assert_eq!(internal_panics(), 0, "a client thread (dnfs-*) panicked");
}
