//! PORTMAP version 2 (RFC 1833 §3), program 100000: finding the port of an
//! RPC program (NFS, MOUNT) on a server. Only NULL and GETPORT are needed
//! by a client; the other procedures are in `spec/portmap.x`.

use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// RFC 1833 §3 `PMAP_PROG`.
pub const PMAP_PROG: u32 = 100000;
/// RFC 1833 §3 `PMAP_VERS`.
pub const PMAP_VERS: u32 = 2;
/// RFC 1833 §3 `PMAP_PORT`: the well-known portmapper port.
pub const PMAP_PORT: u16 = 111;
/// RFC 1833 §3 `IPPROTO_TCP`: protocol number for TCP.
pub const IPPROTO_TCP: u32 = 6;
/// RFC 1833 §3 `IPPROTO_UDP`: protocol number for UDP.
pub const IPPROTO_UDP: u32 = 17;

/// RFC 1833 §3 `PMAPPROC_NULL`.
pub const PMAPPROC_NULL: u32 = 0;
/// RFC 1833 §3 `PMAPPROC_GETPORT`.
pub const PMAPPROC_GETPORT: u32 = 3;

/// RFC 1833 §3
/// ```text
/// struct mapping {
///      unsigned int prog;
///      unsigned int vers;
///      unsigned int prot;
///      unsigned int port;
/// };
/// ```
/// For GETPORT, `port` is ignored by the server (send 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Mapping {
    /// Program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Protocol: [`IPPROTO_TCP`] or [`IPPROTO_UDP`].
    pub prot: u32,
    /// Port.
    pub port: u32,
}

impl Mapping {
    /// The GETPORT question for `prog`/`vers` over TCP.
    pub fn tcp(prog: u32, vers: u32) -> Self {
        Self {
            prog,
            vers,
            prot: IPPROTO_TCP,
            port: 0,
        }
    }
}

impl Encode for Mapping {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.prog);
        out.put_u32(self.vers);
        out.put_u32(self.prot);
        out.put_u32(self.port);
    }
}

impl Decode for Mapping {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            prog: r.u32("mapping prog")?,
            vers: r.u32("mapping vers")?,
            prot: r.u32("mapping prot")?,
            port: r.u32("mapping port")?,
        })
    }
}

/// RFC 1833 §3 `PMAPPROC_NULL() returns () = 0;`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Null;

impl crate::Procedure for Null {
    const PROG: u32 = PMAP_PROG;
    const VERS: u32 = PMAP_VERS;
    const PROC: u32 = PMAPPROC_NULL;
    const NAME: &'static str = "PMAP NULL";
    type Args = ();
    type Res = ();
}

/// RFC 1833 §3 `PMAPPROC_GETPORT(mapping) returns (unsigned int) = 3;`
///
/// The result is the port, or 0 if the program is not registered. A port
/// above 65535 is a broken server; the caller should treat it like 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Getport;

impl crate::Procedure for Getport {
    const PROG: u32 = PMAP_PROG;
    const VERS: u32 = PMAP_VERS;
    const PROC: u32 = PMAPPROC_GETPORT;
    const NAME: &'static str = "GETPORT";
    type Args = Mapping;
    type Res = u32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn getport_args_golden_bytes() {
        let bytes = to_bytes(&Mapping::tcp(100003, 3));
        #[rustfmt::skip]
        assert_eq!(bytes, [
            0x00, 0x01, 0x86, 0xa3, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0, 0,
        ]);
        assert_eq!(
            decode_exact::<Mapping>(&bytes, "mapping").unwrap(),
            Mapping::tcp(100003, 3)
        );
    }
}
