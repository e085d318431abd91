//! One RPC call in, one reply out: the procedures of PORTMAP, MOUNT v3 and
//! NFSv3 that directnfs and libnfs send to mount, open and do 8 KiB I/O on a
//! file, answered from memory. Anything else gets PROC_UNAVAIL (or
//! PROG_UNAVAIL); a call that does not parse is `Err`, and the connection
//! closes.

use super::xdr::{put_opaque, put_u32, put_u64, Reader};

const PORTMAP: u32 = 100_000;
const NFS: u32 = 100_003;
const MOUNT: u32 = 100_005;
const NFS3_OK: u32 = 0;
const NFS3ERR_NOENT: u32 = 2;
const NFS3ERR_STALE: u32 = 70;
const MNT3ERR_NOENT: u32 = 2;
/// XDR limits: MNTPATHLEN, NFS3_FHSIZE, the RPC auth body.
const MAX_PATH: usize = 1024;
const MAX_FH: usize = 64;
const MAX_AUTH: usize = 400;
const MAX_NAME: usize = 255;
/// Largest READ/WRITE the responder offers in FSINFO.
pub const MAX_IO: u32 = 1 << 20;
const ROOT_ID: u64 = 1;

/// What the responder serves: one export holding `names.len()` files of
/// `data.len()` bytes each, all with the same contents.
#[derive(Debug)]
pub struct Export {
    pub path: String,
    pub names: Vec<String>,
    pub data: Vec<u8>,
    pub port: u16,
}

impl Export {
    fn file_id(&self, fh: &[u8]) -> Option<u64> {
        let id = u64::from_be_bytes(fh.try_into().ok()?);
        (id == ROOT_ID || (id >= 2 && id < 2 + self.names.len() as u64)).then_some(id)
    }
}

