//! Where endpoints live, and the checks that keep them private.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The directory holding every user's endpoint directory:
/// `$DIRECTNFS_RUN_DIR`, or `/tmp`.
pub fn run_dir() -> PathBuf {
    std::env::var_os("DIRECTNFS_RUN_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// The endpoint directory of user `uid`: `RUN_DIR/directnfs-UID`.
pub fn process_dir(uid: u32) -> PathBuf {
    run_dir().join(format!("directnfs-{uid}"))
}

/// Name prefix of the per-user directories under [`run_dir`].
pub(crate) const DIR_PREFIX: &str = "directnfs-";

/// The endpoint of process `pid` in `dir`: `PID.sock` for the first copy
/// of the library in the process to publish, `PID.N.sock` for the N-th (a
/// program may hold several: the C library and the SQLite extension each
/// link their own).
pub(crate) fn socket_path(dir: &Path, pid: u32, copy: u32) -> PathBuf {
    if copy <= 1 {
        dir.join(format!("{pid}.sock"))
    } else {
        dir.join(format!("{pid}.{copy}.sock"))
    }
}

/// The pid an endpoint file name stands for (`1234.sock`, `1234.2.sock`),
/// if it is one.
pub(crate) fn pid_of(name: &str) -> Option<u32> {
    let stem = name.strip_suffix(".sock")?;
    let (pid, copy) = match stem.split_once('.') {
        Some((pid, copy)) => (pid, Some(copy)),
        None => (stem, None),
    };
    if let Some(copy) = copy {
        copy.parse::<u32>().ok().filter(|&n| n >= 2)?;
    }
    pid.parse().ok()
}

/// Makes (or checks) this user's endpoint directory: a real directory
/// (not a symbolic link), owned by `uid`, with no access for group or
/// others. Anything else is refused: another user could have made it to
/// read or spoof our statistics.
pub(crate) fn ensure_private_dir(dir: &Path, uid: u32) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private_dir(dir, uid)
}

/// See [`ensure_private_dir`].
pub(crate) fn check_private_dir(dir: &Path, uid: u32) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}; not used", dir.display()),
        ))
    };
    if !meta.file_type().is_dir() {
        return refuse("not a directory".into());
    }
    if meta.uid() != uid {
        return refuse(format!("owned by uid {}, not {uid}", meta.uid()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return refuse(format!(
            "mode {:o} lets others in (0700 expected)",
            meta.permissions().mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "dnfs-pubdir-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn euid() -> u32 {
        // SAFETY: geteuid takes nothing and cannot fail.
        unsafe { libc::geteuid() }
    }

    #[test]
    fn makes_a_0700_directory_and_accepts_it_again() {
        let d = scratch("make");
        ensure_private_dir(&d, euid()).expect("made");
        let mode = fs::metadata(&d).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_private_dir(&d, euid()).expect("accepted again");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn refuses_a_directory_others_can_enter() {
        let d = scratch("open");
        fs::create_dir(&d).expect("mkdir");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = ensure_private_dir(&d, euid()).expect_err("refused");
        assert!(e.to_string().contains("755"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn refuses_a_directory_of_another_user() {
        let d = scratch("owner");
        ensure_private_dir(&d, euid()).expect("made");
        let e = check_private_dir(&d, euid() + 1).expect_err("refused");
        assert!(e.to_string().contains("owned by uid"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn refuses_a_symbolic_link() {
        let d = scratch("link-target");
        ensure_private_dir(&d, euid()).expect("made");
        let l = scratch("link");
        std::os::unix::fs::symlink(&d, &l).expect("symlink");
        let e = check_private_dir(&l, euid()).expect_err("refused");
        assert!(e.to_string().contains("not a directory"), "{e}");
        let _ = fs::remove_file(&l);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn endpoint_names_carry_the_pid() {
        assert_eq!(pid_of("1234.sock"), Some(1234));
        assert_eq!(pid_of("1234.2.sock"), Some(1234));
        assert_eq!(pid_of("1234.1.sock"), None);
        assert_eq!(pid_of("1234.x.sock"), None);
        assert_eq!(pid_of(".1234.99.tmp"), None);
        assert_eq!(pid_of("x.sock"), None);
        assert_eq!(
            socket_path(Path::new("/d"), 7, 1),
            PathBuf::from("/d/7.sock")
        );
        assert_eq!(
            socket_path(Path::new("/d"), 7, 3),
            PathBuf::from("/d/7.3.sock")
        );
    }
}
