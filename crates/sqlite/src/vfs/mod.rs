//! The `directnfs` VFS: its `sqlite3_vfs` and `sqlite3_io_methods`.
//!
//! Every C entry point runs through [`entry::fallible`] (panics become an
//! SQLite error code, never an unwind into C). The SQLite rules each
//! method keeps are quoted beside the code that keeps them.
//!
//! * [`vfs_methods`]: the `sqlite3_vfs` table and its methods on names
//!   (xOpen, xDelete, xAccess, xFullPathname);
//! * [`os`]: the rest of that table, which needs no server (xDl*,
//!   xRandomness, xSleep, xCurrentTime, xGetLastError);
//! * [`conn`]: an open file (our `sqlite3_file` and the connection behind
//!   it);
//! * [`file_methods`]: the `sqlite3_io_methods` table and the methods that
//!   move data (xRead, xWrite, xSync, ...);
//! * [`lock_methods`] and [`shm_methods`]: locking and the WAL-index;
//! * [`entry`]: the C boundary (panics, error codes, raw arguments);
//! * [`trace`]: timing every call when `DIRECTNFS_SQLITE_TRACE` is set.

mod conn;
mod entry;
mod file_methods;
mod lock_methods;
mod os;
mod shm_methods;
mod trace;
mod vfs_methods;

#[cfg(test)]
mod tests;

pub use os::OS_VFS;
pub use vfs_methods::make_vfs;
