//! The client on NFSv4.1 against a real NFS-Ganesha (`DNFS_TEST_URL_V41`,
//! which `scripts/test.sh` exports; the tests skip without it unless
//! `DNFS_TEST_REQUIRE_SERVER=1`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_child.rs"]
mod in_child;

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, UNIX_EPOCH};

use directnfs::config::NfsUrl;
use directnfs::{Client, FileType, OpenOptions, SetAttrs, SetTimeTo, Target};
use directnfs_testkit::ganesha::OwnGanesha;
use directnfs_testkit::proxy::{FaultProxy, ProxyConfig};
use directnfs_wire::nfs3::{ACCESS3_MODIFY, ACCESS3_READ};

/// The NFSv4.1 URL, or `None` (test skipped) when there is no server.
fn url() -> Option<String> {
    directnfs_testkit::server::url_v41("v41")
}

fn with(url: &str, options: &str) -> String {
    format!("{url}&{options}")
}

/// A directory of its own for each test, removed when done.
fn scratch(client: &Client, name: &str) -> String {
    let dir = format!("/v41-{name}-{}", std::process::id());
    let _ = remove_tree(client, &dir);
    client.mkdir(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn sorted_names(client: &Client, dir: &str) -> Vec<String> {
    let mut names: Vec<String> = client
        .read_dir(dir)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    names
}

fn remove_tree(client: &Client, dir: &str) -> directnfs::Result<()> {
    for e in client.read_dir(dir)? {
        let p = format!("{dir}/{}", e.name);
        if e.metadata.is_some_and(|m| m.is_dir()) {
            remove_tree(client, &p)?;
        } else {
            client.remove(&p)?;
        }
    }
    client.rmdir(dir)
}

#[test]
fn mounts_with_a_session_and_reads_back_what_it_wrote() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let slots = client.session_slots().expect("an NFSv4.1 session");
    assert!(slots >= 1, "{slots}");
    let dir = scratch(&client, "rw");
    let path = format!("{dir}/data.bin");
    let file = client.create(&path).unwrap();
    let data: Vec<u8> = (0..3 * 1024 * 1024 + 123)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    assert_eq!(file.write_at(&data, 4096).unwrap(), data.len());
    file.fsync().unwrap();
    let mut back = vec![0u8; data.len() + 4096 + 10];
    let n = file.read_at(&mut back, 0).unwrap();
    assert_eq!(n, data.len() + 4096, "short read stops at EOF");
    assert!(back[..4096].iter().all(|&b| b == 0));
    assert_eq!(&back[4096..n], &data[..]);
    assert_eq!(file.metadata().unwrap().size, (data.len() + 4096) as u64);
    file.set_len(10).unwrap();
    assert_eq!(client.metadata(&path).unwrap().size, 10);
    drop(file);
    // A second open sees the data; create truncates.
    let again = client.open(&path).unwrap();
    let mut ten = [0u8; 16];
    assert_eq!(again.read_at(&mut ten, 0).unwrap(), 10);
    drop(again);
    let truncated = client.create(&path).unwrap();
    assert_eq!(truncated.metadata().unwrap().size, 0);
    drop(truncated);
    remove_tree(&client, &dir).unwrap();
}

#[test]
fn namespace_operations_and_their_errors() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "ns");
    let a = format!("{dir}/a");
    let b = format!("{dir}/b");
    client.create(&a).unwrap().write_at(b"hello", 0).unwrap();
    let e = client.open(&format!("{dir}/missing")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("missing"), "{e}");
    let exclusive = OpenOptions {
        create_new: true,
        ..Default::default()
    };
    let e = client.open_with(&a, exclusive).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    client.rename(&a, &b).unwrap();
    assert_eq!(client.metadata(&a).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(client.metadata(&b).unwrap().size, 5);
    client.mkdir(&format!("{dir}/sub")).unwrap();
    assert_eq!(sorted_names(&client, &dir), ["b", "sub"]);
    assert!(client.rmdir(&b).is_err(), "rmdir of a file");
    assert!(
        client.remove(&format!("{dir}/sub")).is_err(),
        "remove of a directory"
    );
    let e = client.rmdir(&dir).unwrap_err();
    assert_eq!(e.errno(), libc::ENOTEMPTY, "{e}");
    remove_tree(&client, &dir).unwrap();
    assert_eq!(
        client.metadata(&dir).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

/// `ro` (the book's "Operating", "Kernel mount options"): every call that would change the
/// server fails with EROFS before it is sent, on NFSv4.1 as on NFSv3;
/// reads and `fsync` work, and the server's files are untouched.
#[test]
fn read_only_mount_refuses_every_change_with_erofs() {
    let Some(url) = url() else { return };
    let rw = Client::connect(&url).unwrap();
    let dir = scratch(&rw, "ro");
    let (a, sub) = (format!("{dir}/a"), format!("{dir}/sub"));
    rw.create(&a).unwrap().write_at(b"hello", 0).unwrap();
    rw.mkdir(&sub).unwrap();
    let ro = Client::connect(&with(&url, "options=ro,hard,tcp")).unwrap();
    let erofs = |what: &str, r: directnfs::Result<()>| {
        let e = r.expect_err(what);
        assert_eq!(e.errno(), libc::EROFS, "{what}: {e}");
    };
    let f = ro.open(&a).unwrap();
    let mut buf = [0u8; 5];
    assert_eq!(f.read_at(&mut buf, 0).unwrap(), 5);
    assert_eq!(&buf, b"hello");
    erofs("write_at", f.write_at(b"xx", 0).map(|_| ()));
    erofs("set_len", f.set_len(0));
    f.fsync().unwrap();
    let mut batch = directnfs::Batch::new(&ro);
    erofs("batch write", batch.write(&f, 0, b"xx", 1));
    drop(batch);
    erofs("create", ro.create(&format!("{dir}/new")).map(|_| ()));
    let truncate = OpenOptions {
        truncate: true,
        ..Default::default()
    };
    erofs("open truncating", ro.open_with(&a, truncate).map(|_| ()));
    erofs("remove", ro.remove(&a));
    erofs("rename", ro.rename(&a, &format!("{dir}/b")));
    erofs("mkdir", ro.mkdir(&format!("{dir}/d")));
    erofs("rmdir", ro.rmdir(&sub));
    erofs("symlink", ro.symlink(b"a", &format!("{dir}/l")));
    erofs("link", ro.link(&a, &format!("{dir}/h")));
    assert_eq!(
        sorted_names(&rw, &dir),
        ["a", "sub"],
        "nothing changed on the server"
    );
    assert_eq!(rw.metadata(&a).unwrap().size, 5);
    remove_tree(&rw, &dir).unwrap();
}

#[test]
fn symlink_readlink_link_and_lookup() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "links");
    let file = format!("{dir}/file");
    let link = format!("{dir}/link");
    let hard = format!("{dir}/hard");
    client
        .create(&file)
        .unwrap()
        .write_at(b"twelve bytes", 0)
        .unwrap();

    // A symlink's content is what SYMLINK wrote, bytes as given.
    let target = b"file\xff owner-record:1234".to_vec();
    client.symlink(&target, &link).unwrap();
    assert_eq!(client.readlink(&link).unwrap(), target);
    let e = client.symlink(b"other", &link).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    assert_eq!(client.readlink(&link).unwrap(), target, "unchanged");
    let e = client.readlink(&file).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "READLINK of a file: {e}");
    let e = client.readlink(&format!("{dir}/missing")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    // Up to Linux's 4095 bytes (beyond NFS4_OPAQUE_LIMIT's 1024): stored
    // whole; 4096 is refused before anything is sent.
    client
        .symlink(&[b'x'; 4095], &format!("{dir}/longest"))
        .unwrap();
    assert_eq!(
        client.readlink(&format!("{dir}/longest")).unwrap(),
        vec![b'x'; 4095]
    );
    client.remove(&format!("{dir}/longest")).unwrap();
    let e = client
        .symlink(&[b'x'; 4096], &format!("{dir}/long"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");

    // LOOKUP does not follow the link; its handle names it.
    let (h, m) = client.lookup(&link).unwrap();
    assert_eq!(m.file_type, FileType::Symlink);
    assert_eq!(m.size, target.len() as u64);
    let (fh, fm) = client.lookup(&file).unwrap();
    assert_eq!(fm.file_type, FileType::File);
    assert_eq!(fm.size, 12);
    assert_ne!(h, fh);
    assert_eq!(client.metadata_of(&fh, &file).unwrap().fileid, fm.fileid);
    assert!(client.lookup("/").unwrap().1.is_dir());
    // A handle opens the file again (OPEN by handle): I/O and locks work.
    let by_handle = client.open_handle(&fh, "by-handle");
    assert_eq!(by_handle.handle(), fh);
    let mut twelve = [0u8; 12];
    assert_eq!(by_handle.read_at(&mut twelve, 0).unwrap(), 12);
    assert_eq!(&twelve, b"twelve bytes");
    by_handle.try_lock(0, 1, true).unwrap();
    drop(by_handle);

    // A hard link: one file, two names, link count 2.
    assert_eq!(client.metadata(&file).unwrap().nlink, 1);
    client.link(&file, &hard).unwrap();
    let a = client.metadata(&file).unwrap();
    let b = client.metadata(&hard).unwrap();
    assert_eq!((a.nlink, b.nlink), (2, 2));
    assert_eq!(a.fileid, b.fileid);
    client.open(&hard).unwrap().write_at(b"T", 0).unwrap();
    let mut buf = [0u8; 12];
    client.open(&file).unwrap().read_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"Twelve bytes");
    let e = client.link(&file, &hard).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    client.remove(&file).unwrap();
    assert_eq!(client.metadata(&hard).unwrap().nlink, 1);
    remove_tree(&client, &dir).unwrap();
}

#[test]
fn set_attrs_and_access_are_decided_by_the_server() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let stranger = Client::connect(&with(&url, "uid=54321&gid=54321")).unwrap();
    let dir = scratch(&client, "attrs");
    client
        .set_attrs(
            &dir,
            SetAttrs {
                mode: Some(0o755),
                ..Default::default()
            },
        )
        .unwrap();
    let path = format!("{dir}/f");
    let f = client.create(&path).unwrap();
    f.write_at(&[7u8; 100], 0).unwrap();
    let mask = ACCESS3_READ | ACCESS3_MODIFY;

    // Owned by the stranger, mode 0400: it may read, not write.
    let when = UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
    client
        .set_attrs(
            &path,
            SetAttrs {
                mode: Some(0o400),
                uid: Some(54321),
                gid: Some(54321),
                atime: SetTimeTo::At(when),
                mtime: SetTimeTo::At(when),
                ..Default::default()
            },
        )
        .unwrap();
    let m = client.metadata(&path).unwrap();
    assert_eq!((m.mode, m.uid, m.gid), (0o400, 54321, 54321));
    assert_eq!((m.atime, m.mtime), (when, when));
    assert_eq!(stranger.access(&path, mask).unwrap(), ACCESS3_READ);
    // Mode 0600: it may do both; mode 0: neither.
    f.set_attrs(SetAttrs {
        mode: Some(0o600),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(stranger.access(&path, mask).unwrap(), mask);
    f.set_attrs(SetAttrs {
        mode: Some(0),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(stranger.access(&path, mask).unwrap(), 0);
    let e = client.access(&format!("{dir}/missing"), mask).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");

    // Size and times through the open file (its open stateid); NFSv4
    // times are signed: 1969 is a time like any other.
    f.set_attrs(SetAttrs {
        size: Some(10),
        mtime: SetTimeTo::ServerNow,
        ..Default::default()
    })
    .unwrap();
    let m = f.metadata().unwrap();
    assert_eq!(m.size, 10);
    assert!(m.mtime > when);
    let before_1970 = UNIX_EPOCH - Duration::from_secs(3600);
    f.set_attrs(SetAttrs {
        atime: SetTimeTo::At(before_1970),
        ..Default::default()
    })
    .unwrap();
    let raw = std::fs::metadata(export_dir(&url).join(path.trim_start_matches('/')));
    match raw {
        Ok(raw) => {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(raw.atime(), -3600, "the server's file has the 1969 time");
        }
        Err(e) => directnfs_testkit::server::cannot_check(
            "v41 set_attrs (the server's file has the 1969 time)",
            &format!("the exported file is not on this machine ({e})"),
        ),
    }
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

#[test]
fn fsstat_agrees_with_the_export_file_system() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let s = client.fsstat().unwrap();
    assert!(s.total_bytes > 0 && s.total_bytes >= s.free_bytes, "{s:?}");
    assert!(s.free_bytes >= s.avail_bytes, "{s:?}");
    assert!(s.total_files > 0 && s.total_files >= s.free_files, "{s:?}");
    let dir = export_dir(&url);
    let Some(local) = statvfs(&dir) else {
        directnfs_testkit::server::cannot_check(
            "fsstat_agrees_with_the_export_file_system",
            &format!("{}: not on this machine, df not compared", dir.display()),
        );
        return;
    };
    let frsize = local.f_frsize;
    assert_eq!(s.total_bytes, local.f_blocks * frsize, "{s:?}");
    assert_eq!(s.total_files, local.f_files, "{s:?}");
    // Free space moves with other writers: within 1 GiB of df's.
    let free = local.f_bfree * frsize;
    assert!(s.free_bytes.abs_diff(free) < 1 << 30, "{s:?} vs {free}");
    let avail = local.f_bavail * frsize;
    assert!(s.avail_bytes.abs_diff(avail) < 1 << 30, "{s:?} vs {avail}");
}

/// The exported directory: the URL's path (the server script sets the
/// NFSv4 pseudo path equal to the directory's), or DNFS_TEST_EXPORT_DIR.
fn export_dir(url: &str) -> std::path::PathBuf {
    if let Ok(d) = std::env::var("DNFS_TEST_EXPORT_DIR") {
        return d.into();
    }
    let rest = url.trim_start_matches("nfs://");
    let path = rest[rest.find('/').unwrap_or(rest.len())..]
        .split('?')
        .next()
        .unwrap_or("/");
    path.into()
}

fn statvfs(dir: &std::path::Path) -> Option<libc::statvfs> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut out = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path and `out` a writable statvfs.
    let rc = unsafe { libc::statvfs(c.as_ptr(), out.as_mut_ptr()) };
    // SAFETY: statvfs filled it when it returned 0.
    (rc == 0).then(|| unsafe { out.assume_init() })
}

/// A proxy in front of the NFSv4.1 server, and a client through it.
fn proxied(url: &str) -> (FaultProxy, Client) {
    proxied_with(url, |_| {})
}

/// [`proxied`], with the mount options changed by `options` first.
fn proxied_with(
    url: &str,
    options: impl Fn(&mut directnfs::config::MountOptions),
) -> (FaultProxy, Client) {
    let parsed = NfsUrl::parse(url).unwrap();
    let port = parsed.options.nfs_port.or(parsed.port).unwrap_or(2049);
    let upstream: SocketAddr = format!("{}:{port}", parsed.host).parse().unwrap();
    let proxy = FaultProxy::start(ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
        connect_timeout: Duration::from_secs(2),
        seed: 1,
    })
    .unwrap();
    let mut target = Target::from_url(&parsed);
    target.options.nfs_port = Some(proxy.local_addr().port());
    target.options.connections = 2;
    target.options.timeo = Duration::from_secs(2);
    options(&mut target.options);
    let client = Client::mount(&target).unwrap();
    (proxy, client)
}

/// Exactly once: each non-idempotent request below executes on the server,
/// its reply is lost with its connection, the engine re-sends the same
/// bytes (same slot, same sequence id) on the other connection, and the
/// server's reply cache answers — so no request reports the error its own
/// first execution would cause on a second one (NFS4ERR_NOENT for REMOVE
/// and RENAME, NFS4ERR_EXIST for CREATE and an exclusive OPEN).
#[test]
fn a_request_whose_reply_was_lost_is_answered_from_the_reply_cache() {
    let Some(url) = url() else { return };
    let (proxy, client) = proxied(&url);
    let dir = scratch(&client, "once");
    let (f, g, sub) = (format!("{dir}/f"), format!("{dir}/g"), format!("{dir}/sub"));
    let exclusive = OpenOptions {
        create_new: true,
        ..Default::default()
    };

    proxy.lose_reply(0);
    let file = client
        .open_with(&f, exclusive)
        .expect("exclusive OPEN re-sent");
    file.write_at(b"once", 0).unwrap();
    drop(file);

    proxy.lose_reply(0);
    client.mkdir(&sub).expect("CREATE re-sent");

    proxy.lose_reply(0);
    client.rename(&f, &g).expect("RENAME re-sent");

    // remove() asks the type first (one reply), then REMOVEs.
    proxy.lose_reply(1);
    client.remove(&g).expect("REMOVE re-sent");

    let counts = proxy.counts();
    assert_eq!(counts.lost_replies, 4, "{counts:?}");
    assert!(counts.connections >= 3, "connections were cut: {counts:?}");
    assert_eq!(client.metadata(&g).unwrap_err().kind(), ErrorKind::NotFound);
    assert!(client.metadata(&sub).unwrap().is_dir());
    remove_tree(&client, &dir).unwrap();
}

/// A session the server no longer knows (destroyed behind the client's
/// back, as after a server restart) is replaced without the caller seeing
/// NFS4ERR_BADSESSION.
#[test]
fn a_lost_session_is_recreated_without_errors_reaching_the_caller() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "badsession");
    assert_eq!(client.destroy_session_for_test(), 1);
    let f = client
        .create(&format!("{dir}/f"))
        .expect("OPEN on a new session");
    f.write_at(b"after", 0).unwrap();
    drop(f);
    assert_eq!(client.destroy_session_for_test(), 2, "recovered once");
    remove_tree(&client, &dir).expect("on yet another session");
    assert_eq!(client.destroy_session_for_test(), 3, "recovered twice");
    client.ping().expect("a SEQUENCE on a fourth session");
}

