//! RFC 8881 §16.2 COMPOUND: the one NFSv4 procedure that carries every
//! operation. `nfs_argop4` and `nfs_resop4` hold the operations this crate
//! encodes and decodes; [`COMPOUND4res`] decodes a reply the way the RFC
//! builds it: results in order, stopping at the first failure.

use super::dir::{READDIR4args, READDIR4res};
use super::fh::{
    GETFH4res, LOOKUP4args, LOOKUP4res, LOOKUPP4res, PUTFH4args, PUTFH4res, PUTROOTFH4res,
    RESTOREFH4res, SAVEFH4res, SECINFO4args, SECINFO4res, SECINFO_NO_NAME4args,
    SECINFO_NO_NAME4res,
};
use super::getattr::{
    ACCESS4args, ACCESS4res, GETATTR4args, GETATTR4res, SETATTR4args, SETATTR4res,
};
use super::io::{COMMIT4args, COMMIT4res, READ4args, READ4res, WRITE4args, WRITE4res};
use super::lock::{LOCK4args, LOCK4res, LOCKT4args, LOCKT4res, LOCKU4args, LOCKU4res};
use super::namespace::{
    CREATE4args, CREATE4res, LINK4args, LINK4res, READLINK4res, REMOVE4args, REMOVE4res,
    RENAME4args, RENAME4res,
};
use super::open::{
    CLOSE4args, CLOSE4res, DELEGRETURN4args, DELEGRETURN4res, FREE_STATEID4args, FREE_STATEID4res,
    OPEN4args, OPEN4res, TEST_STATEID4args, TEST_STATEID4res,
};
use super::result::Nfs4Res;
use super::session::{
    BIND_CONN_TO_SESSION4args, BIND_CONN_TO_SESSION4res, CREATE_SESSION4args, CREATE_SESSION4res,
    DESTROY_CLIENTID4args, DESTROY_CLIENTID4res, DESTROY_SESSION4args, DESTROY_SESSION4res,
    EXCHANGE_ID4args, EXCHANGE_ID4res, RECLAIM_COMPLETE4args, RECLAIM_COMPLETE4res, SEQUENCE4args,
    SEQUENCE4res,
};
use super::types::{nfs_opnum4, nfsstat4, utf8str_cs};
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// Bound on the operations of one COMPOUND (arguments or results) this
/// crate decodes. directnfs sends at most a handful; servers grant
/// `ca_maxoperations` of 8 to 64. A reply claiming more is refused before
/// anything is allocated.
pub const MAX_COMPOUND_OPS: usize = 128;

/// The status of an operation result, whatever its shape.
trait OpStatus {
    fn op_status(&self) -> nfsstat4;
}
impl<T> OpStatus for Nfs4Res<T> {
    fn op_status(&self) -> nfsstat4 {
        self.status()
    }
}
impl OpStatus for nfsstat4 {
    fn op_status(&self) -> nfsstat4 {
        *self
    }
}
impl OpStatus for SETATTR4res {
    fn op_status(&self) -> nfsstat4 {
        self.status
    }
}
impl OpStatus for LOCK4res {
    fn op_status(&self) -> nfsstat4 {
        self.status()
    }
}
impl OpStatus for LOCKT4res {
    fn op_status(&self) -> nfsstat4 {
        self.status()
    }
}

