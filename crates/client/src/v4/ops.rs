//! Namespace operations and attributes on NFSv4.1: each is one COMPOUND
//! that walks the path from the export's handle (PUTFH, one LOOKUP per
//! component) and ends with the operation, so no handle is cached and no
//! extra round trip is paid for the walk. A walk that would make the
//! COMPOUND longer than the session allows (a deep path, a RENAME's two)
//! is resolved to its handle first, by COMPOUNDs of its own
//! ([`Ops::shortened`]).

use std::time::{Duration, UNIX_EPOCH};

use directnfs_wire::nfs4::{
    bitmap4, component4, createtype4, fattr4, nfs_argop4, nfs_fh4, nfs_ftype4, nfs_opnum4,
    nfs_resop4, nfsstat4, nfstime4, CREATE4args, GETATTR4args, LOOKUP4args, Nfs4Res, PUTFH4args,
    READDIR4args, REMOVE4args, RENAME4args, SETATTR4args, MAX_COMPONENT_LEN, STAT_ATTRS,
};
use directnfs_wire::Encode;

use super::sequence::{nfs4_error, results, Request, Settled};
use super::session::Session;
use crate::error::{Error, Result};
use crate::metadata::MAX_DIR_LISTING;
use crate::metadata::{DirEntry, FileType, Metadata};
use crate::remote::Remote;

/// Operations one COMPOUND may carry (the session's `ca_maxoperations`
/// asked for), SEQUENCE included: longer walks are resolved to handles
/// first ([`Ops::shortened`]).
const MAX_OPS: usize = 16;

/// NFSv3's LOOKUP, the statistics' name for a walk resolved on its own.
const STAT_LOOKUP: u32 = 3;

// NFSv3 procedure numbers the statistics count v4.1 COMPOUNDs under.
pub(crate) const STAT_GETATTR: u32 = 1;
pub(crate) const STAT_SETATTR: u32 = 2;
pub(crate) const STAT_READ: u32 = 6;
pub(crate) const STAT_WRITE: u32 = 7;
const STAT_MKDIR: u32 = 9;
const STAT_REMOVE: u32 = 12;
const STAT_RENAME: u32 = 14;
const STAT_READDIR: u32 = 17;
pub(crate) const STAT_COMMIT: u32 = 21;

/// A COMPOUND being built: its operations and their numbers.
#[derive(Default)]
pub(crate) struct Ops {
    pub args: Vec<nfs_argop4>,
    pub nums: Vec<nfs_opnum4>,
}

impl Ops {
    pub(crate) fn push(&mut self, op: nfs_argop4) {
        self.nums.push(op.opnum());
        self.args.push(op);
    }

