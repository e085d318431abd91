//! A minimal blocking NFSv4.1 client over one TCP connection, built only
//! from this crate's codec: enough to run a scripted session against a
//! real server (the live test) and to capture its records (the
//! `capture_v41` example). One slot, one request at a time; callbacks the
//! server sends on the connection are answered (CB_NULL, CB_SEQUENCE,
//! CB_RECALL) and kept.
//!
//! Test code: a panic or an `io::Error` is the failure report.

// Test and capture harness, not the codec: it talks to a real server
// over a socket and reads the clock, which the crate's clippy.toml keeps
// out of the library itself.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use directnfs_wire::nfs4::*;
use directnfs_wire::rpc::msg::MsgType;
use directnfs_wire::rpc::{encode_call_header, peek_msg_type, AuthSys, CallHeader, OpaqueAuth};
use directnfs_wire::xdr::{Decode, Encode, XdrReader};

/// Largest record accepted from the server.
const MAX_RECORD: usize = 4 << 20;

/// Where the server is: host, NFS port and the export's pseudo-fs path.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// The path components (`/tmp/x` is `["tmp", "x"]`).
    pub path: Vec<String>,
}

impl Target {
    /// Parses `nfs://host/path?vers=4.1&nfsport=N` (the form
    /// `scripts/server/nfs-server.sh url --vers 4.1` prints).
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("nfs://")
            .ok_or_else(|| format!("{url}: not an nfs:// URL"))?;
        let (hostpath, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (host, path) = hostpath.split_once('/').unwrap_or((hostpath, ""));
        let mut port = 2049;
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            if let Some(p) = kv.strip_prefix("nfsport=") {
                port = p.parse().map_err(|e| format!("{url}: nfsport: {e}"))?;
            }
        }
        Ok(Self {
            host: host.to_string(),
            port,
            path: path
                .split('/')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect(),
        })
    }
}

/// One call and its reply, as they crossed the wire (record marks
/// included).
#[derive(Debug, Clone)]
pub struct Exchange {
    pub call: Vec<u8>,
    pub reply: Vec<u8>,
}

impl Exchange {
    /// The reply's RPC message (record mark stripped; one fragment).
    pub fn reply_msg(&self) -> &[u8] {
        &self.reply[4..]
    }
}

/// A callback the server sent, and what we answered.
#[derive(Debug, Clone)]
pub struct Callback {
    pub header: CallHeader,
    pub args: Option<CB_COMPOUND4args>,
    pub exchange: Exchange,
}

/// One TCP connection.
pub struct Conn {
    sock: TcpStream,
    xid: u32,
    auth: Vec<u8>,
    /// Callbacks received so far.
    pub callbacks: Vec<Callback>,
}

impl Conn {
    pub fn connect(t: &Target) -> io::Result<Self> {
        let sock = TcpStream::connect((t.host.as_str(), t.port))?;
        sock.set_nodelay(true)?;
        sock.set_read_timeout(Some(Duration::from_secs(30)))?;
        let cred = AuthSys {
            stamp: 0x444e_4653,
            machine_name: b"directnfs-v41-test".to_vec(),
            uid: 0,
            gid: 0,
            gids: vec![],
        }
        .to_opaque_auth();
        let mut auth = Vec::new();
        cred.encode(&mut auth);
        OpaqueAuth::none().encode(&mut auth);
        Ok(Self {
            sock,
            // Different runs, different XIDs: the server's duplicate
            // request cache must never answer for it.
            xid: std::process::id().wrapping_mul(0x9e37_79b9),
            auth,
            callbacks: Vec::new(),
        })
    }

    /// Sends a COMPOUND whose arguments (after the RPC header) are
    /// `body`, and returns the exchange once its reply arrives.
    pub fn call_raw(&mut self, body: &[u8]) -> io::Result<Exchange> {
        self.xid = self.xid.wrapping_add(1);
        let mut msg = Vec::with_capacity(64 + body.len());
        encode_call_header(
            &mut msg,
            self.xid,
            NFS4_PROGRAM,
            NFS_V4,
            NFSPROC4_COMPOUND,
            &self.auth,
        );
        msg.extend_from_slice(body);
        let call = record(&msg);
        self.sock.write_all(&call)?;
        self.wait_reply(self.xid, call)
    }

    /// Re-sends a call record unchanged but for a new XID: what a client
    /// does when it retries on a new connection.
    pub fn resend_with_new_xid(&mut self, call: &[u8]) -> io::Result<Exchange> {
        self.xid = self.xid.wrapping_add(1);
        let mut call = call.to_vec();
        call[4..8].copy_from_slice(&self.xid.to_be_bytes());
        self.sock.write_all(&call)?;
        self.wait_reply(self.xid, call)
    }

    /// Sends `args` and decodes the reply against the operations sent.
    pub fn compound(&mut self, args: &COMPOUND4args) -> io::Result<(Exchange, COMPOUND4res)> {
        let mut body = Vec::new();
        args.encode(&mut body);
        let ex = self.call_raw(&body)?;
        let sent: Vec<nfs_opnum4> = args.argarray.iter().map(nfs_argop4::opnum).collect();
        let res = decode_compound_reply(&ex, &sent)?;
        Ok((ex, res))
    }

    /// Waits for the reply to `xid`, answering callbacks meanwhile.
    fn wait_reply(&mut self, xid: u32, call: Vec<u8>) -> io::Result<Exchange> {
        loop {
            let (raw, msg) = self.read_record()?;
            match peek_msg_type(&msg) {
                Some(MsgType::CALL) => self.answer_callback(raw, &msg)?,
                Some(MsgType::REPLY) if msg[..4] == xid.to_be_bytes() => {
                    return Ok(Exchange { call, reply: raw })
                }
                other => {
                    return Err(io::Error::other(format!(
                        "unexpected record (msg_type {other:?}) while waiting for XID {xid:#x}"
                    )))
                }
            }
        }
    }

