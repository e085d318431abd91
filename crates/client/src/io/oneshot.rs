//! Reading one reply record from a blocking socket, for the cold paths
//! (PORTMAP, MOUNT, the NULL probe of a new connection).
//!
//! The whole reply must arrive before one deadline: a server that trickles
//! a byte at a time cannot hold the caller longer than the timeout (a
//! per-`read()` timeout would restart with every byte).

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::Instant;

use directnfs_wire::rpc::RecordReader;

/// Reads from `stream` until one complete record (of at most `max_record`
/// bytes) has arrived, or fails at `deadline`.
pub(crate) fn read_record(
    stream: &mut TcpStream,
    max_record: usize,
    deadline: Instant,
) -> io::Result<Vec<u8>> {
    let mut reader = RecordReader::new(max_record);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // Hand out complete fragments first; keep only what is left.
        loop {
            let step = reader
                .next(&buf)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if step.consumed == 0 {
                break;
            }
            let record = step.record.map(|r| r.into_owned());
            buf.drain(..step.consumed);
            if let Some(r) = record {
                return Ok(r);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no complete reply before the deadline",
            ));
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no complete reply before the deadline",
                ))
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection before its reply was complete",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
