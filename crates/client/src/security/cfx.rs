//! RFC 4121 ("CFX") per-message tokens of an established Kerberos context,
//! made and checked here instead of by MIT's library: MIC tokens (§4.2.6.1)
//! and Wrap tokens with and without confidentiality (§4.2.6.2), for the
//! AES enctypes of [`super::enctype`]. The keys and the first sequence
//! number come from the context MIT set up, exported in its "lucid" form
//! (`gssapi.rs`); the kernel's RPCSEC_GSS does the same.
//!
//! Thread-safe: the only state is the send sequence number, an atomic.
//! RPCSEC_GSS asks for neither replay nor sequence detection (RFC 2203
//! §5.2.2: its own sequence numbers and window do that job), so a token's
//! SND_SEQ is not checked on receipt, as MIT's library does not either.

use std::sync::atomic::{AtomicU64, Ordering};

use super::enctype::{CryptoError, Enctype, UsageKeys, BLOCK};

/// Key usages (RFC 4121 §2).
const KG_USAGE_ACCEPTOR_SEAL: u32 = 22;
const KG_USAGE_ACCEPTOR_SIGN: u32 = 23;
const KG_USAGE_INITIATOR_SEAL: u32 = 24;
const KG_USAGE_INITIATOR_SIGN: u32 = 25;

/// Token flags (RFC 4121 §4.2.2).
const FLAG_SENT_BY_ACCEPTOR: u8 = 0x01;
const FLAG_SEALED: u8 = 0x02;
const FLAG_ACCEPTOR_SUBKEY: u8 = 0x04;

const TOK_MIC: [u8; 2] = [0x04, 0x04];
const TOK_WRAP: [u8; 2] = [0x05, 0x04];
const HEADER: usize = 16;

/// The keys an established context hands over (its lucid export).
#[derive(Debug, Clone)]
pub struct CfxKeys<'a> {
    /// True on the side that initiated the context (the client).
    pub initiator: bool,
    /// The first sequence number to send.
    pub send_seq: u64,
    /// The context key's enctype and bytes (the initiator's subkey or the
    /// session key).
    pub ctx_key: (u32, &'a [u8]),
    /// The acceptor's subkey, when it asserted one.
    pub acceptor_subkey: Option<(u32, &'a [u8])>,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CfxError {
    /// An enctype this module does not do (the caller keeps MIT's path).
    Unsupported(u32),
    /// The token is not well formed: wrong length, identifier, flags,
    /// filler, EC or RRC.
    Malformed(String),
    /// A checksum or decryption failed.
    Crypto(CryptoError),
}

impl std::fmt::Display for CfxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CfxError::Unsupported(e) => write!(f, "enctype {e} is not done in-process"),
            CfxError::Malformed(d) => write!(f, "malformed token: {d}"),
            CfxError::Crypto(e) => write!(f, "token does not check: {e}"),
        }
    }
}

/// The four per-usage key sets of one protocol key.
#[derive(Debug)]
struct KeySet {
    send_seal: UsageKeys,
    send_sign: UsageKeys,
    recv_seal: UsageKeys,
    recv_sign: UsageKeys,
}

impl KeySet {
    fn new(initiator: bool, (etype, key): (u32, &[u8])) -> Result<Self, CfxError> {
        let enctype = Enctype::from_id(etype).ok_or(CfxError::Unsupported(etype))?;
        let d = |usage| UsageKeys::derive(enctype, key, usage).map_err(CfxError::Crypto);
        let (send, recv) = if initiator {
            (
                (KG_USAGE_INITIATOR_SEAL, KG_USAGE_INITIATOR_SIGN),
                (KG_USAGE_ACCEPTOR_SEAL, KG_USAGE_ACCEPTOR_SIGN),
            )
        } else {
            (
                (KG_USAGE_ACCEPTOR_SEAL, KG_USAGE_ACCEPTOR_SIGN),
                (KG_USAGE_INITIATOR_SEAL, KG_USAGE_INITIATOR_SIGN),
            )
        };
        Ok(Self {
            send_seal: d(send.0)?,
            send_sign: d(send.1)?,
            recv_seal: d(recv.0)?,
            recv_sign: d(recv.1)?,
        })
    }
}