/// NFS4ERR_DELAY from SEQUENCE (here from the proxy, for half of all
/// COMPOUNDs) is waited out and the request sent again; the caller sees
/// only success.
#[test]
fn delay_is_retried_without_reaching_the_caller() {
    let Some(url) = url() else { return };
    let (proxy, client) = proxied(&url);
    let dir = scratch(&client, "delay");
    proxy.set_jukebox(500);
    let f = client.create(&format!("{dir}/f")).unwrap();
    for i in 0..8u64 {
        f.write_at(&[i as u8; 100], i * 100).unwrap();
    }
    let mut back = [0u8; 800];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), 800);
    assert!(back
        .chunks(100)
        .enumerate()
        .all(|(i, c)| c.iter().all(|&b| b == i as u8)));
    proxy.set_jukebox(0);
    assert!(proxy.counts().delay_v41 > 0, "{:?}", proxy.counts());
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// `stable=unstable`: UNSTABLE writes are kept until `fsync`'s COMMIT
/// proves them durable (its verifier equal to theirs), then dropped.
#[test]
fn unstable_writes_are_kept_until_fsync_commits_them() {
    let Some(url) = url() else { return };
    let client = Client::connect(&with(&url, "stable=unstable")).unwrap();
    let dir = scratch(&client, "unstable");
    let f = client.create(&format!("{dir}/f")).unwrap();
    f.write_at(&[7u8; 100_000], 0).unwrap();
    f.write_at(&[8u8; 10], 50).unwrap();
    assert_eq!(
        f.uncommitted_bytes(),
        100_010,
        "the server answered UNSTABLE"
    );
    f.fsync().unwrap();
    assert_eq!(f.uncommitted_bytes(), 0);
    let mut back = vec![0u8; 100_000];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), 100_000);
    assert!(back[..50].iter().all(|&b| b == 7));
    assert!(back[50..60].iter().all(|&b| b == 8));
    assert!(back[60..].iter().all(|&b| b == 7));
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// `dnfs`-style URLs: one naming a file that does not exist yet, or a
/// directory below the export, mounts the export (the root of the file
/// system, by fsid) with the rest as the target path.
#[test]
fn a_url_below_the_export_mounts_the_export() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "below");
    let (base, query) = url.split_once('?').unwrap();
    let deeper = Client::connect(&format!("{base}{dir}/new-file?{query}")).unwrap();
    assert_eq!(deeper.export(), client.export());
    assert_eq!(deeper.target_path(), format!("{dir}/new-file"));
    let sub = Client::connect(&format!("{base}{dir}?{query}")).unwrap();
    assert_eq!(sub.export(), client.export());
    assert_eq!(sub.target_path(), dir);
    remove_tree(&client, &dir).unwrap();
}

