//! File handles for callers that keep state across their own calls (the
//! interception library): the [`Handle`] value. A leaf; the calls that
//! give and take one (`Client::lookup`, `open_handle`, `metadata_of`,
//! `File::handle`) are `handle_calls.rs`'s.

use std::fmt;

use directnfs_wire::nfs3::nfs_fh3;
use directnfs_wire::nfs4::nfs_fh4;

use crate::error::{Error, Result};

/// An NFS file handle: names one file on its server for as long as the
/// file exists, whatever it is renamed to. At most 128 opaque bytes, the
/// larger of the two versions' limits (NFSv4's `nfs_fh4`, RFC 8881 §3.2,
/// `NFS4_FHSIZE`); an NFSv3 server's are at most 64 (`nfs_fh3`, RFC 1813
/// §2.5).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub(crate) nfs_fh4);

impl Handle {
    /// A handle from its bytes (as [`as_bytes`](Self::as_bytes) gave them).
    /// More than 128 bytes is `InvalidInput`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Handle> {
        nfs_fh4::new(bytes)
            .map(Handle)
            .map_err(|e| Error::InvalidInput(format!("not an NFS file handle: {e}")))
    }

    /// The handle's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// An NFSv3 server's handle.
    pub(crate) fn from_v3(fh: &nfs_fh3) -> Handle {
        // 64 bytes at most: always fits.
        Handle(nfs_fh4::new(fh.as_bytes()).unwrap_or_default())
    }

    /// The handle as an NFSv3 call carries it; longer than NFSv3's 64
    /// bytes (a handle of an NFSv4.1 server given to an NFSv3 client) is
    /// `InvalidInput`, naming `op` and `path`.
    pub(crate) fn v3(&self, op: &str, path: &str) -> Result<nfs_fh3> {
        nfs_fh3::new(self.as_bytes()).map_err(|_| {
            Error::InvalidInput(format!(
                "{op} {path}: a handle of {} bytes is longer than NFSv3's 64",
                self.as_bytes().len()
            ))
        })
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Handle(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_holds_nfsv4s_128_bytes_and_refuses_more() {
        let long: Vec<u8> = (0..128u8).collect();
        let h = Handle::from_bytes(&long).unwrap();
        assert_eq!(h.as_bytes(), &long[..]);
        assert_eq!(Handle(h.0), h);
        let e = Handle::from_bytes(&[1u8; 129]).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }

    #[test]
    fn a_handle_longer_than_64_bytes_is_refused_by_nfsv3_calls_by_name() {
        let h = Handle::from_bytes(&[7u8; 100]).unwrap();
        let e = h.v3("GETATTR", "/f").unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL);
        assert!(e.to_string().contains("GETATTR /f"), "{e}");
        assert!(e.to_string().contains("100 bytes"), "{e}");
        let short = Handle::from_bytes(&[7u8; 64]).unwrap();
        assert_eq!(
            short.v3("GETATTR", "/f").unwrap().as_bytes(),
            &[7u8; 64][..]
        );
        assert_eq!(Handle::from_v3(&short.v3("X", "/").unwrap()), short);
    }
}
