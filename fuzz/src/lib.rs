//! Shared checks for the fuzz targets, so each target stays three lines.
//!
//! Every check may return early on an error; it panics (a fuzz finding)
//! only when a decoder panics or breaks one of its promises.
#![forbid(unsafe_code)]

pub use directnfs_wire::{mount, nfs3, nfs4, nlm4, portmap, rpc};

use directnfs_wire::rpc::RecordReader;
use directnfs_wire::xdr::{decode_exact, to_bytes, Decode, Encode, XdrReader};

/// Decodes `data` as `T`; if that works, the value must survive its own
/// encoding unchanged (decoding normalises, e.g. booleans, so compare
/// values, not bytes).
pub fn roundtrip<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let Ok(v) = decode_exact::<T>(data, "fuzz") else {
        return;
    };
    let again = decode_exact::<T>(&to_bytes(&v), "fuzz re-encode");
    assert_eq!(again.as_ref(), Ok(&v));
}

/// The hot-path READ decoder: the first 4 bytes are the requested count,
/// the rest the reply. Data never exceeds the request, `count` always
/// equals the data length, and the head-only decoder agrees.
pub fn read_reply(data: &[u8]) {
    let Some((max, reply)) = data.split_first_chunk::<4>() else {
        return;
    };
    let max = u32::from_be_bytes(*max) & 0x000f_ffff;
    let head = nfs3::decode_read_reply_head(&mut XdrReader::new(reply), max);
    let Ok(full) = nfs3::decode_read_reply(&mut XdrReader::new(reply), max) else {
        return;
    };
    let head = head.ok();
    assert_eq!(head.map(|h| h.status), Some(full.status));
    if let Some(ok) = full.ok {
        assert!(ok.data.len() <= max as usize);
        assert_eq!(ok.count as usize, ok.data.len());
        assert_eq!(head.and_then(|h| h.ok).map(|h| h.count), Some(ok.count));
    }
}

/// The hot-path WRITE decoder agrees with `WRITE3res`.
pub fn write_reply(data: &[u8]) {
    let fast = nfs3::decode_write_reply(&mut XdrReader::new(data));
    let slow = nfs3::WRITE3res::decode(&mut XdrReader::new(data));
    assert_eq!(fast.is_ok(), slow.is_ok());
    if let (Ok(f), Ok(s)) = (fast, slow) {
        assert_eq!(f.status, s.status());
        assert_eq!(f.ok.map(|o| o.verf), s.ok().map(|o| o.verf));
    }
}

/// The hot-path COMMIT decoder agrees with `COMMIT3res`.
pub fn commit_reply(data: &[u8]) {
    let fast = nfs3::decode_commit_reply(&mut XdrReader::new(data));
    let slow = nfs3::COMMIT3res::decode(&mut XdrReader::new(data));
    assert_eq!(fast.is_ok(), slow.is_ok());
    if let (Ok(f), Ok(s)) = (fast, slow) {
        assert_eq!(f.verf, s.ok().map(|o| o.verf));
    }
}

/// NFSv4.1 COMPOUND4res. First byte 0: the plain decoder, whose values
/// survive their own encoding. Else the low 3 bits give how many of the
/// next bytes name operations sent (each picks one of the implemented
/// operations), and the reply that follows is decoded against them: an
/// accepted reply answers at most those operations, in their order (or
/// OP_ILLEGAL), stops at its first failure, and reads as the plain
/// decoder reads it.
pub fn nfs4_compound_res(data: &[u8]) {
    use nfs4::{nfs_opnum4, COMPOUND4res};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        return roundtrip::<COMPOUND4res>(rest);
    }
    let n = usize::from(mode & 7).min(rest.len());
    let (ops, reply) = rest.split_at(n);
    let sent: Vec<nfs_opnum4> = ops.iter().map(|b| IMPLEMENTED_OPS[usize::from(*b) % IMPLEMENTED_OPS.len()]).collect();
    let Ok(res) = COMPOUND4res::decode_expecting(&mut XdrReader::new(reply), &sent) else {
        return;
    };
    assert!(res.resarray.len() <= sent.len());
    for (r, op) in res.resarray.iter().zip(&sent) {
        assert!(r.opnum() == *op || r.opnum() == nfs_opnum4::OP_ILLEGAL);
    }
    for r in res.resarray.iter().rev().skip(1) {
        assert!(r.status().is_ok(), "a result after a failure");
    }
    if let Some(last) = res.resarray.last() {
        assert_eq!(last.status(), res.status);
    }
    let plain = COMPOUND4res::decode(&mut XdrReader::new(reply));
    assert_eq!(plain.as_ref().ok(), Some(&res));
}