/// A `Batch` on NFSv4.1 completes every operation with its own result
/// and hands owned buffers back. (Its operations run concurrently, in no
/// order: the reads are submitted once the writes have completed.)
#[test]
fn a_batch_completes_each_operation_with_its_own_result() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "batch");
    let f = client.create(&format!("{dir}/f")).unwrap();
    let mut batch = directnfs::Batch::new(&client);
    batch.write(&f, 0, &[1u8; 8192], 1).unwrap();
    batch.write_owned(&f, 8192, vec![2u8; 100], 2).unwrap();
    let mut done = batch.wait(2, None);
    assert_eq!(batch.outstanding(), 0);
    batch.read_owned(&f, 0, vec![0u8; 9000], 3).unwrap();
    let missing_read = batch.read_owned(&f, 1 << 40, vec![0u8; 10], 4);
    missing_read.unwrap();
    batch.wait_into(&mut done, 2, None);
    done.sort_by_key(|c| c.token);
    assert_eq!(done.len(), 4);
    assert_eq!(done[0].result.as_ref().unwrap(), &8192);
    assert_eq!(done[1].result.as_ref().unwrap(), &100);
    assert_eq!(done[1].buffer.as_deref(), Some(&[2u8; 100][..]));
    assert_eq!(done[2].result.as_ref().unwrap(), &8292);
    let back = done[2].buffer.as_ref().unwrap();
    assert!(back[..8192].iter().all(|&b| b == 1) && back[8192..8292].iter().all(|&b| b == 2));
    assert_eq!(done[3].result.as_ref().unwrap(), &0, "past EOF");
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// One 8 KiB block of the pipelined batch tests: its number in every byte
/// but the first, which is the round it was written in.
fn block(i: u64, round: u8) -> Vec<u8> {
    let mut b = vec![i as u8; 8192];
    b[0] = round;
    b
}

/// Runs one batch on `f`: writes of blocks `writes` (round `round`) and
/// reads of blocks `reads`, all submitted before any is waited for; checks
/// every completion's own result and each read's data (written in round
/// `read_round`). Returns the number of completions.
fn pipelined_batch(
    client: &Client,
    f: &directnfs::File,
    writes: std::ops::Range<u64>,
    reads: std::ops::Range<u64>,
    round: u8,
    read_round: u8,
) -> usize {
    let mut batch = directnfs::Batch::new(client);
    for i in writes.clone() {
        if i % 2 == 0 {
            batch.write(f, i * 8192, &block(i, round), i).unwrap();
        } else {
            batch.write_owned(f, i * 8192, block(i, round), i).unwrap();
        }
    }
    for i in reads.clone() {
        batch
            .read_owned(f, i * 8192, vec![0u8; 8192], 1000 + i)
            .unwrap();
    }
    let total = writes.clone().count() + reads.clone().count();
    let mut done = Vec::new();
    while done.len() < total {
        batch.wait_into(&mut done, total, Some(Duration::from_secs(60)));
    }
    assert_eq!(batch.outstanding(), 0);
    for c in &done {
        let n = c
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("token {}: {e}", c.token));
        assert_eq!(*n, 8192, "token {}", c.token);
        if c.token >= 1000 {
            let i = c.token - 1000;
            let back = c.buffer.as_ref().unwrap();
            assert!(back[..] == block(i, read_round)[..], "read of block {i}");
        } else if c.token % 2 == 1 {
            assert!(c.buffer.as_ref().unwrap()[..] == block(c.token, round)[..]);
        }
    }
    let mut tokens: Vec<u64> = done.iter().map(|c| c.token).collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), total, "each operation completed once");
    total
}