/// Declares `nfs_argop4` and `nfs_resop4` from one table: operations with
/// arguments (`OP(args) => res`) and without (`OP => res`). Variant names
/// are the `nfs_opnum4` constants.
macro_rules! op_table {
    (
        with_args { $( $(#[$dm:meta])* $d:ident($da:ty) => $dr:ty, )* }
        no_args { $( $(#[$vm:meta])* $v:ident => $vr:ty, )* }
    ) => {
        /// RFC 8881 §16.2.1 `union nfs_argop4 switch (nfs_opnum4 argop)`:
        /// one operation of a COMPOUND request, for the operations this
        /// crate implements (`spec/nfs4.x`; RFC 5662 has the full union).
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[allow(non_camel_case_types)]
        pub enum nfs_argop4 {
            $( $(#[$dm])* $d($da), )*
            $( $(#[$vm])* $v, )*
        }

        /// RFC 8881 §16.2.2 `union nfs_resop4 switch (nfs_opnum4 resop)`:
        /// one operation's result.
        // GETATTR's inline fattr4 makes the largest variant ~750 bytes;
        // these values live in a COMPOUND's handful of results, off the I/O
        // path (see hotpath), where a box per result would cost more.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[allow(non_camel_case_types)]
        pub enum nfs_resop4 {
            $( $(#[$dm])* $d($dr), )*
            $( $(#[$vm])* $v($vr), )*
        }

        impl nfs_argop4 {
            /// The operation number.
            pub fn opnum(&self) -> nfs_opnum4 {
                match self {
                    $( nfs_argop4::$d(_) => nfs_opnum4::$d, )*
                    $( nfs_argop4::$v => nfs_opnum4::$v, )*
                }
            }
        }

        impl nfs_resop4 {
            /// The operation number.
            pub fn opnum(&self) -> nfs_opnum4 {
                match self {
                    $( nfs_resop4::$d(_) => nfs_opnum4::$d, )*
                    $( nfs_resop4::$v(_) => nfs_opnum4::$v, )*
                }
            }

            /// The operation's status.
            pub fn status(&self) -> nfsstat4 {
                match self {
                    $( nfs_resop4::$d(r) => r.op_status(), )*
                    $( nfs_resop4::$v(r) => r.op_status(), )*
                }
            }
        }

        impl Encode for nfs_argop4 {
            fn encode(&self, out: &mut Vec<u8>) {
                self.opnum().encode(out);
                match self {
                    $( nfs_argop4::$d(a) => a.encode(out), )*
                    $( nfs_argop4::$v => {} )*
                }
            }
        }

        impl Decode for nfs_argop4 {
            fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
                Ok(match nfs_opnum4::decode(r)? {
                    $( nfs_opnum4::$d => nfs_argop4::$d(<$da as Decode>::decode(r)?), )*
                    $( nfs_opnum4::$v => nfs_argop4::$v, )*
                    other => return Err(DecodeError::BadDiscriminant {
                        what: "nfs_argop4 (operation this crate does not implement)",
                        value: other.0,
                    }),
                })
            }
        }

        impl Encode for nfs_resop4 {
            fn encode(&self, out: &mut Vec<u8>) {
                self.opnum().encode(out);
                match self {
                    $( nfs_resop4::$d(res) => res.encode(out), )*
                    $( nfs_resop4::$v(res) => res.encode(out), )*
                }
            }
        }

        impl Decode for nfs_resop4 {
            /// Decodes one result. An operation this crate does not
            /// implement is an error: its result's size is unknown, so
            /// nothing after it could be read.
            fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
                Ok(match nfs_opnum4::decode(r)? {
                    $( nfs_opnum4::$d => nfs_resop4::$d(<$dr as Decode>::decode(r)?), )*
                    $( nfs_opnum4::$v => nfs_resop4::$v(<$vr as Decode>::decode(r)?), )*
                    other => return Err(DecodeError::BadDiscriminant {
                        what: "nfs_resop4 (result of an operation this crate does not implement)",
                        value: other.0,
                    }),
                })
            }
        }
    };
}

op_table! {
    with_args {
        /// §18.1 ACCESS.
        OP_ACCESS(ACCESS4args) => ACCESS4res,
        /// §18.2 CLOSE.
        OP_CLOSE(CLOSE4args) => CLOSE4res,
        /// §18.3 COMMIT.
        OP_COMMIT(COMMIT4args) => COMMIT4res,
        /// §18.4 CREATE (directories, links, devices).
        OP_CREATE(CREATE4args) => CREATE4res,
        /// §18.6 DELEGRETURN.
        OP_DELEGRETURN(DELEGRETURN4args) => DELEGRETURN4res,
        /// §18.7 GETATTR.
        OP_GETATTR(GETATTR4args) => GETATTR4res,
        /// §18.9 LINK.
        OP_LINK(LINK4args) => LINK4res,
        /// §18.10 LOCK.
        OP_LOCK(LOCK4args) => LOCK4res,
        /// §18.11 LOCKT.
        OP_LOCKT(LOCKT4args) => LOCKT4res,
        /// §18.12 LOCKU.
        OP_LOCKU(LOCKU4args) => LOCKU4res,
        /// §18.13 LOOKUP.
        OP_LOOKUP(LOOKUP4args) => LOOKUP4res,
        /// §18.16 OPEN.
        OP_OPEN(OPEN4args) => OPEN4res,
        /// §18.19 PUTFH.
        OP_PUTFH(PUTFH4args) => PUTFH4res,
        /// §18.22 READ.
        OP_READ(READ4args) => READ4res,
        /// §18.23 READDIR.
        OP_READDIR(READDIR4args) => READDIR4res,
        /// §18.25 REMOVE.
        OP_REMOVE(REMOVE4args) => REMOVE4res,
        /// §18.26 RENAME.
        OP_RENAME(RENAME4args) => RENAME4res,
        /// §18.29 SECINFO.
        OP_SECINFO(SECINFO4args) => SECINFO4res,
        /// §18.30 SETATTR.
        OP_SETATTR(SETATTR4args) => SETATTR4res,
        /// §18.32 WRITE.
        OP_WRITE(WRITE4args) => WRITE4res,
        /// §18.34 BIND_CONN_TO_SESSION.
        OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4args) => BIND_CONN_TO_SESSION4res,
        /// §18.35 EXCHANGE_ID.
        OP_EXCHANGE_ID(EXCHANGE_ID4args) => EXCHANGE_ID4res,
        /// §18.36 CREATE_SESSION.
        OP_CREATE_SESSION(CREATE_SESSION4args) => CREATE_SESSION4res,
        /// §18.37 DESTROY_SESSION.
        OP_DESTROY_SESSION(DESTROY_SESSION4args) => DESTROY_SESSION4res,
        /// §18.38 FREE_STATEID.
        OP_FREE_STATEID(FREE_STATEID4args) => FREE_STATEID4res,
        /// §18.45 SECINFO_NO_NAME.
        OP_SECINFO_NO_NAME(SECINFO_NO_NAME4args) => SECINFO_NO_NAME4res,
        /// §18.46 SEQUENCE.
        OP_SEQUENCE(SEQUENCE4args) => SEQUENCE4res,
        /// §18.48 TEST_STATEID.
        OP_TEST_STATEID(TEST_STATEID4args) => TEST_STATEID4res,
        /// §18.50 DESTROY_CLIENTID.
        OP_DESTROY_CLIENTID(DESTROY_CLIENTID4args) => DESTROY_CLIENTID4res,
        /// §18.51 RECLAIM_COMPLETE.
        OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args) => RECLAIM_COMPLETE4res,
    }
    no_args {
        /// §18.8 GETFH.
        OP_GETFH => GETFH4res,
        /// §18.14 LOOKUPP.
        OP_LOOKUPP => LOOKUPP4res,
        /// §18.21 PUTROOTFH.
        OP_PUTROOTFH => PUTROOTFH4res,
        /// §18.24 READLINK.
        OP_READLINK => READLINK4res,
        /// §18.27 RESTOREFH.
        OP_RESTOREFH => RESTOREFH4res,
        /// §18.28 SAVEFH.
        OP_SAVEFH => SAVEFH4res,
        /// §18.52 ILLEGAL: what a server answers for an operation number
        /// it does not know (`NFS4ERR_OP_ILLEGAL`).
        OP_ILLEGAL => nfsstat4,
    }
}

/// RFC 8881 §16.2.1
/// ```text
/// struct COMPOUND4args {
///         utf8str_cs      tag;
///         uint32_t        minorversion;
///         nfs_argop4      argarray<>;
/// };
/// ```
/// Decoding accepts at most [`MAX_COMPOUND_OPS`] operations.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct COMPOUND4args {
    /// Echoed in the reply; directnfs sends it empty.
    pub tag: utf8str_cs,
    /// 1 for NFSv4.1.
    pub minorversion: u32,
    /// The operations, executed in order.
    pub argarray: Vec<nfs_argop4>,
}

impl Encode for COMPOUND4args {
    fn encode(&self, out: &mut Vec<u8>) {
        self.tag.encode(out);
        out.put_u32(self.minorversion);
        out.put_u32(self.argarray.len() as u32);
        for op in &self.argarray {
            op.encode(out);
        }
    }
}
impl Decode for COMPOUND4args {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let tag = utf8str_cs::decode(r)?;
        let minorversion = r.u32("minorversion")?;
        let n = r.array_len(MAX_COMPOUND_OPS, 4, "COMPOUND4args argarray")?;
        let mut argarray = Vec::with_capacity(n);
        for _ in 0..n {
            argarray.push(nfs_argop4::decode(r)?);
        }
        Ok(Self {
            tag,
            minorversion,
            argarray,
        })
    }
}

/// RFC 8881 §16.2.2
/// ```text
/// struct COMPOUND4res {
///         nfsstat4        status;
///         utf8str_cs      tag;
///         nfs_resop4      resarray<>;
/// };
/// ```
/// RFC 8881 §16.2.3: the server executes the operations in order and stops
/// at the first that fails; the reply holds the results up to and
/// including that one, and `status` is its status (`NFS4_OK` when all
/// succeeded). The decoder holds the server to it, since a reply that
/// breaks it cannot be trusted:
/// * a result after a failed one: `TooLong { what: "COMPOUND4res resarray
///   (results after a failed operation)", .. }`;
/// * `status` other than the last result's:
///   `BadDiscriminant { what: "COMPOUND4res status (not the last result's)", .. }`
///   (an empty `resarray` may carry any status: errors such as
///   `NFS4ERR_MINOR_VERS_MISMATCH` come that way);
/// * a result of an operation this crate does not know: `BadDiscriminant`
///   (its size is unknown);
/// * more than [`MAX_COMPOUND_OPS`] results: `TooLong`, before allocating.
///
/// [`decode_expecting`](Self::decode_expecting) also checks the results
/// against the operations that were sent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(non_camel_case_types)]
pub struct COMPOUND4res {
    /// The status of the last operation executed.
    pub status: nfsstat4,
    /// The request's tag.
    pub tag: utf8str_cs,
    /// The results, in order.
    pub resarray: Vec<nfs_resop4>,
}

impl COMPOUND4res {
    /// The failed result, if any (always the last).
    pub fn failed(&self) -> Option<&nfs_resop4> {
        self.resarray.last().filter(|r| !r.status().is_ok())
    }

    /// Decodes a reply to a COMPOUND that sent the operations `sent`, in
    /// order. On top of the checks of [`Decode`]:
    /// * each result must answer the operation at its place, or be
    ///   `OP_ILLEGAL` (the server's answer to an operation it does not
    ///   know): else `BadDiscriminant { what: "nfs_resop4 (not the
    ///   operation sent at its place)", value: opnum }`;
    /// * no more results than operations: else `TooLong`;
    /// * as many results as operations when none failed: else
    ///   `Truncated { what: "COMPOUND4res resarray (fewer results than
    ///   operations, none failed)", .. }`.
    pub fn decode_expecting(
        r: &mut XdrReader<'_>,
        sent: &[nfs_opnum4],
    ) -> Result<Self, DecodeError> {
        let (status, tag, n) = decode_head(r, sent.len().min(MAX_COMPOUND_OPS))?;
        let mut resarray = Vec::with_capacity(n);
        for (i, expected) in sent.iter().take(n).enumerate() {
            let res = nfs_resop4::decode(r)?;
            let op = res.opnum();
            if op != *expected && op != nfs_opnum4::OP_ILLEGAL {
                return Err(DecodeError::BadDiscriminant {
                    what: "nfs_resop4 (not the operation sent at its place)",
                    value: op.0,
                });
            }
            let failed = !res.status().is_ok();
            resarray.push(res);
            if failed {
                check_stopped(i, n)?;
                break;
            }
        }
        let res = Self {
            status,
            tag,
            resarray,
        };
        res.check_status()?;
        if res.failed().is_none() && res.resarray.len() < sent.len() && status.is_ok() {
            return Err(DecodeError::Truncated {
                what: "COMPOUND4res resarray (fewer results than operations, none failed)",
                need: sent.len(),
                have: res.resarray.len(),
            });
        }
        Ok(res)
    }

    /// `status` must be the last result's (RFC 8881 §16.2.3).
    fn check_status(&self) -> Result<(), DecodeError> {
        match self.resarray.last() {
            Some(last) if last.status() != self.status => Err(DecodeError::BadDiscriminant {
                what: "COMPOUND4res status (not the last result's)",
                value: self.status.0,
            }),
            _ => Ok(()),
        }
    }
}

/// Reads `status`, `tag` and the result count, which must not exceed
/// `max`.
fn decode_head(
    r: &mut XdrReader<'_>,
    max: usize,
) -> Result<(nfsstat4, utf8str_cs, usize), DecodeError> {
    let status = nfsstat4::decode(r)?;
    let tag = utf8str_cs::decode(r)?;
    // Every result is at least an opnum and a status.
    let n = r.array_len(max, 8, "COMPOUND4res resarray")?;
    Ok((status, tag, n))
}

/// The result at index `i` failed: it must be the last of the `n`.
fn check_stopped(i: usize, n: usize) -> Result<(), DecodeError> {
    if i + 1 < n {
        return Err(DecodeError::TooLong {
            what: "COMPOUND4res resarray (results after a failed operation)",
            len: n as u64,
            max: i as u64 + 1,
        });
    }
    Ok(())
}

impl Encode for COMPOUND4res {
    fn encode(&self, out: &mut Vec<u8>) {
        self.status.encode(out);
        self.tag.encode(out);
        out.put_u32(self.resarray.len() as u32);
        for res in &self.resarray {
            res.encode(out);
        }
    }
}

impl Decode for COMPOUND4res {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let (status, tag, n) = decode_head(r, MAX_COMPOUND_OPS)?;
        let mut resarray = Vec::with_capacity(n);
        for i in 0..n {
            let res = nfs_resop4::decode(r)?;
            let failed = !res.status().is_ok();
            resarray.push(res);
            if failed {
                check_stopped(i, n)?;
            }
        }
        let res = Self {
            status,
            tag,
            resarray,
        };
        res.check_status()?;
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::types::nfs_fh4;
    use crate::xdr::{decode_exact, to_bytes};

    fn w(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    #[test]
    fn decoder_stops_at_the_first_failure_and_refuses_results_after_it() {
        // status NOENT, empty tag, 3 results: PUTROOTFH ok, LOOKUP NOENT,
        // GETFH ok (which the server must not have sent).
        let b = w(&[2, 0, 3, 24, 0, 15, 2, 10, 0, 0]);
        assert_eq!(
            decode_exact::<COMPOUND4res>(&b, "c").unwrap_err(),
            DecodeError::TooLong {
                what: "COMPOUND4res resarray (results after a failed operation)",
                len: 3,
                max: 2
            }
        );
        let b = w(&[2, 0, 2, 24, 0, 15, 2]);
        let res: COMPOUND4res = decode_exact(&b, "c").unwrap();
        assert_eq!(res.failed().map(|r| r.opnum()), Some(nfs_opnum4::OP_LOOKUP));
        assert_eq!(res.status, nfsstat4::NFS4ERR_NOENT);
    }

    #[test]
    fn status_must_be_the_last_results() {
        let b = w(&[0, 0, 1, 15, 2]);
        assert!(matches!(
            decode_exact::<COMPOUND4res>(&b, "c"),
            Err(DecodeError::BadDiscriminant {
                what: "COMPOUND4res status (not the last result's)",
                value: 0
            })
        ));
        // No results: any status (e.g. MINOR_VERS_MISMATCH).
        let b = w(&[10021, 0, 0]);
        let res: COMPOUND4res = decode_exact(&b, "c").unwrap();
        assert!(res.resarray.is_empty());
    }

    #[test]
    fn unknown_operation_result_is_an_error() {
        // OP_LAYOUTGET (50): a result this crate cannot size.
        let b = w(&[0, 0, 1, 50, 0]);
        assert_eq!(
            decode_exact::<COMPOUND4res>(&b, "c").unwrap_err(),
            DecodeError::BadDiscriminant {
                what: "nfs_resop4 (result of an operation this crate does not implement)",
                value: 50
            }
        );
    }

    #[test]
    fn huge_result_count_is_refused_before_allocating() {
        let b = w(&[0, 0, 0xffff_ffff]);
        assert!(matches!(
            decode_exact::<COMPOUND4res>(&b, "c"),
            Err(DecodeError::TooLong {
                what: "COMPOUND4res resarray",
                ..
            })
        ));
        let b = w(&[0, 0, 100]);
        assert!(matches!(
            decode_exact::<COMPOUND4res>(&b, "c"),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn decode_expecting_matches_results_to_operations_sent() {
        let sent = [nfs_opnum4::OP_PUTROOTFH, nfs_opnum4::OP_GETFH];
        let ok = w(&[0, 0, 2, 24, 0, 10, 0, 1, 0xab00_0000]);
        let res = COMPOUND4res::decode_expecting(&mut XdrReader::new(&ok), &sent).unwrap();
        let nfs_resop4::OP_GETFH(Nfs4Res::Ok(fh)) = &res.resarray[1] else {
            panic!("{res:?}")
        };
        assert_eq!(fh.object, nfs_fh4::new(&[0xab]).unwrap());
        // GETFH answered where PUTROOTFH was sent.
        let swapped = w(&[0, 0, 2, 10, 0, 1, 0xab00_0000, 24, 0]);
        assert!(matches!(
            COMPOUND4res::decode_expecting(&mut XdrReader::new(&swapped), &sent),
            Err(DecodeError::BadDiscriminant { value: 10, .. })
        ));
        // One result, OK: the server dropped an operation.
        let short = w(&[0, 0, 1, 24, 0]);
        assert!(matches!(
            COMPOUND4res::decode_expecting(&mut XdrReader::new(&short), &sent),
            Err(DecodeError::Truncated { .. })
        ));
        // More results than operations.
        let long = w(&[0, 0, 3, 24, 0, 24, 0, 24, 0]);
        assert!(matches!(
            COMPOUND4res::decode_expecting(&mut XdrReader::new(&long), &sent),
            Err(DecodeError::TooLong { .. })
        ));
        // OP_ILLEGAL may stand for an operation the server does not know.
        let illegal = w(&[10044, 0, 1, 10044, 10044]);
        let res = COMPOUND4res::decode_expecting(&mut XdrReader::new(&illegal), &sent).unwrap();
        assert_eq!(res.status, nfsstat4::NFS4ERR_OP_ILLEGAL);
    }

    #[test]
    fn args_roundtrip_with_void_and_data_operations() {
        let a = COMPOUND4args {
            tag: utf8str_cs::from("t"),
            minorversion: 1,
            argarray: vec![
                nfs_argop4::OP_PUTROOTFH,
                nfs_argop4::OP_LOOKUP(LOOKUP4args {
                    objname: "dir".into(),
                }),
                nfs_argop4::OP_GETFH,
            ],
        };
        let b = to_bytes(&a);
        assert_eq!(decode_exact::<COMPOUND4args>(&b, "c").unwrap(), a);
    }
}
