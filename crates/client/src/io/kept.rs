//! A kept connection for a side protocol's calls (the NFSv3 lock manager,
//! `crate::nlm`): opened at the first call, kept for the next ones, one
//! call at a time, each with a new XID (a server's duplicate request
//! cache must never answer a call with the reply to the one before).

use std::io;
use std::net::TcpStream;
use std::time::Duration;

use super::oneshot::call_on;
use super::socket::{connect, ConnectSpec};

/// One kept TCP connection; the caller serializes calls (a `Mutex`).
#[derive(Debug, Default)]
pub(crate) struct Kept {
    stream: Option<TcpStream>,
    salt: u32,
}

impl Kept {
    /// True while a connection is open.
    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Opens the connection as `spec` says (when none is open).
    pub(crate) fn open(&mut self, spec: &ConnectSpec) -> io::Result<()> {
        if self.stream.is_none() {
            self.stream = Some(connect(spec)?);
        }
        Ok(())
    }

    /// Forgets the connection (closing it).
    pub(crate) fn close(&mut self) {
        self.stream = None;
    }

    /// Calls `prog`/`vers`/`proc_` with `args` (encoded) on the open
    /// connection and returns the results' bytes; any failure closes it
    /// (`InvalidData`: the server refused the call or garbled the reply;
    /// anything else: the connection broke or timed out).
    pub(crate) fn call(
        &mut self,
        cred: &[u8],
        call: (u32, u32, u32),
        args: &[u8],
        timeout: Duration,
    ) -> io::Result<Vec<u8>> {
        self.salt = self.salt.wrapping_add(1);
        let salt = self.salt;
        let Some(stream) = self.stream.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "not connected"));
        };
        let r = call_on(stream, cred, call, salt, args, timeout, None);
        if r.is_err() {
            self.stream = None;
        }
        r
    }
}