/// The operations `nfs_resop4` decodes, for `nfs4_compound_res`.
const IMPLEMENTED_OPS: &[nfs4::nfs_opnum4] = &[
    nfs4::nfs_opnum4::OP_ACCESS,
    nfs4::nfs_opnum4::OP_CLOSE,
    nfs4::nfs_opnum4::OP_COMMIT,
    nfs4::nfs_opnum4::OP_CREATE,
    nfs4::nfs_opnum4::OP_DELEGRETURN,
    nfs4::nfs_opnum4::OP_GETATTR,
    nfs4::nfs_opnum4::OP_GETFH,
    nfs4::nfs_opnum4::OP_LINK,
    nfs4::nfs_opnum4::OP_LOCK,
    nfs4::nfs_opnum4::OP_LOCKT,
    nfs4::nfs_opnum4::OP_LOCKU,
    nfs4::nfs_opnum4::OP_LOOKUP,
    nfs4::nfs_opnum4::OP_LOOKUPP,
    nfs4::nfs_opnum4::OP_OPEN,
    nfs4::nfs_opnum4::OP_PUTFH,
    nfs4::nfs_opnum4::OP_PUTROOTFH,
    nfs4::nfs_opnum4::OP_READ,
    nfs4::nfs_opnum4::OP_READDIR,
    nfs4::nfs_opnum4::OP_READLINK,
    nfs4::nfs_opnum4::OP_REMOVE,
    nfs4::nfs_opnum4::OP_RENAME,
    nfs4::nfs_opnum4::OP_RESTOREFH,
    nfs4::nfs_opnum4::OP_SAVEFH,
    nfs4::nfs_opnum4::OP_SETATTR,
    nfs4::nfs_opnum4::OP_WRITE,
    nfs4::nfs_opnum4::OP_BIND_CONN_TO_SESSION,
    nfs4::nfs_opnum4::OP_EXCHANGE_ID,
    nfs4::nfs_opnum4::OP_CREATE_SESSION,
    nfs4::nfs_opnum4::OP_DESTROY_SESSION,
    nfs4::nfs_opnum4::OP_FREE_STATEID,
    nfs4::nfs_opnum4::OP_SECINFO_NO_NAME,
    nfs4::nfs_opnum4::OP_SEQUENCE,
    nfs4::nfs_opnum4::OP_TEST_STATEID,
    nfs4::nfs_opnum4::OP_DESTROY_CLIENTID,
    nfs4::nfs_opnum4::OP_RECLAIM_COMPLETE,
];

