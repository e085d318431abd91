//! `DIRECTNFS_SQLITE_TRACE=1`: every VFS call on stderr with its time.

/// `DIRECTNFS_SQLITE_TRACE=1`: every VFS call on stderr with its time.
fn tracing_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DIRECTNFS_SQLITE_TRACE").is_some())
}

/// Prints `op` and how long it took, when tracing. Keeps a copy of the
/// name only then, so the connection it names stays free to change.
pub(super) struct Trace {
    op: &'static str,
    arg: i64,
    on: Option<(std::time::Instant, String)>,
}

impl Trace {
    pub(super) fn new(op: &'static str, what: &str, arg: i64) -> Self {
        let on = tracing_on().then(|| (std::time::Instant::now(), what.to_string()));
        Trace { op, arg, on }
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        if let Some((start, what)) = &self.on {
            eprintln!(
                "directnfs-sqlite: {:>14} {:>10} {:8.3} ms  {}",
                self.op,
                self.arg,
                start.elapsed().as_secs_f64() * 1e3,
                what
            );
        }
    }
}
