//! `dnfs` commands against a real NFS server (see `common` for the harness:
//! `DNFS_TEST_URL` names the server).

mod common;

use common::{
    assert_success, dnfs, dnfs_in, fails, ok, random_bytes, sha256_file, unique, write_random_file,
    Scratch,
};

/// A large file that is not a multiple of any chunk or transfer size.
const BIG: usize = (256 << 20) + 4097;

/// Creates a directory for one test on the server, removed at the end.
fn test_dir(s: &common::Server, tag: &str) -> common::RemoteDir {
    common::RemoteDir::new(s, tag)
}

/// Uploads `data` as `rel` through a local file.
fn put(s: &common::Server, scratch: &Scratch, rel: &str, data: &[u8]) {
    let local = scratch.path(&unique("put"));
    if let Err(e) = std::fs::write(&local, data) {
        panic!("{}: {e}", local.display());
    }
    ok(&["cp", path_str(&local), &s.url(rel)]);
}

fn path_str(p: &std::path::Path) -> &str {
    match p.to_str() {
        Some(s) => s,
        None => panic!("non-UTF-8 temp path {}", p.display()),
    }
}

fn stat_field(stat: &str, key: &str) -> Option<String> {
    stat.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .map(str::to_string)
}

#[test]
fn cp_local_to_nfs_to_local_keeps_sha256() {
    let s = server_or_skip!();
    let scratch = Scratch::new("cp-rt");
    let dir = test_dir(s, "cp-rt");
    let src = scratch.path("src.bin");
    let want = write_random_file(&src, BIG, 1);
    let remote = s.url(&format!("{dir}/big.bin"));

    ok(&["cp", path_str(&src), &remote]);
    let stat = ok(&["stat", &remote]);
    assert_eq!(stat_field(&stat, "size"), Some(BIG.to_string()), "{stat}");

    let back = scratch.path("back.bin");
    ok(&["cp", &remote, path_str(&back)]);
    assert_eq!(sha256_file(&back), want, "NFS -> local copy differs");

    // Overwriting an existing destination replaces it entirely (both ways).
    let small = scratch.path("small.bin");
    std::fs::write(&small, b"short").unwrap_or_else(|e| panic!("{e}"));
    ok(&["cp", path_str(&small), &remote]);
    ok(&["cp", &remote, path_str(&back)]);
    assert_eq!(std::fs::read(&back).unwrap_or_default(), b"short");
}

#[test]
fn cp_nfs_to_nfs_keeps_sha256() {
    let s = server_or_skip!();
    let scratch = Scratch::new("cp-nn");
    let dir = test_dir(s, "cp-nn");
    let src = scratch.path("src.bin");
    let want = write_random_file(&src, BIG, 2);
    let a = s.url(&format!("{dir}/a.bin"));
    let b = s.url(&format!("{dir}/b.bin"));

    ok(&["cp", path_str(&src), &a]);
    ok(&["cp", &a, &b]);
    let back = scratch.path("b.bin");
    ok(&["cp", &b, path_str(&back)]);
    assert_eq!(sha256_file(&back), want, "NFS -> NFS copy differs");
}

#[test]
fn cp_handles_empty_and_tiny_files() {
    let s = server_or_skip!();
    let scratch = Scratch::new("cp-tiny");
    let dir = test_dir(s, "cp-tiny");
    for (i, len) in [0usize, 1, 4095, 4096, 1 << 20, (1 << 20) + 1]
        .into_iter()
        .enumerate()
    {
        let data = random_bytes(len, 100 + i as u64);
        let rel = format!("{dir}/f{len}");
        put(s, &scratch, &rel, &data);
        let back = scratch.path(&format!("back{len}"));
        ok(&["cp", &s.url(&rel), path_str(&back)]);
        assert_eq!(std::fs::read(&back).unwrap_or_default(), data, "len {len}");
    }
}

#[test]
fn cp_into_existing_directory_uses_source_name() {
    let s = server_or_skip!();
    let scratch = Scratch::new("cp-dir");
    let dir = test_dir(s, "cp-dir");
    let data = random_bytes(100_000, 7);
    let src = scratch.path("named.dat");
    std::fs::write(&src, &data).unwrap_or_else(|e| panic!("{e}"));

    // local -> NFS directory
    ok(&["cp", path_str(&src), &s.url(&dir)]);
    let listing = ok(&["ls", &s.url(&dir)]);
    assert_eq!(listing, "named.dat\n");

    // NFS -> local directory
    let into = scratch.path("into");
    std::fs::create_dir(&into).unwrap_or_else(|e| panic!("{e}"));
    ok(&["cp", &s.url(&format!("{dir}/named.dat")), path_str(&into)]);
    assert_eq!(
        std::fs::read(into.join("named.dat")).unwrap_or_default(),
        data
    );
}