/// A batch on NFSv4.1 is pipelined: 64 writes and then a mix of 32 reads
/// and 32 writes of distinct blocks go out together, each COMPOUND on its
/// own slot (the session had many slots busy and the transport many calls
/// in flight at once — one at a time, both would stay at 1), and each
/// completes with its own result and data.
#[test]
fn a_pipelined_batch_has_many_compounds_in_flight_and_completes_each() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "pipeline");
    let f = client.create(&format!("{dir}/f")).unwrap();
    assert!(client.session_peak_slots_for_test() <= 1);
    assert_eq!(pipelined_batch(&client, &f, 0..64, 0..0, 1, 1), 64);
    assert_eq!(pipelined_batch(&client, &f, 64..96, 0..32, 2, 1), 64);
    let peak = client.session_peak_slots_for_test();
    let slots = client.session_slots().unwrap();
    assert!(
        peak >= 32.min(slots),
        "slots busy at once: {peak} of {slots}"
    );
    let inflight = client.stats().servers[0].totals.inflight_peak;
    assert!(inflight > 1, "calls in flight at once: {inflight}");
    // What the batches wrote, read back one at a time.
    let mut back = vec![0u8; 96 * 8192];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), back.len());
    for i in 0..96u64 {
        let round = if i < 64 { 1 } else { 2 };
        let at = i as usize * 8192;
        assert!(back[at..at + 8192] == block(i, round)[..], "block {i}");
    }
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// A pipelined batch across a lost session: the server (here the proxy,
/// for the first COMPOUNDs of the batch; then the real server, whose
/// session is destroyed behind the client's back) answers the requests in
/// flight with a session error; the session is recovered (after
/// NFS4ERR_STALE_CLIENTID by EXCHANGE_ID first, which hands back the same
/// client ID: the server still has it) and every operation completes with
/// its own correct result.
#[test]
fn a_pipelined_batch_across_a_session_loss_completes() {
    let Some(url) = url() else { return };
    let (proxy, client) = proxied(&url);
    let dir = scratch(&client, "pipeloss");
    let f = client.create(&format!("{dir}/f")).unwrap();
    assert_eq!(pipelined_batch(&client, &f, 0..64, 0..0, 1, 1), 64);
    let mut round = 1u8;
    for (status, name) in [
        (10052u32, "NFS4ERR_BADSESSION"),
        (10078, "NFS4ERR_DEADSESSION"),
        (10022, "NFS4ERR_STALE_CLIENTID"),
    ] {
        let failed = proxy.counts().failed_sequences_v41;
        proxy.fail_sequence_v41(status, 5);
        round += 1;
        // Writes of the upper half, reads of the lower half (round 1).
        pipelined_batch(&client, &f, 32..64, 0..32, round, 1);
        assert_eq!(proxy.counts().failed_sequences_v41, failed + 5, "{name}");
        assert!(
            client
                .session_recoveries_for_test()
                .iter()
                .any(|s| s == name),
            "{name}: {:?}",
            client.session_recoveries_for_test()
        );
        // The upper half reads back as this round wrote it.
        pipelined_batch(&client, &f, 0..0, 32..64, round, round);
    }
    let sessions = client.destroy_session_for_test();
    round += 1;
    pipelined_batch(&client, &f, 32..64, 0..32, round, 1);
    assert_eq!(
        client.destroy_session_for_test(),
        sessions + 1,
        "the batch recovered the destroyed session once"
    );
    pipelined_batch(&client, &f, 0..0, 32..64, round, round);
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// A pipelined batch through NFS4ERR_DELAY from SEQUENCE (the proxy, for
/// half of all COMPOUNDs: those requests are sent again, same bytes and
/// slot, after a pause) and through lost replies (the engine re-sends
/// the same bytes on another connection, answered from the reply cache):
/// every operation completes with its own correct result.
#[test]
fn a_pipelined_batch_through_delay_and_lost_replies_completes() {
    let Some(url) = url() else { return };
    let (proxy, client) = proxied(&url);
    let dir = scratch(&client, "pipedelay");
    let f = client.create(&format!("{dir}/f")).unwrap();
    assert_eq!(pipelined_batch(&client, &f, 0..32, 0..0, 1, 1), 32);
    proxy.set_jukebox(500);
    pipelined_batch(&client, &f, 32..48, 0..16, 2, 1);
    proxy.set_jukebox(0);
    assert!(proxy.counts().delay_v41 > 0, "{:?}", proxy.counts());
    proxy.lose_reply(3);
    proxy.lose_reply(10);
    pipelined_batch(&client, &f, 48..64, 16..32, 3, 1);
    assert_eq!(proxy.counts().lost_replies, 2, "{:?}", proxy.counts());
    pipelined_batch(&client, &f, 0..0, 32..48, 2, 2);
    pipelined_batch(&client, &f, 0..0, 48..64, 3, 3);
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// Pipelined batches run back to back while Ganesha is SIGKILLed and
/// restarted (no grace period): the batch in flight at the kill waits
/// for the server, meets the lost session (BADSESSION, then a new client
/// ID; the file opened again), and completes with every operation's
/// correct result; no batch hangs or fails, and the data reads back.
#[test]
fn a_pipelined_batch_in_flight_across_a_server_restart_completes() {
    let Some((server, _url, client, _other)) = own_v41(
        "v41-pipe-restart",
        "2659",
        "20659",
        &[("DNFS_NFS4_GRACE", "0")],
    ) else {
        return;
    };
    let f = client.create("/pipe.dat").unwrap();
    pipelined_batch(&client, &f, 0..64, 0..0, 1, 1);
    let mut restart = server.spawn_restart(&["--kill", "--down", "2"]).unwrap();
    let mut round = 1u8;
    let mut batches = 0;
    while restart.try_wait().unwrap().is_none() {
        round = round.wrapping_add(1);
        pipelined_batch(&client, &f, 32..64, 0..32, round, 1);
        batches += 1;
    }
    assert!(restart.wait().unwrap().success(), "nfs-server.sh restart");
    assert!(batches > 0);
    round = round.wrapping_add(1);
    pipelined_batch(&client, &f, 32..64, 0..32, round, 1);
    pipelined_batch(&client, &f, 0..0, 32..64, round, round);
    assert!(
        client.destroy_session_for_test() >= 2,
        "the lost session was replaced"
    );
    drop(f);
    drop(client);
    drop(server);
}

/// A batch holds its slots until it reaps the replies, so batches leave
/// a quarter of the session's slots to everything else: a blocking read
/// and write go through while a batch of 64 reads (as many as Ganesha's
/// slots) is submitted and not reaped — they would wait for ever for
/// slots only a reap would free.
#[test]
fn blocking_calls_go_while_a_batch_holds_slots_unreaped() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "pipereserve");
    let f = client.create(&format!("{dir}/f")).unwrap();
    pipelined_batch(&client, &f, 0..64, 0..0, 1, 1);
    let slots = client.session_slots().unwrap();
    // As many reads as the session has slots (the test servers grant
    // 1024), so that the batch takes every slot it may: blocking calls
    // must still find one.
    let n = u64::from(slots).max(64);
    let mut batch = directnfs::Batch::new(&client);
    for i in 0..n {
        batch
            .read_owned(&f, i % 64 * 8192, vec![0u8; 8192], i)
            .unwrap();
    }
    batch.submit();
    // On another thread, so that the test fails (rather than hangs) if
    // they wait for the batch's slots.
    let (tx, rx) = std::sync::mpsc::channel();
    let g = f.clone();
    std::thread::spawn(move || {
        let mut back = vec![0u8; 8192];
        let read = g.read_at(&mut back, 8192).map(|n| (n, back == block(1, 1)));
        let write = g.write_at(&block(70, 1), 70 * 8192);
        let _ = tx.send((read, write));
    });
    let (read, write) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the blocking calls waited for the batch's slots");
    assert_eq!(read.unwrap(), (8192, true));
    assert_eq!(write.unwrap(), 8192);
    let mut done = Vec::new();
    while done.len() < n as usize {
        batch.wait_into(&mut done, 64, None);
    }
    for c in &done {
        assert_eq!(*c.result.as_ref().unwrap(), 8192, "token {}", c.token);
        assert!(c.buffer.as_ref().unwrap()[..] == block(c.token % 64, 1)[..]);
    }
    let peak = client.session_peak_slots_for_test();
    assert!(peak < slots, "slots busy at once: {peak} of {slots}");
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// `stable=unstable` through a pipelined batch: the UNSTABLE writes are
/// kept until `fsync`'s COMMIT, as `write_at` keeps them.
#[test]
fn pipelined_unstable_writes_are_kept_until_fsync() {
    let Some(url) = url() else { return };
    let client = Client::connect(&with(&url, "stable=unstable")).unwrap();
    let dir = scratch(&client, "pipeunstable");
    let f = client.create(&format!("{dir}/f")).unwrap();
    pipelined_batch(&client, &f, 0..16, 0..0, 1, 1);
    assert_eq!(
        f.uncommitted_bytes(),
        16 * 8192,
        "the server answered UNSTABLE"
    );
    f.fsync().unwrap();
    assert_eq!(f.uncommitted_bytes(), 0);
    pipelined_batch(&client, &f, 0..0, 0..16, 1, 1);
    drop(f);
    remove_tree(&client, &dir).unwrap();
}

/// Byte-range locks between two clients (two client IDs, as two hosts):
/// exclusion, shared locks, release by unlock and by dropping the file,
/// a blocking lock that waits for the holder.
#[test]
fn byte_range_locks_exclude_between_clients_and_are_released_on_close() {
    let Some(url) = url() else { return };
    let a = Client::connect(&url).unwrap();
    let b = Client::connect(&url).unwrap();
    let dir = scratch(&a, "locks");
    let path = format!("{dir}/f");
    let fa = a.create(&path).unwrap();
    let fb = b.open(&path).unwrap();

    fa.try_lock(0, 100, true).unwrap();
    // LOCKT: the holder's own lock is no conflict for it; the other
    // client is told the range and type the server holds.
    assert_eq!(fa.test_lock(0, 1, true).unwrap(), None, "own lock");
    assert_eq!(
        fb.test_lock(50, 10, false).unwrap(),
        Some(directnfs::LockConflict {
            offset: 0,
            len: 100,
            exclusive: true
        })
    );
    assert_eq!(
        fb.test_lock(100, 0, true).unwrap(),
        None,
        "beyond the range"
    );
    let e = fb.try_lock(50, 10, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e}");
    assert_eq!(e.errno(), libc::EAGAIN);
    assert!(
        fb.try_lock(50, 10, false).is_err(),
        "shared against exclusive"
    );
    fb.try_lock(100, 100, true).expect("a range nobody holds");
    fa.unlock(0, 100).unwrap();
    fb.try_lock(0, 100, true).expect("released by unlock");
    fb.unlock(0, 0).unwrap();

    // Shared locks coexist.
    fa.try_lock(0, 10, false).unwrap();
    assert_eq!(
        fb.test_lock(0, 10, false).unwrap(),
        None,
        "shared vs shared"
    );
    assert_eq!(
        fb.test_lock(5, 0, true).unwrap(),
        Some(directnfs::LockConflict {
            offset: 0,
            len: 10,
            exclusive: false
        }),
        "exclusive vs shared"
    );
    fb.try_lock(0, 10, false).unwrap();
    fb.unlock(0, 10).unwrap();
    fa.unlock(0, 10).unwrap();

    // A blocking lock waits until the holder lets go.
    fa.lock(0, 0, true).unwrap();
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| fb.lock(0, 1, true));
        std::thread::sleep(Duration::from_millis(300));
        assert!(!waiter.is_finished(), "the lock must wait for its holder");
        drop(fa); // CLOSE releases the locks
        waiter.join().unwrap().unwrap();
    });
    assert!(started.elapsed() >= Duration::from_millis(300));
    drop(fb);
    remove_tree(&a, &dir).unwrap();
}

