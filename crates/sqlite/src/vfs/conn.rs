//! An open file of the VFS: the `sqlite3_file` SQLite allocates for us and
//! the connection it points to, made by [`open_conn`] from a database name.

use std::ffi::c_int;
use std::sync::Arc;

use dnfs::{Error, File, IoClass, OpenOptions};

use crate::lock::{inode_for, wal_mirror_of, Inode, InodeKey, ShmConn};
use crate::mirror::{self, Mirror};
use crate::names::{self, Mount};
use crate::sys::*;

/// Our `sqlite3_file`: SQLite allocates `szOsFile` bytes and we fill them.
#[repr(C)]
pub(super) struct DnfsFile {
    pub(super) base: sqlite3_file,
    pub(super) conn: *mut Conn,
}

/// An open file of the VFS.
pub(super) struct Conn {
    pub(super) file: File,
    /// Keeps the client (and its connections) alive.
    pub(super) _mount: Arc<Mount>,
    pub(super) path: String,
    pub(super) name: String,
    pub(super) delete_on_close: bool,
    /// This connection's lock level (main databases only).
    pub(super) lock: c_int,
    pub(super) inode: Option<Arc<Inode>>,
    pub(super) shm: ShmConn,
    /// A main database or its WAL: the bytes this process knows of it
    /// while holding the database ([`crate::mirror`]); None for journals.
    pub(super) mirror: Option<Arc<Mirror>>,
    /// The process that opened it: its fork generation
    /// ([`crate::forked`]) and pid (for the message).
    pub(super) generation: u64,
    pub(super) opened_by: u32,
    /// Its use in a forked child was reported.
    pub(super) refused: bool,
    /// No call on `file` has succeeded yet, and the open neither verified
    /// the handle nor made the file exclusively ([`Conn::with_file`]).
    pub(super) unproven: bool,
    /// The open may create the file (SQLite asked for SQLITE_OPEN_CREATE
    /// on a writable file): an open again by name may too.
    pub(super) create: bool,
}

impl Conn {
    /// Whether this connection was opened by this process (not by the
    /// parent of a fork); reports it once per connection if not.
    pub(super) fn ours(&mut self) -> bool {
        if self.generation == crate::forked::current() {
            return true;
        }
        if !self.refused {
            self.refused = true;
            crate::report(
                SQLITE_MISUSE,
                &format!(
                    "{}: connection opened by process {} used in its forked child {} (refused; open a new connection after fork)",
                    self.name,
                    self.opened_by,
                    std::process::id()
                ),
            );
        }
        false
    }

    /// Runs `op` on the file. If the server says its handle is stale
    /// before any call on it succeeded, forgets the handle, opens the name
    /// again (creating it if the first open could, and only then) and
    /// runs `op` once more on that file.
    ///
    /// Why that is safe: nothing was read or written through the first
    /// handle, so using the file the name leads to now is what an open a
    /// moment later would have given. Why it is needed: NFS-Ganesha has
    /// been seen to answer a CREATE of a WAL file with the handle of a
    /// file of the same inode number removed seconds before, stale at
    /// once (docs/server-notes.md); SQLite then failed its first query
    /// with SQLITE_IOERR_FSTAT. Once the name led nowhere after such a
    /// CREATE (the LOOKUP said NFS3ERR_NOENT: the server had made no
    /// file), so the open again creates it as the first meant to. A main
    /// database is never unproven (its open asks for its attributes), nor
    /// a file made with SQLITE_OPEN_EXCLUSIVE (the one this open created
    /// is the one meant).
    pub(super) fn with_file<T>(
        &mut self,
        mut op: impl FnMut(&File) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let first = op(&self.file);
        let stale = matches!(&first, Err(e) if e.errno() == libc::ESTALE);
        if !(stale && self.unproven) {
            if first.is_ok() {
                self.unproven = false;
            }
            return first;
        }
        self.unproven = false;
        let client = self.file.client().clone();
        client.forget_handle(&self.path);
        let opts = OpenOptions {
            create: self.create,
            mode: Some(0o644),
            ..OpenOptions::default()
        };
        let again = match names::fresh(&client, &self.path, || client.open_with(&self.path, opts)) {
            Ok(f) => f,
            Err(e) => {
                crate::report(
                    SQLITE_WARNING,
                    &format!(
                        "{}: the server called its new handle stale, and opening the name again failed: {e}",
                        self.name
                    ),
                );
                return first;
            }
        };
        again.set_write_coalescing(true);
        again.set_io_class(self.file.io_class());
        crate::report(
            SQLITE_WARNING,
            &format!(
                "{}: the server called the handle it had just given stale; opened the name again",
                self.name
            ),
        );
        self.file = again;
        op(&self.file)
    }

