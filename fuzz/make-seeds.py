#!/usr/bin/env python3
"""Writes the seed corpus: a few valid encodings per fuzz target.

Sources: the replies captured from Ganesha in crates/wire/testdata/ (record
mark and RPC reply header stripped), plus hand-made success and failure
arms for procedures that were not captured. Run from anywhere:
    python3 fuzz/make-seeds.py
"""
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "..", "crates", "wire", "testdata")
CORPUS = os.path.join(HERE, "corpus")


def w(*words):
    return b"".join(struct.pack(">I", x & 0xFFFFFFFF) for x in words)


def opaque(b):
    return w(len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


FATTR = w(1, 0o644, 1, 1000, 100, 0, 8192, 0, 8192, 0, 0, 0, 0x11, 0, 0x42, 1, 0, 2, 0, 3, 0)
WCC = w(1, 0, 8192, 2, 0, 3, 0) + w(1) + FATTR
NO_WCC = w(0, 0)
FH = opaque(bytes(range(24)))


def seed(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def results_of(capture):
    """Procedure results of a captured reply record (AUTH_NONE verifier)."""
    with open(os.path.join(TESTDATA, capture), "rb") as f:
        rec = f.read()
    body = rec[4:]
    verf_len = struct.unpack(">I", body[16:20])[0]
    header_len = 20 + verf_len + ((4 - verf_len % 4) % 4) + 4
    return rec, body[:header_len], body[header_len:]


captured = {
    "ganesha_getport_reply.bin": "portmap_getport",
    "ganesha_mnt_reply.bin": "mount_mnt",
    "ganesha_export_reply.bin": "mount_export",
    "ganesha_getattr_reply.bin": "nfs3_getattr_res",
    "ganesha_getattr_dir_reply.bin": "nfs3_getattr_res",
    "ganesha_setattr_reply.bin": "nfs3_setattr_res",
    "ganesha_lookup_reply.bin": "nfs3_lookup_res",
    "ganesha_access_reply.bin": "nfs3_access_res",
    "ganesha_read_reply.bin": "nfs3_read_res",
    "ganesha_write_reply.bin": "nfs3_write_res",
    "ganesha_create_reply.bin": "nfs3_create_res",
    "ganesha_create_exist_reply.bin": "nfs3_create_res",
    "ganesha_readdirplus_reply.bin": "nfs3_readdirplus_res",
    "ganesha_fsinfo_reply.bin": "nfs3_fsinfo_res",
    "ganesha_commit_reply.bin": "nfs3_commit_res",
    "ganesha_mnt_acces_reply.bin": "mount_mnt",
    "ganesha_lookup_noent_reply.bin": "nfs3_lookup_res",
    "ganesha_fsstat_reply.bin": "nfs3_fsstat_res",
}
for capture, target in captured.items():
    if not os.path.exists(os.path.join(TESTDATA, capture)):
        continue
    rec, header, res = results_of(capture)
    seed(target, res)
    seed("rpc_reply_header", header)
    seed("record_reassembly", bytes([255, 7]) + rec)
    if target == "nfs3_read_res":
        seed("nfs3_read_reply", w(1 << 20) + res)
        seed("nfs3_read_reply", w(4) + res)  # more data than asked for
    if target == "nfs3_write_res":
        seed("nfs3_write_reply", res)
    if target == "nfs3_commit_res":
        seed("nfs3_commit_reply", res)

# NFSv4.1: the replies captured from Ganesha (README-v41.md), headers
# stripped. nfs4_compound_res: mode byte 0 (plain) and mode byte 3 with
# the hot path's three operations (indices into IMPLEMENTED_OPS of
# fuzz/src/lib.rs: SEQUENCE 30, PUTFH 14, READ 16 / WRITE 23 / COMMIT 2).
V41_HOT = {"read": (0, 16), "write": (1, 23), "commit": (2, 2)}
for name in sorted(os.listdir(TESTDATA)):
    if not (name.startswith("ganesha_v41_") and name.endswith("_reply.bin")):
        continue
    step = name[len("ganesha_v41_"):-len("_reply.bin")]
    rec, header, res = results_of(name)
    seed("nfs4_compound_res", b"\0" + res)
    if step in V41_HOT:
        which, op = V41_HOT[step]
        seed("nfs4_compound_res", bytes([3, 30, 14, op]) + res)
        seed("nfs4_hotpath", bytes([which]) + (w(4096) if which == 0 else b"") + res)

# Hand-made NFSv4.1 results (first byte: the decoder of nfs4_op_res) and
# back-channel calls.
SESSION = bytes(range(16))
STATEID = w(1) + bytes(range(12))
hand_v41 = {
    "nfs4_op_res": [
        bytes([0]) + w(22, 0),                                  # nfs_resop4: PUTFH OK
        bytes([1]) + w(2, 0x12, 0x2, 16, 1, 0, 41, 0o644),      # fattr4: type size mode
        bytes([4]) + w(0) + SESSION + w(1, 0, 63, 63, 0),       # SEQUENCE4res OK
        bytes([4]) + w(10052),                                  # SEQUENCE4res BADSESSION
        bytes([10]) + w(0) + STATEID + w(0, 0, 1, 0, 2, 4, 1, 0x10, 0, 3, 0),  # OPEN4res
        bytes([12]) + w(0, 1) + opaque(b"hello"),               # READ4res
        bytes([20]) + w(10010, 0, 0, 0, 10, 2) + w(0, 7) + opaque(b"owner"),  # LOCK4res DENIED
        bytes([23]) + w(0, 2, 0, 10023),                        # TEST_STATEID4res
    ],
    "nfs4_cb_compound": [
        w(0, 1, 0, 2, 11) + SESSION + w(1, 0, 0, 0, 0, 4) + STATEID + w(0) + opaque(b"fh"),
        w(0, 1, 0, 2, 11) + SESSION + w(1, 0, 0, 0, 0, 14, 0xFFFFFFFF),
        w(0, 0, 0, 1, 4) + STATEID + w(1) + opaque(b"fh"),
    ],
}
for target, items in hand_v41.items():
    for data in items:
        seed(target, data)

# Hand-made arms, for every NFSv3 result (unknown status included).
fail_post_op = w(70, 0)
hand = {
    "nfs3_getattr_res": [w(0) + FATTR, w(70), w(0xdead)],
    "nfs3_setattr_res": [w(0) + WCC, w(1) + NO_WCC],
    "nfs3_lookup_res": [w(0) + FH + w(1) + FATTR + w(0), w(2, 0)],
    "nfs3_access_res": [w(0, 1) + FATTR + w(0x3F), w(13, 0)],
    "nfs3_read_res": [w(0, 0, 5, 1) + opaque(b"hello"), fail_post_op, w(0, 0, 4, 0) + opaque(b"hello")],
    "nfs3_write_res": [w(0) + WCC + w(3, 2) + b"verifier", w(28) + NO_WCC],
    "nfs3_create_res": [w(0, 1) + FH + w(1) + FATTR + WCC, w(17) + WCC],
    "nfs3_mkdir_res": [w(0, 1) + FH + w(0) + NO_WCC, w(17) + WCC],
    "nfs3_readlink_res": [w(0, 1) + FATTR + opaque(b"../target"), w(22, 0)],
    "nfs3_symlink_res": [w(0, 1) + FH + w(0) + NO_WCC, w(17) + WCC],
    "nfs3_link_res": [w(0, 1) + FATTR + WCC, w(18, 0) + NO_WCC],
    "nfs3_remove_res": [w(0) + WCC, w(2) + NO_WCC],
    "nfs3_rmdir_res": [w(0) + WCC, w(66) + NO_WCC],
    "nfs3_rename_res": [w(0) + WCC + WCC, w(18) + NO_WCC + NO_WCC],
    "nfs3_symlink_res": [w(0, 1) + FH + w(1) + FATTR + WCC, w(17) + WCC],
    "nfs3_readlink_res": [w(0, 1) + FATTR + opaque(b"directnfs-sqlite-lock 2 pid=1"), w(22, 0)],
    "nfs3_readdir_res": [
        w(0, 1) + FATTR + b"cookieV!" + w(1, 0, 1) + opaque(b".") + w(0, 1)
        + w(1, 0, 2) + opaque(b"data01") + w(0, 2) + w(0, 1),
        w(10003, 0),
    ],
    "nfs3_readdirplus_res": [
        w(0, 0) + b"\0" * 8 + w(1, 0, 9) + opaque(b"x") + w(0, 3) + w(1) + FATTR + w(1) + FH + w(0, 1),
        w(10008, 0),
    ],
    "nfs3_fsstat_res": [w(0, 0) + w(0, 1 << 30) * 6 + w(0), w(5, 0)],
    "nfs3_fsinfo_res": [w(0, 0, 1 << 20, 1 << 20, 512, 1 << 20, 1 << 20, 512, 16384, 0x7FFFFFFF, 0xFFFFFFFF, 0, 1, 0x1B)],
    "nfs3_pathconf_res": [w(0, 0, 32000, 255, 1, 1, 0, 1), w(10004, 0)],
    "nfs3_commit_res": [w(0) + WCC + b"verifier", w(5) + NO_WCC],
    "nfs3_read_reply": [w(8) + w(0, 0, 5, 1) + opaque(b"hello"), w(8) + fail_post_op],
    "nfs3_write_reply": [w(0) + NO_WCC + w(3, 2) + b"verifier", w(12345) + NO_WCC],
    "nfs3_commit_reply": [w(0) + NO_WCC + b"verifier", w(70) + NO_WCC],
    "portmap_getport": [w(2049), w(0)],
    "nlm4_res": [w(0, 0), opaque(b"c1") + w(1, 1, 42) + opaque(b"owner") + w(0, 0, 0, 0), w(0, 3)],
    "mount_mnt": [w(0) + FH + w(1, 1), w(13)],
    "mount_export": [w(1) + opaque(b"/export") + w(1) + opaque(b"db1") + w(0) + w(0), w(0)],
    "rpc_reply_header": [w(1, 1, 0, 0, 0, 2, 2, 3), w(1, 1, 1, 1, 1), w(1, 1, 1, 0, 2, 2)],
    # first byte: 0 credential, 1 init result, 2 integ data, 3 priv data
    "rpc_gss": [
        bytes([0]) + w(1, 0, 7, 2) + opaque(b"handle"),
        bytes([1]) + opaque(b"ctx-handle-16byt") + w(0, 0, 32) + opaque(b"ap-rep-token"),
        bytes([2]) + opaque(w(7) + b"args") + opaque(b"checksum"),
        bytes([3]) + opaque(b"wrapped-token"),
    ],
    # first byte: enctype 17 + low 2 bits, bit 2 acceptor subkey, bit 3 sealed;
    # then a Wrap token header (id, flags sent-by-acceptor|sealed, filler, EC,
    # RRC, SND_SEQ) and a body, or a MIC token
    "krb5_tokens": [
        bytes([9]) + bytes([5, 4, 3, 0xFF, 0, 0, 0, 28]) + bytes(8) + bytes(range(60)),
        bytes([6]) + bytes([5, 4, 5, 0xFF, 0, 16, 0, 0]) + bytes(8) + b"data" + bytes(16),
        bytes([0]) + bytes([4, 4, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) + bytes(8) + bytes(12),
    ],
    # the probe's xid, then the reply: STARTTLS, an empty verifier (no TLS),
    # PROG_UNAVAIL, AUTH_ERROR
    "tls_probe_answer": [
        w(9) + w(9, 1, 0, 0) + opaque(b"STARTTLS") + w(0),
        w(9) + w(9, 1, 0, 0, 0, 0),
        w(9) + w(9, 1, 0, 0, 0, 1),
        w(9) + w(9, 1, 1, 1, 1),
    ],
    "record_reassembly": [
        bytes([16, 3]) + w(0x00000004) + b"abcd" + w(0x80000002) + b"ef",
        bytes([2, 0]) + w(0xFFFFFFFF),
    ],
}
for target, items in hand.items():
    for data in items:
        seed(target, data)
