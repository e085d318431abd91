//! NLM version 4 (X/Open XNFS, "Protocols for Interworking: XNFS, Version
//! 3W", chapter 10 "Network Lock Manager Protocol", and RFC 1813 appendix
//! II, which defines version 4 for NFSv3's 64-bit offsets), program 100021:
//! byte-range locks for NFSv3 files. A client needs TEST, LOCK, CANCEL and
//! UNLOCK (and FREE_ALL to drop what a dead host held); the asynchronous
//! `_MSG`/`_RES` procedures and the share reservations are not implemented.
//! Also the one NSM procedure (XNFS chapter 11, program 100024) a lock
//! client sends: SM_NOTIFY, "this host restarted".
//!
//! Every length read from the wire is bounded before anything is sliced:
//! a `netobj` by [`MAXNETOBJ_SZ`], a name by [`LM_MAXSTRLEN`].

// XNFS names (`nlm4_lockargs`) are kept so the code greps against the spec.
#![allow(non_camel_case_types)]

use crate::nfs3::types::bounded_string;
use crate::wire_enum;
use crate::xdr::{Decode, DecodeError, Encode, XdrReader, XdrWrite};

/// XNFS §10.2 `NLM_PROG`.
pub const NLM_PROG: u32 = 100021;
/// RFC 1813 appendix II §6.1: NLM version 4 (`NLM4_VERS`).
pub const NLM4_VERS: u32 = 4;
/// XNFS §10.2 `LM_MAXSTRLEN`: longest `caller_name`.
pub const LM_MAXSTRLEN: usize = 1024;
/// XNFS §10.2 `MAXNETOBJ_SZ`: longest `netobj` (cookie, handle, owner).
pub const MAXNETOBJ_SZ: usize = 1024;

/// RFC 1813 II §6.2 `NLMPROC4_NULL`.
pub const NLMPROC4_NULL: u32 = 0;
/// RFC 1813 II §6.2 `NLMPROC4_TEST`.
pub const NLMPROC4_TEST: u32 = 1;
/// RFC 1813 II §6.2 `NLMPROC4_LOCK`.
pub const NLMPROC4_LOCK: u32 = 2;
/// RFC 1813 II §6.2 `NLMPROC4_CANCEL`.
pub const NLMPROC4_CANCEL: u32 = 3;
/// RFC 1813 II §6.2 `NLMPROC4_UNLOCK`.
pub const NLMPROC4_UNLOCK: u32 = 4;
/// RFC 1813 II §6.2 `NLMPROC4_GRANTED` (server to client).
pub const NLMPROC4_GRANTED: u32 = 5;
/// RFC 1813 II §6.2 `NLMPROC4_FREE_ALL`: release every lock of a host.
pub const NLMPROC4_FREE_ALL: u32 = 23;

/// XNFS §11.2 `SM_PROG`: the network status monitor.
pub const SM_PROG: u32 = 100024;
/// XNFS §11.2 `SM_VERS`.
pub const SM_VERS: u32 = 1;
/// XNFS §11.3 `SM_NOTIFY`.
pub const SM_NOTIFY: u32 = 6;
/// XNFS §11.2 `SM_MAXSTRLEN`.
pub const SM_MAXSTRLEN: usize = 1024;

wire_enum!(
    /// RFC 1813 II §6.1.1
    /// ```text
    /// enum nlm4_stats {
    ///     NLM4_GRANTED = 0, NLM4_DENIED = 1, NLM4_DENIED_NOLOCKS = 2,
    ///     NLM4_BLOCKED = 3, NLM4_DENIED_GRACE_PERIOD = 4, NLM4_DEADLCK = 5,
    ///     NLM4_ROFS = 6, NLM4_STALE_FH = 7, NLM4_FBIG = 8, NLM4_FAILED = 9
    /// };
    /// ```
    nlm4_stats {
        NLM4_GRANTED = 0,
        NLM4_DENIED = 1,
        NLM4_DENIED_NOLOCKS = 2,
        NLM4_BLOCKED = 3,
        NLM4_DENIED_GRACE_PERIOD = 4,
        NLM4_DEADLCK = 5,
        NLM4_ROFS = 6,
        NLM4_STALE_FH = 7,
        NLM4_FBIG = 8,
        NLM4_FAILED = 9,
    }
);

