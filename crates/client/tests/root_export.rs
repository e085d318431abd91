//! A second, differently configured Ganesha: it exports `/` (Pseudo path),
//! leaves MaxRead/MaxWrite unset so FSINFO advertises 64 MiB, and is reached
//! through the portmapper (no ports in the URL).

use directnfs::Client;
use directnfs_testkit::ganesha::OwnGanesha;
use directnfs_testkit::server::wanted;

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
    if !wanted("root_export") {
        return;
    }
    let server = OwnGanesha::start(
        "root-export",
        &[
            ("DNFS_EXPORT_PATH", "/"),
            ("DNFS_MAX_IO", "server-default"),
            ("DNFS_NFS_PORT", "2649"),
            ("DNFS_MNT_PORT", "20648"),
        ],
    )
    .unwrap();

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
    drop(server);
}

/// A file that does not exist yet, named by a URL with and without `//`:
/// the export is `/`, never the file's name, and the file lands at that
/// name in the exported directory.
#[test]
fn new_file_named_by_url_is_created_at_its_name_in_a_root_export() {
    if !wanted("root_export") {
        return;
    }
    let server = OwnGanesha::start(
        "root-export-names",
        &[
            ("DNFS_EXPORT_PATH", "/"),
            ("DNFS_PRIVATE_RPCBIND", "1"),
            ("DNFS_NFS_PORT", "2651"),
            ("DNFS_MNT_PORT", "20651"),
        ],
    )
    .unwrap();
    let query = server.url().split_once('?').map(|(_, q)| q).unwrap();
    for (i, slashes) in ["/", "//"].into_iter().enumerate() {
        let name = format!("f{i}-{}.bin", std::process::id());
        let url = format!("nfs://127.0.0.1{slashes}{name}?{query}");
        let c = Client::connect(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(c.export(), "/", "{url}");
        assert_eq!(c.target_path(), format!("/{name}"), "{url}");
        let data = vec![i as u8 + 1; 100_000];
        let f = c.create(c.target_path()).unwrap();
        f.write_at(&data, 0).unwrap();
        drop(f);
        let local = server.export_dir().join(&name);
        assert_eq!(std::fs::read(&local).unwrap(), data, "{}", local.display());
        // Opened again by a client of the other spelling.
        let other = format!("nfs://127.0.0.1{}{name}?{query}", ["//", "/"][i]);
        let c2 = Client::connect(&other).unwrap();
        assert_eq!(c2.export(), "/", "{other}");
        let mut back = vec![0u8; data.len()];
        c2.open(c2.target_path())
            .unwrap()
            .read_exact_at(&mut back, 0)
            .unwrap();
        assert!(back == data);
    }
    drop(server);
}
