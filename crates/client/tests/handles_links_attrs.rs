//! Handles, links and attributes (the operations the interception library
//! needs beyond the file API) against a real NFS-Ganesha server.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::unique;
use directnfs::{Client, FileType, Handle, OpenOptions, SetAttrs, SetTimeTo};
use directnfs_wire::nfs3::{ACCESS3_MODIFY, ACCESS3_READ};

on_each_version! {
    fn lookup_asks_the_server_and_sees_a_file_replaced_by_rename(version) {
        let c = version.client("");
        let other = version.client("");
        let path = unique("lookup-replaced");
        let tmp = format!("{path}.tmp");
        c.create(&path).unwrap().write_at(b"old", 0).unwrap();
        let (h1, m1) = c.lookup(&path).unwrap();
        assert_eq!(m1.file_type, FileType::File);
        assert_eq!(m1.size, 3);
        // Another client replaces the name; our cached handle must not win.
        other.create(&tmp).unwrap().write_at(b"newer", 0).unwrap();
        other.rename(&tmp, &path).unwrap();
        let (h2, m2) = c.lookup(&path).unwrap();
        assert_ne!(h1, h2, "the new file has its own handle");
        assert_eq!(m2.size, 5);
        assert!(c.lookup(&tmp).unwrap_err().errno() == libc::ENOENT);
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn open_handle_reads_the_file_without_a_lookup_and_handles_roundtrip_as_bytes(version) {
        let c = version.client("");
        let path = unique("by-handle");
        let f = c.create(&path).unwrap();
        f.write_at(b"by handle", 0).unwrap();
        let bytes = f.handle().as_bytes().to_vec();
        let h = Handle::from_bytes(&bytes).unwrap();
        assert_eq!(h, f.handle());
        let g = c.open_handle(&h, "label-only");
        let mut buf = [0u8; 9];
        assert_eq!(g.read_at(&mut buf, 0).unwrap(), 9);
        assert_eq!(&buf, b"by handle");
        assert_eq!(c.metadata_of(&h, &path).unwrap().size, 9);
        // NFSv4 handles may be 128 bytes (NFS4_FHSIZE): more is no handle.
        assert!(
            Handle::from_bytes(&[0u8; 129]).is_err(),
            "129 bytes is no handle"
        );
        assert!(Handle::from_bytes(&[0u8; 128]).is_ok());
        // The root of the export has a handle too.
        let (_, root) = c.lookup("/").unwrap();
        assert!(root.is_dir());
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn symlink_readlink_and_lookup_does_not_follow_the_link(version) {
        let c = version.client("");
        let target = unique("link-target");
        let link = unique("symlink");
        c.create(&target).unwrap().write_at(b"x", 0).unwrap();
        c.symlink(target.trim_start_matches('/').as_bytes(), &link)
            .unwrap();
        assert_eq!(
            c.readlink(&link).unwrap(),
            target.trim_start_matches('/').as_bytes()
        );
        let (_, m) = c.lookup(&link).unwrap();
        assert_eq!(m.file_type, FileType::Symlink);
        // A second SYMLINK of the same name is refused (sent once: no retry).
        assert_eq!(
            c.symlink(b"elsewhere", &link).unwrap_err().errno(),
            libc::EEXIST
        );
        // READLINK of a regular file is the server's EINVAL.
        assert_eq!(c.readlink(&target).unwrap_err().errno(), libc::EINVAL);
        // Targets up to Linux's 4095 bytes are stored whole; 4096 is refused
        // before anything is sent.
        let longest = unique("longest");
        c.symlink(&[b'a'; 4095], &longest).unwrap();
        assert_eq!(c.readlink(&longest).unwrap(), vec![b'a'; 4095]);
        c.remove(&longest).unwrap();
        let e = c.symlink(&[b'a'; 4096], &unique("long")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
        c.remove(&link).unwrap();
        c.remove(&target).unwrap();
    }
}

on_each_version! {
    fn hard_link_shares_the_file_and_counts_two_links(version) {
        let c = version.client("");
        let a = unique("hard-a");
        let b = unique("hard-b");
        c.create(&a).unwrap().write_at(b"shared", 0).unwrap();
        c.link(&a, &b).unwrap();
        let (_, ma) = c.lookup(&a).unwrap();
        let (_, mb) = c.lookup(&b).unwrap();
        assert_eq!(ma.fileid, mb.fileid);
        assert_eq!(mb.nlink, 2);
        assert_eq!(c.link(&a, &b).unwrap_err().errno(), libc::EEXIST);
        assert_eq!(
            c.link(&unique("missing"), &unique("x"))
                .unwrap_err()
                .errno(),
            libc::ENOENT
        );
        c.remove(&a).unwrap();
        assert_eq!(c.lookup(&b).unwrap().1.nlink, 1);
        c.remove(&b).unwrap();
    }
}

on_each_version! {
    fn set_attrs_changes_mode_times_and_size_by_path_and_by_file(version) {
        let c = version.client("");
        let path = unique("setattr");
        let f = c.create(&path).unwrap();
        f.write_at(&[7u8; 100], 0).unwrap();
        let when = UNIX_EPOCH + Duration::new(1_000_000_000, 123_456_789);
        c.set_attrs(
            &path,
            SetAttrs {
                mode: Some(0o640),
                atime: SetTimeTo::At(when),
                mtime: SetTimeTo::At(when),
                ..Default::default()
            },
        )
        .unwrap();
        let m = c.metadata(&path).unwrap();
        assert_eq!(m.mode, 0o640);
        assert_eq!(m.mtime, when);
        assert_eq!(m.atime, when);
        f.set_attrs(SetAttrs {
            size: Some(10),
            mtime: SetTimeTo::ServerNow,
            ..Default::default()
        })
        .unwrap();
        let m = f.metadata().unwrap();
        assert_eq!(m.size, 10);
        assert!(m.mtime > when);
        // NFSv3 times are unsigned: a time before 1970 is refused. NFSv4
        // times are signed: it is set (and reads back as the epoch: the
        // client's attributes decode a time before 1970 as 1970).
        let before_1970 = UNIX_EPOCH - Duration::from_secs(1);
        let set = f.set_attrs(SetAttrs {
            mtime: SetTimeTo::At(before_1970),
            ..Default::default()
        });
        match version {
            Version::V3 => {
                let e = set.unwrap_err();
                assert_eq!(e.errno(), libc::EINVAL, "{e}");
            }
            Version::V41 => {
                set.unwrap();
                assert_eq!(f.metadata().unwrap().mtime, UNIX_EPOCH);
            }
        }
        let _ = SystemTime::now();
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn access_is_decided_by_the_server_for_our_credential(version) {
        let c = version.client("");
        let path = unique("access");
        c.open_with(
            &path,
            OpenOptions {
                create: true,
                mode: Some(0o600),
                ..Default::default()
            },
        )
        .unwrap();
        let mask = ACCESS3_READ | ACCESS3_MODIFY;
        assert_eq!(c.access(&path, mask).unwrap(), mask);
        // Another uid is neither owner nor in the group: nothing granted.
        let stranger = Client::connect(&version.url("uid=54321&gid=54321")).unwrap();
        assert_eq!(stranger.access(&path, mask).unwrap(), 0);
        assert_eq!(
            c.access(&unique("missing"), mask).unwrap_err().errno(),
            libc::ENOENT
        );
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn fsstat_reports_sizes_and_mkdir_mode_sets_the_mode(version) {
        let c = version.client("");
        let s = c.fsstat().unwrap();
        assert!(s.total_bytes > 0 && s.total_bytes >= s.free_bytes);
        assert!(s.free_bytes >= s.avail_bytes);
        assert!(s.total_files > 0);
        let dir = unique("mkdir-mode");
        c.mkdir_mode(&dir, 0o700).unwrap();
        let m = c.metadata(&dir).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode, 0o700);
        assert_eq!(c.mkdir_mode(&dir, 0o700).unwrap_err().errno(), libc::EEXIST);
        c.rmdir(&dir).unwrap();
    }
}

on_each_version! {
    fn exclusive_create_leaves_no_verifier_in_the_times(version) {
        let c = version.client("");
        let path = unique("excl-times");
        let before = SystemTime::now() - Duration::from_secs(60);
        c.open_with(
            &path,
            OpenOptions {
                create: true,
                create_new: true,
                ..Default::default()
            },
        )
        .unwrap();
        let m = c.metadata(&path).unwrap();
        let after = SystemTime::now() + Duration::from_secs(60);
        assert!(m.mtime > before && m.mtime < after, "mtime {:?}", m.mtime);
        assert!(m.atime > before && m.atime < after, "atime {:?}", m.atime);
        c.remove(&path).unwrap();
    }
}

on_each_version! {
    fn a_forked_child_gets_its_own_client_from_the_parents_without_a_mount(version) {
        let c = version.client("");
        let path = unique("after-fork");
        c.create(&path)
            .unwrap()
            .write_at(b"from the parent", 0)
            .unwrap();
        // SAFETY: the child only runs the code below and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let parent = c.clone();
                let mine = parent.after_fork().unwrap();
                std::mem::forget(parent);
                let f = mine.open(&path).unwrap();
                let mut buf = [0u8; 15];
                f.read_exact_at(&mut buf, 0).unwrap();
                assert_eq!(&buf, b"from the parent");
                f.write_at(b"CHILD", 0).unwrap();
                // No MOUNT and no FSINFO in the child: only the calls above.
                let calls = &mine.stats().servers[0].totals.calls_by_proc;
                assert!(!calls.contains_key("FSINFO"), "{calls:?}");
                assert_eq!(
                    calls.get("LOOKUP"),
                    None,
                    "the handle came from the parent's cache: {calls:?}"
                );
                std::mem::forget(c.clone());
            }))
            .map_or(1, |()| 0);
            // SAFETY: leaves the child without running the parent's destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child failed: {status}"
        );
        let mut buf = [0u8; 15];
        c.open(&path).unwrap().read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"CHILDthe parent");
        // The parent's client still works after the child used its copy.
        c.remove(&path).unwrap();
    }
}