    /// PUTFH of the export, then a LOOKUP per component of `comps`.
    pub(crate) fn walk(&mut self, root: &nfs_fh4, comps: &[component4]) {
        self.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: *root }));
        for c in comps {
            self.push(nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: c.clone() }));
        }
    }

    /// Sends them (after SEQUENCE) and returns the settled reply.
    pub(crate) fn send(
        &self,
        s: &Session,
        remote: &Remote,
        op: &'static str,
        path: &str,
        stat: u32,
        cache: bool,
    ) -> Result<Settled> {
        if remote.options.read_only && self.args.iter().any(changes_the_server) {
            return Err(Error::ReadOnly {
                op,
                path: path.to_string(),
            });
        }
        if self.args.len() + 1 > MAX_OPS {
            return Err(Error::InvalidInput(format!(
                "{op} {path}: NFSv4.1: path too deep for one COMPOUND ({} components at most)",
                MAX_OPS - 4
            )));
        }
        let encode = |out: &mut Vec<u8>| {
            for a in &self.args {
                a.encode(out);
            }
        };
        let mut req = Request::ops(&self.args, &self.nums, &encode, op, path);
        req.stat = stat;
        req.cache = cache;
        s.compound(remote, &req)
    }

    /// Sends them and returns the results after SEQUENCE, or the failed
    /// operation's status as an error. Too many for one COMPOUND, their
    /// longest walks are resolved to handles first (the results then have
    /// fewer LOOKUPs: callers read them by kind, or the last one).
    pub(crate) fn run(
        &self,
        s: &Session,
        remote: &Remote,
        op: &'static str,
        path: &str,
        stat: u32,
        cache: bool,
    ) -> Result<Vec<nfs_resop4>> {
        let short;
        let ops = if self.args.len() + 1 > MAX_OPS {
            short = self.shortened(s, remote, op, path)?;
            &short
        } else {
            self
        };
        let settled = ops.send(s, remote, op, path, stat, cache)?;
        if !settled.status.is_ok() {
            return Err(nfs4_error(op, path, settled.status));
        }
        results(&settled, &ops.nums, op)
    }

    /// The same operations with walks (a PUTFH and the LOOKUPs after it)
    /// replaced by a PUTFH of the handle each leads to, longest first,
    /// until they fit in one COMPOUND. A walk is resolved by COMPOUNDs of
    /// its own (PUTFH, at most 13 LOOKUPs, GETFH): the same object as the
    /// walk inside would reach, though not atomically with the operation
    /// (as NFSv3's separate LOOKUPs). Its errors are the operation's
    /// (ENOENT, ENOTDIR, ELOOP for a link on the way).
    fn shortened(&self, s: &Session, remote: &Remote, op: &'static str, path: &str) -> Result<Ops> {
        let mut out = Ops {
            args: self.args.clone(),
            nums: self.nums.clone(),
        };
        while out.args.len() + 1 > MAX_OPS {
            let Some((at, n)) = longest_walk(&out.args) else {
                return Err(Error::InvalidInput(format!(
                    "{op} {path}: NFSv4.1: {} operations do not fit in one COMPOUND",
                    out.args.len()
                )));
            };
            let nfs_argop4::OP_PUTFH(PUTFH4args { object: mut fh }) = out.args[at] else {
                return Err(missing(op, path));
            };
            let lookups: Vec<nfs_argop4> = out.args[at + 1..=at + n].to_vec();
            for chunk in lookups.chunks(MAX_OPS - 3) {
                let mut walk = Ops::default();
                walk.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }));
                for l in chunk {
                    walk.push(l.clone());
                }
                walk.push(nfs_argop4::OP_GETFH);
                let res = walk.run(s, remote, op, path, STAT_LOOKUP, false)?;
                fh = match res.into_iter().last() {
                    Some(nfs_resop4::OP_GETFH(Nfs4Res::Ok(ok))) => ok.object,
                    _ => return Err(missing(op, path)),
                };
            }
            let put = nfs_argop4::OP_PUTFH(PUTFH4args { object: fh });
            out.nums.splice(at..=at + n, [put.opnum()]);
            out.args.splice(at..=at + n, [put]);
        }
        Ok(out)
    }
}

/// Where the walk with the most LOOKUPs starts (its PUTFH) and how many
/// LOOKUPs follow it; `None` when no PUTFH is followed by a LOOKUP.
fn longest_walk(args: &[nfs_argop4]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (at, a) in args.iter().enumerate() {
        if !matches!(a, nfs_argop4::OP_PUTFH(_)) {
            continue;
        }
        let n = args[at + 1..]
            .iter()
            .take_while(|a| matches!(a, nfs_argop4::OP_LOOKUP(_)))
            .count();
        if n > 0 && best.is_none_or(|(_, m)| n > m) {
            best = Some((at, n));
        }
    }
    best
}

/// What a `ro` mount refuses before sending (EROFS), as NFSv3's calls that
/// change the server: an OPEN that may create, CREATE, REMOVE, RENAME,
/// LINK, SETATTR (also a truncating OPEN's), WRITE. (WRITE and COMMIT of
/// a file take the hot path, not this one: `File::write_at` refuses.)
fn changes_the_server(op: &nfs_argop4) -> bool {
    matches!(
        op,
        nfs_argop4::OP_OPEN(directnfs_wire::nfs4::OPEN4args {
            openhow: directnfs_wire::nfs4::openflag4::OPEN4_CREATE(_),
            ..
        }) | nfs_argop4::OP_CREATE(_)
            | nfs_argop4::OP_REMOVE(_)
            | nfs_argop4::OP_RENAME(_)
            | nfs_argop4::OP_LINK(_)
            | nfs_argop4::OP_SETATTR(_)
            | nfs_argop4::OP_WRITE(_)
    )
}

