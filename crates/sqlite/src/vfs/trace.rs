//! `DIRECTNFS_SQLITE_TRACE=1`: every VFS call on stderr with its time.

/// `DIRECTNFS_SQLITE_TRACE=1`: every VFS call on stderr with its time.
fn tracing_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DIRECTNFS_SQLITE_TRACE").is_some())
}

/// Prints `op` and how long it took, when tracing.
pub(super) struct Trace<'a> {
    op: &'static str,
    what: &'a str,
    arg: i64,
    start: Option<std::time::Instant>,
}

impl<'a> Trace<'a> {
    pub(super) fn new(op: &'static str, what: &'a str, arg: i64) -> Self {
        let start = tracing_on().then(std::time::Instant::now);
        Trace {
            op,
            what,
            arg,
            start,
        }
    }
}

impl Drop for Trace<'_> {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            eprintln!(
                "directnfs-sqlite: {:>14} {:>10} {:8.3} ms  {}",
                self.op,
                self.arg,
                start.elapsed().as_secs_f64() * 1e3,
                self.what
            );
        }
    }
}
