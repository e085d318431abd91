//! `directnfs-wire`: the wire formats directnfs speaks, as a pure codec.
//!
//! * XDR primitives (RFC 4506) in [`xdr`],
//! * ONC RPC v2 call/reply messages, record marking and AUTH_SYS (RFC 5531) in [`rpc`],
//! * PORTMAP v2 (RFC 1833) in [`portmap`], MOUNT v3 (RFC 1813 appendix I) in [`mount`],
//! * NFSv3 (RFC 1813) in [`nfs3`], and its lock manager NLMv4 (XNFS, RFC 1813
//!   appendix II) in [`nlm4`],
//! * NFSv4.1 (RFC 8881, XDR of RFC 5662) in [`nfs4`]: COMPOUND, the
//!   operations a file API needs, and the callback side.
//!
//! What this crate does **not** do: open sockets, spawn threads, read clocks,
//! log, or keep global state. Bytes go in, values come out, and every length
//! read from the wire is checked against a bound *before* anything is
//! allocated or sliced, so a hostile peer cannot make it panic or allocate
//! without limit. Status codes are newtypes over the wire integer: a value this
//! crate does not know survives decoding and shows up in errors, in hex.
#![forbid(unsafe_code)]

pub mod mount;
pub mod nfs3;
pub mod nfs4;
pub mod nlm4;
pub mod portmap;
pub mod rpc;
pub mod xdr;

pub use xdr::{Decode, DecodeError, Encode, XdrReader};

/// One RPC procedure: its program, version and number, and the types of its
/// arguments and results. Lets generic code encode a call and decode the
/// matching reply without a table of magic numbers.
pub trait Procedure {
    /// RPC program number.
    const PROG: u32;
    /// Program version.
    const VERS: u32;
    /// Procedure number.
    const PROC: u32;
    /// RFC name, for errors and statistics (`"READ"`, `"MNT"`).
    const NAME: &'static str;
    /// Argument type.
    type Args: Encode;
    /// Result type (everything after an accepted SUCCESS reply header).
    type Res: Decode;
}