/// NFSv3 has no locks in its protocol (NLM is not spoken): refused.
#[test]
fn locks_on_nfsv3_are_refused_clearly() {
    let Some(url) = directnfs_testkit::server::url("locks_on_nfsv3_are_refused_clearly") else {
        return;
    };
    let client = Client::connect(&url).unwrap();
    let path = format!("/v3-lock-{}", std::process::id());
    let f = client.create(&path).unwrap();
    let e = f.try_lock(0, 1, true).unwrap_err();
    assert_eq!(e.errno(), libc::ENOTSUP, "{e}");
    let e = f.test_lock(0, 1, true).unwrap_err();
    assert_eq!(e.errno(), libc::ENOTSUP, "{e}");
    assert!(e.to_string().contains("NFSv4.1"), "{e}");
    drop(f);
    client.remove(&path).unwrap();
}

/// A server killed and restarted (graceless, on a server of its own):
/// the client makes a new client ID and session (BADSESSION, then
/// STALE_CLIENTID), its reclaim is refused (no grace period), so it opens
/// the file again by its handle (the old stateid is unknown), and I/O
/// resumes with no acknowledged write lost.
#[test]
fn io_resumes_after_a_server_restart_with_no_acknowledged_write_lost() {
    if url().is_none() {
        return;
    }
    let server = OwnGanesha::start(
        "v41-restart",
        &[
            ("DNFS_PRIVATE_RPCBIND", "1"),
            ("DNFS_NFS_PORT", "2655"),
            ("DNFS_MNT_PORT", "20655"),
            ("DNFS_NFS4", "1"),
            ("DNFS_NFS4_GRACE", "0"),
        ],
    )
    .unwrap();
    let port = NfsUrl::parse(server.url())
        .unwrap()
        .options
        .nfs_port
        .unwrap();
    let (base, _) = server.url().split_once('?').unwrap();
    let client = Client::connect(&format!("{base}?vers=4.1&nfsport={port}&timeo=20")).unwrap();
    let f = client.create("/db.dat").unwrap();
    f.write_at(&[1u8; 65536], 0).unwrap();
    restart(&server, &["--kill", "--down", "2"]);

    f.write_at(&[2u8; 4096], 65536).unwrap();
    let mut back = vec![0u8; 65536 + 4096];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), back.len());
    assert!(
        back[..65536].iter().all(|&b| b == 1),
        "written before the restart"
    );
    assert!(back[65536..].iter().all(|&b| b == 2), "written after it");
    assert!(
        client.destroy_session_for_test() >= 2,
        "the lost session was replaced"
    );
    drop(f);
    drop(client);
    drop(server);
}

/// An idle client renews its lease: a SEQUENCE (counted as "OTHER") once
/// it has sent nothing for a quarter of the lease (Ganesha's is 60 s, so
/// this test idles 17 s), and the session still works afterwards.
#[test]
fn an_idle_client_renews_its_lease() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let other = |c: &Client| {
        c.stats().servers[0]
            .totals
            .calls_by_proc
            .get("OTHER")
            .copied()
            .unwrap_or(0)
    };
    let before = other(&client);
    std::thread::sleep(Duration::from_secs(17));
    assert!(other(&client) > before, "no SEQUENCE while idle");
    client.metadata("/").unwrap();
}

/// A Ganesha of the test's own with NFSv4.1 (`name`, its NFS and MOUNT
/// ports, more `nfs-server.sh` settings), the v4.1 URL of its export and
/// two clients of it; `None` (test skipped) where the real-server tests
/// do not run.
fn own_v41(
    name: &str,
    nfs: &str,
    mnt: &str,
    env: &[(&str, &str)],
) -> Option<(OwnGanesha, String, Client, Client)> {
    url()?;
    let mut all = vec![
        ("DNFS_PRIVATE_RPCBIND", "1"),
        ("DNFS_NFS_PORT", nfs),
        ("DNFS_MNT_PORT", mnt),
        ("DNFS_NFS4", "1"),
    ];
    all.extend_from_slice(env);
    let server = OwnGanesha::start(name, &all).unwrap();
    let port = NfsUrl::parse(server.url())
        .unwrap()
        .options
        .nfs_port
        .unwrap();
    let (base, _) = server.url().split_once('?').unwrap();
    let url = format!("{base}?vers=4.1&nfsport={port}&timeo=20");
    let a = Client::connect(&url).unwrap();
    let b = Client::connect(&url).unwrap();
    Some((server, url, a, b))
}

fn restart(server: &OwnGanesha, args: &[&str]) {
    let mut restart = server.spawn_restart(args).unwrap();
    assert!(
        restart.wait().unwrap().success(),
        "nfs-server.sh restart {args:?}"
    );
}

