//! The shape most NFSv4.1 results share: a union on `nfsstat4` with data
//! for `NFS4_OK` and nothing for every other status.

use super::types::nfsstat4;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader};

/// RFC 5662, the common form of `XXX4res`:
/// ```text
/// union XXX4res switch (nfsstat4 status) {
///  case NFS4_OK:
///          XXX4resok      resok4;
///  default:
///          void;
/// };
/// ```
/// Any status other than `NFS4_OK`, including one this crate has no name
/// for, decodes as [`Nfs4Res::Fail`] with the status kept.
///
/// Build failures with a non-OK status: `Fail(NFS4_OK)` would encode a
/// success discriminant with no success data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nfs4Res<T> {
    /// `NFS4_OK`: the `resok4` arm.
    Ok(T),
    /// Any other status.
    Fail(nfsstat4),
}

impl<T> Nfs4Res<T> {
    /// The status on the wire.
    pub fn status(&self) -> nfsstat4 {
        match self {
            Nfs4Res::Ok(_) => nfsstat4::NFS4_OK,
            Nfs4Res::Fail(s) => *s,
        }
    }

    /// The success data, if the operation succeeded.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Nfs4Res::Ok(v) => Some(v),
            Nfs4Res::Fail(_) => None,
        }
    }

    /// Converts into a `Result` carrying the status on failure.
    pub fn into_result(self) -> Result<T, nfsstat4> {
        match self {
            Nfs4Res::Ok(v) => Ok(v),
            Nfs4Res::Fail(s) => Err(s),
        }
    }
}

impl<T: Encode> Encode for Nfs4Res<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Nfs4Res::Ok(v) => {
                nfsstat4::NFS4_OK.encode(out);
                v.encode(out);
            }
            Nfs4Res::Fail(s) => {
                debug_assert!(!s.is_ok(), "Nfs4Res::Fail with NFS4_OK");
                s.encode(out);
            }
        }
    }
}

impl<T: Decode> Decode for Nfs4Res<T> {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let status = nfsstat4::decode(r)?;
        if status.is_ok() {
            Ok(Nfs4Res::Ok(T::decode(r)?))
        } else {
            Ok(Nfs4Res::Fail(status))
        }
    }
}