bounded_string!(
    /// XNFS §10.2 `struct netobj { unsigned n_bytes; opaque n_bytes<MAXNETOBJ_SZ>; }`
    /// (the cookie, the file handle and the lock owner `oh`).
    netobj,
    MAXNETOBJ_SZ
);

bounded_string!(
    /// XNFS §10.2 `string caller_name<LM_MAXSTRLEN>` (and NSM's
    /// `string mon_name<SM_MAXSTRLEN>`, the same bound).
    lm_name,
    LM_MAXSTRLEN
);

/// RFC 1813 II §6.1.4
/// ```text
/// struct nlm4_lock {
///     string caller_name<LM_MAXSTRLEN>;
///     netobj fh;
///     netobj oh;
///     int32 svid;
///     uint64 l_offset;
///     uint64 l_len;
/// };
/// ```
/// The lock owner is (`caller_name`, `oh`, `svid`); `l_len` 0 reaches to
/// the end of the file, however far it grows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_lock {
    /// The client host's name (NSM monitors it).
    pub caller_name: lm_name,
    /// The NFSv3 file handle.
    pub fh: netobj,
    /// Opaque owner bytes.
    pub oh: netobj,
    /// The owner's process id.
    pub svid: i32,
    /// First byte.
    pub l_offset: u64,
    /// Bytes; 0: to the end of the file.
    pub l_len: u64,
}

impl Encode for nlm4_lock {
    fn encode(&self, out: &mut Vec<u8>) {
        self.caller_name.encode(out);
        self.fh.encode(out);
        self.oh.encode(out);
        out.put_u32(self.svid as u32);
        out.put_u64(self.l_offset);
        out.put_u64(self.l_len);
    }
}

impl Decode for nlm4_lock {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            caller_name: Decode::decode(r)?,
            fh: Decode::decode(r)?,
            oh: Decode::decode(r)?,
            svid: r.i32("nlm4_lock svid")?,
            l_offset: r.u64("nlm4_lock l_offset")?,
            l_len: r.u64("nlm4_lock l_len")?,
        })
    }
}

/// RFC 1813 II §6.1.2
/// ```text
/// struct nlm4_holder {
///     bool exclusive;
///     int32 svid;
///     netobj oh;
///     uint64 l_offset;
///     uint64 l_len;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_holder {
    /// A write lock, else a read lock.
    pub exclusive: bool,
    /// The holder's process id (on its host).
    pub svid: i32,
    /// The holder's owner bytes.
    pub oh: netobj,
    /// First byte.
    pub l_offset: u64,
    /// Bytes; 0: to the end.
    pub l_len: u64,
}

impl Encode for nlm4_holder {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_bool(self.exclusive);
        out.put_u32(self.svid as u32);
        self.oh.encode(out);
        out.put_u64(self.l_offset);
        out.put_u64(self.l_len);
    }
}

impl Decode for nlm4_holder {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            exclusive: r.bool("nlm4_holder exclusive")?,
            svid: r.i32("nlm4_holder svid")?,
            oh: Decode::decode(r)?,
            l_offset: r.u64("nlm4_holder l_offset")?,
            l_len: r.u64("nlm4_holder l_len")?,
        })
    }
}

/// RFC 1813 II §6.1.5
/// ```text
/// struct nlm4_lockargs {
///     netobj cookie;
///     bool block;
///     bool exclusive;
///     struct nlm4_lock alock;
///     bool reclaim;
///     int32 state;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_lockargs {
    /// Echoed in the reply.
    pub cookie: netobj,
    /// Queue the request on the server while it conflicts (NLM4_BLOCKED).
    pub block: bool,
    /// A write lock, else a read lock.
    pub exclusive: bool,
    /// The lock.
    pub alock: nlm4_lock,
    /// A reclaim in the server's grace period.
    pub reclaim: bool,
    /// The client's NSM state number.
    pub state: i32,
}

impl Encode for nlm4_lockargs {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cookie.encode(out);
        out.put_bool(self.block);
        out.put_bool(self.exclusive);
        self.alock.encode(out);
        out.put_bool(self.reclaim);
        out.put_u32(self.state as u32);
    }
}