/// Every NFSv4.1 per-operation result decoder (and `fattr4`), picked by
/// the first byte: each value survives its own encoding. One target for
/// all of them keeps the fuzzing time of CI where it was.
pub fn nfs4_op_res(data: &[u8]) {
    use nfs4::*;
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 29 {
        0 => roundtrip::<nfs_resop4>(rest),
        1 => roundtrip::<fattr4>(rest),
        2 => roundtrip::<EXCHANGE_ID4res>(rest),
        3 => roundtrip::<CREATE_SESSION4res>(rest),
        4 => roundtrip::<SEQUENCE4res>(rest),
        5 => roundtrip::<BIND_CONN_TO_SESSION4res>(rest),
        6 => roundtrip::<GETFH4res>(rest),
        7 => roundtrip::<GETATTR4res>(rest),
        8 => roundtrip::<SETATTR4res>(rest),
        9 => roundtrip::<ACCESS4res>(rest),
        10 => roundtrip::<OPEN4res>(rest),
        11 => roundtrip::<CLOSE4res>(rest),
        12 => roundtrip::<READ4res>(rest),
        13 => roundtrip::<WRITE4res>(rest),
        14 => roundtrip::<COMMIT4res>(rest),
        15 => roundtrip::<CREATE4res>(rest),
        16 => roundtrip::<REMOVE4res>(rest),
        17 => roundtrip::<RENAME4res>(rest),
        18 => roundtrip::<LINK4res>(rest),
        19 => roundtrip::<READDIR4res>(rest),
        20 => roundtrip::<LOCK4res>(rest),
        21 => roundtrip::<LOCKT4res>(rest),
        22 => roundtrip::<LOCKU4res>(rest),
        23 => roundtrip::<TEST_STATEID4res>(rest),
        24 => roundtrip::<SECINFO_NO_NAME4res>(rest),
        25 => roundtrip::<nfsstat4>(rest),
        26 => roundtrip::<bitmap4>(rest),
        27 => roundtrip::<READLINK4res>(rest),
        _ => roundtrip::<CB_COMPOUND4res>(rest),
    }
}

/// The NFSv4.1 hot-path reply decoders: the first byte picks READ (and its
/// head-only form), WRITE or COMMIT; for READ the next 4 bytes are the
/// count asked for. Data never exceeds the count, the head decoder agrees
/// with the full one, and each agrees with the general decoder.
pub fn nfs4_hotpath(data: &[u8]) {
    use nfs4::*;
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let sent = |last| [nfs_opnum4::OP_SEQUENCE, nfs_opnum4::OP_PUTFH, last];
    match which % 3 {
        0 => {
            let Some((max, reply)) = rest.split_first_chunk::<4>() else {
                return;
            };
            let max = u32::from_be_bytes(*max) & 0x000f_ffff;
            let head = decode_read_reply_head(&mut XdrReader::new(reply), max);
            let Ok(full) = decode_read_reply(&mut XdrReader::new(reply), max) else {
                return;
            };
            let head = head.expect("the head decodes where the whole reply does");
            assert_eq!((head.status, head.sequence, head.failed_op), (full.status, full.sequence, full.failed_op));
            assert_eq!(head.ok.map(|h| h.count as usize), full.ok.map(|o| o.data.len()));
            if let Some(ok) = full.ok {
                assert!(ok.data.len() <= max as usize);
            }
            agrees(reply, &sent(nfs_opnum4::OP_READ), full.status);
        }
        1 => {
            if let Ok(r) = decode_write_reply(&mut XdrReader::new(rest)) {
                agrees(rest, &sent(nfs_opnum4::OP_WRITE), r.status);
            }
        }
        _ => {
            if let Ok(r) = decode_commit_reply(&mut XdrReader::new(rest)) {
                agrees(rest, &sent(nfs_opnum4::OP_COMMIT), r.status);
            }
        }
    }
}

/// What a hot-path decoder accepted, the general decoder accepts with the
/// same status.
fn agrees(reply: &[u8], sent: &[nfs4::nfs_opnum4], status: nfs4::nfsstat4) {
    let general = nfs4::COMPOUND4res::decode_expecting(&mut XdrReader::new(reply), sent)
        .expect("the general decoder accepts what the hot path accepts");
    assert_eq!(general.status, status);
}

