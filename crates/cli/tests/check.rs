//! `dnfs check` against the real server: a good export is `ok` with its
//! transfer sizes, round trip and socket buffers; an unreachable one fails
//! the command (after at most 5 s, whatever `mnt_timeout` says).

mod common;

use common::{dnfs, dnfs_in, fails, server, Scratch};

#[test]
fn check_reports_a_reachable_export_and_fails_on_a_dead_one() {
    let Some(s) = server() else { return };
    let good = s.url("");
    let out = dnfs(&["check", &good]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = stdout.lines().nth(1).unwrap_or_default();
    assert!(row.contains(" ok ") && row.contains("us"), "{stdout}");
    assert!(
        row.contains("1048576") || row.contains("65536"),
        "rtmax shown: {stdout}"
    );
    assert!(
        stdout.starts_with("SERVER")
            && stdout
                .lines()
                .next()
                .unwrap_or_default()
                .contains("SNDBUF  ")
    );

    // The socket buffers the kernel granted: 64 KiB asked, reported doubled.
    let sep = if good.contains('?') { '&' } else { '?' };
    let small = format!("{good}{sep}sockbuf=64k");
    let out = dnfs(&["check", &small]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let row = stdout.lines().nth(1).unwrap_or_default();
    assert!(row.contains("131072     131072"), "{stdout}");
    // PROTO, SEC, then no slots, owner or scope on NFSv3.
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        words[words.len().saturating_sub(5)..],
        ["nfsv3", "sys", "-", "-", "-"],
        "protocol and flavor shown: {stdout}"
    );

    // NFSv4.1: the protocol and the session's slots.
    // (url_v41: a failure where the tests must run, not a silent skip.)
    if let Some(v41) = directnfs_testkit::server::url_v41("check: the NFSv4.1 row") {
        let out = dnfs(&["check", &v41]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        let row = stdout.lines().nth(1).unwrap_or_default();
        let words: Vec<&str> = row.split_whitespace().collect();
        let slots: u32 = words
            .iter()
            .rev()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        assert!(row.contains(" nfsv4.1 ") && slots >= 1, "{stdout}");
        // The server owner and scope (Ganesha: host name, and
        // `HOST_NFS-Ganesha`), quoted as printable text.
        let (owner, scope) = (words[words.len() - 2], words[words.len() - 1]);
        assert!(owner.starts_with('"') && owner.len() > 2, "{stdout}");
        assert!(scope.contains("NFS-Ganesha"), "{stdout}");
    }

    let dead = "nfs://127.0.0.1/nothing?nfsport=1&mountport=1";
    let started = std::time::Instant::now();
    let out = dnfs(&["check", &good, dead]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let t = started.elapsed();
    assert!(t < std::time::Duration::from_secs(15), "waited {t:?}");
    assert!(stdout.contains("mnt_timeout is 5 s"), "{stdout}");
    assert!(
        stdout.contains("FAILED") && stdout.contains(" ok "),
        "{stdout}"
    );
}

#[test]
fn check_walks_every_export_of_the_dnfstab() {
    let Some(s) = server() else { return };
    let scratch = Scratch::new("check");
    let export = s.url.path.clone();
    let nfs = s
        .url
        .options
        .nfs_port
        .map(|p| format!("port: {p}\n"))
        .unwrap_or_default();
    let mnt = s
        .url
        .options
        .mount_port
        .map(|p| format!("mount_port: {p}\n"))
        .unwrap_or_default();
    let tab = format!(
        "server: test\npath: {}\nexport: {export} mount: /db/a\nexport: /no/such/export mount: /db/b\n{nfs}{mnt}",
        s.url.host
    );
    std::fs::write(scratch.path("dnfstab"), tab).unwrap();
    let out = dnfs_in(&scratch.0, &["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows[0].contains(" ok "), "{stdout}");
    assert!(
        rows[1].contains("FAILED") && rows[1].contains("MOUNT"),
        "{stdout}"
    );
}

/// A dnfstab that can serve nothing (empty, comments only, or servers
/// without an `export:` line) is an error naming the file, not an empty
/// table and success. No server needed: nothing is mounted.
#[test]
fn check_refuses_a_dnfstab_with_nothing_to_serve() {
    let scratch = Scratch::new("check-empty");
    let cases = [
        ("", "no `server:` block"),
        ("# nothing yet\n\n", "no `server:` block"),
        (
            "server: filer1\npath: 127.0.0.1\n",
            "no `export:` line under server filer1",
        ),
        (
            "server: a\npath: 127.0.0.1\nserver: b\npath: 127.0.0.2\n",
            "no `export:` line under server a, b",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let tab = scratch.path(&format!("dnfstab{i}"));
        std::fs::write(&tab, text).unwrap();
        let tab = tab.display().to_string();
        // Named by --config, and found in the current directory.
        let line = fails(&["check", "--config", &tab]);
        assert!(
            line.contains(&tab) && line.contains(want),
            "{text:?}: {line}"
        );
        assert!(line.contains("can serve nothing"), "{line}");
        std::fs::copy(&tab, scratch.path("dnfstab")).unwrap();
        let out = dnfs_in(&scratch.0, &["check"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{text:?}: no table");
        assert!(
            stderr.contains("dnfstab: ") && stderr.contains(want),
            "{stderr}"
        );
    }
}