/// A path below the export as NFSv4 components (`.` dropped, `..` taken
/// back), each at most 255 bytes.
pub(crate) fn components(path: &str) -> Result<Vec<component4>> {
    let comps = crate::remote::components(path)?;
    comps
        .into_iter()
        .map(|c| {
            if c.len() > MAX_COMPONENT_LEN {
                return Err(Error::InvalidInput(format!("component too long in {path}")));
            }
            Ok(component4::from(c))
        })
        .collect()
}

/// The parent's components and the last name.
pub(crate) fn split(path: &str) -> Result<(Vec<component4>, component4)> {
    let mut comps = components(path)?;
    let Some(last) = comps.pop() else {
        return Err(Error::InvalidInput(format!(
            "{path:?} names the export root"
        )));
    };
    Ok((comps, last))
}

/// The attributes a `Metadata` needs.
pub(crate) fn stat_attrs() -> bitmap4 {
    bitmap4::from_bits(STAT_ATTRS)
}

/// Attributes of `path`.
pub(crate) fn metadata(s: &Session, remote: &Remote, path: &str) -> Result<Metadata> {
    let mut ops = Ops::default();
    ops.walk(&s.root, &components(path)?);
    ops.push(nfs_argop4::OP_GETATTR(GETATTR4args {
        attr_request: stat_attrs(),
    }));
    let res = ops.run(s, remote, "GETATTR", path, STAT_GETATTR, false)?;
    match res.last() {
        Some(nfs_resop4::OP_GETATTR(Nfs4Res::Ok(ok))) => Ok(from_fattr(&ok.obj_attributes)),
        _ => Err(missing("GETATTR", path)),
    }
}

/// Removes a file (or, with `dir`, an empty directory: checked first, as
/// NFSv4's REMOVE takes both).
pub(crate) fn remove(s: &Session, remote: &Remote, path: &str, dir: bool) -> Result<()> {
    let op = if dir { "RMDIR" } else { "REMOVE" };
    let is_dir = metadata(s, remote, path)?.is_dir();
    if dir != is_dir {
        let status = if dir {
            nfsstat4::NFS4ERR_NOTDIR
        } else {
            nfsstat4::NFS4ERR_ISDIR
        };
        return Err(nfs4_error(op, path, status));
    }
    let (parent, name) = split(path)?;
    let mut ops = Ops::default();
    ops.walk(&s.root, &parent);
    ops.push(nfs_argop4::OP_REMOVE(REMOVE4args { target: name }));
    // Cached by the server: a re-send after a lost reply gets the first
    // answer, not NFS4ERR_NOENT.
    ops.run(s, remote, op, path, STAT_REMOVE, true).map(|_| ())
}

/// Creates a directory.
pub(crate) fn mkdir(s: &Session, remote: &Remote, path: &str, mode: u32) -> Result<()> {
    let (parent, name) = split(path)?;
    let mut ops = Ops::default();
    ops.walk(&s.root, &parent);
    ops.push(nfs_argop4::OP_CREATE(CREATE4args {
        objtype: createtype4::Other(nfs_ftype4::NF4DIR),
        objname: name,
        createattrs: fattr4 {
            mode: Some(mode & 0o7777),
            ..Default::default()
        },
    }));
    ops.run(s, remote, "MKDIR", path, STAT_MKDIR, true)
        .map(|_| ())
}

/// Renames `from` to `to`: SAVEFH holds the source directory.
pub(crate) fn rename(s: &Session, remote: &Remote, from: &str, to: &str) -> Result<()> {
    let (fparent, fname) = split(from)?;
    let (tparent, tname) = split(to)?;
    let mut ops = Ops::default();
    ops.walk(&s.root, &fparent);
    ops.push(nfs_argop4::OP_SAVEFH);
    ops.walk(&s.root, &tparent);
    ops.push(nfs_argop4::OP_RENAME(RENAME4args {
        oldname: fname,
        newname: tname,
    }));
    ops.run(s, remote, "RENAME", from, STAT_RENAME, true)
        .map(|_| ())
}