    /// Waits up to `timeout` for one callback and answers it; false if
    /// none came.
    pub fn serve_one_callback(&mut self, timeout: Duration) -> io::Result<bool> {
        self.sock.set_read_timeout(Some(timeout))?;
        let got = self.read_record();
        self.sock.set_read_timeout(Some(Duration::from_secs(30)))?;
        let (raw, msg) = match got {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(false)
            }
            Err(e) => return Err(e),
        };
        if peek_msg_type(&msg) != Some(MsgType::CALL) {
            return Err(io::Error::other("a reply arrived with no call outstanding"));
        }
        self.answer_callback(raw, &msg)?;
        Ok(true)
    }

    /// Answers CB_NULL, and CB_COMPOUND with CB_SEQUENCE and CB_RECALL
    /// accepted (everything else gets the RFC's error).
    fn answer_callback(&mut self, raw: Vec<u8>, msg: &[u8]) -> io::Result<()> {
        let mut r = XdrReader::new(msg);
        let header = CallHeader::decode(&mut r).map_err(io::Error::other)?;
        let mut reply = Vec::new();
        let args = match header.proc_ {
            CB_NULL => {
                encode_cb_reply(&mut reply, header.xid, None);
                None
            }
            CB_COMPOUND => {
                let args = CB_COMPOUND4args::decode(&mut r).map_err(io::Error::other)?;
                let res = args.reply(|op| match op {
                    nfs_cb_argop4::OP_CB_SEQUENCE(a) => Some(a.reply_ok(0)),
                    nfs_cb_argop4::OP_CB_RECALL(_) => Some(nfs_cb_resop4::Status(
                        nfs_cb_opnum4::OP_CB_RECALL,
                        nfsstat4::NFS4_OK,
                    )),
                    _ => None,
                });
                encode_cb_reply(&mut reply, header.xid, Some(&res));
                Some(args)
            }
            other => return Err(io::Error::other(format!("callback procedure {other}"))),
        };
        let reply = record(&reply);
        self.sock.write_all(&reply)?;
        self.callbacks.push(Callback {
            header,
            args,
            exchange: Exchange { call: raw, reply },
        });
        Ok(())
    }

    /// Reads one record: the raw bytes (marks included) and the message.
    fn read_record(&mut self) -> io::Result<(Vec<u8>, Vec<u8>)> {
        let mut raw = Vec::new();
        let mut msg = Vec::new();
        loop {
            let mut mark = [0u8; 4];
            self.sock.read_exact(&mut mark)?;
            let word = u32::from_be_bytes(mark);
            let len = (word & 0x7fff_ffff) as usize;
            if msg.len() + len > MAX_RECORD {
                return Err(io::Error::other(format!("record over {MAX_RECORD} bytes")));
            }
            raw.extend_from_slice(&mark);
            let at = msg.len();
            msg.resize(at + len, 0);
            self.sock.read_exact(&mut msg[at..])?;
            raw.extend_from_slice(&msg[at..]);
            if word & 0x8000_0000 != 0 {
                return Ok((raw, msg));
            }
        }
    }
}

/// One record of one fragment around `msg`.
pub fn record(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + msg.len());
    out.extend_from_slice(&(0x8000_0000 | msg.len() as u32).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

/// Decodes a COMPOUND reply record against the operations sent.
pub fn decode_compound_reply(ex: &Exchange, sent: &[nfs_opnum4]) -> io::Result<COMPOUND4res> {
    let mut r = XdrReader::new(ex.reply_msg());
    let h = directnfs_wire::rpc::ReplyHeader::decode(&mut r).map_err(io::Error::other)?;
    if !h.is_success() {
        return Err(io::Error::other(format!("RPC error: {h:?}")));
    }
    let res = COMPOUND4res::decode_expecting(&mut r, sent).map_err(io::Error::other)?;
    r.finish("COMPOUND4res").map_err(io::Error::other)?;
    Ok(res)
}

/// A client ID and a session on a connection, using slot 0 only.
pub struct Session {
    pub conn: Conn,
    pub clientid: clientid4,
    pub sessionid: sessionid4,
    /// The last sequence id used on slot 0.
    pub seqid: sequenceid4,
}

impl Session {
    /// The SEQUENCE arguments for the next new request on slot 0.
    pub fn next_seq(&mut self, cachethis: bool) -> SEQUENCE4args {
        self.seqid += 1;
        SEQUENCE4args {
            sa_sessionid: self.sessionid,
            sa_sequenceid: self.seqid,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: cachethis,
        }
    }

    /// Runs `SEQUENCE` + `ops` (cached in the server's reply cache).
    pub fn run(&mut self, ops: Vec<nfs_argop4>) -> io::Result<(Exchange, COMPOUND4res)> {
        let mut argarray = vec![nfs_argop4::OP_SEQUENCE(self.next_seq(true))];
        argarray.extend(ops);
        let args = COMPOUND4args {
            tag: Default::default(),
            minorversion: 1,
            argarray,
        };
        let (ex, res) = self.conn.compound(&args)?;
        if !matches!(res.resarray.first(), Some(r) if r.status().is_ok()) {
            // SEQUENCE failed: the sequence id was not consumed.
            self.seqid -= 1;
        }
        Ok((ex, res))
    }
}

/// COMPOUND4args of minor version 1 with these operations.
pub fn compound(ops: Vec<nfs_argop4>) -> COMPOUND4args {
    COMPOUND4args {
        tag: Default::default(),
        minorversion: 1,
        argarray: ops,
    }
}
