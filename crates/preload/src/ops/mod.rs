//! The work behind each served call, on NFS paths and descriptors: plain
//! Rust over the directnfs client, returning `Res` (errno on failure).
//! The C entry points (hooks/) decide what is served and call these.

pub mod access;
pub mod dirs;
pub mod fds;
pub mod io;
pub mod mapped;
pub mod meta;
pub mod names;
pub mod open;
pub mod stdio;
pub mod unsupported;

use std::ffi::CString;

/// What an operation on a path came to: done, or a symbolic link on NFS led
/// to a local path, which the entry point hands to libc.
#[derive(Debug)]
pub enum Out<T> {
    /// Served.
    Done(T),
    /// Pass the call to libc with this path.
    Local(CString),
}

impl<T> Out<T> {
    /// The served value changed by `f`; a local path stays one.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Out<U> {
        match self {
            Out::Done(v) => Out::Done(f(v)),
            Out::Local(p) => Out::Local(p),
        }
    }
}

/// What an operation on two paths (`rename`, `link`) came to: done, or
/// links on NFS led both names to local paths, which the entry point hands
/// to libc.
#[derive(Debug)]
pub enum OutPair<T = ()> {
    /// Served.
    Done(T),
    /// Pass the call to libc with these two paths.
    Local(CString, CString),
}
