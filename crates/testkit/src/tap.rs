//! A recording TCP relay: forwards every byte between a client and a
//! server unchanged and keeps a copy of both directions, so a test can
//! look at what crossed the wire (that a private body is not plaintext).
//! Bounded: it keeps at most [`TAP_LIMIT`] bytes per direction.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// Bytes kept per direction; the rest is forwarded without a copy.
pub const TAP_LIMIT: usize = 64 << 20;

/// A relay on a loopback port to one server address.
#[derive(Debug)]
pub struct TapRelay {
    local: SocketAddr,
    to_server: Arc<Mutex<Vec<u8>>>,
    to_client: Arc<Mutex<Vec<u8>>>,
    /// Set by [`cut`](Self::cut): connections are closed, new ones too.
    cut: Arc<AtomicBool>,
    /// Both ends of every connection relayed, for `cut`.
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl TapRelay {
    /// Listens on 127.0.0.1 (a free port) and relays each connection to
    /// `server`. Its threads end when the connections close.
    pub fn start(server: SocketAddr) -> io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), server)
    }

    /// Listens on `listen` (port 0: a free one) and relays each connection
    /// to `server`.
    pub fn start_on(listen: SocketAddr, server: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(listen)?;
        let local = listener.local_addr()?;
        let to_server = Arc::new(Mutex::new(Vec::new()));
        let to_client = Arc::new(Mutex::new(Vec::new()));
        let cut = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (up, down) = (Arc::clone(&to_server), Arc::clone(&to_client));
        let (is_cut, all) = (Arc::clone(&cut), Arc::clone(&streams));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if is_cut.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(server) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                {
                    let mut all = all.lock().unwrap_or_else(|p| p.into_inner());
                    if let (Ok(c3), Ok(s3)) = (client.try_clone(), server.try_clone()) {
                        all.extend([c3, s3]);
                    }
                }
                let (up, down) = (Arc::clone(&up), Arc::clone(&down));
                thread::spawn(move || copy(client, server, &up));
                thread::spawn(move || copy(s2, c2, &down));
            }
        });
        Ok(Self {
            local,
            to_server,
            to_client,
            cut,
            streams,
        })
    }

    /// Cuts the relay, as a path that goes away: every connection is
    /// closed at once, and a new one is closed as soon as it is accepted.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for s in self
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Everything the clients sent so far.
    pub fn sent(&self) -> Vec<u8> {
        self.to_server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Everything the server answered so far.
    pub fn received(&self) -> Vec<u8> {
        self.to_client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream, tap: &Mutex<Vec<u8>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let mut t = tap.lock().unwrap_or_else(|p| p.into_inner());
            let room = TAP_LIMIT.saturating_sub(t.len()).min(n);
            t.extend_from_slice(&buf[..room]);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