/// CB_COMPOUND calls as a server sends them: the decoder never panics, the
/// reply built by the RFC's rules stops at its first failure with the
/// COMPOUND status the last result's, and it survives its own encoding.
pub fn nfs4_cb_compound(data: &[u8]) {
    use nfs4::*;
    let Ok(args) = CB_COMPOUND4args::decode(&mut XdrReader::new(data)) else {
        return;
    };
    let again = CB_COMPOUND4args::decode(&mut XdrReader::new(&to_bytes(&args)));
    assert_eq!(again.as_ref(), Ok(&args));
    let res = args.reply(|op| match op {
        nfs_cb_argop4::OP_CB_SEQUENCE(a) => Some(a.reply_ok(0)),
        nfs_cb_argop4::OP_CB_RECALL(_) => Some(nfs_cb_resop4::Status(nfs_cb_opnum4::OP_CB_RECALL, nfsstat4::NFS4_OK)),
        _ => None,
    });
    assert!(res.resarray.len() <= args.argarray.len());
    for r in res.resarray.iter().rev().skip(1) {
        assert!(r.status().is_ok());
    }
    if let Some(last) = res.resarray.last() {
        assert_eq!(last.status(), res.status);
    }
    let back = decode_exact::<CB_COMPOUND4res>(&to_bytes(&res), "cb reply");
    assert_eq!(back.as_ref(), Ok(&res));
}

/// Record reassembly: the first byte picks the record limit (1..=256) and
/// the second the chunk size the stream is fed in (1..=256), as a socket
/// would. No record may exceed the limit, and chunking must not change
/// what comes out.
pub fn record_reassembly(data: &[u8]) {
    let [max, chunk, stream @ ..] = data else {
        return;
    };
    let max = usize::from(*max) + 1;
    let chunk = usize::from(*chunk) + 1;

    let whole = RecordReader::new(max).drain(stream);

    let mut rr = RecordReader::new(max);
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let mut failed = false;
    for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        match rr.drain(&buf) {
            Ok((records, used)) => {
                buf.drain(..used);
                got.extend(records);
            }
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    for r in &got {
        assert!(r.len() <= max, "record of {} bytes, limit {max}", r.len());
    }
    match whole {
        Ok((records, _)) => {
            assert!(!failed);
            assert_eq!(records, got);
        }
        // The error surfaces at the same point however the bytes arrive;
        // the records before it are the same.
        Err(_) => assert!(failed),
    }
}

/// The dnfstab parser never panics; what it accepts resolves paths under
/// its own mount prefixes and only there.
pub fn config_dnfstab(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(tab) = directnfs::config::parse_str(text, std::path::Path::new("fuzz.tab")) else {
        return;
    };
    for server in &tab.servers {
        assert!(!server.paths.is_empty(), "a server always has a path");
        for e in &server.exports {
            let probe = format!("{}/x", e.mount.trim_end_matches('/'));
            let r = tab.resolve(&probe).expect("a file under a mount prefix resolves");
            assert!(r.export.mount.len() >= e.mount.len() || r.export.mount == e.mount);
        }
    }
}

/// The URL parser never panics; an accepted URL has a host and an
/// absolute path, and its export candidates end with `/`.
pub fn nfs_url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(url) = directnfs::config::NfsUrl::parse(text) else {
        return;
    };
    assert!(!url.host.is_empty());
    assert!(url.path.starts_with('/'));
    let c = url.export_candidates();
    assert_eq!(c.last().map(String::as_str), Some("/"));
}

