//! # libdirectnfs_preload.so
//!
//! An interception library (`LD_PRELOAD`, usually through `dnfs run`) that
//! serves libc file calls on paths under the dnfstab's `mount:` prefixes
//! with directnfs, in the calling process, and passes every other call to
//! libc untouched. Unmodified programs — PostgreSQL, SQLite, fio, coreutils,
//! tar — then read and write NFS files with no kernel NFS client.
//!
//! How it is put together, from the outside in:
//!
//! * `hooks/`: the exported C symbols (glibc's names, `64`,
//!   `__xstat`-style and fortified `_chk` variants). Each decides in a few
//!   instructions whether its call is an NFS call; if not it calls libc
//!   (`real.rs`: the next definition of the symbol).
//! * `paths.rs` (is this path on NFS?), `cwd.rs` (the current directory,
//!   which may be an NFS directory), `fdtable.rs` (is this descriptor an
//!   NFS descriptor, and what is it?); `links.rs` (a local path whose
//!   call failed with `ENOENT`: does a local symbolic link on it lead into
//!   a mount?).
//! * `ops/`: the work on NFS objects, over the directnfs client
//!   (`clients.rs`: one per mount, per process, made on first use);
//!   `resolve.rs` follows symbolic links on NFS.
//! * `shadow.rs`: the real kernel descriptor behind each NFS descriptor (a
//!   local placeholder file per NFS file), which gives `dup`, `fork`,
//!   `exec`, offsets, status flags and locks (`locks.rs`) their kernel
//!   semantics.
//! * `board.rs`, `sizes.rs`, `lookups.rs`: the boards, files every process
//!   of a user on the host maps, from which `lseek(SEEK_END)` takes a size and
//!   `open`/`access` a handle another process asked the server for, while
//!   no process of that user changed them (each change moves a counter).
//! * `tally.rs`: which libc calls made which NFS calls
//!   (`DIRECTNFS_PRELOAD_STATS=calls`).
//! * `fork.rs`: the child of `fork` gets fresh clients; `stdio` streams on
//!   NFS files are `fopencookie` streams (`ops/stdio.rs`).
//!
//! What is not served (and why) is in the book (`docs/book/src/run/not-served.md`) and `ops/unsupported.rs`.

// The exported functions carry libc's names and prototypes.
#![allow(clippy::missing_safety_doc)]

pub mod board;
pub mod clients;
pub mod config;
pub mod cwd;
pub mod fail;
pub mod fdtable;
pub mod fork;
pub mod hooks;
pub mod links;
pub mod locks;
pub mod lookups;
pub mod nfs4locks;
pub mod nlmlocks;
pub mod ops;
pub mod paths;
pub mod real;
pub mod resolve;
pub mod shadow;
pub mod silly;
pub mod sizes;
pub mod state;
pub mod tally;
pub mod text;
pub mod warn;

/// Runs when the library is loaded, before `main`: reads the dnfstab and
/// takes over what `exec` passed on.
extern "C" fn load() {
    state::init();
}

#[used]
#[link_section = ".init_array"]
static LOAD: extern "C" fn() = load;