    /// A write or sync failed: the server may not have what the mirror
    /// holds.
    pub(super) fn forget_mirror(&self) {
        if let Some(m) = &self.mirror {
            m.clear();
        }
    }
}

/// The I/O class of a file SQLite opens with `flags`: its rollback
/// journals and WAL are the log (a commit waits for their writes and
/// syncs: the book's I/O classes chapter), everything else data.
pub(super) fn io_class_of(flags: c_int) -> IoClass {
    let log = SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL;
    if flags & log != 0 {
        IoClass::Log
    } else {
        IoClass::Data
    }
}

/// Opens (or creates, as `flags` say) the file `name` names, and for a
/// main database finds the lock state it shares with the other
/// connections of this process.
pub(super) fn open_conn(name: &str, flags: c_int) -> Result<Conn, Error> {
    let r = names::resolve(name)?;
    let writable = flags & SQLITE_OPEN_READONLY == 0;
    let create = writable && flags & SQLITE_OPEN_CREATE != 0;
    let opts = OpenOptions {
        create,
        create_new: create && flags & SQLITE_OPEN_EXCLUSIVE != 0,
        truncate: false,
        mode: Some(0o644),
    };
    let client = &r.mount.client;
    let (file, fileid) = names::fresh(client, &r.path, || {
        let file = client.open_with(&r.path, opts)?;
        let fileid = if flags & SQLITE_OPEN_MAIN_DB != 0 {
            file.metadata()?.fileid
        } else {
            0
        };
        Ok((file, fileid))
    })?;
    // Write-behind (unstable mode): WAL frames and journal records go as
    // one WRITE per run of adjacent writes. The VFS places the barriers
    // held writes need: xSync, xUnlock (sends every file's held writes),
    // xShmBarrier (waits for them before a WAL-index header is published),
    // xClose.
    file.set_write_coalescing(true);
    file.set_io_class(io_class_of(flags));
    crate::test_hooks::opened(client, &r.path, name, flags & SQLITE_OPEN_MAIN_DB != 0);
    let inode = if flags & SQLITE_OPEN_MAIN_DB != 0 {
        let key = InodeKey {
            mount: r.mount.key.clone(),
            fileid,
        };
        Some(inode_for(key, &r.mount.client, &file, &r.path, name))
    } else {
        None
    };
    // With the mirrors off (a bound of 0) reads and writes do not touch
    // them at all.
    let mirror = if mirror::limit() == 0 {
        None
    } else if let Some(inode) = &inode {
        Some(Arc::clone(&inode.db))
    } else if flags & SQLITE_OPEN_WAL != 0 {
        wal_mirror_of(&r.mount.key, &r.path)
    } else {
        None
    };
    Ok(Conn {
        file,
        _mount: Arc::clone(&r.mount),
        path: r.path,
        name: name.to_string(),
        delete_on_close: flags & SQLITE_OPEN_DELETEONCLOSE != 0,
        lock: SQLITE_LOCK_NONE,
        inode,
        shm: ShmConn::default(),
        mirror,
        generation: crate::forked::current(),
        opened_by: std::process::id(),
        refused: false,
        unproven: flags & SQLITE_OPEN_MAIN_DB == 0 && !opts.create_new,
        create,
    })
}