/// One context's per-message tokens.
#[derive(Debug)]
pub struct CfxContext {
    initiator: bool,
    send_seq: AtomicU64,
    ctx: KeySet,
    acceptor: Option<KeySet>,
}

impl CfxContext {
    /// The context of `keys`, or why its tokens are left to MIT's library.
    pub fn new(keys: &CfxKeys<'_>) -> Result<Self, CfxError> {
        let ctx = KeySet::new(keys.initiator, keys.ctx_key)?;
        let acceptor = keys
            .acceptor_subkey
            .map(|k| KeySet::new(keys.initiator, k))
            .transpose()?;
        Ok(Self {
            initiator: keys.initiator,
            send_seq: AtomicU64::new(keys.send_seq),
            ctx,
            acceptor,
        })
    }

    /// The enctype of the key this side sends with.
    pub fn enctype(&self) -> Enctype {
        self.send_keys().send_seal.enctype()
    }

    /// RFC 4121 §2: with an acceptor subkey, both sides use it, and say so.
    fn send_keys(&self) -> &KeySet {
        self.acceptor.as_ref().unwrap_or(&self.ctx)
    }

    fn send_flags(&self) -> u8 {
        let mut flags = 0;
        if !self.initiator {
            flags |= FLAG_SENT_BY_ACCEPTOR;
        }
        if self.acceptor.is_some() {
            flags |= FLAG_ACCEPTOR_SUBKEY;
        }
        flags
    }

    /// The keys a received token with `flags` was made with (as MIT: the
    /// acceptor subkey when the token says so and there is one).
    fn recv_keys(&self, flags: u8) -> Result<&KeySet, CfxError> {
        if (flags & FLAG_SENT_BY_ACCEPTOR != 0) != self.initiator {
            return Err(CfxError::Malformed(format!(
                "flags {flags:#04x}: the token says it was sent by this side"
            )));
        }
        match (flags & FLAG_ACCEPTOR_SUBKEY != 0, &self.acceptor) {
            (true, Some(k)) => Ok(k),
            (true, None) => Err(CfxError::Malformed(
                "the token uses an acceptor subkey the context does not have".into(),
            )),
            (false, _) => Ok(&self.ctx),
        }
    }

