//! The RPCSEC_GSS sequence window (RFC 2203 §5.3.3.1): a server drops,
//! without a reply, any call whose sequence number is more than its window
//! below the highest it has seen. A client that keeps at most `window`
//! calls of one context in flight can never fall behind it, whatever order
//! the calls are sent or answered in. This meter counts them.

use std::sync::{Condvar, Mutex};

/// Calls in flight on one context, at most `limit` of them.
#[derive(Debug)]
pub struct SeqWindow {
    limit: u32,
    in_flight: Mutex<u32>,
    freed: Condvar,
}

/// One call's place in the window, given back on drop.
#[derive(Debug)]
pub struct WindowSlot<'a> {
    window: &'a SeqWindow,
}

impl SeqWindow {
    /// A window of `limit` calls (the server's `seq_window`; at least 1).
    pub fn new(limit: u32) -> Self {
        Self {
            limit: limit.max(1),
            in_flight: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The most calls allowed in flight.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> u32 {
        *self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a place and takes it. The sequence number must be drawn
    /// after this returns, so that no call holds a number older than
    /// `limit` calls ago.
    pub fn enter(&self) -> WindowSlot<'_> {
        let mut n = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        while *n >= self.limit {
            n = self.freed.wait(n).unwrap_or_else(|p| p.into_inner());
        }
        *n += 1;
        WindowSlot { window: self }
    }

    /// Takes a place if one is free now.
    pub fn try_enter(&self) -> Option<WindowSlot<'_>> {
        let mut n = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(WindowSlot { window: self })
    }
}

impl Drop for WindowSlot<'_> {
    fn drop(&mut self) {
        let mut n = self
            .window
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
        self.window.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn at_most_limit_in_flight() {
        let w = SeqWindow::new(3);
        let a = w.try_enter().unwrap();
        let _b = w.try_enter().unwrap();
        let _c = w.try_enter().unwrap();
        assert!(
            w.try_enter().is_none(),
            "a fourth call would pass the window"
        );
        assert_eq!(w.in_flight(), 3);
        drop(a);
        assert!(w.try_enter().is_some());
    }

    #[test]
    fn a_waiting_call_enters_when_one_leaves() {
        let w = Arc::new(SeqWindow::new(1));
        let held = w.try_enter().unwrap();
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            let _s = w2.enter();
            w2.in_flight()
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!t.is_finished(), "entered a full window");
        drop(held);
        assert_eq!(t.join().unwrap(), 1);
        assert_eq!(w.in_flight(), 0);
    }

    #[test]
    fn zero_window_still_lets_one_call_through() {
        let w = SeqWindow::new(0);
        assert_eq!(w.limit(), 1);
        assert!(w.try_enter().is_some());
    }
}
