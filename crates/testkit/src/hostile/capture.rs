//! Everything the client logs, captured: a `tracing` subscriber, installed
//! as the process-wide default, that records every event and every span's
//! fields at every level (TRACE included) as text.
//!
//! Built on `tracing`'s own `Subscriber` trait so the tests need no extra
//! crate. Process-wide because the client logs from its own threads
//! (`dnfs-*`), which a thread-local default would miss; so only test
//! binaries that want it install it ([`install`]).

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static NEXT_SPAN: AtomicU64 = AtomicU64::new(1);

/// One captured line: `LEVEL target: message field=value ...`.
struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

/// The subscriber: everything enabled, everything kept.
struct Capture;

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = Line(format!("SPAN {}:", span.metadata().name()));
        span.record(&mut line);
        push(line.0);
        Id::from_u64(NEXT_SPAN.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = Line("SPAN record:".to_string());
        values.record(&mut line);
        push(line.0);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let m = event.metadata();
        let mut line = Line(format!("{} {}:", m.level(), m.target()));
        event.record(&mut line);
        push(line.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn push(line: String) {
    LINES.lock().unwrap_or_else(|p| p.into_inner()).push(line);
}

/// Installs the capturing subscriber as the process-wide default (once).
/// Panics if another default was installed first.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing::subscriber::set_global_default(Capture)
            .unwrap_or_else(|e| panic!("cannot install the capturing subscriber: {e}"));
    });
}

/// Every line captured so far.
pub fn lines() -> Vec<String> {
    LINES.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Lines captured so far at `level` containing every one of `needles`.
pub fn matching(level: Level, needles: &[&str]) -> Vec<String> {
    let prefix = format!("{level} ");
    lines()
        .into_iter()
        .filter(|l| l.starts_with(&prefix) && needles.iter().all(|n| l.contains(n)))
        .collect()
}
