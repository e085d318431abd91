//! RPCSEC_GSS on one connection of the pipelined transport: the context a
//! channel sets up when it connects, how each call the transport writes
//! is sealed (at send time, so every transmission has a sequence number
//! of its own, RFC 2203 §5.3.3.1), and how each reply is opened before
//! the driver decodes it.
//!
//! Calls reach the transport already encoded for AUTH_SYS (the call header
//! after the XID, the credential and verifier, the arguments, and a
//! WRITE's data apart): the sealer takes the procedure and the arguments
//! from that and builds the RPCSEC_GSS message around them. A reply is
//! opened back into the plain shape the driver decodes (an accepted reply
//! with an AUTH_NONE verifier and the procedure's results), so nothing
//! after it knows which flavor carried the call.

use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use directnfs_wire::rpc::auth::AuthFlavor;
use directnfs_wire::rpc::{AcceptedReply, AuthStat, RejectedReply, ReplyBody, ReplyHeader};
use directnfs_wire::xdr::pad_len;
use directnfs_wire::{Decode, XdrReader};

use super::rpcsec::GssContext;
use super::{Flavor, GssConnection, SecurityError};

/// Sequence numbers kept per XID: the transmissions of one call on one
/// connection whose reply may still come (a call re-sent after JUKEBOX).
const SENT_PER_XID: usize = 8;

/// Renewal margin: a context is replaced this long before it expires, at
/// most (a quarter of its life when that is shorter). Within 30 s of a
/// ticket's end MIT's library gets a new one from the client keytab
/// (`KRB5_CLIENT_KTNAME`) when it makes the next context, so the margin
/// stays below that.
const RENEW_MARGIN: Duration = Duration::from_secs(20);

/// A context is never replaced sooner than this after it was made (a
/// ticket about to end, with no keytab to get another: no storm of
/// connections, one per second at most until it ends).
const MIN_CONTEXT_USE: Duration = Duration::from_secs(1);

static CONTEXTS: AtomicU64 = AtomicU64::new(0);
static RENEWALS: AtomicU64 = AtomicU64::new(0);
static LOST: AtomicU64 = AtomicU64::new(0);
static RENEW_EARLY: AtomicBool = AtomicBool::new(true);

/// Process-wide counts of the transport's RPCSEC_GSS contexts (all
/// mounts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GssCounters {
    /// Contexts set up on transport connections (one per connection).
    pub contexts: u64,
    /// Connections replaced because their context was about to expire
    /// (renewal before the ticket's end).
    pub renewals: u64,
    /// Connections replaced because the server said it no longer holds
    /// a context that had worked (CTXPROBLEM, CREDPROBLEM).
    pub lost: u64,
}

/// The counts so far.
pub fn counters() -> GssCounters {
    GssCounters {
        contexts: CONTEXTS.load(Ordering::Relaxed),
        renewals: RENEWALS.load(Ordering::Relaxed),
        lost: LOST.load(Ordering::Relaxed),
    }
}

/// Whether a context is replaced before it expires (the default). Off
/// only for tests that need the server's own word at expiry (its
/// CTXPROBLEM or CREDPROBLEM, taken by the lost-context path).
pub fn set_renew_before_expiry(on: bool) {
    RENEW_EARLY.store(on, Ordering::Relaxed);
}

/// When the `n`th context, made at `made` and living `lifetime`, should
/// be replaced: [`RENEW_MARGIN`] (or a quarter of its life) before its
/// end, and up to a third of that again earlier by `n` (contexts made
/// together, a mount's connections, are not all replaced at once: the
/// others carry the calls meanwhile); never before [`MIN_CONTEXT_USE`].
fn renewal_time(made: Instant, lifetime: Duration, n: u64) -> Instant {
    let margin = RENEW_MARGIN.min(lifetime / 4);
    let stagger = margin / 12 * (n % 4) as u32;
    made + lifetime
        .saturating_sub(margin + stagger)
        .max(MIN_CONTEXT_USE)
}

/// What a transport needs to set up a context on each connection.
#[derive(Debug, Clone)]
pub struct GssSetup {
    /// krb5, krb5i or krb5p.
    pub flavor: Flavor,
    /// Per network path, the server's host name: its principal is
    /// `nfs/<host>`.
    pub hosts: Vec<String>,
}

