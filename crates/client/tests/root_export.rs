//! A second, differently configured Ganesha: it exports `/` (Pseudo path),
//! leaves MaxRead/MaxWrite unset so FSINFO advertises 64 MiB, and is reached
//! through the portmapper (no ports in the URL).

use std::process::Command;

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const STATE: &str = "/tmp/dnfs-root-export-test";

struct Stop;
impl Drop for Stop {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo().join("scripts/nfs-server.sh"))
            .arg("stop")
            .env("DNFS_STATE_DIR", STATE)
            .output();
    }
}

/// Peak resident set size of this process, in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

#[test]
fn root_export_via_portmapper_with_huge_advertised_transfer_size() {
    if std::env::var("DNFS_TEST_URL").is_err() && std::env::var("DNFS_TEST_REQUIRE_SERVER").is_err()
    {
        eprintln!("SKIPPED: set DNFS_TEST_URL (scripts/test.sh does) to run real-server tests");
        return;
    }
    let dir = "/tmp/dnfs-root-export-dir";
    let out = Command::new("bash")
        .arg(repo().join("scripts/nfs-server.sh"))
        .arg("start")
        .arg(dir)
        .env("DNFS_STATE_DIR", STATE)
        .env("DNFS_EXPORT_PATH", "/")
        .env("DNFS_MAX_IO", "server-default")
        .env("DNFS_NFS_PORT", "2649")
        .env("DNFS_MNT_PORT", "20648")
        .output()
        .unwrap();
    let _stop = Stop;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // No ports: PORTMAP GETPORT finds them; the export is "/".
    let c = directnfs::Client::connect("nfs://127.0.0.1//").unwrap();
    assert_eq!(c.export(), "/");
    let l = c.limits();
    assert!(l.server_rtmax > 1 << 20, "server advertised {l:?}");
    assert_eq!(l.rtmax, 1 << 20, "clamped to 1 MiB");
    assert_eq!(l.wtmax, 1 << 20, "clamped to 1 MiB");

    let name = format!("/root-export-{}", std::process::id());
    let data: Vec<u8> = (0..(8u32 << 20)).map(|i| (i % 253) as u8).collect();
    let before = peak_rss_kib();
    c.create(&name).unwrap().write_at(&data, 0).unwrap();
    let mut back = vec![0u8; data.len()];
    assert_eq!(
        c.open(&name).unwrap().read_at(&mut back, 0).unwrap(),
        data.len()
    );
    assert!(back == data);
    // 8 MiB moved in 1 MiB pieces; nothing near the advertised 64 MiB was allocated.
    let grew = peak_rss_kib().saturating_sub(before);
    assert!(grew < 48 * 1024, "peak RSS grew by {grew} KiB");

    // nfs://host/file and nfs://host//file name the same file in a "/" export.
    for url in [
        format!("nfs://127.0.0.1{name}"),
        format!("nfs://127.0.0.1/{name}"),
    ] {
        let c2 = directnfs::Client::connect(&url).unwrap();
        assert_eq!(c2.export(), "/");
        assert_eq!(c2.target_path(), name);
        assert_eq!(
            c2.metadata(c2.target_path()).unwrap().size,
            data.len() as u64
        );
    }
    c.remove(&name).unwrap();
}
