//! The library's own code, mapped in every child of `fork` from the start.
//!
//! `fork` copies a process's page tables only for mappings that hold
//! private (anonymous) pages; a mapping of a file's pages alone — a
//! library's code and read-only data — is left for the child to fault in
//! again, page by page (the kernel maps 16 pages around each fault). A
//! PostgreSQL backend is a child of the postmaster that runs this
//! library's code on its first file calls: before this, each paid about
//! 25 such faults on its way through 1.8 MiB of code.
//!
//! So at its first `fork` a process maps every page of the library's
//! read-only segments (`MADV_POPULATE_READ`) and gives each segment one
//! private page: one byte written back unchanged through `/proc/self/mem`,
//! which is how a debugger plants a breakpoint, without changing any
//! page's protection. From then on `fork` copies those segments' page
//! table entries into the child (a few microseconds in the parent), and
//! the child faults on none of the library's code. Where that write is
//! refused (a kernel that forbids writing through `/proc/PID/mem`) nothing
//! changes: the child faults as before.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Once per process, before its first `fork` (the prepare handler).
pub fn share_with_children() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    let segments = own_read_only_segments(&maps, share_with_children as fn() as usize);
    if segments.is_empty() {
        return;
    }
    let Ok(mem) = OpenOptions::new().write(true).open("/proc/self/mem") else {
        return;
    };
    for (start, end) in segments {
        // SAFETY: a range of this process's own mapping of this library,
        // read-only and never unmapped while the library is loaded.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_READ);
        }
        // SAFETY: `start` is mapped and readable (above).
        let byte = unsafe { std::ptr::read_volatile(start as *const u8) };
        let _ = mem.write_at(&[byte], start as u64);
    }
}

/// `MADV_POPULATE_READ` (Linux 5.14): maps every page of the range.
const MADV_POPULATE_READ: libc::c_int = 22;

/// The address ranges of the read-only (not writable) mappings of the
/// file that holds `address`, as `/proc/self/maps` lists them.
fn own_read_only_segments(maps: &str, address: usize) -> Vec<(usize, usize)> {
    let parse = |line: &str| -> Option<(usize, usize, String, String)> {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?.to_string();
        let path = fields.nth(3)?.to_string();
        Some((
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
            perms,
            path,
        ))
    };
    let lines: Vec<_> = maps.lines().filter_map(parse).collect();
    let Some(own) = lines
        .iter()
        .find(|(start, end, _, _)| (*start..*end).contains(&address))
        .map(|(_, _, _, path)| path.clone())
    else {
        return Vec::new();
    };
    if !own.starts_with('/') {
        return Vec::new();
    }
    lines
        .into_iter()
        .filter(|(_, _, perms, path)| *path == own && !perms.contains('w'))
        .map(|(start, end, _, _)| (start, end))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0a0000000-55d0a0001000 r--p 00000000 08:01 100 /usr/bin/prog
7f0000000000-7f0000040000 r--p 00000000 08:01 200 /usr/lib/libdirectnfs_preload.so
7f0000040000-7f00001c0000 r-xp 00040000 08:01 200 /usr/lib/libdirectnfs_preload.so
7f00001c0000-7f0000200000 r--p 001c0000 08:01 200 /usr/lib/libdirectnfs_preload.so
7f0000200000-7f0000210000 rw-p 00200000 08:01 200 /usr/lib/libdirectnfs_preload.so
7f0000210000-7f0000220000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
";

    #[test]
    fn the_read_only_segments_of_the_file_holding_the_address_are_found() {
        assert_eq!(
            own_read_only_segments(MAPS, 0x7f00_0005_0000),
            vec![
                (0x7f00_0000_0000, 0x7f00_0004_0000),
                (0x7f00_0004_0000, 0x7f00_001c_0000),
                (0x7f00_001c_0000, 0x7f00_0020_0000),
            ]
        );
        // An address in no file mapping, or in none at all: nothing.
        assert!(own_read_only_segments(MAPS, 0x7f00_0021_0000).is_empty());
        assert!(own_read_only_segments(MAPS, 0x1000).is_empty());
    }
}