/// One connection's context and the sequence numbers of the calls sent
/// on it that await their replies.
#[derive(Debug)]
pub struct ConnectionSealer {
    context: GssContext,
    window: u32,
    /// XID → sequence numbers of its transmissions on this connection.
    sent: Mutex<HashMap<u32, Vec<u32>>>,
    /// A reply on this context passed its checks: the context worked.
    proven: AtomicBool,
    /// When to replace the connection for a new context (before the
    /// ticket ends); `None`: the context has no end.
    renew_at: Option<Instant>,
    /// The renewal was counted (once per context).
    renewing: AtomicBool,
    /// When the context expires; `None`: no end given.
    ends: Option<Instant>,
}

impl ConnectionSealer {
    /// Sets up a context on the fresh connection `stream` to program
    /// `prog` version `vers` of `host` and gives the stream back with it.
    ///
    /// `previous`: the context of the connection this one replaces. When
    /// that one was replaced for its renewal, a context that ends no later
    /// than it (the library had no newer ticket: no client keytab, nobody
    /// ran kinit) is not replaced before its end: another connection would
    /// only get the same ticket again.
    pub fn establish(
        stream: TcpStream,
        host: &str,
        prog_vers: (u32, u32),
        flavor: Flavor,
        timeout: Duration,
        previous: Option<&ConnectionSealer>,
    ) -> Result<(TcpStream, Self), SecurityError> {
        let conn = GssConnection::establish(stream, host, prog_vers, flavor, timeout)?;
        let (stream, context) = conn.into_parts();
        let window = context.window().limit();
        let n = CONTEXTS.fetch_add(1, Ordering::Relaxed);
        let made = Instant::now();
        let ends = context.lifetime().map(|life| made + life);
        // Only a renewal's replacement is judged so: a connection replaced
        // for another reason may well get the same ticket again.
        let replaced = previous.filter(|p| p.renewing.load(Ordering::Relaxed));
        let no_newer = match (ends, replaced.and_then(|p| p.ends)) {
            (Some(new), Some(old)) => new <= old + Duration::from_secs(1),
            _ => false,
        };
        if no_newer {
            tracing::warn!(
                host,
                "the Kerberos ticket ends in {:?} and no newer one is available (kinit, or a \
                 client keytab in KRB5_CLIENT_KTNAME): this connection keeps its context",
                context.lifetime().unwrap_or_default()
            );
        }
        let renew_at = context
            .lifetime()
            .filter(|_| !no_newer)
            .map(|life| renewal_time(made, life, n));
        tracing::debug!(
            host,
            lifetime = ?context.lifetime(),
            "RPCSEC_GSS context set up on a new connection"
        );
        Ok((
            stream,
            Self {
                context,
                window,
                sent: Mutex::new(HashMap::new()),
                proven: AtomicBool::new(false),
                renew_at,
                renewing: AtomicBool::new(false),
                ends,
            },
        ))
    }

    /// True when the context is about to expire: the connection should be
    /// replaced (a new context, from a ticket that is still valid or
    /// that the library gets anew from the client keytab) before the
    /// next call is written on it. Counted once per context.
    pub fn renewal_due(&self) -> bool {
        let due = RENEW_EARLY.load(Ordering::Relaxed)
            && self.renew_at.is_some_and(|at| Instant::now() >= at);
        if due && !self.renewing.swap(true, Ordering::Relaxed) {
            RENEWALS.fetch_add(1, Ordering::Relaxed);
        }
        due
    }

    /// The server's sequence window for this context.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// Seals the call `xid` whose AUTH_SYS encoding is `body` (from the
    /// message type on: five words, credential, verifier, arguments) and
    /// `payload` (a WRITE's data, unpadded): the message to write after
    /// the record mark, from the XID on.
    pub fn seal(
        &self,
        xid: u32,
        body: &[u8],
        payload: Option<&[u8]>,
    ) -> Result<Vec<u8>, SecurityError> {
        let (prog_vers_proc, args) =
            split_call_body(body).ok_or_else(|| SecurityError::Malformed {
                server: String::new(),
                detail: "internal: a call body too short to seal".into(),
            })?;
        let sealed = match payload {
            None => self.context.seal(xid, prog_vers_proc, &[args])?,
            Some(p) => self.context.seal(
                xid,
                prog_vers_proc,
                &[args, p, &[0u8; 3][..pad_len(p.len())]],
            )?,
        };
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        let seqs = sent.entry(xid).or_default();
        if seqs.len() >= SENT_PER_XID {
            seqs.remove(0);
        }
        seqs.push(sealed.seq_num);
        drop(sent);
        // `seal` encodes from the XID on: the transport writes it whole.
        Ok(sealed.message)
    }