fn handle(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// Malformed call: the connection is closed.
#[derive(Debug, PartialEq, Eq)]
pub struct Garbage;

/// Decodes the call in `rec` (one whole RPC record, without its marker) and
/// appends the reply record (with its marker) to `out`.
pub fn answer(export: &Export, rec: &[u8], out: &mut Vec<u8>) -> Result<(), Garbage> {
    let mut r = Reader::new(rec);
    let xid = r.u32().ok_or(Garbage)?;
    if r.u32() != Some(0) || r.u32() != Some(2) {
        return Err(Garbage); // not a CALL, or not RPC version 2
    }
    let (prog, vers, proc_) = (
        r.u32().ok_or(Garbage)?,
        r.u32().ok_or(Garbage)?,
        r.u32().ok_or(Garbage)?,
    );
    for _ in 0..2 {
        r.u32().ok_or(Garbage)?; // credential, then verifier: flavor and body
        r.opaque(MAX_AUTH).ok_or(Garbage)?;
    }
    let start = out.len();
    put_u32(out, 0); // record marker, filled in below
    put_u32(out, xid);
    put_u32(out, 1); // REPLY
    put_u32(out, 0); // MSG_ACCEPTED
    put_u32(out, 0); // verifier AUTH_NONE
    put_u32(out, 0);
    let accept_at = out.len();
    put_u32(out, 0); // SUCCESS (changed below if not)
    let ok = match (prog, vers) {
        (NFS, 3) => nfs3(export, proc_, &mut r, out),
        (MOUNT, 3) => mount3(export, proc_, &mut r, out),
        (PORTMAP, 2) => portmap2(export, proc_, &mut r, out),
        (NFS | MOUNT, _) | (PORTMAP, _) => {
            out.truncate(accept_at);
            put_u32(out, 2); // PROG_MISMATCH
            let v = if prog == PORTMAP { 2 } else { 3 };
            put_u32(out, v);
            put_u32(out, v);
            Some(true)
        }
        _ => {
            out.truncate(accept_at);
            put_u32(out, 1); // PROG_UNAVAIL
            Some(true)
        }
    };
    match ok {
        None => {
            out.truncate(start);
            return Err(Garbage);
        }
        Some(false) => {
            out.truncate(accept_at);
            put_u32(out, 3); // PROC_UNAVAIL
        }
        Some(true) => {}
    }
    let len = (out.len() - start - 4) as u32 | 0x8000_0000;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// `Some(false)`: unknown procedure; `None`: arguments do not parse.
fn portmap2(export: &Export, proc_: u32, r: &mut Reader, out: &mut Vec<u8>) -> Option<bool> {
    match proc_ {
        0 => {}
        3 => {
            let prog = r.u32()?;
            let (_vers, _prot, _port) = (r.u32()?, r.u32()?, r.u32()?);
            let served = matches!(prog, NFS | MOUNT);
            put_u32(out, if served { u32::from(export.port) } else { 0 });
        }
        _ => return Some(false),
    }
    Some(true)
}

fn mount3(export: &Export, proc_: u32, r: &mut Reader, out: &mut Vec<u8>) -> Option<bool> {
    match proc_ {
        0 => {}
        1 => {
            let path = r.opaque(MAX_PATH)?;
            if path == export.path.as_bytes() {
                put_u32(out, 0);
                put_opaque(out, &handle(ROOT_ID));
                put_u32(out, 1); // one auth flavor: AUTH_SYS
                put_u32(out, 1);
            } else {
                put_u32(out, MNT3ERR_NOENT);
            }
        }
        3 => {
            r.opaque(MAX_PATH)?;
        }
        5 => {
            put_u32(out, 1); // one export, no groups
            put_opaque(out, export.path.as_bytes());
            put_u32(out, 0);
            put_u32(out, 0);
        }
        _ => return Some(false),
    }
    Some(true)
}

fn nfs3(export: &Export, proc_: u32, r: &mut Reader, out: &mut Vec<u8>) -> Option<bool> {
    if proc_ == 0 {
        return Some(true);
    }
    if !matches!(proc_, 1..=4 | 6 | 7 | 18..=21) {
        return Some(false);
    }
    let fh = r.opaque(MAX_FH)?;
    let Some(id) = export.file_id(fh) else {
        put_u32(out, NFS3ERR_STALE);
        put_u32(out, 0); // no attributes (every failing result starts so)
        return Some(true);
    };
    let size = export.data.len() as u64;
    match proc_ {
        1 => {
            put_u32(out, NFS3_OK);
            fattr(out, id, size);
        }
        2 => {
            // SETATTR: accepted and ignored (sizes are fixed).
            put_u32(out, NFS3_OK);
            wcc(out, id, size);
        }
        3 => {
            let name = r.opaque(MAX_NAME)?;
            let found = export.names.iter().position(|n| n.as_bytes() == name);
            match found.filter(|_| id == ROOT_ID) {
                Some(i) => {
                    let fid = 2 + i as u64;
                    put_u32(out, NFS3_OK);
                    put_opaque(out, &handle(fid));
                    post_op(out, fid, size);
                    post_op(out, ROOT_ID, size);
                }
                None => {
                    put_u32(out, NFS3ERR_NOENT);
                    post_op(out, id, size);
                }
            }
        }
        4 => {
            let want = r.u32()?;
            put_u32(out, NFS3_OK);
            post_op(out, id, size);
            put_u32(out, want);
        }
        6 => read(export, id, r.u64()?, r.u32()?, out),
        7 => {
            let (_off, count, _stable) = (r.u64()?, r.u32()?, r.u32()?);
            r.opaque(MAX_IO as usize)?; // discarded: reads keep the initial fill
            put_u32(out, NFS3_OK);
            wcc(out, id, size);
            put_u32(out, count);
            put_u32(out, 2); // FILE_SYNC: no COMMIT needed
            put_u64(out, 0x00d1_7ec7_0000_0001); // write verifier
        }
        18 => {
            put_u32(out, NFS3_OK);
            post_op(out, id, size);
            for v in [1u64 << 40, 1 << 39, 1 << 39, 1 << 20, 1 << 19, 1 << 19] {
                put_u64(out, v);
            }
            put_u32(out, 0);
        }
        19 => {
            put_u32(out, NFS3_OK);
            post_op(out, id, size);
            for v in [MAX_IO, MAX_IO, 4096, MAX_IO, MAX_IO, 4096, 65536] {
                put_u32(out, v);
            }
            put_u64(out, u64::MAX >> 1);
            put_u32(out, 0); // time_delta 1 ns
            put_u32(out, 1);
            put_u32(out, 0x1b); // LINK | SYMLINK | HOMOGENEOUS | CANSETTIME
        }
        20 => {
            put_u32(out, NFS3_OK);
            post_op(out, id, size);
            put_u32(out, 1); // linkmax
            put_u32(out, MAX_NAME as u32);
            for b in [1, 1, 0, 1] {
                put_u32(out, b);
            }
        }
        _ => {
            // 21 COMMIT: every WRITE was already FILE_SYNC.
            put_u32(out, NFS3_OK);
            wcc(out, id, size);
            put_u64(out, 0x00d1_7ec7_0000_0001);
        }
    }
    Some(true)
}

fn read(export: &Export, id: u64, off: u64, count: u32, out: &mut Vec<u8>) {
    let size = export.data.len() as u64;
    if id == ROOT_ID {
        put_u32(out, 21); // NFS3ERR_ISDIR
        post_op(out, id, size);
        return;
    }
    let start = off.min(size) as usize;
    let end = off.saturating_add(u64::from(count.min(MAX_IO))).min(size) as usize;
    put_u32(out, NFS3_OK);
    post_op(out, id, size);
    put_u32(out, (end - start) as u32);
    put_u32(out, u32::from(end as u64 == size));
    put_opaque(out, &export.data[start..end]);
}

fn post_op(out: &mut Vec<u8>, id: u64, size: u64) {
    put_u32(out, 1);
    fattr(out, id, size);
}

fn wcc(out: &mut Vec<u8>, id: u64, size: u64) {
    put_u32(out, 0); // no pre-op attributes
    post_op(out, id, size);
}

fn fattr(out: &mut Vec<u8>, id: u64, size: u64) {
    let dir = id == ROOT_ID;
    put_u32(out, if dir { 2 } else { 1 }); // NF3DIR / NF3REG
    put_u32(out, if dir { 0o777 } else { 0o666 });
    put_u32(out, if dir { 2 } else { 1 });
    put_u32(out, 0); // uid
    put_u32(out, 0); // gid
    let size = if dir { 4096 } else { size };
    put_u64(out, size);
    put_u64(out, size); // used: fully allocated
    put_u64(out, 0); // rdev
    put_u64(out, 0x00d1_7ec7); // fsid
    put_u64(out, id);
    for _ in 0..3 {
        put_u32(out, 1_700_000_000);
        put_u32(out, 0);
    }
}