#[test]
fn cp_refuses_a_directory_source_and_a_file_onto_itself() {
    let s = server_or_skip!();
    let scratch = Scratch::new("cp-refuse");
    let dir = test_dir(s, "cp-refuse");
    let line = fails(&["cp", &s.url(&dir), path_str(&scratch.path("x"))]);
    assert!(line.contains("is a directory"), "{line}");

    let rel = format!("{dir}/self.bin");
    put(s, &scratch, &rel, b"keep me");
    let line = fails(&["cp", &s.url(&rel), &s.url(&rel)]);
    assert!(line.contains("same file"), "{line}");
    let out = dnfs(&["cat", &s.url(&rel)]);
    assert_success(&out, &["cat"]);
    assert_eq!(out.stdout, b"keep me");
}

#[test]
fn ls_lists_sorted_names_and_long_format_sizes() {
    let s = server_or_skip!();
    let scratch = Scratch::new("ls");
    let dir = test_dir(s, "ls");
    put(
        s,
        &scratch,
        &format!("{dir}/b.txt"),
        &random_bytes(12_345, 1),
    );
    put(s, &scratch, &format!("{dir}/a.txt"), b"");
    put(s, &scratch, &format!("{dir}/c.txt"), &random_bytes(3, 2));
    ok(&["mkdir", &s.url(&format!("{dir}/sub"))]);

    assert_eq!(ok(&["ls", &s.url(&dir)]), "a.txt\nb.txt\nc.txt\nsub\n");

    let long = ok(&["ls", "-l", &s.url(&dir)]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines.len(), 4, "{long}");
    let b: Vec<&str> = lines[1].split_whitespace().collect();
    // type+mode, uid, gid, size, date, time, name
    assert_eq!(b.len(), 7, "{long}");
    assert!(b[0].starts_with("-rw"), "{long}");
    assert_eq!(b[3], "12345", "{long}");
    assert_eq!(b[6], "b.txt", "{long}");
    assert!(
        lines[3].starts_with('d') && lines[3].ends_with(" sub"),
        "{long}"
    );

    // A file names itself.
    let one = ok(&["ls", "-l", &s.url(&format!("{dir}/b.txt"))]);
    assert!(
        one.trim_end().ends_with(" 12345 ") || one.contains(" 12345 "),
        "{one}"
    );
    assert!(one.trim_end().ends_with("b.txt"), "{one}");
}

#[test]
fn stat_shows_size_type_and_mode() {
    let s = server_or_skip!();
    let scratch = Scratch::new("stat");
    let dir = test_dir(s, "stat");
    let rel = format!("{dir}/f.dat");
    put(s, &scratch, &rel, &random_bytes(54_321, 3));

    let out = ok(&["stat", &s.url(&rel)]);
    assert_eq!(stat_field(&out, "size").as_deref(), Some("54321"), "{out}");
    assert_eq!(stat_field(&out, "type").as_deref(), Some("file"), "{out}");
    assert!(
        stat_field(&out, "mode").is_some_and(|m| m.starts_with("0644") || m.starts_with("06")),
        "{out}"
    );
    for key in ["uid", "gid", "nlink", "fileid", "atime", "mtime", "ctime"] {
        assert!(stat_field(&out, key).is_some(), "no {key}: {out}");
    }
    let d = ok(&["stat", &s.url(&dir)]);
    assert_eq!(stat_field(&d, "type").as_deref(), Some("directory"), "{d}");
}

#[test]
fn cat_outputs_exact_content() {
    let s = server_or_skip!();
    let scratch = Scratch::new("cat");
    let dir = test_dir(s, "cat");
    // Several 1 MiB reads plus a tail: the output must be in order.
    let data = random_bytes((5 << 20) + 123, 4);
    let rel = format!("{dir}/c.bin");
    put(s, &scratch, &rel, &data);
    let out = dnfs(&["cat", &s.url(&rel)]);
    assert_success(&out, &["cat"]);
    assert!(
        out.stdout == data,
        "cat output differs ({} bytes)",
        out.stdout.len()
    );

    // Exactly two READs' worth: end of file falls on a chunk boundary.
    let exact = random_bytes(2 << 20, 5);
    let rel = format!("{dir}/exact.bin");
    put(s, &scratch, &rel, &exact);
    let out = dnfs(&["cat", &s.url(&rel)]);
    assert_success(&out, &["cat"]);
    assert!(
        out.stdout == exact,
        "cat output differs ({} bytes)",
        out.stdout.len()
    );

    let empty = format!("{dir}/empty");
    put(s, &scratch, &empty, b"");
    let out = dnfs(&["cat", &s.url(&empty)]);
    assert_success(&out, &["cat"]);
    assert!(out.stdout.is_empty());
}

