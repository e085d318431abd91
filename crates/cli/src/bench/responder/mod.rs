//! `dnfs bench responder`: a minimal in-memory NFSv3 responder, for
//! measuring the *client's* cost without a real server in the way. It is
//! not a file server and must never be used as one: one flat export of
//! preallocated files that all hold the benchmark's initial fill, WRITEs
//! acknowledged (FILE_SYNC) and discarded, no permissions, no state, no
//! persistence.
//!
//! One thread per connection: it reads the socket through a large buffer
//! (many calls per `read`), appends every reply to one output buffer, and
//! writes that buffer only when no further call is already buffered, so a
//! client that keeps 16 calls in flight costs the responder a few
//! syscalls per batch, not two per call. PORTMAP, MOUNT and NFS are all
//! served on the one port. Malformed input closes the connection.

mod proto;
mod xdr;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::Arc;

use proto::{answer, Export, MAX_IO};

use super::block::{self, BLOCK_SIZE};

/// `dnfs bench responder ...`
#[derive(Debug, Clone, clap::Args)]
pub struct ResponderArgs {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:2049")]
    pub listen: String,
    /// The export path MOUNT answers.
    #[arg(long, default_value = "/bench")]
    pub export: String,
    /// File names in the export (all hold the same contents).
    #[arg(long = "file", default_values_t = ["data".to_string()])]
    pub files: Vec<String>,
    /// File size (k/m/g suffixes); held in memory.
    #[arg(long, default_value = "64m", value_parser = super::parse_size)]
    pub size: u64,
}

/// Runs the responder until killed.
pub fn main(args: ResponderArgs) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnfs bench responder: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(args: ResponderArgs) -> Result<(), String> {
    let listener = TcpListener::bind(&args.listen).map_err(|e| format!("{}: {e}", args.listen))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let size = usize::try_from(args.size).map_err(|_| "size too large")?;
    let mut data = vec![0u8; size];
    for (i, chunk) in data.chunks_mut(BLOCK_SIZE).enumerate() {
        block::encode(chunk, i as u64, 0, 0);
    }
    let export = Arc::new(Export {
        path: args.export,
        names: args.files,
        data,
        port,
    });
    // The line scripts wait for: the port is open from here on.
    println!(
        "listening on {}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let export = Arc::clone(&export);
        std::thread::spawn(move || {
            let _ = connection(&export, conn);
        });
    }
    Ok(())
}

/// Serves one connection until EOF, an I/O error or a malformed call.
fn connection(export: &Export, conn: TcpStream) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::with_capacity(1 << 20, conn);
    let mut rec = Vec::with_capacity(64 << 10);
    let mut out = Vec::with_capacity(1 << 20);
    loop {
        rec.clear();
        if !read_record(&mut reader, &mut rec)? {
            break;
        }
        if answer(export, &rec, &mut out).is_err() {
            break;
        }
        if reader.buffer().is_empty() || out.len() >= 1 << 20 {
            writer.write_all(&out)?;
            out.clear();
        }
    }
    writer.write_all(&out)
}

/// Reads one RPC record (all its fragments) into `rec`; false at a clean
/// EOF or on a record larger than any call the responder accepts.
fn read_record(reader: &mut BufReader<TcpStream>, rec: &mut Vec<u8>) -> std::io::Result<bool> {
    const MAX_RECORD: usize = MAX_IO as usize + 4096;
    loop {
        if rec.is_empty() && reader.fill_buf()?.is_empty() {
            return Ok(false);
        }
        let mut marker = [0u8; 4];
        reader.read_exact(&mut marker)?;
        let m = u32::from_be_bytes(marker);
        let len = (m & 0x7fff_ffff) as usize;
        if rec.len() + len > MAX_RECORD {
            return Ok(false);
        }
        let at = rec.len();
        rec.resize(at + len, 0);
        reader.read_exact(&mut rec[at..])?;
        if m & 0x8000_0000 != 0 {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests;