/// An arbitrary sequence of engine events — submissions, replies (right,
/// stale, duplicate or made up), timeouts, channel failures and
/// reconnections — over two channels' in-flight tables, as the driver
/// runs them. Invariants: every request completes exactly once; a reply
/// never completes a request it was not sent for; nothing grows past its
/// bound.
pub fn engine_events(data: &[u8]) {
    use directnfs_engine::choose::{least_loaded, Candidate};
    use directnfs_engine::health::Health;
    use directnfs_engine::inflight::InflightTable;
    use directnfs_engine::retry::Backoff;

    const CAP: usize = 8;
    let mut tables = [InflightTable::<u32>::new(CAP, 1), InflightTable::<u32>::new(CAP, 2)];
    let mut health = [Health::Up, Health::Up];
    let backoff = Backoff::default();
    let mut sent: Vec<(usize, u32, u32)> = Vec::new(); // (channel, xid, request)
    let mut waiting: Vec<u32> = Vec::new(); // parked: no channel up
    let mut done = std::collections::HashSet::new();
    let mut next_req = 0u32;
    let mut now = 0u64;
    let mut bytes = data.iter().copied();
    while let Some(op) = bytes.next() {
        let arg = bytes.next().unwrap_or(0);
        match op % 6 {
            0 => {
                // Submit a new request (or a parked one) to the least loaded up channel.
                let req = waiting.pop().unwrap_or_else(|| {
                    next_req += 1;
                    next_req
                });
                let cands: Vec<Candidate> = (0..2)
                    .map(|c| Candidate {
                        up: health[c].is_up(),
                        outstanding_bytes: 0,
                        outstanding_requests: tables[c].len() as u64,
                    })
                    .collect();
                match least_loaded(&cands, arg as usize, None) {
                    Some(c) => match tables[c].insert(req, now + 10) {
                        Ok(xid) => sent.push((c, xid, req)),
                        Err(r) => waiting.push(r),
                    },
                    None => waiting.push(req),
                }
            }
            1 if !sent.is_empty() => {
                // The right reply for something in flight.
                let (c, xid, req) = sent.swap_remove(arg as usize % sent.len());
                assert_eq!(tables[c].take(xid), Some(req));
                assert!(done.insert(req), "request {req} completed twice");
            }
            2 => {
                // A reply with a made-up or stale XID completes nothing
                // that was not sent with it.
                let xid = u32::from_le_bytes([arg, op, arg ^ 0x5a, op ^ 0xa5]);
                for c in 0..2 {
                    if let Some(req) = tables[c].take(xid) {
                        let pos = sent.iter().position(|s| s.0 == c && s.1 == xid);
                        let pos = pos.expect("a reply completed a request never sent with its XID");
                        sent.swap_remove(pos);
                        assert!(done.insert(req));
                    }
                }
            }
            3 => {
                // Time passes; expired requests move to the other channel.
                now += arg as u64;
                for c in 0..2 {
                    let mut expired = Vec::new();
                    tables[c].take_expired(now, &mut expired);
                    for (xid, req) in expired {
                        sent.retain(|s| !(s.0 == c && s.1 == xid));
                        waiting.push(req);
                    }
                }
            }
            4 => {
                // A channel dies: everything in flight on it is re-queued.
                let c = arg as usize % 2;
                health[c].on_failure(now, &backoff);
                let mut calls = Vec::new();
                tables[c].drain_into(&mut calls);
                sent.retain(|s| s.0 != c);
                waiting.extend(calls);
            }
            _ => {
                // Reconnect attempts.
                let c = arg as usize % 2;
                now += 1_000_000_000;
                if health[c].start_reconnect_if_due(now).is_some() {
                    health[c].on_connected();
                }
            }
        }
        for t in &tables {
            assert!(t.len() <= CAP);
        }
        assert_eq!(sent.len(), tables[0].len() + tables[1].len());
        assert!(waiting.len() <= next_req as usize);
    }
    // Every request is accounted for exactly once: done, in flight or waiting.
    let total = done.len() + sent.len() + waiting.len();
    assert_eq!(total, next_req as usize);
}