#[test]
fn rm_removes_files_and_trees() {
    let s = server_or_skip!();
    let scratch = Scratch::new("rm");
    let dir = test_dir(s, "rm");
    let f = format!("{dir}/gone.txt");
    put(s, &scratch, &f, b"x");
    ok(&["rm", &s.url(&f)]);
    let line = fails(&["stat", &s.url(&f)]);
    assert!(line.contains("NFS3ERR_NOENT"), "{line}");
    assert_eq!(ok(&["ls", &s.url(&dir)]), "");
}

#[test]
fn rm_of_directory_needs_recursive() {
    let s = server_or_skip!();
    let scratch = Scratch::new("rmr");
    let dir = test_dir(s, "rmr");
    ok(&["mkdir", "-p", &s.url(&format!("{dir}/t/u"))]);
    put(s, &scratch, &format!("{dir}/t/u/v.txt"), b"v");
    put(s, &scratch, &format!("{dir}/t/w.txt"), b"w");
    let line = fails(&["rm", &s.url(&format!("{dir}/t"))]);
    assert!(line.contains("is a directory"), "{line}");
    ok(&["rm", "-r", &s.url(&format!("{dir}/t"))]);
    assert_eq!(ok(&["ls", &s.url(&dir)]), "");
    // -f: a missing path is fine.
    ok(&["rm", "-f", &s.url(&format!("{dir}/t"))]);
}

#[test]
fn mkdir_creates_directories_and_parents() {
    let s = server_or_skip!();
    let dir = test_dir(s, "mkdir");
    ok(&["mkdir", &s.url(&format!("{dir}/one"))]);
    let st = ok(&["stat", &s.url(&format!("{dir}/one"))]);
    assert_eq!(stat_field(&st, "type").as_deref(), Some("directory"));

    // Without -p a missing parent is an error; with -p it is created.
    let line = fails(&["mkdir", &s.url(&format!("{dir}/x/y/z"))]);
    assert!(line.contains("NFS3ERR_NOENT"), "{line}");
    ok(&["mkdir", "-p", &s.url(&format!("{dir}/x/y/z"))]);
    assert_eq!(ok(&["ls", &s.url(&format!("{dir}/x/y"))]), "z\n");
    // -p on an existing directory succeeds; plain mkdir fails with EXIST.
    ok(&["mkdir", "-p", &s.url(&format!("{dir}/x/y"))]);
    let line = fails(&["mkdir", &s.url(&format!("{dir}/one"))]);
    assert!(line.contains("NFS3ERR_EXIST"), "{line}");
}

#[test]
fn mv_renames_and_moves_into_directories() {
    let s = server_or_skip!();
    let scratch = Scratch::new("mv");
    let dir = test_dir(s, "mv");
    put(s, &scratch, &format!("{dir}/old.txt"), b"payload");
    ok(&[
        "mv",
        &s.url(&format!("{dir}/old.txt")),
        &s.url(&format!("{dir}/new.txt")),
    ]);
    assert_eq!(ok(&["ls", &s.url(&dir)]), "new.txt\n");

    ok(&["mkdir", &s.url(&format!("{dir}/sub"))]);
    ok(&[
        "mv",
        &s.url(&format!("{dir}/new.txt")),
        &s.url(&format!("{dir}/sub")),
    ]);
    assert_eq!(ok(&["ls", &s.url(&format!("{dir}/sub"))]), "new.txt\n");
    let out = dnfs(&["cat", &s.url(&format!("{dir}/sub/new.txt"))]);
    assert_eq!(out.stdout, b"payload");

    // Not both on NFS: refused with a clear message, nothing moved.
    let line = fails(&[
        "mv",
        &s.url(&format!("{dir}/sub/new.txt")),
        path_str(&scratch.path("local")),
    ]);
    assert!(line.contains("use cp, then rm"), "{line}");
    assert_eq!(ok(&["ls", &s.url(&format!("{dir}/sub"))]), "new.txt\n");
}

