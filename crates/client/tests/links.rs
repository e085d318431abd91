//! SYMLINK and READLINK against a real NFS-Ganesha server (see
//! common/mod.rs): what the SQLite VFS's lock file relies on.

mod common;

use common::{client, unique};
use directnfs::FileType;

#[test]
fn symlink_creates_the_name_with_its_content_and_read_link_returns_it() {
    let c = client();
    let path = unique("link");
    let content = "directnfs-sqlite-lock 2 pid=1 start=2 nonce=00000000000000ff host=h";
    c.symlink(content.as_bytes(), &path).unwrap();
    assert_eq!(
        c.readlink(&path)
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap(),
        content
    );
    let m = c.metadata(&path).unwrap();
    assert_eq!(m.file_type, FileType::Symlink);
    assert_eq!(m.size, content.len() as u64);
    // The content is not a path of the export: nothing follows it.
    assert_eq!(
        c.open(&path)
            .and_then(|f| f.read_at(&mut [0u8; 8], 0))
            .map_err(|e| e.errno()),
        Err(libc::EINVAL),
        "a symbolic link is not read as a file"
    );
    c.remove(&path).unwrap();
    assert_eq!(
        c.readlink(&path)
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_err()
            .errno(),
        libc::ENOENT
    );
}

#[test]
fn symlink_over_an_existing_name_is_eexist_and_leaves_it_alone() {
    let c = client();
    let path = unique("link-exist");
    c.symlink("first".as_bytes(), &path).unwrap();
    // The same content again, as a re-sent SYMLINK whose first copy ran
    // would send it: EEXIST all the same (the caller compares contents).
    let e = c.symlink("first".as_bytes(), &path).unwrap_err();
    assert_eq!(e.errno(), libc::EEXIST, "{e}");
    assert!(e.to_string().contains("SYMLINK"), "{e}");
    let e = c.symlink("second".as_bytes(), &path).unwrap_err();
    assert_eq!(e.errno(), libc::EEXIST, "{e}");
    assert_eq!(
        c.readlink(&path)
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap(),
        "first"
    );
    c.remove(&path).unwrap();

    // A regular file is not replaced either.
    let file = unique("file-exist");
    c.create(&file).unwrap().write_at(b"data", 0).unwrap();
    assert_eq!(
        c.symlink("x".as_bytes(), &file).unwrap_err().errno(),
        libc::EEXIST
    );
    assert_eq!(
        c.readlink(&file)
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_err()
            .errno(),
        libc::EINVAL,
        "READLINK of a regular file"
    );
    c.remove(&file).unwrap();
}

#[test]
fn symlink_content_that_nfs_cannot_carry_is_refused_before_sending() {
    let c = client();
    let path = unique("link-bad");
    let e = c.symlink("x".repeat(4096).as_bytes(), &path).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    let e = c.symlink("a\0b".as_bytes(), &path).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert_eq!(c.metadata(&path).unwrap_err().errno(), libc::ENOENT);
    // 4095 bytes (Linux's) is the bound, and the server takes it.
    let long = "y".repeat(4095);
    c.symlink(long.as_bytes(), &path).unwrap();
    assert_eq!(
        c.readlink(&path)
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap(),
        long
    );
    c.remove(&path).unwrap();
}