impl Decode for nlm4_lockargs {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            cookie: Decode::decode(r)?,
            block: r.bool("nlm4_lockargs block")?,
            exclusive: r.bool("nlm4_lockargs exclusive")?,
            alock: Decode::decode(r)?,
            reclaim: r.bool("nlm4_lockargs reclaim")?,
            state: r.i32("nlm4_lockargs state")?,
        })
    }
}

/// RFC 1813 II §6.1.6
/// ```text
/// struct nlm4_cancargs {
///     netobj cookie;
///     bool block;
///     bool exclusive;
///     struct nlm4_lock alock;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_cancargs {
    /// Echoed in the reply.
    pub cookie: netobj,
    /// As in the LOCK being cancelled.
    pub block: bool,
    /// As in the LOCK being cancelled.
    pub exclusive: bool,
    /// The lock being cancelled.
    pub alock: nlm4_lock,
}

impl Encode for nlm4_cancargs {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cookie.encode(out);
        out.put_bool(self.block);
        out.put_bool(self.exclusive);
        self.alock.encode(out);
    }
}

impl Decode for nlm4_cancargs {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            cookie: Decode::decode(r)?,
            block: r.bool("nlm4_cancargs block")?,
            exclusive: r.bool("nlm4_cancargs exclusive")?,
            alock: Decode::decode(r)?,
        })
    }
}

/// RFC 1813 II §6.1.7
/// ```text
/// struct nlm4_testargs {
///     netobj cookie;
///     bool exclusive;
///     struct nlm4_lock alock;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_testargs {
    /// Echoed in the reply.
    pub cookie: netobj,
    /// Test for a write lock, else a read lock.
    pub exclusive: bool,
    /// The lock that would be asked for.
    pub alock: nlm4_lock,
}

impl Encode for nlm4_testargs {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cookie.encode(out);
        out.put_bool(self.exclusive);
        self.alock.encode(out);
    }
}

impl Decode for nlm4_testargs {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            cookie: Decode::decode(r)?,
            exclusive: r.bool("nlm4_testargs exclusive")?,
            alock: Decode::decode(r)?,
        })
    }
}

/// RFC 1813 II §6.1.8
/// ```text
/// struct nlm4_unlockargs {
///     netobj cookie;
///     struct nlm4_lock alock;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_unlockargs {
    /// Echoed in the reply.
    pub cookie: netobj,
    /// The range to release (of this owner).
    pub alock: nlm4_lock,
}

impl Encode for nlm4_unlockargs {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cookie.encode(out);
        self.alock.encode(out);
    }
}

impl Decode for nlm4_unlockargs {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            cookie: Decode::decode(r)?,
            alock: Decode::decode(r)?,
        })
    }
}

/// RFC 1813 II §6.1.3
/// ```text
/// struct nlm4_res {
///     netobj cookie;
///     nlm4_stat stat;      /* struct nlm4_stat { nlm4_stats stat; } */
/// };
/// ```
/// The result of LOCK, CANCEL, UNLOCK and GRANTED.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_res {
    /// The call's cookie.
    pub cookie: netobj,
    /// The outcome.
    pub stat: nlm4_stats,
}

impl Default for nlm4_stats {
    fn default() -> Self {
        Self::NLM4_GRANTED
    }
}

impl Encode for nlm4_res {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cookie.encode(out);
        self.stat.encode(out);
    }
}

impl Decode for nlm4_res {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            cookie: Decode::decode(r)?,
            stat: Decode::decode(r)?,
        })
    }
}

/// RFC 1813 II §6.1.3
/// ```text
/// union nlm4_testrply switch (nlm4_stats stat) {
///     case NLM4_DENIED:
///         struct nlm4_holder holder;
///     default:
///         void;
/// };
/// struct nlm4_testres {
///     netobj cookie;
///     nlm4_testrply test_stat;
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_testres {
    /// The call's cookie.
    pub cookie: netobj,
    /// The outcome; NLM4_DENIED comes with the conflicting lock.
    pub stat: nlm4_stats,
    /// Present exactly when `stat` is NLM4_DENIED.
    pub holder: Option<nlm4_holder>,
}

impl Encode for nlm4_testres {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cookie.encode(out);
        self.stat.encode(out);
        if self.stat == nlm4_stats::NLM4_DENIED {
            self.holder.clone().unwrap_or_default().encode(out);
        }
    }
}