    fn next_seq(&self) -> u64 {
        self.send_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Appends to `out` the MIC token of the concatenation of `parts`.
    pub fn get_mic(&self, parts: &[&[u8]], out: &mut Vec<u8>) {
        let mut header = [0u8; HEADER];
        header[..2].copy_from_slice(&TOK_MIC);
        header[2] = self.send_flags();
        header[3..8].fill(0xFF);
        header[8..].copy_from_slice(&self.next_seq().to_be_bytes());
        let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
        all.extend_from_slice(parts);
        all.push(&header);
        let tag = self.send_keys().send_sign.checksum(&all);
        out.extend_from_slice(&header);
        out.extend_from_slice(tag.as_slice());
    }

    /// Checks the peer's MIC `token` of `msg`.
    pub fn verify_mic(&self, msg: &[u8], token: &[u8]) -> Result<(), CfxError> {
        let header = token
            .get(..HEADER)
            .ok_or_else(|| CfxError::Malformed(format!("a {}-byte MIC token", token.len())))?;
        if header[..2] != TOK_MIC || header[3..8] != [0xFF; 5] {
            return Err(CfxError::Malformed(
                "not a MIC token (identifier or filler)".into(),
            ));
        }
        let keys = self.recv_keys(header[2])?;
        if header[2] & FLAG_SEALED != 0 {
            return Err(CfxError::Malformed("a MIC token marked sealed".into()));
        }
        if keys
            .recv_sign
            .verify_checksum(&[msg, header], &token[HEADER..])
        {
            Ok(())
        } else {
            Err(CfxError::Crypto(CryptoError::BadIntegrity))
        }
    }

    /// Appends to `out` the Wrap token of the concatenation of `parts`:
    /// encrypted when `conf` (RFC 4121 §4.2.4: confounder, data, the header
    /// again, all encrypted, then the tag), else the data in clear and its
    /// checksum. EC 0 (AES needs no filler) and RRC 0 (no rotation).
    pub fn wrap(&self, parts: &[&[u8]], conf: bool, out: &mut Vec<u8>) {
        let keys = &self.send_keys().send_seal;
        let mac = keys.enctype().mac_len();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut header = [0u8; HEADER];
        header[..2].copy_from_slice(&TOK_WRAP);
        header[2] = self.send_flags() | if conf { FLAG_SEALED } else { 0 };
        header[3] = 0xFF;
        header[8..].copy_from_slice(&self.next_seq().to_be_bytes());
        out.reserve(HEADER + BLOCK + len + HEADER + mac);
        if conf {
            out.extend_from_slice(&header);
            let start = out.len();
            let mut confounder = [0u8; BLOCK];
            fill_random(&mut confounder);
            out.extend_from_slice(&confounder);
            for p in parts {
                out.extend_from_slice(p);
            }
            out.extend_from_slice(&header);
            keys.encrypt_in_place(out, start);
        } else {
            // The checksum covers the data, then the header with EC and
            // RRC zero; the header sent carries EC = the checksum's length.
            let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
            all.extend_from_slice(parts);
            all.push(&header);
            let tag = keys.checksum(&all);
            header[4..6].copy_from_slice(&(mac as u16).to_be_bytes());
            out.extend_from_slice(&header);
            for p in parts {
                out.extend_from_slice(p);
            }
            out.extend_from_slice(tag.as_slice());
        }
    }

    /// Opens the peer's Wrap `token` into `out` (appended): returns the
    /// range of `out` that holds the data and whether it was encrypted. An
    /// encrypted, unrotated token (what MIT's `gss_wrap` sends) is
    /// decrypted straight from `token`, no copy of it made: its
    /// plaintext, confounder first, starts where `out` ended. Any other is
    /// copied and opened in place. On an error `out` is as it was.
    pub fn unwrap_append(
        &self,
        token: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(std::ops::Range<usize>, bool), CfxError> {
        let at = out.len();
        let direct = token.len() > HEADER
            && token[2] & FLAG_SEALED != 0
            && usize::from(u16::from_be_bytes([token[6], token[7]])) % (token.len() - HEADER) == 0;
        if !direct {
            out.extend_from_slice(token);
            return match self.unwrap_in_place(&mut out[at..]) {
                Ok((r, conf)) => Ok((at + r.start..at + r.end, conf)),
                Err(e) => {
                    out.truncate(at);
                    Err(e)
                }
            };
        }
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&token[..HEADER]);
        if header[..2] != TOK_WRAP || header[3] != 0xFF {
            return Err(CfxError::Malformed(
                "not a Wrap token (identifier or filler)".into(),
            ));
        }
        let keys = &self.recv_keys(header[2])?.recv_seal;
        keys.decrypt_append(&token[HEADER..], out)
            .map_err(CfxError::Crypto)?;
        match sealed_data(&header, &out[at..]) {
            Ok(r) => Ok((at + r.start..at + r.end, true)),
            Err(e) => {
                out.truncate(at);
                Err(e)
            }
        }
    }

    /// Opens the peer's Wrap `token` in place: returns the range of
    /// `token` that holds the data and whether it was encrypted. A rotated
    /// token (RRC, §4.2.5) is turned back first.
    pub fn unwrap_in_place(
        &self,
        token: &mut [u8],
    ) -> Result<(std::ops::Range<usize>, bool), CfxError> {
        let malformed = |d: String| CfxError::Malformed(d);
        if token.len() < HEADER {
            return Err(malformed(format!("a {}-byte Wrap token", token.len())));
        }
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&token[..HEADER]);
        if header[..2] != TOK_WRAP || header[3] != 0xFF {
            return Err(malformed("not a Wrap token (identifier or filler)".into()));
        }
        let flags = header[2];
        let keys = &self.recv_keys(flags)?.recv_seal;
        let mac = keys.enctype().mac_len();
        let ec = usize::from(u16::from_be_bytes([header[4], header[5]]));
        let rrc = usize::from(u16::from_be_bytes([header[6], header[7]]));
        let body = &mut token[HEADER..];
        if !body.is_empty() {
            body.rotate_left(rrc % body.len());
        }
        if flags & FLAG_SEALED != 0 {
            let n = keys.decrypt_in_place(body).map_err(CfxError::Crypto)?;
            let r = sealed_data(&header, &body[..n])?;
            Ok((HEADER + r.start..HEADER + r.end, true))
        } else {
            if ec != mac {
                return Err(malformed(format!("EC {ec} instead of {mac}")));
            }
            let data_end = body
                .len()
                .checked_sub(mac)
                .ok_or_else(|| malformed("shorter than its checksum".into()))?;
            let (data, tag) = body.split_at(data_end);
            let mut zeroed = header;
            zeroed[4..8].fill(0);
            if !keys.verify_checksum(&[data, &zeroed], tag) {
                return Err(CfxError::Crypto(CryptoError::BadIntegrity));
            }
            Ok((HEADER..HEADER + data_end, false))
        }
    }
}