fn lost(e: &directnfs::Error) -> bool {
    matches!(e, directnfs::Error::LockLost { .. })
        && e.errno() == libc::EIO
        && e.to_string().contains("lock lost")
}

/// Server restart with a grace period (SIGKILL, the same state directory,
/// so Ganesha's recovery records let the client reclaim): the client gets
/// a new client ID, reclaims its open (CLAIM_PREVIOUS) and both its locks
/// (LOCK reclaim), and its I/O goes on; a second client's conflicting
/// `try_lock` after the restart still fails (once the grace period, which
/// a soft mount does not wait out, is over). Then a graceless restart:
/// the reclaim is refused (NFS4ERR_NO_GRACE), and the holder is told —
/// its I/O and its `unlock` fail with `LockLost` (EIO) once — while the
/// other client can now take the range.
#[test]
fn locks_are_reclaimed_after_a_server_restart_and_a_refused_reclaim_is_reported() {
    let Some((server, url, a, b)) =
        own_v41("v41-reclaim", "2656", "20656", &[("DNFS_NFS4_GRACE", "0")])
    else {
        return;
    };
    let fa = a.create("/locked.dat").unwrap();
    fa.write_at(&[1u8; 8192], 0).unwrap();
    let fb = b.open("/locked.dat").unwrap();
    fa.try_lock(0, 100, true).unwrap();
    fa.try_lock(200, 0, false).unwrap();
    let e = fb.try_lock(0, 10, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e}");

    restart(&server, &["--kill", "--down", "2", "--grace", "10"]);
    fa.write_at(&[2u8; 4096], 4096)
        .expect("I/O goes on after the reclaim");
    let mut back = vec![0u8; 8192];
    assert_eq!(fa.read_at(&mut back, 0).unwrap(), 8192);
    assert!(back[..4096].iter().all(|&x| x == 1) && back[4096..].iter().all(|&x| x == 2));
    assert_eq!(
        a.session_recoveries_for_test(),
        ["NFS4ERR_BADSESSION", "NFS4ERR_STALE_CLIENTID"],
        "the restart lost the session and the client ID"
    );
    // A soft mount does not wait out the grace period: a new open
    // (timeo 1 s x retrans 2) fails with ETIMEDOUT naming NFS4ERR_GRACE.
    let mut target = Target::from_url(&NfsUrl::parse(&url).unwrap());
    target.options.hard = false;
    target.options.timeo = Duration::from_secs(1);
    target.options.retrans = 2;
    let soft = Client::mount(&target).unwrap();
    let started = std::time::Instant::now();
    let e = soft.create("/during-grace").unwrap_err();
    assert_eq!(e.errno(), libc::ETIMEDOUT, "{e}");
    assert!(e.to_string().contains("NFS4ERR_GRACE"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(soft);
    // b waits out the grace period (NFS4ERR_GRACE), then is denied:
    // a's reclaimed locks hold.
    let e = fb.try_lock(0, 10, true).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::WouldBlock,
        "exclusive lock reclaimed: {e}"
    );
    let e = fb.try_lock(1000, 10, true).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::WouldBlock,
        "shared lock reclaimed: {e}"
    );
    fb.try_lock(1000, 10, false).expect("shared beside shared");
    fb.try_lock(100, 50, true).expect("a range a never held");
    fb.unlock(0, 0).unwrap();
    fa.unlock(0, 100)
        .expect("the reclaimed lock is a's to unlock");
    fb.try_lock(0, 10, true).expect("released by a");
    fb.unlock(0, 0).unwrap();

    // Graceless: nothing can be reclaimed; a still holds 200.. shared.
    restart(&server, &["--kill", "--down", "2", "--grace", "0"]);
    let e = fa.write_at(&[3u8; 10], 0).unwrap_err();
    assert!(lost(&e), "{e:?}");
    assert!(e.to_string().contains("200.."), "names the range: {e}");
    let e = fa.read_at(&mut back, 0).unwrap_err();
    assert!(lost(&e), "reported until acknowledged: {e:?}");
    fb.try_lock(200, 10, true)
        .expect("the lost lock is really gone: another owner takes it");
    let e = fa.unlock(0, 0).unwrap_err();
    assert!(lost(&e), "unlock reports it: {e:?}");
    fa.write_at(&[3u8; 10], 0)
        .expect("acknowledged: I/O works again");
    assert_eq!(fa.read_at(&mut back[..10], 0).unwrap(), 10);
    assert_eq!(&back[..10], &[3u8; 10]);
    drop((fa, fb, a, b));
    drop(server);
}

/// A second server restart in the middle of the reclaim after a first
/// (SIGKILL while the client has reclaimed one of three locked files):
/// the request that meets the new loss recovers the session and reclaims
/// everything again on the newer client ID; the interrupted reclaim stops
/// and nothing is reported lost — I/O goes on on every file and another
/// client is still denied every lock after the grace period.
#[test]
fn a_restart_during_a_reclaim_is_reclaimed_again_and_every_lock_still_holds() {
    let Some((server, _, a, b)) = own_v41(
        "v41-rereclaim",
        "2653",
        "20653",
        &[("DNFS_NFS4_GRACE", "0")],
    ) else {
        return;
    };
    let files: Vec<_> = (0..3)
        .map(|i| {
            let f = a.create(&format!("/locked-{i}.dat")).unwrap();
            f.write_at(&[i as u8 + 1; 4096], 0).unwrap();
            f.try_lock(0, 100, true).unwrap();
            f
        })
        .collect();
    a.pause_reclaim_for_test(true);
    restart(&server, &["--kill", "--down", "1", "--grace", "10"]);
    std::thread::scope(|sc| {
        let io = sc.spawn(|| files[0].write_at(&[9u8; 10], 4096));
        let started = std::time::Instant::now();
        while !a.reclaim_waiting_for_test() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the reclaim never reached its hold"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        restart(&server, &["--kill", "--down", "1", "--grace", "10"]);
        a.pause_reclaim_for_test(false);
        io.join()
            .unwrap()
            .expect("the write that started the first recovery completes");
    });
    assert_eq!(
        a.session_recoveries_for_test(),
        [
            "NFS4ERR_BADSESSION",
            "NFS4ERR_STALE_CLIENTID",
            "NFS4ERR_BADSESSION",
            "NFS4ERR_STALE_CLIENTID"
        ],
        "two restarts, the second met by the reclaim"
    );
    for (i, f) in files.iter().enumerate() {
        f.write_at(&[7u8; 10], 100)
            .unwrap_or_else(|e| panic!("file {i}: no lock reported lost: {e}"));
        let mut back = [0u8; 4];
        assert_eq!(f.read_at(&mut back, 0).unwrap(), 4);
        assert_eq!(back, [i as u8 + 1; 4], "file {i}: acknowledged data kept");
    }
    // b waits out the grace period, then is denied on every file.
    for i in 0..3 {
        let fb = b.open(&format!("/locked-{i}.dat")).unwrap();
        let e = fb.try_lock(0, 10, true).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::WouldBlock,
            "file {i}: still locked: {e}"
        );
    }
    for f in &files {
        f.unlock(0, 0)
            .expect("the reclaimed locks are a's to release");
    }
    drop((files, a, b));
    drop(server);
}