impl Decode for nlm4_testres {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        let cookie = Decode::decode(r)?;
        let stat: nlm4_stats = Decode::decode(r)?;
        let holder = if stat == nlm4_stats::NLM4_DENIED {
            Some(Decode::decode(r)?)
        } else {
            None
        };
        Ok(Self {
            cookie,
            stat,
            holder,
        })
    }
}

/// RFC 1813 II §6.1.9
/// ```text
/// struct nlm4_notify {
///     string name<MAXNAMELEN>;
///     int32 state;
/// };
/// ```
/// FREE_ALL's argument: the host whose locks all go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct nlm4_notify {
    /// The host (`caller_name` of its locks).
    pub name: lm_name,
    /// Its new NSM state.
    pub state: i32,
}

impl Encode for nlm4_notify {
    fn encode(&self, out: &mut Vec<u8>) {
        self.name.encode(out);
        out.put_u32(self.state as u32);
    }
}

impl Decode for nlm4_notify {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            name: Decode::decode(r)?,
            state: r.i32("nlm4_notify state")?,
        })
    }
}

/// XNFS §11.2
/// ```text
/// struct stat_chge {
///     string mon_name<SM_MAXSTRLEN>;
///     int state;
/// };
/// ```
/// SM_NOTIFY's argument: `mon_name` restarted and is now in `state`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct stat_chge {
    /// The host that restarted.
    pub mon_name: lm_name,
    /// Its new state number (odd: up).
    pub state: i32,
}

impl Encode for stat_chge {
    fn encode(&self, out: &mut Vec<u8>) {
        self.mon_name.encode(out);
        out.put_u32(self.state as u32);
    }
}

impl Decode for stat_chge {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            mon_name: Decode::decode(r)?,
            state: r.i32("stat_chge state")?,
        })
    }
}