/// Sets attributes of `path` (no open stateid: the anonymous one).
pub(crate) fn setattr(
    s: &Session,
    remote: &Remote,
    fh: Option<&nfs_fh4>,
    path: &str,
    stateid: directnfs_wire::nfs4::stateid4,
    attrs: fattr4,
) -> Result<()> {
    let mut ops = Ops::default();
    match fh {
        Some(fh) => ops.push(nfs_argop4::OP_PUTFH(PUTFH4args { object: *fh })),
        None => ops.walk(&s.root, &components(path)?),
    }
    ops.push(nfs_argop4::OP_SETATTR(SETATTR4args {
        stateid,
        obj_attributes: attrs,
    }));
    ops.run(s, remote, "SETATTR", path, STAT_SETATTR, true)
        .map(|_| ())
}

/// Lists a directory with attributes (READDIR with the stat attributes).
pub(crate) fn read_dir(s: &Session, remote: &Remote, path: &str) -> Result<Vec<DirEntry>> {
    let comps = components(path)?;
    let mut out = Vec::new();
    let mut cookie = 0u64;
    let mut cookieverf = directnfs_wire::nfs4::verifier4::default();
    loop {
        let mut ops = Ops::default();
        ops.walk(&s.root, &comps);
        ops.push(nfs_argop4::OP_READDIR(READDIR4args {
            cookie,
            cookieverf,
            dircount: 32 * 1024,
            maxcount: 256 * 1024,
            attr_request: stat_attrs(),
        }));
        let res = ops.run(s, remote, "READDIR", path, STAT_READDIR, false)?;
        let Some(nfs_resop4::OP_READDIR(Nfs4Res::Ok(ok))) = res.into_iter().last() else {
            return Err(missing("READDIR", path));
        };
        cookieverf = ok.cookieverf;
        let previous = cookie;
        let n = ok.reply.entries.len();
        for e in ok.reply.entries {
            cookie = e.cookie;
            let name = String::from_utf8_lossy(e.name.as_bytes()).into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let metadata = e.attrs.type_.map(|_| from_fattr(&e.attrs));
            out.push(DirEntry {
                name,
                fileid: e.attrs.fileid.unwrap_or(0),
                metadata,
            });
        }
        if ok.reply.eof || n == 0 {
            return Ok(out);
        }
        if cookie == previous || out.len() > MAX_DIR_LISTING {
            return Err(Error::Protocol {
                op: "READDIR",
                path: path.to_string(),
                detail: format!(
                    "the directory cookie did not advance or the listing is too long ({} entries)",
                    out.len()
                ),
            });
        }
    }
}

/// `Metadata` of NFSv4 attributes; missing ones are zero. Owners given
/// as names (`user@domain`) rather than numbers are shown as 0.
pub(crate) fn from_fattr(a: &fattr4) -> Metadata {
    let id = |s: &Option<directnfs_wire::nfs4::utf8string>| {
        s.as_ref()
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok()?.parse().ok())
            .unwrap_or(0)
    };
    let time = |t: Option<nfstime4>| {
        let t = t.unwrap_or_default();
        if t.seconds >= 0 {
            UNIX_EPOCH + Duration::new(t.seconds as u64, t.nseconds.min(999_999_999))
        } else {
            UNIX_EPOCH
        }
    };
    let file_type = match a.type_ {
        Some(nfs_ftype4::NF4REG) => FileType::File,
        Some(nfs_ftype4::NF4DIR) => FileType::Dir,
        Some(nfs_ftype4::NF4LNK) => FileType::Symlink,
        _ => FileType::Other,
    };
    Metadata {
        file_type,
        size: a.size.unwrap_or(0),
        mode: a.mode.unwrap_or(0) & 0o7777,
        uid: id(&a.owner),
        gid: id(&a.owner_group),
        nlink: a.numlinks.unwrap_or(0),
        used: a.space_used.unwrap_or(0),
        fileid: a.fileid.unwrap_or(0),
        atime: time(a.time_access),
        mtime: time(a.time_modify),
        ctime: time(a.time_metadata),
    }
}

pub(crate) fn missing(op: &'static str, path: &str) -> Error {
    Error::Protocol {
        op,
        path: path.to_string(),
        detail: "the reply lacks the operation's result".into(),
    }
}
