//! `dnfs top`: a live view of every directnfs process's I/O, like
//! `iostat -x` / `nfsiostat`: per server, I/O class, path and busiest file, IOPS,
//! MB/s, mean and p99 latency, in flight, errors; redrawn every interval,
//! `q` quits. Plain ANSI escapes and termios only (works over SSH and
//! under tmux/screen).

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

use directnfs::publish;

use super::rates;
use super::stats::parse_seconds;
use crate::error::{CliError, Result};

/// Options of `dnfs top`.
#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(long, short = 'i', value_name = "SECONDS", default_value = "1", value_parser = parse_seconds)]
    pub interval: Duration,
    /// Busiest files shown.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub files: usize,
    /// Show every channel too.
    #[arg(long)]
    pub channels: bool,
    /// Only this process.
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
}

/// Runs `dnfs top` until `q` (or Ctrl-C) is pressed.
pub fn run(args: &TopArgs) -> Result<()> {
    let stdin = io::stdin();
    let _terminal = Terminal::enter(stdin.as_raw_fd())?;
    let mut out = io::stdout().lock();
    let mut prev = publish::read_host(args.pid);
    let mut at = Instant::now();
    let mut first = true;
    loop {
        // The first screen comes at once (rates need a second reading:
        // it shows a short interval), then one per interval.
        let wait = if first {
            Duration::from_millis(250)
        } else {
            args.interval
        };
        if wait_for_quit(stdin.as_raw_fd(), wait.saturating_sub(at.elapsed()))? {
            return Ok(());
        }
        first = false;
        let cur = publish::read_host(args.pid);
        let now = Instant::now();
        let r = rates::between(&prev, &cur, now.duration_since(at).as_secs_f64());
        let (rows, cols) = window_size(out.as_raw_fd());
        let mut screen = format!(
            "dnfs top - {} - {} process(es) - every {:.1} s - q quits\n\n",
            clock(),
            r.processes,
            args.interval.as_secs_f64()
        );
        screen.push_str(&rates::render(&r, args.files, args.channels));
        let frame = fit(&screen, rows, cols);
        out.write_all(frame.as_bytes())
            .and_then(|()| out.flush())
            .map_err(CliError::stdout)?;
        (prev, at) = (cur, now);
    }
}

/// The screen cut to the window, drawn from the top-left corner with each
/// line cleared to its end and the rest of the screen cleared.
fn fit(screen: &str, rows: usize, cols: usize) -> String {
    let mut frame = String::from("\x1b[H");
    for line in screen.lines().take(rows.saturating_sub(1).max(1)) {
        let cut: String = line.chars().take(cols.max(1)).collect();
        frame.push_str(&cut);
        frame.push_str("\x1b[K\r\n");
    }
    frame.push_str("\x1b[J");
    frame
}

/// `HH:MM:SS` UTC.
fn clock() -> String {
    let s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02} UTC", s / 3600 % 24, s / 60 % 60, s % 60)
}

/// Waits up to `timeout` for a key; true if it was `q`, `Q`, Ctrl-C or
/// end of input.
fn wait_for_quit(fd: i32, timeout: Duration) -> Result<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, count 1.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(60_000) as i32) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(CliError::msg(format!("poll on the terminal: {e}")));
        }
        if n == 0 {
            if left.is_zero() {
                return Ok(false);
            }
            continue;
        }
        let mut b = [0u8; 64];
        let got = io::stdin().lock().read(&mut b).unwrap_or(0);
        if got == 0 || b[..got].iter().any(|&c| matches!(c, b'q' | b'Q' | 3)) {
            return Ok(true);
        }
    }
}

fn window_size(fd: i32) -> (usize, usize) {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    if rc != 0 || ws.ws_row == 0 {
        return (50, 160);
    }
    (usize::from(ws.ws_row), usize::from(ws.ws_col))
}

/// The terminal in "one key at a time, no echo" mode on the alternate
/// screen; restored when dropped.
struct Terminal {
    fd: i32,
    saved: Option<libc::termios>,
}

impl Terminal {
    fn enter(fd: i32) -> Result<Self> {
        // SAFETY: termios is plain data; tcgetattr fills it or fails.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `t` is a valid termios to write into.
        let saved = if unsafe { libc::tcgetattr(fd, &mut t) } == 0 {
            let saved = t;
            // No line buffering, no echo, Ctrl-C as a byte (so the screen
            // is always restored on the way out).
            t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            // SAFETY: `t` is a valid termios for this terminal.
            unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) };
            Some(saved)
        } else {
            None
        };
        let mut out = io::stdout().lock();
        out.write_all(b"\x1b[?1049h\x1b[?25l\x1b[2J")
            .and_then(|()| out.flush())
            .map_err(CliError::stdout)?;
        Ok(Terminal { fd, saved })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let mut out = io::stdout().lock();
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l");
        let _ = out.flush();
        if let Some(t) = &self.saved {
            // SAFETY: restores the termios read in `enter`.
            unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, t) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_fits_the_window_and_clears_what_it_does_not_use() {
        let f = fit("aaaa\nbbbb\ncccc\ndddd\n", 3, 2);
        assert_eq!(f, "\x1b[Haa\x1b[K\r\nbb\x1b[K\r\n\x1b[J");
    }
}