/// A lease that expires (the client's renewal paused past the lease of a
/// server whose lease is 5 s) loses the client's state: the server frees
/// its lock for another client; when the client is back, its session is
/// replaced (a new client ID: the reclaim finds no grace), a file without
/// locks is opened again and carries on, and the file that held the lock
/// reports `LockLost` instead of pretending to hold it.
#[test]
fn an_expired_lease_loses_locks_and_says_so_while_unlocked_files_carry_on() {
    let Some((server, _, a, b)) =
        own_v41("v41-expiry", "2657", "20657", &[("DNFS_NFS4_LEASE", "5")])
    else {
        return;
    };
    let locked = a.create("/locked").unwrap();
    let plain = a.create("/plain").unwrap();
    locked.try_lock(0, 0, true).unwrap();
    plain.write_at(b"before", 0).unwrap();
    let fb = b.open("/locked").unwrap();
    assert!(fb.try_lock(0, 1, true).is_err());

    a.pause_lease_renewal_for_test(true);
    let started = std::time::Instant::now();
    loop {
        match fb.try_lock(0, 1, true) {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "the server never expired the idle client"
                );
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("{e}"),
        }
    }
    a.pause_lease_renewal_for_test(false);

    plain
        .write_at(b"after", 6)
        .expect("a file without locks carries on");
    let mut back = [0u8; 11];
    assert_eq!(plain.read_at(&mut back, 0).unwrap(), 11);
    assert_eq!(&back, b"beforeafter");
    // Ganesha destroyed the expired client's session and client ID: the
    // client met NFS4ERR_BADSESSION, then STALE_CLIENTID at CREATE_SESSION.
    assert_eq!(
        a.session_recoveries_for_test(),
        ["NFS4ERR_BADSESSION", "NFS4ERR_STALE_CLIENTID"]
    );
    let e = locked.write_at(b"x", 0).unwrap_err();
    assert!(lost(&e), "{e:?}");
    let e = locked.unlock(0, 0).unwrap_err();
    assert!(lost(&e), "{e:?}");
    locked.write_at(b"x", 0).unwrap();
    drop((locked, plain, fb, a, b));
    drop(server);
}

/// The session errors a server sends when it lost the session
/// (NFS4ERR_BADSESSION, DEADSESSION) or the client (STALE_CLIENTID,
/// EXPIRED), injected by the proxy into SEQUENCE while the real server
/// still holds everything: each is recovered without reaching the
/// caller; for the client errors the server hands back the same client ID
/// (same owner and verifier), so nothing needs reclaiming and the held
/// lock is neither lost nor reported lost.
#[test]
fn session_errors_from_sequence_are_recovered_and_keep_the_locks() {
    let Some(url) = url() else { return };
    let (proxy, client) = proxied(&url);
    let other = Client::connect(&url).unwrap();
    let dir = scratch(&client, "seqerr");
    let path = format!("{dir}/f");
    let f = client.create(&path).unwrap();
    f.try_lock(0, 10, true).unwrap();
    let g = other.open(&path).unwrap();
    for (status, name) in [
        (10052u32, "NFS4ERR_BADSESSION"),
        (10078, "NFS4ERR_DEADSESSION"),
        (10022, "NFS4ERR_STALE_CLIENTID"),
        (10011, "NFS4ERR_EXPIRED"),
    ] {
        proxy.fail_sequence_v41(status, 1);
        f.write_at(name.as_bytes(), 0)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            client
                .session_recoveries_for_test()
                .last()
                .map(String::as_str),
            Some(name)
        );
        let e = g.try_lock(0, 1, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WouldBlock, "{name}: still held: {e}");
    }
    assert_eq!(proxy.counts().failed_sequences_v41, 4);
    f.unlock(0, 10).expect("not reported lost");
    drop((f, g));
    remove_tree(&client, &dir).unwrap();
}

/// NFS4ERR_DELAY for ever: a soft mount gives up after `timeo` x
/// `retrans` (1 s x 2) with ETIMEDOUT naming the status; a hard mount
/// keeps waiting and succeeds once the server answers.
#[test]
fn delay_is_waited_out_for_ever_on_hard_mounts_and_bounded_on_soft_ones() {
    let Some(url) = url() else { return };
    let (proxy, soft) = proxied_with(&url, |o| {
        o.hard = false;
        o.timeo = Duration::from_secs(1);
        o.retrans = 2;
    });
    let dir = scratch(&soft, "softdelay");
    proxy.set_jukebox(1000);
    let started = std::time::Instant::now();
    let e = soft.metadata(&dir).unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.errno(), libc::ETIMEDOUT, "{e}");
    assert!(e.to_string().contains("NFS4ERR_DELAY"), "{e}");
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    proxy.set_jukebox(0);
    // The slot given up on is in doubt (a retry might have run): its
    // next request is answered NFS4ERR_SEQ_MISORDERED, steps back and
    // goes through.
    assert!(soft
        .metadata(&dir)
        .expect("the session works again")
        .is_dir());
    drop(soft);

    let (proxy, hard) = proxied(&url);
    proxy.set_jukebox(1000);
    std::thread::scope(|s| {
        let waiter = s.spawn(|| hard.metadata(&dir));
        std::thread::sleep(Duration::from_secs(3));
        assert!(!waiter.is_finished(), "a hard mount must keep waiting");
        proxy.set_jukebox(0);
        assert!(waiter.join().unwrap().unwrap().is_dir());
    });
    remove_tree(&hard, &dir).unwrap();
}

/// A restart (SIGKILL, 5 s grace period) under 4 threads of I/O on 4
/// files, two of them locked: whichever thread meets the restart first
/// reclaims for all while the others wait for it; no thread sees an
/// error, every block reads back as written, and the locks still hold.
#[test]
fn a_restart_under_concurrent_io_is_reclaimed_once_for_every_thread() {
    let Some((server, _, a, b)) = own_v41(
        "v41-reclaim-mt",
        "2658",
        "20658",
        &[("DNFS_NFS4_GRACE", "0")],
    ) else {
        return;
    };
    let files: Vec<_> = (0..4)
        .map(|i| a.create(&format!("/f{i}")).unwrap())
        .collect();
    files[0].try_lock(0, 0, true).unwrap();
    files[1].try_lock(0, 10, false).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let workers: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let stop = &stop;
                s.spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let block = [(n % 251) as u8 ^ i as u8; 4096];
                        f.write_at(&block, n * 4096)
                            .unwrap_or_else(|e| panic!("file {i} write {n}: {e}"));
                        let mut back = [0u8; 4096];
                        f.read_at(&mut back, n * 4096)
                            .unwrap_or_else(|e| panic!("file {i} read {n}: {e}"));
                        assert_eq!(back, block, "file {i} block {n}");
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        restart(&server, &["--kill", "--down", "2", "--grace", "5"]);
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in workers {
            assert!(w.join().unwrap() > 0);
        }
    });
    assert_eq!(
        a.session_recoveries_for_test(),
        ["NFS4ERR_BADSESSION", "NFS4ERR_STALE_CLIENTID"],
        "one recovery for all threads"
    );
    let g0 = b.open("/f0").unwrap();
    let g1 = b.open("/f1").unwrap();
    assert_eq!(
        g0.try_lock(100, 1, false).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert_eq!(
        g1.try_lock(0, 1, true).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    g1.try_lock(0, 1, false).expect("shared beside shared");
    files[0].unlock(0, 0).unwrap();
    files[1].unlock(0, 0).unwrap();
    drop((files, g0, g1, a, b));
    drop(server);
}

#[test]
fn attributes_of_a_directory_and_a_link_change_through_their_handles() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "dir-attrs");
    let sub = format!("{dir}/sub");
    client.mkdir(&sub).unwrap();
    let link = format!("{dir}/link");
    client.symlink(b"sub", &link).unwrap();
    // OPEN refuses a directory and a link: their handles have no open
    // state, and SETATTR goes with the anonymous stateid.
    let (dh, _) = client.lookup(&sub).unwrap();
    let at = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    client
        .open_handle(&dh, &sub)
        .set_attrs(SetAttrs {
            mode: Some(0o700),
            mtime: SetTimeTo::At(at),
            ..Default::default()
        })
        .unwrap();
    let m = client.metadata(&sub).unwrap();
    assert_eq!(m.mode & 0o7777, 0o700);
    assert_eq!(m.mtime, at);
    // A link's SETATTR is answered (ENOTSUP before); NFS-Ganesha's VFS
    // keeps a link's times as they are (on NFSv3 too), so only the answer
    // is checked.
    let (lh, _) = client.lookup(&link).unwrap();
    client
        .open_handle(&lh, &link)
        .set_attrs(SetAttrs {
            mtime: SetTimeTo::At(at),
            ..Default::default()
        })
        .unwrap();
    remove_tree(&client, &dir).unwrap();
}