macro_rules! procedure {
    ($(#[$m:meta])* $name:ident, $prog:expr, $vers:expr, $proc:expr, $text:expr, $args:ty, $res:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;
        impl crate::Procedure for $name {
            const PROG: u32 = $prog;
            const VERS: u32 = $vers;
            const PROC: u32 = $proc;
            const NAME: &'static str = $text;
            type Args = $args;
            type Res = $res;
        }
    };
}

procedure!(
    /// RFC 1813 II §6.2 `void NLMPROC4_NULL(void) = 0;`
    Nlm4Null, NLM_PROG, NLM4_VERS, NLMPROC4_NULL, "NLM4_NULL", (), ()
);
procedure!(
    /// RFC 1813 II §6.2 `nlm4_testres NLMPROC4_TEST(nlm4_testargs) = 1;`
    Nlm4Test, NLM_PROG, NLM4_VERS, NLMPROC4_TEST, "NLM4_TEST", nlm4_testargs, nlm4_testres
);
procedure!(
    /// RFC 1813 II §6.2 `nlm4_res NLMPROC4_LOCK(nlm4_lockargs) = 2;`
    Nlm4Lock, NLM_PROG, NLM4_VERS, NLMPROC4_LOCK, "NLM4_LOCK", nlm4_lockargs, nlm4_res
);
procedure!(
    /// RFC 1813 II §6.2 `nlm4_res NLMPROC4_CANCEL(nlm4_cancargs) = 3;`
    Nlm4Cancel, NLM_PROG, NLM4_VERS, NLMPROC4_CANCEL, "NLM4_CANCEL", nlm4_cancargs, nlm4_res
);
procedure!(
    /// RFC 1813 II §6.2 `nlm4_res NLMPROC4_UNLOCK(nlm4_unlockargs) = 4;`
    Nlm4Unlock, NLM_PROG, NLM4_VERS, NLMPROC4_UNLOCK, "NLM4_UNLOCK", nlm4_unlockargs, nlm4_res
);
procedure!(
    /// RFC 1813 II §6.2 `void NLMPROC4_FREE_ALL(nlm4_notify) = 23;`
    Nlm4FreeAll, NLM_PROG, NLM4_VERS, NLMPROC4_FREE_ALL, "NLM4_FREE_ALL", nlm4_notify, ()
);
procedure!(
    /// XNFS §11.3 `void SM_NOTIFY(struct stat_chge) = 6;`
    SmNotify, SM_PROG, SM_VERS, SM_NOTIFY, "SM_NOTIFY", stat_chge, ()
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::{decode_exact, to_bytes};

    fn lock() -> nlm4_lock {
        nlm4_lock {
            caller_name: "h".into(),
            fh: netobj(vec![1, 2, 3, 4]),
            oh: netobj(vec![9]),
            svid: 7,
            l_offset: 1,
            l_len: 0,
        }
    }

    #[test]
    fn lockargs_encode_to_xnfs_bytes() {
        let args = nlm4_lockargs {
            cookie: netobj(vec![0xaa]),
            block: false,
            exclusive: true,
            alock: lock(),
            reclaim: false,
            state: 3,
        };
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            0, 0, 0, 1, 0xaa, 0, 0, 0,      // cookie
            0, 0, 0, 0,                     // block
            0, 0, 0, 1,                     // exclusive
            0, 0, 0, 1, b'h', 0, 0, 0,      // caller_name
            0, 0, 0, 4, 1, 2, 3, 4,         // fh
            0, 0, 0, 1, 9, 0, 0, 0,         // oh
            0, 0, 0, 7,                     // svid
            0, 0, 0, 0, 0, 0, 0, 1,         // l_offset
            0, 0, 0, 0, 0, 0, 0, 0,         // l_len
            0, 0, 0, 0,                     // reclaim
            0, 0, 0, 3,                     // state
        ];
        assert_eq!(to_bytes(&args), want);
        assert_eq!(
            decode_exact::<nlm4_lockargs>(&want, "lockargs").unwrap(),
            args
        );
    }

    #[test]
    fn denied_test_reply_carries_the_holder() {
        #[rustfmt::skip]
        let bytes: Vec<u8> = vec![
            0, 0, 0, 0,                     // cookie (empty)
            0, 0, 0, 1,                     // NLM4_DENIED
            0, 0, 0, 1,                     // exclusive
            0, 0, 0x30, 0x39,               // svid 12345
            0, 0, 0, 2, 5, 6, 0, 0,         // oh
            0, 0, 0, 0, 0, 0, 0, 0,         // l_offset
            0, 0, 0, 0, 0, 0, 0, 0,         // l_len
        ];
        let res = decode_exact::<nlm4_testres>(&bytes, "testres").unwrap();
        assert_eq!(res.stat, nlm4_stats::NLM4_DENIED);
        let holder = res.holder.clone().unwrap();
        assert!(holder.exclusive);
        assert_eq!(holder.svid, 12345);
        assert_eq!(to_bytes(&res), bytes);
    }

    #[test]
    fn granted_test_reply_has_no_holder() {
        let bytes = [0, 0, 0, 0, 0, 0, 0, 0];
        let res = decode_exact::<nlm4_testres>(&bytes, "testres").unwrap();
        assert_eq!(res.stat, nlm4_stats::NLM4_GRANTED);
        assert_eq!(res.holder, None);
    }

    #[test]
    fn unknown_status_survives_decoding() {
        let bytes = [0, 0, 0, 0, 0, 0, 0, 42];
        let res = decode_exact::<nlm4_res>(&bytes, "res").unwrap();
        assert_eq!(res.stat, nlm4_stats(42));
        assert_eq!(format!("{:?}", res.stat), "nlm4_stats(0x2a)");
    }

    #[test]
    fn rejects_netobj_longer_than_1024() {
        let mut bytes = vec![0, 0, 0x04, 0x01];
        bytes.extend(std::iter::repeat_n(0, 1028));
        bytes.extend([0, 0, 0, 0]);
        assert!(matches!(
            decode_exact::<nlm4_res>(&bytes, "res"),
            Err(DecodeError::TooLong { .. })
        ));
    }

    #[test]
    fn rejects_truncated_holder() {
        let bytes = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1];
        assert!(decode_exact::<nlm4_testres>(&bytes, "testres").is_err());
    }

    #[test]
    fn sm_notify_args_encode_name_and_state() {
        let args = stat_chge {
            mon_name: "ab".into(),
            state: 5,
        };
        assert_eq!(to_bytes(&args), [0, 0, 0, 2, b'a', b'b', 0, 0, 0, 0, 0, 5]);
    }
}