/// The data's range in the decrypted body `plain` of a sealed Wrap token
/// whose header is `header`: confounder, data, EC bytes of filler, the
/// header again (RFC 4121 §4.2.4), which must be the outer one but for RRC
/// (§4.2.5).
fn sealed_data(header: &[u8; HEADER], plain: &[u8]) -> Result<std::ops::Range<usize>, CfxError> {
    let ec = usize::from(u16::from_be_bytes([header[4], header[5]]));
    let data_end = plain
        .len()
        .checked_sub(ec + HEADER)
        .filter(|&end| end >= BLOCK)
        .ok_or_else(|| CfxError::Malformed(format!("EC {ec} longer than the data")))?;
    let inner = &plain[data_end + ec..];
    if inner[..6] != header[..6] || inner[8..] != header[8..] {
        return Err(CfxError::Malformed(
            "the encrypted header differs from the token's".into(),
        ));
    }
    Ok(BLOCK..data_end)
}

/// Confounders: random bytes from the kernel (getrandom(2)), taken a page
/// at a time per thread so a call costs no system call.
fn fill_random(out: &mut [u8; BLOCK]) {
    use std::cell::RefCell;
    const POOL: usize = 4096;
    thread_local! {
        static POOL_BUF: RefCell<(Vec<u8>, usize)> = const { RefCell::new((Vec::new(), 0)) };
    }
    POOL_BUF.with(|p| {
        let mut p = p.borrow_mut();
        let (buf, at) = &mut *p;
        if buf.len() != POOL || *at + BLOCK > POOL {
            buf.resize(POOL, 0);
            let mut filled = 0;
            while filled < POOL {
                // SAFETY: the pointer and length are the rest of `buf`.
                let n =
                    unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), POOL - filled, 0) };
                if n <= 0 {
                    // EINTR, or no getrandom(2): the time and address keep
                    // confounders distinct (they need not be secret: RFC 3961
                    // §5.3 uses them against chosen-plaintext patterns).
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_nanos())
                        .unwrap_or_default();
                    for (i, b) in buf[filled..].iter_mut().enumerate() {
                        *b = (t >> ((i % 16) * 8)) as u8 ^ i as u8;
                    }
                    break;
                }
                filled += n as usize;
            }
            *at = 0;
        }
        out.copy_from_slice(&buf[*at..*at + BLOCK]);
        *at += BLOCK;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(etype: u32, subkey: bool) -> (CfxContext, CfxContext) {
        let key = vec![0x5a; Enctype::from_id(etype).expect("etype").key_len()];
        let sub = vec![0xa5; key.len()];
        let keys = |initiator| CfxKeys {
            initiator,
            send_seq: if initiator { 1000 } else { 7 },
            ctx_key: (etype, &key[..]),
            acceptor_subkey: subkey.then_some((etype, &sub[..])),
        };
        (
            CfxContext::new(&keys(true)).expect("initiator"),
            CfxContext::new(&keys(false)).expect("acceptor"),
        )
    }

    #[test]
    fn tokens_cross_between_initiator_and_acceptor() {
        for etype in 17..=20 {
            for subkey in [false, true] {
                let (a, b) = pair(etype, subkey);
                let msg = b"an RPC call's header, checksummed";
                let mut mic = Vec::new();
                a.get_mic(&[&msg[..4], &msg[4..]], &mut mic);
                assert_eq!(&mic[8..16], &1000u64.to_be_bytes());
                b.verify_mic(msg, &mic).expect("MIC checks");
                assert!(a.verify_mic(msg, &mic).is_err(), "a side's own token");
                assert!(b.verify_mic(b"another", &mic).is_err());
                for conf in [true, false] {
                    let mut tok = Vec::new();
                    b.wrap(&[b"reply ", b"body"], conf, &mut tok);
                    let mut out = vec![7u8; 3];
                    let (range, sealed) = a.unwrap_append(&tok, &mut out).expect("unwraps");
                    assert_eq!((&out[range], sealed), (&b"reply body"[..], conf));
                    let (range, sealed) = a.unwrap_in_place(&mut tok).expect("unwraps");
                    assert_eq!((&tok[range], sealed), (&b"reply body"[..], conf));
                }
            }
        }
    }

    #[test]
    fn a_rotated_wrap_token_unwraps() {
        let (a, b) = pair(18, true);
        for conf in [true, false] {
            for rrc in [0usize, 1, 12, 28, 60, 1000] {
                let mut tok = Vec::new();
                b.wrap(&[b"rotated data"], conf, &mut tok);
                let body_len = tok.len() - HEADER;
                tok[HEADER..].rotate_right(rrc % body_len);
                tok[6..8].copy_from_slice(&(rrc as u16).to_be_bytes());
                let mut out = Vec::new();
                let (range, _) = a.unwrap_append(&tok, &mut out).expect("unwraps");
                assert_eq!(&out[range], b"rotated data", "RRC {rrc}");
                let (range, _) = a.unwrap_in_place(&mut tok).expect("unwraps");
                assert_eq!(&tok[range], b"rotated data", "RRC {rrc}");
            }
        }
    }

    #[test]
    fn hostile_tokens_are_errors_not_panics() {
        let (a, b) = pair(17, false);
        let mut good = Vec::new();
        b.wrap(&[b"0123456789abcdef0123"], true, &mut good);
        // Every truncation, every single-bit flip, and some EC/RRC values.
        for len in 0..good.len() {
            assert!(a.unwrap_in_place(&mut good[..len].to_vec()).is_err());
            assert!(a.verify_mic(b"x", &good[..len]).is_err());
        }
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 1;
            if at == 6 {
                // RRC 256: a whole turn of this 64-byte body, the same token.
                continue;
            }
            let mut out = vec![1];
            assert!(
                a.unwrap_append(&bad, &mut out).is_err(),
                "byte {at} flipped"
            );
            assert_eq!(out, [1]);
            assert!(a.unwrap_in_place(&mut bad).is_err(), "byte {at} flipped");
        }
        for ec in [1u16, 16, 40, 0xFFFF] {
            let mut bad = good.clone();
            bad[4..6].copy_from_slice(&ec.to_be_bytes());
            assert!(a.unwrap_append(&bad, &mut Vec::new()).is_err(), "EC {ec}");
            assert!(a.unwrap_in_place(&mut bad).is_err(), "EC {ec}");
        }
        let mut integ = Vec::new();
        b.wrap(&[b"data"], false, &mut integ);
        for ec in [0u16, 11, 13, 0xFFFF] {
            let mut bad = integ.clone();
            bad[4..6].copy_from_slice(&ec.to_be_bytes());
            assert!(a.unwrap_in_place(&mut bad).is_err(), "integrity EC {ec}");
        }
        // A token claiming an acceptor subkey the context lacks.
        let mut bad = integ.clone();
        bad[2] |= FLAG_ACCEPTOR_SUBKEY;
        assert!(matches!(
            a.unwrap_in_place(&mut bad),
            Err(CfxError::Malformed(_))
        ));
        // Random garbage of many lengths.
        let mut x = 0x1234_5678u32;
        for len in 0..300 {
            let mut junk: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            if len >= 4 {
                junk[..2].copy_from_slice(&TOK_WRAP);
                junk[2] = FLAG_SENT_BY_ACCEPTOR | FLAG_SEALED;
                junk[3] = 0xFF;
            }
            let _ = a.verify_mic(&junk, &junk);
            assert!(a.unwrap_append(&junk, &mut Vec::new()).is_err());
            assert!(a.unwrap_in_place(&mut junk).is_err());
        }
    }

    #[test]
    fn unsupported_enctypes_are_left_to_mit() {
        let key = [0u8; 24];
        let keys = CfxKeys {
            initiator: true,
            send_seq: 0,
            ctx_key: (16, &key),
            acceptor_subkey: None,
        };
        assert_eq!(
            CfxContext::new(&keys).err(),
            Some(CfxError::Unsupported(16))
        );
    }
}
