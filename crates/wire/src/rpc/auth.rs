//! RPC authentication: `opaque_auth` and the AUTH_SYS credential
//! (RFC 5531 §8.2 and appendix A).

use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

wire_enum!(
    /// RFC 5531 §8.2 `auth_flavor`.
    AuthFlavor {
        AUTH_NONE = 0,
        AUTH_SYS = 1,
        AUTH_SHORT = 2,
        AUTH_DH = 3,
        RPCSEC_GSS = 6,
        AUTH_TLS = 7,
    }
);

/// RFC 5531: `opaque_auth` bodies are at most 400 bytes.
pub const MAX_AUTH_BODY: usize = 400;

/// RFC 5531 §8.2
/// ```text
/// struct opaque_auth {
///     auth_flavor flavor;
///     opaque body<400>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpaqueAuth {
    /// The flavor.
    pub flavor: AuthFlavor,
    /// The flavor-specific body.
    pub body: Vec<u8>,
}

impl Default for AuthFlavor {
    fn default() -> Self {
        AuthFlavor::AUTH_NONE
    }
}

impl OpaqueAuth {
    /// AUTH_NONE with an empty body.
    pub fn none() -> Self {
        Self::default()
    }
}

impl Encode for OpaqueAuth {
    fn encode(&self, out: &mut Vec<u8>) {
        self.flavor.encode(out);
        out.put_opaque(&self.body);
    }
}

impl Decode for OpaqueAuth {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let flavor = AuthFlavor::decode(r)?;
        let body = r.opaque(MAX_AUTH_BODY, "opaque_auth body")?.to_vec();
        Ok(Self { flavor, body })
    }
}

/// RFC 5531 appendix A: at most 255 bytes of machine name.
pub const MAX_MACHINE_NAME: usize = 255;
/// RFC 5531 appendix A: at most 16 supplementary gids.
pub const MAX_GIDS: usize = 16;

/// RFC 5531 appendix A
/// ```text
/// struct authsys_parms {
///     unsigned int stamp;
///     string machinename<255>;
///     unsigned int uid;
///     unsigned int gid;
///     unsigned int gids<16>;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthSys {
    /// Arbitrary stamp chosen by the caller.
    pub stamp: u32,
    /// The caller's host name.
    pub machine_name: Vec<u8>,
    /// Effective user id.
    pub uid: u32,
    /// Effective group id.
    pub gid: u32,
    /// Supplementary group ids (at most 16 are sent).
    pub gids: Vec<u32>,
}

impl Encode for AuthSys {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.stamp);
        let name = &self.machine_name[..self.machine_name.len().min(MAX_MACHINE_NAME)];
        out.put_opaque(name);
        out.put_u32(self.uid);
        out.put_u32(self.gid);
        let gids = &self.gids[..self.gids.len().min(MAX_GIDS)];
        out.put_u32(gids.len() as u32);
        for g in gids {
            out.put_u32(*g);
        }
    }
}

impl Decode for AuthSys {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let stamp = r.u32("authsys stamp")?;
        let machine_name = r.opaque(MAX_MACHINE_NAME, "authsys machinename")?.to_vec();
        let uid = r.u32("authsys uid")?;
        let gid = r.u32("authsys gid")?;
        let n = r.array_len(MAX_GIDS, 4, "authsys gids")?;
        let mut gids = Vec::with_capacity(n);
        for _ in 0..n {
            gids.push(r.u32("authsys gid")?);
        }
        Ok(Self {
            stamp,
            machine_name,
            uid,
            gid,
            gids,
        })
    }
}

impl AuthSys {
    /// Wraps this credential as an `opaque_auth` of flavor AUTH_SYS.
    pub fn to_opaque_auth(&self) -> OpaqueAuth {
        let mut body = Vec::with_capacity(64);
        self.encode(&mut body);
        OpaqueAuth {
            flavor: AuthFlavor::AUTH_SYS,
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    #[test]
    fn auth_sys_golden_bytes() {
        let a = AuthSys {
            stamp: 1,
            machine_name: b"db1".to_vec(),
            uid: 1000,
            gid: 100,
            gids: vec![4, 27],
        };
        let bytes = to_bytes(&a);
        #[rustfmt::skip]
        let expect = [
            0, 0, 0, 1, 0, 0, 0, 3, b'd', b'b', b'1', 0,
            0, 0, 0x03, 0xe8, 0, 0, 0, 100,
            0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 27,
        ];
        assert_eq!(bytes, expect);
        assert_eq!(decode_exact::<AuthSys>(&bytes, "authsys").unwrap(), a);
    }

    #[test]
    fn auth_sys_sends_at_most_16_gids() {
        let a = AuthSys {
            gids: (0..40).collect(),
            ..Default::default()
        };
        let back: AuthSys = decode_exact(&to_bytes(&a), "authsys").unwrap();
        assert_eq!(back.gids.len(), 16);
    }

    #[test]
    fn rejects_auth_body_longer_than_400() {
        let mut v = vec![0, 0, 0, 1];
        v.put_u32(401);
        v.extend_from_slice(&[0; 404]);
        assert!(matches!(
            decode_exact::<OpaqueAuth>(&v, "auth"),
            Err(DecodeError::TooLong { max: 400, .. })
        ));
    }
}