    /// Opens the reply record `rec` (from the XID on): a successful reply
    /// is checked (its verifier against the sequence number of a
    /// transmission of its call, its body's checksum, or unwrapped) and
    /// given back as a plain accepted reply with the procedure's results;
    /// any other reply (AUTH_ERROR, PROG_UNAVAIL, ...) is given back as it
    /// came. A reply that fails its checks becomes an AUTH_ERROR
    /// (AUTH_BADVERF) reply to its call: its results are never used.
    pub fn open(&self, rec: &[u8], max_body: usize) -> Result<Option<Vec<u8>>, SecurityError> {
        let mut r = XdrReader::new(rec);
        let Ok(header) = ReplyHeader::decode(&mut r) else {
            return Ok(None);
        };
        if !matches!(
            header.body,
            ReplyBody::Accepted {
                stat: AcceptedReply::Success,
                ..
            }
        ) {
            return Ok(None);
        }
        let xid = header.xid;
        let seqs = self
            .sent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&xid)
            .unwrap_or_default();
        let mut last = None;
        for &seq in seqs.iter().rev() {
            // The plain reply header, then the results opened after it.
            let mut plain = Vec::with_capacity(24 + rec.len());
            for word in [xid, 1, 0, AuthFlavor::AUTH_NONE.0, 0, 0] {
                plain.extend_from_slice(&word.to_be_bytes());
            }
            match self.context.open_into(rec, xid, seq, max_body, &mut plain) {
                Ok(()) => {
                    self.proven.store(true, Ordering::Relaxed);
                    return Ok(Some(plain));
                }
                // Another transmission's number may be the one answered.
                Err(e @ SecurityError::BadVerifier { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| SecurityError::Malformed {
            server: String::new(),
            detail: format!("reply XID {xid:#x} answers no call sealed on this connection"),
        }))
    }
}

impl ConnectionSealer {
    /// The server's word that it no longer holds this context (or cannot
    /// use its credential), when the context had worked before: the
    /// connection should be replaced, with a new context, and its calls
    /// re-sent (RFC 2203 §5.3.3.3). A context that never worked gets no
    /// second one: its calls fail with the AUTH_ERROR (no loop of
    /// contexts the server refuses at once).
    pub fn lost(&self, rec: &[u8]) -> Option<AuthStat> {
        let status = context_problem(rec)?;
        let lost = self.proven.load(Ordering::Relaxed).then_some(status);
        if lost.is_some() {
            LOST.fetch_add(1, Ordering::Relaxed);
        }
        lost
    }
}

/// RPCSEC_GSS_CREDPROBLEM or RPCSEC_GSS_CTXPROBLEM, when `rec` is an
/// AUTH_ERROR reply with one of them.
fn context_problem(rec: &[u8]) -> Option<AuthStat> {
    let header = ReplyHeader::decode(&mut XdrReader::new(rec)).ok()?;
    match header.body {
        ReplyBody::Denied(RejectedReply::AuthError(
            s @ (AuthStat::RPCSEC_GSS_CREDPROBLEM | AuthStat::RPCSEC_GSS_CTXPROBLEM),
        )) => Some(s),
        _ => None,
    }
}

/// The AUTH_ERROR reply that stands for a reply to `xid` that failed its
/// checks: the call fails with it, its results unused.
pub fn rejected_reply(xid: u32) -> Vec<u8> {
    let mut plain = Vec::with_capacity(20);
    for word in [xid, 1, 1, 1, AuthStat::AUTH_BADVERF.0] {
        plain.extend_from_slice(&word.to_be_bytes());
    }
    plain
}

/// A call's program, version and procedure.
type ProgVersProc = (u32, u32, u32);

/// The program, version and procedure of an AUTH_SYS call body (from the
/// message type on), and its arguments.
fn split_call_body(body: &[u8]) -> Option<(ProgVersProc, &[u8])> {
    let word = |at: usize| -> Option<u32> {
        let b = body.get(at..at + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (prog, vers, proc_) = (word(8)?, word(12)?, word(16)?);
    let mut at = 20;
    // The credential, then the verifier: flavor, length, padded body.
    for _ in 0..2 {
        let len = word(at + 4)? as usize;
        at = at.checked_add(8 + len + pad_len(len))?;
    }
    Some(((prog, vers, proc_), body.get(at..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_body_splits_into_procedure_and_arguments() {
        let mut body = Vec::new();
        for w in [0u32, 2, 100003, 3, 6] {
            body.extend_from_slice(&w.to_be_bytes());
        }
        // AUTH_SYS credential of 5 bytes (padded to 8), AUTH_NONE verifier.
        body.extend_from_slice(&1u32.to_be_bytes());
        body.extend_from_slice(&5u32.to_be_bytes());
        body.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 0]);
        body.extend_from_slice(&[0; 8]);
        body.extend_from_slice(b"args");
        let (pvp, args) = split_call_body(&body).expect("splits");
        assert_eq!(pvp, (100003, 3, 6));
        assert_eq!(args, b"args");
        assert!(
            split_call_body(&body[..30]).is_none(),
            "cut in the credential"
        );
        let mut huge = body.clone();
        huge[24..28].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(split_call_body(&huge).is_none(), "a length past the end");
    }

    #[test]
    fn a_context_is_renewed_before_it_expires() {
        let t = Instant::now();
        let s = Duration::from_secs;
        // A 10-hour ticket: 20 s before its end.
        assert_eq!(renewal_time(t, s(36_000), 0), t + s(35_980));
        // A one-minute ticket: a quarter of its life before its end.
        assert_eq!(renewal_time(t, s(60), 4), t + s(45));
        // Contexts made together are replaced a little apart, the last a
        // third of the margin earlier.
        assert_eq!(
            renewal_time(t, s(60), 1),
            t + s(60) - Duration::from_millis(16_250)
        );
        assert_eq!(
            renewal_time(t, s(60), 3),
            t + s(60) - Duration::from_millis(18_750)
        );
        // A ticket about to end: not sooner than a second from now.
        assert_eq!(renewal_time(t, Duration::from_millis(400), 2), t + s(1));
        assert_eq!(renewal_time(t, s(0), 0), t + s(1));
    }

    #[test]
    fn only_credproblem_and_ctxproblem_mean_a_lost_context() {
        let denied = |status: AuthStat| {
            let mut rec = Vec::new();
            for w in [9u32, 1, 1, 1, status.0] {
                rec.extend_from_slice(&w.to_be_bytes());
            }
            rec
        };
        assert_eq!(
            context_problem(&denied(AuthStat::RPCSEC_GSS_CTXPROBLEM)),
            Some(AuthStat::RPCSEC_GSS_CTXPROBLEM)
        );
        assert_eq!(
            context_problem(&denied(AuthStat::RPCSEC_GSS_CREDPROBLEM)),
            Some(AuthStat::RPCSEC_GSS_CREDPROBLEM)
        );
        assert_eq!(context_problem(&denied(AuthStat::AUTH_TOOWEAK)), None);
        assert_eq!(context_problem(&rejected_reply(9)), None);
        // An accepted reply, and garbage.
        let mut ok = Vec::new();
        for w in [9u32, 1, 0, 0, 0, 0] {
            ok.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(context_problem(&ok), None);
        assert_eq!(context_problem(&[1, 2, 3]), None);
    }

    #[test]
    fn a_reply_that_fails_its_checks_becomes_auth_badverf() {
        let rec = rejected_reply(0x1234);
        let h = ReplyHeader::decode(&mut XdrReader::new(&rec)).expect("decodes");
        assert_eq!(h.xid, 0x1234);
        assert!(matches!(
            h.body,
            ReplyBody::Denied(directnfs_wire::rpc::RejectedReply::AuthError(
                AuthStat::AUTH_BADVERF
            ))
        ));
    }
}
