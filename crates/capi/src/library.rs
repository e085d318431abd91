//! Library: the version and the calling thread's last error message (the
//! first section of `include/directnfs.h`).

use std::ffi::c_char;

use crate::ffi;

/// See `dnfs_version` in directnfs.h.
#[no_mangle]
pub extern "C" fn dnfs_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// See `dnfs_last_error` in directnfs.h.
#[no_mangle]
pub extern "C" fn dnfs_last_error() -> *const c_char {
    ffi::last_error_ptr()
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_version_matches_the_crate() {
        let h = include_str!("../../../include/directnfs.h");
        let get = |name: &str| {
            h.lines()
                .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
                .map(|v| v.trim().to_string())
                .unwrap()
        };
        let v = format!(
            "{}.{}.{}",
            get("DNFS_VERSION_MAJOR"),
            get("DNFS_VERSION_MINOR"),
            get("DNFS_VERSION_PATCH")
        );
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
    }
}
