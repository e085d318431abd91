//! The shape every NFSv3 result shares: a union on `nfsstat3` with one arm
//! for `NFS3_OK` and one for everything else.

use super::types::nfsstat3;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader};

/// RFC 1813 §3.3, the common form of every `XXX3res`:
/// ```text
/// union XXX3res switch (nfsstat3 status) {
/// case NFS3_OK:
///      XXX3resok   resok;
/// default:
///      XXX3resfail resfail;
/// };
/// ```
/// Any status other than `NFS3_OK` — including one this crate has no name
/// for — decodes as [`Nfs3Res::Fail`] with the status preserved: an odd
/// server status is an error the caller sees, never a decode failure.
///
/// Build failures with a non-OK status: `Fail(NFS3_OK, ..)` would encode a
/// success discriminant followed by failure data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nfs3Res<Ok, Fail> {
    /// `NFS3_OK`: the `resok` arm.
    Ok(Ok),
    /// Any other status: the `resfail` arm.
    Fail(nfsstat3, Fail),
}

impl<O, F> Nfs3Res<O, F> {
    /// The status on the wire.
    pub fn status(&self) -> nfsstat3 {
        match self {
            Nfs3Res::Ok(_) => nfsstat3::NFS3_OK,
            Nfs3Res::Fail(s, _) => *s,
        }
    }

    /// True for `NFS3_OK`.
    pub fn is_ok(&self) -> bool {
        matches!(self, Nfs3Res::Ok(_))
    }

    /// The `resok` arm, if the call succeeded.
    pub fn ok(&self) -> Option<&O> {
        match self {
            Nfs3Res::Ok(o) => Some(o),
            Nfs3Res::Fail(..) => None,
        }
    }

    /// Converts into a `Result` carrying the status on failure.
    pub fn into_result(self) -> Result<O, (nfsstat3, F)> {
        match self {
            Nfs3Res::Ok(o) => Ok(o),
            Nfs3Res::Fail(s, f) => Err((s, f)),
        }
    }
}

impl<O: Encode, F: Encode> Encode for Nfs3Res<O, F> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Nfs3Res::Ok(o) => {
                nfsstat3::NFS3_OK.encode(out);
                o.encode(out);
            }
            Nfs3Res::Fail(s, f) => {
                debug_assert!(!s.is_ok(), "Nfs3Res::Fail with NFS3_OK");
                s.encode(out);
                f.encode(out);
            }
        }
    }
}

impl<O: Decode, F: Decode> Decode for Nfs3Res<O, F> {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let status = nfsstat3::decode(r)?;
        if status.is_ok() {
            Ok(Nfs3Res::Ok(O::decode(r)?))
        } else {
            Ok(Nfs3Res::Fail(status, F::decode(r)?))
        }
    }
}
