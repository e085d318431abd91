//! Allocator tuning for bulk copies.
//!
//! Every WRITE the client sends owns a copy of its data (`Arc<[u8]>`, up to
//! 1 MiB). glibc serves allocations that large with a fresh `mmap` and
//! returns them with `munmap`, so a 1 GiB copy page-faults in (and zeroes)
//! about 1 GiB of new memory: measured here, ~120k page faults and a third
//! of `dnfs cp`'s CPU. Raising the mmap and trim thresholds keeps freed
//! buffers in the heap for the next WRITE (peak memory is bounded by what
//! is in flight plus the uncommitted data the client keeps, ~100 MiB).

/// Keeps large freed blocks in the heap for reuse. Call before starting
/// threads.
pub fn tune_for_bulk_io() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt takes two integers and only changes allocator
        // parameters; it is called before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
        }
    }
}