#[test]
fn missing_paths_fail_with_one_line_noent() {
    let s = server_or_skip!();
    let scratch = Scratch::new("noent");
    let dir = test_dir(s, "noent");
    let missing = s.url(&format!("{dir}/does-not-exist"));
    let local = scratch.path("out");
    for args in [
        vec!["stat", missing.as_str()],
        vec!["ls", missing.as_str()],
        vec!["cat", missing.as_str()],
        vec!["rm", missing.as_str()],
        vec!["cp", missing.as_str(), path_str(&local)],
        vec!["mv", missing.as_str(), missing.as_str()],
    ] {
        let line = fails(&args);
        assert!(
            line.contains("NFS3ERR_NOENT") || line.contains("No such file"),
            "{args:?}: {line}"
        );
        assert!(line.contains("does-not-exist"), "{args:?}: {line}");
    }
    assert!(
        !local.exists(),
        "cp of a missing file created the destination"
    );
    let line = fails(&["cp", path_str(&scratch.path("nope")), &s.url(&dir)]);
    assert!(line.contains("No such file"), "{line}");
}

#[test]
fn dnfstab_mount_prefix_names_server_files() {
    let s = server_or_skip!();
    let scratch = Scratch::new("tab");
    let dir = test_dir(s, "tab");
    let u = &s.url;
    let mut tab = format!(
        "server: testserver\npath: {}\nexport: {}  mount: /db/cli\n",
        u.host, u.path
    );
    if let Some(p) = u.options.nfs_port {
        tab.push_str(&format!("port: {p}\n"));
    }
    if let Some(p) = u.options.mount_port {
        tab.push_str(&format!("mount_port: {p}\n"));
    }
    tab.push_str("connections: 2\n");
    let conf = scratch.path("dnfstab");
    std::fs::write(&conf, tab).unwrap_or_else(|e| panic!("{e}"));
    let conf = path_str(&conf);

    let data = random_bytes(3 << 20, 9);
    let src = scratch.path("src");
    std::fs::write(&src, &data).unwrap_or_else(|e| panic!("{e}"));
    let remote = format!("/db/cli/{dir}/f.bin");
    ok(&["--config", conf, "cp", path_str(&src), &remote]);
    assert_eq!(
        ok(&["--config", conf, "ls", &format!("/db/cli/{dir}")]),
        "f.bin\n"
    );
    // The same file through the URL.
    let out = dnfs(&["cat", &s.url(&format!("{dir}/f.bin"))]);
    assert!(out.stdout == data);

    // ./dnfstab in the working directory is found without --config.
    let out = dnfs_in(&scratch.0, &["stat", &remote]);
    assert_success(&out, &["stat"]);
    let stat = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stat_field(&stat, "size"), Some((3 << 20).to_string()));

    // A path outside every mount: prefix is local, which ls refuses.
    let line = fails(&["--config", conf, "ls", "/not/configured"]);
    assert!(line.contains("not an NFS path"), "{line}");
}

#[test]
fn config_errors_name_the_file_and_line() {
    let scratch = Scratch::new("badtab");
    let conf = scratch.path("dnfstab");
    std::fs::write(&conf, "server: x\nconections: 4\n").unwrap_or_else(|e| panic!("{e}"));
    let line = fails(&["--config", path_str(&conf), "ls", "/db/x"]);
    assert!(line.contains("dnfstab:2"), "{line}");
    assert!(line.contains("connections"), "{line}");

    let line = fails(&[
        "--config",
        path_str(&scratch.path("missing")),
        "ls",
        "/db/x",
    ]);
    assert!(line.contains("does not exist"), "{line}");
}

#[test]
fn bad_urls_and_usage_errors_are_reported() {
    let line = fails(&["ls", "nfs://"]);
    assert!(line.contains("invalid nfs URL"), "{line}");
    let out = dnfs(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = dnfs(&["cp", "only-one"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn stats_flag_prints_client_statistics_on_stderr() {
    let s = server_or_skip!();
    let scratch = Scratch::new("stats");
    let dir = test_dir(s, "stats");
    let src = scratch.path("s.bin");
    // Big enough for background COMMITs besides the final one.
    std::fs::write(&src, random_bytes(40 << 20, 11)).unwrap_or_else(|e| panic!("{e}"));
    let args = [
        "--stats",
        "cp",
        path_str(&src),
        &s.url(&format!("{dir}/s.bin")),
    ];
    let out = dnfs(&args);
    assert_success(&out, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SERVERS"), "{err}");
    assert!(err.contains("WRITE") && err.contains("COMMIT"), "{err}");
    // CALLS BY PROCEDURE (v$dnfs_stats): server, export, proc, calls.
    let commits = err
        .lines()
        .skip_while(|l| !l.starts_with("CALLS BY PROCEDURE"))
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[2] == "COMMIT").then(|| f[3].parse::<u64>().ok())
        })
        .flatten();
    assert!(
        commits.is_some_and(|n| n >= 2),
        "COMMIT calls {commits:?}: {err}"
    );
    assert!(out.stdout.is_empty());
}