#[test]
fn deep_paths_and_a_rename_between_two_work_beyond_one_compounds_operations() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "deep");
    // 20 directories below the scratch directory: a walk of 21 LOOKUPs,
    // more than one COMPOUND carries (16 operations with SEQUENCE).
    let mut deep = dir.clone();
    for i in 0..20 {
        deep = format!("{deep}/{i}");
        client.mkdir(&deep).unwrap();
    }
    let file = format!("{deep}/f");
    let f = client.create(&file).unwrap();
    f.write_at(b"deep data", 0).unwrap();
    drop(f);
    assert_eq!(client.metadata(&file).unwrap().size, 9);
    assert_eq!(sorted_names(&client, &deep), ["f"]);
    // Two deep walks in one RENAME, within the directory and up to the top.
    let renamed = format!("{deep}/g");
    client.rename(&file, &renamed).unwrap();
    let top = format!("{dir}/from-the-bottom");
    client.rename(&renamed, &top).unwrap();
    let mut buf = [0u8; 9];
    client.open(&top).unwrap().read_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"deep data");
    // Errors of a walk resolved apart are the operation's.
    let e = client.metadata(&format!("{deep}/missing")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e = client
        .metadata(&format!(
            "{dir}/0/1/2/3/4/5/6/7/8/9/10/11/12/13/14/nope/16/17"
        ))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    remove_tree(&client, &dir).unwrap();
}

/// Whether a thread of this process has the name `name`.
fn has_thread(name: &str) -> bool {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
        })
        .unwrap_or(false)
}

#[test]
fn a_forked_child_publishes_its_statistics_only_once_it_has_lived_a_second() {
    let Some(url) = url() else { return };
    if std::env::var("DIRECTNFS_STATS").is_ok_and(|v| v == "off") {
        directnfs_testkit::server::skipped(
            "a_forked_child_publishes_its_statistics_only_once_it_has_lived_a_second",
            "DIRECTNFS_STATS=off",
        );
        return;
    }
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "forkpub");
    let path = format!("{dir}/f");
    client.create(&path).unwrap().write_at(b"data", 0).unwrap();
    in_child::in_child(&client, |c| {
        let mut buf = [0u8; 4];
        c.open(&path)
            .and_then(|f| f.read_at(&mut buf, 0))
            .map_err(|e| format!("read: {e}"))?;
        if &buf != b"data" {
            return Err("the data read".into());
        }
        // A backend that makes a few calls and exits never publishes: no
        // endpoint thread yet.
        if has_thread("dnfs-stats") {
            return Err("an endpoint thread right after the first calls".into());
        }
        // It starts at the renewal thread's first tick, a second in; on a
        // busy machine that tick can come late: waited for, up to 10 s.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !has_thread("dnfs-stats") {
            if std::time::Instant::now() >= until {
                return Err("no endpoint thread after 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    });
    remove_tree(&client, &dir).unwrap();
}

/// NFS-Ganesha's pseudo file system hands out 128-byte handles (NFSv4's
/// largest, `NFS4_FHSIZE`): mounted at the export's parent directory (a
/// pseudo directory), `lookup` returns such a handle whole, and
/// `metadata_of` takes it back; the export below has its own (shorter)
/// handle, and a file there opened by its handle reads back.
#[test]
fn handles_longer_than_64_bytes_are_kept_whole() {
    let Some(url) = url() else { return };
    let client = Client::connect(&url).unwrap();
    let dir = scratch(&client, "longfh");
    let path = format!("{dir}/f");
    client
        .create(&path)
        .unwrap()
        .write_at(b"long handles", 0)
        .unwrap();
    let (base, query) = url.split_once('?').unwrap();
    let (parent, export) = base.rsplit_once('/').unwrap();
    assert!(
        parent.len() > "nfs://x".len(),
        "the export {base} has a parent"
    );
    let above = Client::connect(&format!("{parent}?{query}")).unwrap();
    let (root, m) = above.lookup("/").unwrap();
    assert!(m.is_dir());
    assert!(
        root.as_bytes().len() > 64,
        "the pseudo directory's handle is {} bytes",
        root.as_bytes().len()
    );
    let again = directnfs::Handle::from_bytes(root.as_bytes()).unwrap();
    assert!(above.metadata_of(&again, "/").unwrap().is_dir());
    let (h, _) = above.lookup(&format!("/{export}{path}")).unwrap();
    let f = above.open_handle(&h, &path);
    let mut back = [0u8; 12];
    assert_eq!(f.read_at(&mut back, 0).unwrap(), 12);
    assert_eq!(&back, b"long handles");
    drop(f);
    client.remove(&path).unwrap();
    client.rmdir(&dir).unwrap();
}

/// Mounts `url` on another thread and returns its outcome and how long it
/// took, or `None` when it had not returned after `limit` (the thread is
/// left behind: a hard mount that never gives up).
fn mount_within(url: &str, limit: Duration) -> Option<(directnfs::Result<Client>, Duration)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let url = url.to_string();
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let r = Client::connect(&url);
        let _ = tx.send((r, start.elapsed()));
    });
    rx.recv_timeout(limit).ok()
}

/// An export path the server does not have is a permanent refusal
/// (PUTROOTFH, LOOKUP: NFS4ERR_NOENT), as MOUNT's MNT3ERR_NOENT is on
/// NFSv3: a hard mount fails at once with ENOENT and the server's answer,
/// a soft one too, instead of trying again until `mnt_timeout` (or, soft,
/// failing with ETIMEDOUT).
#[test]
fn mounting_an_export_that_does_not_exist_fails_at_once_with_the_servers_answer() {
    let Some(url) = url() else { return };
    let (base, query) = url.split_once('?').unwrap();
    // A path in no export (a path below an export mounts it: the target
    // may be a file not made yet).
    let host = &base[..base["nfs://".len()..].find('/').unwrap() + "nfs://".len()];
    let missing = format!("{host}/no-such-export-{}?{query}", std::process::id());
    for extra in [
        "hard&mnt_timeout=60",
        "soft&timeo=10&retrans=1&mnt_timeout=60",
    ] {
        let (r, took) = mount_within(&format!("{missing}&{extra}"), Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{extra}: the mount was still waiting after 20 s"));
        let e = r
            .err()
            .unwrap_or_else(|| panic!("{extra}: mounted a missing export"));
        assert_eq!(e.errno(), libc::ENOENT, "{extra}: {e}");
        assert!(e.to_string().contains("NOENT"), "{extra}: {e}");
        assert!(took < Duration::from_secs(5), "{extra}: took {took:?}");
    }
    // The same named as a dnfstab `export:` (the export apart from the
    // path), hard.
    let mut target = Target::from_url(&NfsUrl::parse(&url).unwrap());
    target.export = Some(format!("/no-such-export-{}", std::process::id()));
    target.path = target.export.clone().unwrap();
    target.options.mnt_timeout = Duration::from_secs(60);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Client::mount(&target).map(|_| ()));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("export: the mount was still waiting after 20 s");
    let e = r.expect_err("mounted a missing export");
    assert_eq!(e.errno(), libc::ENOENT, "export: {e}");
}

/// A server without NFSv4 (Ganesha with `Protocols = 3`) answers NFSv4
/// calls with PROG_MISMATCH: a permanent refusal, reported at once and
/// naming the versions it has, not a server that is not responding.
#[test]
fn mounting_a_server_without_nfsv4_fails_at_once_naming_the_refusal() {
    if url().is_none() {
        return;
    }
    let server = OwnGanesha::start(
        "v41-no-v4",
        &[
            ("DNFS_PRIVATE_RPCBIND", "1"),
            ("DNFS_NFS_PORT", "2673"),
            ("DNFS_MNT_PORT", "20673"),
        ],
    )
    .unwrap();
    let (base, _) = server.url().split_once('?').unwrap();
    for extra in [
        "hard&mnt_timeout=60",
        "soft&timeo=10&retrans=1&mnt_timeout=60",
    ] {
        let url = format!("{base}?vers=4.1&nfsport=2673&{extra}");
        let (r, took) = mount_within(&url, Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{extra}: the mount was still waiting after 20 s"));
        let e = r
            .err()
            .unwrap_or_else(|| panic!("{extra}: mounted NFSv4.1 on a v3-only server"));
        assert_ne!(e.errno(), libc::ETIMEDOUT, "{extra}: {e}");
        assert!(
            e.to_string().contains("does not support version 4"),
            "{extra}: {e}"
        );
        eprintln!("{extra}: {e} (errno {}, {took:?})", e.errno());
        assert!(took < Duration::from_secs(5), "{extra}: took {took:?}");
    }
    drop(server);
}