/// RPCSEC_GSS (RFC 2203) decoders, picked by the first byte: the
/// credential and `rpc_gss_init_res` survive their encoding; an accepted
/// `rpc_gss_integ_data` or `rpc_gss_priv_data` decodes the same after its
/// own encoding (padding bytes are not checked, so compare parts), and
/// reading the sequence number of a data body never panics.
pub fn rpc_gss(data: &[u8]) {
    use directnfs_wire::rpc::gss;
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 4 {
        0 => roundtrip::<gss::GssCred>(rest),
        1 => roundtrip::<gss::GssInitRes>(rest),
        2 => {
            if let Ok(d) = gss::decode_integ_data(rest, 1 << 20) {
                let mut again = Vec::new();
                gss::encode_integ_data(&mut again, d.databody, d.checksum);
                assert_eq!(gss::decode_integ_data(&again, 1 << 20), Ok(d));
                let _ = gss::data_body_args(d.databody, 0);
            }
        }
        _ => {
            if let Ok(wrapped) = gss::decode_priv_data(rest, 1 << 20) {
                let mut again = Vec::new();
                gss::encode_priv_data(&mut again, wrapped);
                assert_eq!(gss::decode_priv_data(&again, 1 << 20), Ok(wrapped));
            }
        }
    }
}

/// RFC 4121 tokens made in-process (`directnfs::security::cfx`): the first
/// byte picks the enctype (17 to 20, low 2 bits), an acceptor subkey (bit
/// 2) and confidentiality (bit 3). The rest, taken as a peer's MIC or Wrap
/// token, is checked or opened without a panic (refused, in practice: it
/// does not carry the keys' checksum, but every length, EC and RRC is
/// parsed first); and the peer's own Wrap token of the rest opens to it.
pub fn krb5_tokens(data: &[u8]) {
    use directnfs::security::cfx::{CfxContext, CfxKeys};
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let etype = 17 + u32::from(pick % 4);
    let len = if etype == 17 || etype == 19 { 16 } else { 32 };
    let (key, sub) = (vec![0x11u8; len], vec![0x22u8; len]);
    let keys = |initiator| CfxKeys {
        initiator,
        send_seq: 0,
        ctx_key: (etype, &key[..]),
        acceptor_subkey: (pick & 4 != 0).then_some((etype, &sub[..])),
    };
    let (Ok(me), Ok(peer)) = (CfxContext::new(&keys(true)), CfxContext::new(&keys(false))) else {
        panic!("no context for enctype {etype}");
    };
    let _ = me.verify_mic(rest, rest);
    let mut token = rest.to_vec();
    if let Ok((range, _)) = me.unwrap_in_place(&mut token) {
        assert!(range.start <= range.end && range.end <= token.len());
    }
    let conf = pick & 8 != 0;
    let mut wrapped = Vec::new();
    peer.wrap(&[rest], conf, &mut wrapped);
    let (range, sealed) = me
        .unwrap_in_place(&mut wrapped)
        .expect("the peer's own token opens");
    assert_eq!((&wrapped[range], sealed), (rest, conf));
}

/// The reader of a server's answer to the AUTH_TLS probe (RFC 9289 §4.1):
/// the first 4 bytes are the xid the probe was sent with, the rest the
/// reply record. It never panics, and it says "start TLS" only for an
/// accepted SUCCESS reply to that xid whose verifier is AUTH_NONE
/// "STARTTLS".
pub fn tls_probe_answer(data: &[u8]) {
    use directnfs_wire::rpc::tls::{probe_answer, ProbeAnswer};
    use directnfs_wire::rpc::{AcceptedReply, ReplyBody, ReplyHeader};
    let Some((xid, record)) = data.split_first_chunk::<4>() else {
        return;
    };
    let xid = u32::from_be_bytes(*xid);
    if let Ok(ProbeAnswer::StartTls) = probe_answer(record, xid) {
        let h = ReplyHeader::decode(&mut XdrReader::new(record)).expect("accepted, so decodes");
        assert_eq!(h.xid, xid);
        match h.body {
            ReplyBody::Accepted {
                verf,
                stat: AcceptedReply::Success,
            } => {
                assert_eq!(verf.flavor, directnfs_wire::rpc::auth::AuthFlavor::AUTH_NONE);
                assert_eq!(verf.body, b"STARTTLS");
            }
            other => panic!("StartTls for {other:?}"),
        }
    }
}
