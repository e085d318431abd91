//! `dnfs cp` to and from files named by URLs whose export the client must
//! find: servers that MOUNT any path (the hostile test server playing
//! them: no EXPORT procedure, MNT says yes to every path), and a Ganesha
//! exporting `/`. A file name must never be taken for the export: `cp
//! local nfs://host/f.bin` creates `f.bin` (not a file named after the
//! source inside a "directory" `/f.bin`), and `cp nfs://host/f.bin local`
//! copies it back (not "is a directory"); `nfs://host//f.bin` says the
//! export is `/`.

// Test helpers panic on failure: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use directnfs_testkit::hostile;

use common::{dnfs, random_bytes, Scratch};
use directnfs_testkit::ganesha::OwnGanesha;
use directnfs_testkit::server::wanted;
use hostile::{HostileServer, MountAny, Options, Plan, FILE};

/// Runs `dnfs ARGS` and fails the test unless it succeeds.
fn ok(args: &[&str]) {
    let out = dnfs(args);
    assert!(
        out.status.success(),
        "dnfs {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn path_str(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// `cp local nfs://…/f.bin`, then back from the same URL and from its `//`
/// spelling (and from the other spelling's upload): every copy is the
/// file at that name. `url` maps a path (`/f.bin`, `//g.bin`) to a URL.
/// Returns the names uploaded.
fn round_trips(url: &dyn Fn(&str) -> String, tag: &str) -> Vec<(String, Vec<u8>)> {
    let scratch = Scratch::new(tag);
    let mut uploaded = Vec::new();
    for (i, slashes) in ["/", "//"].into_iter().enumerate() {
        let name = format!("{tag}-{i}-{}.bin", std::process::id());
        let data = random_bytes(300_000 + i, i as u64 + 7);
        let src = scratch.path("source.bin");
        std::fs::write(&src, &data).unwrap();
        ok(&["cp", path_str(&src), &url(&format!("{slashes}{name}"))]);
        for back in ["/", "//"] {
            let dst = scratch.path(&format!("back{}.bin", back.len()));
            ok(&["cp", &url(&format!("{back}{name}")), path_str(&dst)]);
            assert!(
                std::fs::read(&dst).unwrap() == data,
                "{back}{name}: wrong content"
            );
        }
        uploaded.push((name, data));
    }
    uploaded
}

#[test]
fn cp_through_a_server_that_mounts_any_path_uses_the_names_given() {
    for mount_any in [MountAny::RootHandle, MountAny::OwnHandle] {
        let opts = Options {
            mount_any,
            store: true,
            ..Options::default()
        };
        let server = HostileServer::with(opts, Plan::none());
        let url = |path: &str| server.url_of(path, "connections=1");
        let uploaded = round_trips(&url, "any");
        let names: Vec<String> = uploaded.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(server.created_names(), names, "{mount_any:?}");
        for (name, data) in &uploaded {
            assert!(server.created_content(name).as_ref() == Some(data));
        }
        // The server's own file, read by its name.
        let scratch = Scratch::new("any-read");
        let dst = scratch.path("data");
        ok(&["cp", &url(FILE), path_str(&dst)]);
        assert!(std::fs::read(&dst).unwrap() == hostile::pattern_at(0, 1 << 20));
    }
}

#[test]
fn cp_to_and_from_a_root_export_of_ganesha_uses_the_names_given() {
    if !wanted("exports") {
        return;
    }
    let server = OwnGanesha::start(
        "cli-root-export",
        &[
            ("DNFS_EXPORT_PATH", "/"),
            ("DNFS_PRIVATE_RPCBIND", "1"),
            ("DNFS_NFS_PORT", "2654"),
            ("DNFS_MNT_PORT", "20654"),
        ],
    )
    .unwrap();
    let query = server.url().split_once('?').unwrap().1.to_string();
    let url = |path: &str| format!("nfs://127.0.0.1{path}?{query}");
    for (name, data) in round_trips(&url, "root") {
        let local = server.export_dir().join(&name);
        assert!(
            std::fs::read(&local).unwrap() == data,
            "{}",
            local.display()
        );
    }
}

#[test]
fn cp_to_and_from_a_file_at_the_root_of_a_named_export_of_ganesha() {
    let Some(s) = common::server() else { return };
    let scratch = Scratch::new("export-root");
    let name = format!("at-root-{}.bin", std::process::id());
    let data = random_bytes(123_457, 3);
    let src = scratch.path("source.bin");
    std::fs::write(&src, &data).unwrap();
    let remote = s.url(&name);
    ok(&["cp", path_str(&src), &remote]);
    let stat = String::from_utf8_lossy(&dnfs(&["stat", &remote]).stdout).into_owned();
    assert!(stat.contains("type: file"), "{stat}");
    let dst = scratch.path("back.bin");
    ok(&["cp", &remote, path_str(&dst)]);
    assert!(std::fs::read(&dst).unwrap() == data);
    ok(&["rm", &remote]);
}
