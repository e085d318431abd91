//! Where alert lines go.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use super::line::Level;

/// The destination of a process's alert lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Sink {
    /// Standard error (the default): with the interception library, the
    /// database's own log.
    #[default]
    Stderr,
    /// Appended to this file (created mode 0644 if missing).
    File(PathBuf),
    /// Sent to the syslog socket at this path (`/dev/log` for plain
    /// `syslog`), facility `user`, tag `directnfs`.
    Syslog(PathBuf),
    /// Nowhere (the latest lines are still kept for `dnfs stats`).
    Off,
}

impl Sink {
    /// Parses `stderr`, `off` (or `none`), `syslog`, `syslog:SOCKET`,
    /// `file:PATH` or an absolute `PATH`.
    pub fn parse(s: &str) -> Result<Sink, String> {
        let s = s.trim();
        match s {
            "stderr" => return Ok(Sink::Stderr),
            "off" | "none" => return Ok(Sink::Off),
            "syslog" => return Ok(Sink::Syslog(PathBuf::from("/dev/log"))),
            _ => {}
        }
        if let Some(p) = s.strip_prefix("syslog:").filter(|p| !p.is_empty()) {
            return Ok(Sink::Syslog(PathBuf::from(p)));
        }
        if let Some(p) = s.strip_prefix("file:").filter(|p| !p.is_empty()) {
            return Ok(Sink::File(PathBuf::from(p)));
        }
        if s.starts_with('/') {
            return Ok(Sink::File(PathBuf::from(s)));
        }
        Err(format!(
            "unknown alert log {s:?} (expected stderr, off, syslog, syslog:SOCKET, file:PATH or an absolute path)"
        ))
    }

    /// `DIRECTNFS_ALERT_LOG`, or [`Sink::Stderr`] when unset or invalid.
    pub(crate) fn from_env() -> Sink {
        match std::env::var("DIRECTNFS_ALERT_LOG") {
            Ok(v) if !v.trim().is_empty() => Sink::parse(&v).unwrap_or_else(|e| {
                tracing::warn!("DIRECTNFS_ALERT_LOG: {e}; alerts go to stderr");
                Sink::Stderr
            }),
            _ => Sink::Stderr,
        }
    }

    /// Writes one line. Failures are dropped: the alert log must never
    /// disturb I/O (the line stays in [`super::recent`]).
    pub(crate) fn write(&self, level: Level, line: &str) {
        match self {
            Sink::Stderr => without_sigpipe(|| {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(format!("{line}\n").as_bytes());
            }),
            Sink::File(path) => {
                let open = |flags: libc::c_int| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .custom_flags(flags)
                        .open(path)
                };
                // Opened without waiting inside a descriptor window
                // (fdfloor.rs: a host `dup2` waits for it), then written in
                // blocking mode. A FIFO with no reader yet (ENXIO) is
                // waited for outside the window, as before: the line stays
                // until a log reader comes, and only then is its
                // descriptor moved above the floor.
                let file = match crate::fdfloor::made(|| open(libc::O_NONBLOCK)) {
                    Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                        open(0).and_then(|f| crate::fdfloor::made(|| Ok(f)))
                    }
                    other => other,
                };
                if let Ok(mut f) = file {
                    blocking(&f);
                    // One write of the whole line: O_APPEND keeps lines of
                    // several processes whole. (The path may be a FIFO.)
                    without_sigpipe(|| {
                        let _ = f.write_all(format!("{line}\n").as_bytes());
                    });
                }
            }
            Sink::Syslog(socket) => {
                // Syslog stamps its own time: send the rest of the line.
                let rest = line.split_once(' ').map_or(line, |(_, r)| r);
                let msg = format!("<{}>{rest}", 8 + level.syslog_severity());
                if let Ok(s) = crate::fdfloor::made(UnixDatagram::unbound) {
                    let _ = s.send_to(msg.as_bytes(), socket);
                }
            }
            Sink::Off => {}
        }
    }
}

/// Clears `O_NONBLOCK` (set only to open without waiting).
fn blocking(f: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: F_GETFL/F_SETFL on a descriptor `f` owns.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// Runs `write` (a write to a pipe, perhaps one whose reader is gone:
/// `prog 2>&1 | head -1`) so that it cannot raise SIGPIPE, whose default
/// action would end the program for an alert line. Pipes have no
/// MSG_NOSIGNAL: SIGPIPE is blocked in this thread meanwhile, and one the
/// write raised (directed at this thread) is taken back before the mask is
/// restored.
fn without_sigpipe(write: impl FnOnce()) {
    // Miri (the client's unit tests run there) has no signal masks.
    if cfg!(miri) {
        return write();
    }
    // SAFETY: sigset_t values initialised by sigemptyset/sigpending before
    // use; the mask changes are this thread's only and restored below.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        write();
        if !was_pending {
            let now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &now);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("dnfs-alert-{name}-{}", std::process::id()))
    }

    #[test]
    fn parses_every_form_and_rejects_the_rest() {
        assert_eq!(Sink::parse("stderr"), Ok(Sink::Stderr));
        assert_eq!(Sink::parse("off"), Ok(Sink::Off));
        assert_eq!(
            Sink::parse("syslog"),
            Ok(Sink::Syslog(PathBuf::from("/dev/log")))
        );
        assert_eq!(
            Sink::parse("syslog:/run/x.sock"),
            Ok(Sink::Syslog(PathBuf::from("/run/x.sock")))
        );
        assert_eq!(
            Sink::parse("/var/log/dnfs.log"),
            Ok(Sink::File(PathBuf::from("/var/log/dnfs.log")))
        );
        assert_eq!(
            Sink::parse("file:rel.log"),
            Ok(Sink::File(PathBuf::from("rel.log")))
        );
        let e = Sink::parse("mail").expect_err("refused");
        assert!(e.contains("\"mail\""), "{e}");
    }

    #[test]
    fn a_file_sink_appends_whole_lines() {
        let p = scratch("file");
        let _ = std::fs::remove_file(&p);
        let s = Sink::File(p.clone());
        s.write(Level::Warning, "one");
        s.write(Level::Notice, "two");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "one\ntwo\n");
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn a_syslog_sink_sends_one_datagram_with_priority_and_tag() {
        let p = scratch("syslog.sock");
        let _ = std::fs::remove_file(&p);
        let server = UnixDatagram::bind(&p).expect("bind");
        Sink::Syslog(p.clone()).write(
            Level::Warning,
            "2026-11-24T10:00:00.000Z directnfs[7]: WARNING: filer1: path a->b DOWN (x)",
        );
        let mut buf = [0u8; 512];
        let n = server.recv(&mut buf).expect("recv");
        assert_eq!(
            std::str::from_utf8(&buf[..n]).expect("utf8"),
            "<12>directnfs[7]: WARNING: filer1: path a->b DOWN (x)"
        );
        let _ = std::fs::remove_file(&p);
    }
}
