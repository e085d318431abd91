#!/usr/bin/env python3
"""Extract golden RPC records from a pcap of Ganesha traffic (stdlib only).

    capture-vectors.py PCAP OUTDIR --ports 111,2049,20048 \
        --small-file NAME --small-content FILE --big-file NAME --big-content FILE

Reassembles every TCP stream of the capture, splits it into ONC RPC records
(RFC 5531 §11 record marking: a 4-byte header per fragment, top bit = last
fragment), pairs calls with replies by XID, picks the records named in
VECTORS and writes each one, headers included, to OUTDIR/<name>.bin. Then it
writes OUTDIR/README.md with the facts a decoder test can assert, decoded
here independently of the Rust code.

Used by scripts/vectors/capture-vectors.sh, which runs the server and the libnfs
tools; see crates/wire/testdata/README.md for the resulting files.
"""

import argparse
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

# --- pcap and TCP reassembly ---------------------------------------------

LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113


def read_pcap(path):
    """Yields (link_type, packet bytes) for each packet of a classic pcap."""
    data = Path(path).read_bytes()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit(f"{path}: not a classic pcap file (pcapng is not supported)")
    (link_type,) = struct.unpack(endian + "I", data[20:24])
    off = 24
    while off + 16 <= len(data):
        _, _, incl_len, orig_len = struct.unpack(endian + "IIII", data[off : off + 16])
        off += 16
        if incl_len != orig_len:
            sys.exit(f"{path}: truncated packet ({incl_len} of {orig_len} bytes): capture with a larger snaplen")
        yield link_type, data[off : off + incl_len]
        off += incl_len


def ip_payload(link_type, pkt):
    """Returns (src, dst, tcp segment) of an IPv4/IPv6 TCP packet, else None."""
    if link_type == LINKTYPE_ETHERNET:
        ethertype, rest = struct.unpack(">H", pkt[12:14])[0], pkt[14:]
    elif link_type == LINKTYPE_LINUX_SLL:
        ethertype, rest = struct.unpack(">H", pkt[14:16])[0], pkt[16:]
    else:
        sys.exit(f"unsupported link type {link_type}")
    if ethertype == 0x0800:
        ihl = (rest[0] & 0x0F) * 4
        total = struct.unpack(">H", rest[2:4])[0]
        if rest[9] != 6:
            return None
        return rest[12:16], rest[16:20], rest[ihl:total]
    if ethertype == 0x86DD:
        plen = struct.unpack(">H", rest[4:6])[0]
        if rest[6] != 6:
            return None
        return rest[8:24], rest[24:40], rest[40 : 40 + plen]
    return None


@dataclass
class Stream:
    """One direction of one TCP connection, payload in sequence order."""

    conn: int
    to_server: bool
    server_port: int
    next_seq: int = -1
    data: bytearray = field(default_factory=bytearray)

    def add(self, seq, flags, payload):
        syn = flags & 0x02
        if syn:
            self.next_seq = (seq + 1) & 0xFFFFFFFF
            return
        if self.next_seq < 0 or not payload:
            return
        # Loopback loses nothing; skip retransmitted bytes, refuse gaps.
        delta = (seq - self.next_seq) & 0xFFFFFFFF
        if delta >= 0x80000000:
            skip = (self.next_seq - seq) & 0xFFFFFFFF
            payload = payload[skip:]
            delta = 0
        if delta != 0:
            sys.exit(f"gap in TCP stream {self.conn}: capture lost packets")
        self.data += payload
        self.next_seq = (self.next_seq + len(payload)) & 0xFFFFFFFF


def tcp_streams(pcap, server_ports):
    """Returns the streams of connections to SERVER_PORTS, in order of first SYN."""
    streams = {}
    conns = {}
    order = []
    for link_type, pkt in read_pcap(pcap):
        parsed = ip_payload(link_type, pkt)
        if parsed is None:
            continue
        src, dst, seg = parsed
        sport, dport, seq = struct.unpack(">HHI", seg[:8])
        flags = seg[13]
        payload = seg[(seg[12] >> 4) * 4 :]
        to_server = dport in server_ports
        server_port = dport if to_server else sport
        if not to_server and sport not in server_ports:
            continue
        client = (src, sport) if to_server else (dst, dport)
        key = (client, server_port)
        # A client SYN opens a new connection even if the client port was
        # used before (libnfs reuses privileged ports).
        if key not in conns or (to_server and flags & 0x02 and not flags & 0x10):
            conns[key] = len(order)
            order.append(key)
        conn = conns[key]
        skey = (conn, to_server)
        if skey not in streams:
            streams[skey] = Stream(conn, to_server, server_port)
        streams[skey].add(seq, flags, payload)
    return list(streams.values())


def split_records(stream):
    """Splits a stream into complete RPC records (headers kept)."""
    records = []
    data, off = bytes(stream.data), 0
    while off + 4 <= len(data):
        start = off
        while True:
            (hdr,) = struct.unpack(">I", data[off : off + 4])
            off += 4 + (hdr & 0x7FFFFFFF)
            if hdr & 0x80000000 or off + 4 > len(data):
                break
        if off > len(data):
            break
        records.append(data[start:off])
    return records


def record_body(raw):
    """The RPC message of a record: fragment payloads without their headers."""
    body, off = bytearray(), 0
    while off < len(raw):
        (hdr,) = struct.unpack(">I", raw[off : off + 4])
        n = hdr & 0x7FFFFFFF
        body += raw[off + 4 : off + 4 + n]
        off += 4 + n
    return bytes(body)


# --- XDR reading ----------------------------------------------------------


class Xdr:
    def __init__(self, data, off=0):
        self.data, self.off = data, off

    def u32(self):
        (v,) = struct.unpack(">I", self.data[self.off : self.off + 4])
        self.off += 4
        return v

    def u64(self):
        (v,) = struct.unpack(">Q", self.data[self.off : self.off + 8])
        self.off += 8
        return v

    def opaque(self, fixed=None):
        n = fixed if fixed is not None else self.u32()
        v = self.data[self.off : self.off + n]
        self.off += n + (-n % 4)
        return v

    def string(self):
        return self.opaque().decode("utf-8", "replace")

    def remaining(self):
        return len(self.data) - self.off


PROGS = {100000: "PORTMAP", 100003: "NFS", 100005: "MOUNT"}
NFS_PROCS = [
    "NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
    "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
    "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT",
]
MOUNT_PROCS = ["NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"]
PMAP_PROCS = ["NULL", "SET", "UNSET", "GETPORT", "DUMP", "CALLIT"]
NFSSTAT = {0: "NFS3_OK", 2: "NFS3ERR_NOENT", 13: "NFS3ERR_ACCES", 17: "NFS3ERR_EXIST"}
MNTSTAT = {0: "MNT3_OK", 2: "MNT3ERR_NOENT", 13: "MNT3ERR_ACCES"}
FTYPE = {1: "NF3REG", 2: "NF3DIR", 3: "NF3BLK", 4: "NF3CHR", 5: "NF3LNK", 6: "NF3SOCK", 7: "NF3FIFO"}
STABLE = {0: "UNSTABLE", 1: "DATA_SYNC", 2: "FILE_SYNC"}
CREATEMODE = {0: "UNCHECKED", 1: "GUARDED", 2: "EXCLUSIVE"}


def proc_name(prog, proc):
    table = {100000: PMAP_PROCS, 100003: NFS_PROCS, 100005: MOUNT_PROCS}.get(prog, [])
    return table[proc] if proc < len(table) else str(proc)


@dataclass
class Msg:
    raw: bytes
    conn: int
    xid: int
    is_call: bool
    prog: int = 0
    vers: int = 0
    proc: int = 0
    body_off: int = 0  # offset in the body of the args or results
    reply_stat: int = 0
    accept_stat: int = 0
    cred_flavor: int = 0
    call: "Msg | None" = None  # for a reply: its call

    @property
    def body(self):
        return record_body(self.raw)

    @property
    def name(self):
        return f"{PROGS.get(self.prog, self.prog)} v{self.vers} {proc_name(self.prog, self.proc)}"


def parse_msg(raw, conn):
    x = Xdr(record_body(raw))
    xid, mtype = x.u32(), x.u32()
    m = Msg(raw, conn, xid, mtype == 0)
    if m.is_call:
        x.u32()  # rpcvers
        m.prog, m.vers, m.proc = x.u32(), x.u32(), x.u32()
        m.cred_flavor = x.u32()
        x.opaque()
        x.u32()
        x.opaque()
    else:
        m.reply_stat = x.u32()
        if m.reply_stat == 0:
            x.u32()
            x.opaque()
            m.accept_stat = x.u32()
    m.body_off = x.off
    return m


def parse_capture(pcap, ports):
    """All messages, replies linked to their calls, in capture order."""
    msgs = []
    for st in sorted(tcp_streams(pcap, ports), key=lambda s: (s.conn, not s.to_server)):
        for raw in split_records(st):
            msgs.append(parse_msg(raw, st.conn))
    calls = {(m.conn, m.xid): m for m in msgs if m.is_call}
    for m in msgs:
        if not m.is_call:
            m.call = calls.get((m.conn, m.xid))
            if m.call:
                m.prog, m.vers, m.proc = m.call.prog, m.call.vers, m.call.proc
    return msgs


# --- NFSv3 / MOUNT / PORTMAP decoding of the facts ------------------------


def fattr3(x):
    a = {}
    a["type"] = FTYPE.get(x.u32(), "?")
    a["mode"] = oct(x.u32())
    a["nlink"] = x.u32()
    a["uid"] = x.u32()
    a["gid"] = x.u32()
    a["size"] = x.u64()
    a["used"] = x.u64()
    x.u32(), x.u32()  # rdev
    a["fsid"] = hex(x.u64())
    a["fileid"] = x.u64()
    for t in ("atime", "mtime", "ctime"):
        a[t] = (x.u32(), x.u32())
    return a


def post_op_attr(x):
    return fattr3(x) if x.u32() else None


def wcc_data(x):
    pre = None
    if x.u32():
        pre = {"size": x.u64(), "mtime": (x.u32(), x.u32()), "ctime": (x.u32(), x.u32())}
    return pre, post_op_attr(x)


def post_op_fh3(x):
    return x.opaque() if x.u32() else None


def attr_summary(a):
    if a is None:
        return "absent"
    return f"{a['type']} mode {a['mode']} size {a['size']} fileid {a['fileid']} uid {a['uid']} gid {a['gid']}"


def nfsstat(v):
    return NFSSTAT.get(v, str(v))


def call_facts(m):
    """Facts of a call's arguments, as a list of strings."""
    x = Xdr(m.body, m.body_off)
    f = [f"AUTH flavor {m.cred_flavor}"]
    if m.prog == 100000 and m.proc == 3:
        prog, vers, prot, port = x.u32(), x.u32(), x.u32(), x.u32()
        f.append(f"mapping prog {prog} vers {vers} prot {prot} port {port}")
    elif m.prog == 100005 and m.proc == 1:
        f.append(f"dirpath {x.string()!r}")
    elif m.prog == 100003:
        if m.proc == 0:
            return f
        fh = x.opaque()
        f.append(f"fh {len(fh)} bytes")
        p = NFS_PROCS[m.proc]
        if p in ("LOOKUP", "CREATE", "REMOVE"):
            f.append(f"name {x.string()!r}")
            if p == "CREATE":
                mode = x.u32()
                f.append(f"createhow mode {mode} ({CREATEMODE.get(mode, '?')})")
        elif p == "READ":
            f.append(f"offset {x.u64()} count {x.u32()}")
        elif p == "WRITE":
            off, count, stable = x.u64(), x.u32(), x.u32()
            data = x.opaque()
            f.append(f"offset {off} count {count} stable {STABLE.get(stable, stable)} data {len(data)} bytes")
        elif p == "COMMIT":
            f.append(f"offset {x.u64()} count {x.u32()}")
        elif p == "READDIRPLUS":
            cookie = x.u64()
            x.opaque(8)
            f.append(f"cookie {cookie} dircount {x.u32()} maxcount {x.u32()}")
        elif p == "ACCESS":
            f.append(f"access {hex(x.u32())}")
    return f


def reply_facts(m):
    """Facts of a reply's results, as a list of strings."""
    if m.reply_stat != 0 or m.accept_stat != 0:
        return [f"reply_stat {m.reply_stat} accept_stat {m.accept_stat}"]
    x = Xdr(m.body, m.body_off)
    if m.prog == 100000 and m.proc == 3:
        return [f"port {x.u32()}"]
    if m.prog == 100005:
        return mount_reply_facts(m, x)
    if m.prog == 100003 and m.proc > 0:
        return nfs_reply_facts(NFS_PROCS[m.proc], x)
    return ["void result"]


def mount_reply_facts(m, x):
    if m.proc == 1:
        st = x.u32()
        f = [f"status {MNTSTAT.get(st, st)}"]
        if st == 0:
            fh = x.opaque()
            flavors = [x.u32() for _ in range(x.u32())]
            f += [f"fhandle {len(fh)} bytes: {fh.hex()}", f"auth_flavors {flavors}"]
        return f
    if m.proc == 5:
        exports = []
        while x.u32():
            d = x.string()
            groups = []
            while x.u32():
                groups.append(x.string())
            exports.append((d, groups))
        return [f"exports {exports}"]
    return ["void result"]


def nfs_reply_facts(p, x):
    st = x.u32()
    f = [f"status {nfsstat(st)}"]
    if p == "GETATTR":
        if st == 0:
            f.append("attributes " + attr_summary(fattr3(x)))
    elif p == "LOOKUP":
        if st == 0:
            fh = x.opaque()
            f.append(f"object fh {len(fh)} bytes: {fh.hex()}")
            f.append("obj_attributes " + attr_summary(post_op_attr(x)))
        f.append("dir_attributes " + attr_summary(post_op_attr(x)))
    elif p == "ACCESS":
        f.append("obj_attributes " + attr_summary(post_op_attr(x)))
        if st == 0:
            f.append(f"access {hex(x.u32())}")
    elif p == "FSINFO":
        f.append("obj_attributes " + attr_summary(post_op_attr(x)))
        if st == 0:
            names = ["rtmax", "rtpref", "rtmult", "wtmax", "wtpref", "wtmult", "dtpref"]
            f.append(", ".join(f"{n} {x.u32()}" for n in names))
            f.append(f"maxfilesize {x.u64()}, time_delta {(x.u32(), x.u32())}, properties {hex(x.u32())}")
    elif p == "FSSTAT":
        f.append("obj_attributes " + attr_summary(post_op_attr(x)))
        if st == 0:
            names = ["tbytes", "fbytes", "abytes", "tfiles", "ffiles", "afiles"]
            f.append(", ".join(f"{n} {x.u64()}" for n in names) + f", invarsec {x.u32()}")
    elif p == "PATHCONF":
        f.append("obj_attributes " + attr_summary(post_op_attr(x)))
        if st == 0:
            f.append(f"linkmax {x.u32()} name_max {x.u32()} no_trunc {x.u32()} chown_restricted {x.u32()} "
                     f"case_insensitive {x.u32()} case_preserving {x.u32()}")
    elif p == "READ":
        f.append("file_attributes " + attr_summary(post_op_attr(x)))
        if st == 0:
            count, eof = x.u32(), x.u32()
            data = x.opaque()
            f.append(f"count {count} eof {bool(eof)} data {len(data)} bytes")
            f.append(f"__data__{data.hex()}")
    elif p == "WRITE":
        pre, post = wcc_data(x)
        f.append(f"wcc before size {pre['size'] if pre else 'absent'}; after " + attr_summary(post))
        if st == 0:
            count, committed, verf = x.u32(), x.u32(), x.opaque(8)
            f.append(f"count {count} committed {STABLE.get(committed, committed)} verf {verf.hex()}")
    elif p == "COMMIT":
        pre, post = wcc_data(x)
        f.append(f"wcc before size {pre['size'] if pre else 'absent'}; after " + attr_summary(post))
        if st == 0:
            f.append(f"verf {x.opaque(8).hex()}")
    elif p == "CREATE":
        if st == 0:
            fh = post_op_fh3(x)
            f.append(f"obj fh {len(fh) if fh else 'absent'} bytes")
            f.append("obj_attributes " + attr_summary(post_op_attr(x)))
        pre, post = wcc_data(x)
        f.append(f"dir_wcc before {'present' if pre else 'absent'}; after " + attr_summary(post))
    elif p == "SETATTR":
        pre, post = wcc_data(x)
        f.append(f"obj_wcc after " + attr_summary(post))
    elif p == "READDIRPLUS":
        f.append("dir_attributes " + attr_summary(post_op_attr(x)))
        if st == 0:
            verf = x.opaque(8)
            entries = []
            while x.u32():
                fileid, name, cookie = x.u64(), x.string(), x.u64()
                a = post_op_attr(x)
                fh = post_op_fh3(x)
                entries.append(f"{name!r} (fileid {fileid}, cookie {cookie}, "
                               f"{a['type'] + ' size ' + str(a['size']) if a else 'no attrs'}, "
                               f"fh {len(fh) if fh else 'absent'} bytes)")
            f.append(f"cookieverf {verf.hex()}; eof {bool(x.u32())}")
            f.append(f"{len(entries)} entries: " + "; ".join(entries))
    return f


# --- choosing the vectors -------------------------------------------------


def is_nfs(m, p):
    return m.prog == 100003 and m.vers == 3 and proc_name(m.prog, m.proc) == p


def nfs_status(m):
    return struct.unpack(">I", m.body[m.body_off : m.body_off + 4])[0]


def call_name_arg(m):
    x = Xdr(m.body, m.body_off)
    x.opaque()
    return x.string()


def first(msgs, pred):
    for m in msgs:
        if pred(m):
            return m
    return None


def choose(msgs, small, big, small_len, big_len):
    """Returns {vector name: Msg}; see the table in the README."""
    replies = [m for m in msgs if not m.is_call and m.call]
    calls = [m for m in msgs if m.is_call]

    def ok(p):
        return lambda m: is_nfs(m, p) and m.accept_stat == 0 and nfs_status(m) == 0

    def read_of(size):
        return lambda m: ok("READ")(m) and read_len(m) == size

    r = {}
    r["getport"] = first(replies, lambda m: m.prog == 100000 and m.proc == 3)
    r["mnt"] = first(replies, lambda m: m.prog == 100005 and m.proc == 1 and nfs_status(m) == 0)
    r["mnt_acces"] = first(replies, lambda m: m.prog == 100005 and m.proc == 1 and nfs_status(m) == 13)
    r["export"] = first(replies, lambda m: m.prog == 100005 and m.proc == 5)
    r["null"] = first(replies, lambda m: m.prog == 100003 and m.proc == 0)
    r["getattr"] = first(replies, lambda m: ok("GETATTR")(m) and getattr_size(m) == small_len)
    r["getattr_dir"] = first(replies, lambda m: ok("GETATTR")(m) and getattr_type(m) == 2)
    r["lookup"] = first(replies, lambda m: ok("LOOKUP")(m) and call_name_arg(m.call) == small
                        and lookup_obj_size(m) == small_len)
    r["lookup_noent"] = first(replies, lambda m: is_nfs(m, "LOOKUP") and nfs_status(m) == 2)
    r["access"] = first(replies, ok("ACCESS"))
    r["fsinfo"] = first(replies, ok("FSINFO"))
    r["fsstat"] = first(replies, ok("FSSTAT"))
    r["create"] = first(replies, lambda m: ok("CREATE")(m) and call_name_arg(m.call) == small)
    r["create_exist"] = first(replies, lambda m: is_nfs(m, "CREATE") and nfs_status(m) == 17)
    r["setattr"] = first(replies, ok("SETATTR"))
    r["write"] = first(replies, lambda m: ok("WRITE")(m) and write_len(m.call) == small_len)
    r["commit"] = first(replies, lambda m: ok("COMMIT")(m) and m.conn == (r["write"].conn if r["write"] else -1))
    r["read"] = first(replies, read_of(small_len))
    r["read_big"] = first(replies, read_of(big_len))
    r["readdirplus"] = first(
        replies, lambda m: ok("READDIRPLUS")(m) and small.encode() in m.body and big.encode() in m.body)
    # Calls are the very calls of the chosen replies, so XIDs match.
    with_call = ["getport", "mnt", "getattr", "lookup", "create", "write", "commit", "read", "readdirplus"]
    v = {}
    for name, m in r.items():
        if name in with_call:
            v[f"ganesha_{name}_call"] = m.call if m else None
        v[f"ganesha_{name}_reply"] = m
    return v


def getattr_size(m):
    x = Xdr(m.body, m.body_off + 4)
    return fattr3(x)["size"]


def lookup_obj_size(m):
    x = Xdr(m.body, m.body_off + 4)
    x.opaque()
    a = post_op_attr(x)
    return a["size"] if a else None


def getattr_type(m):
    return struct.unpack(">I", m.body[m.body_off + 4 : m.body_off + 8])[0]


def read_len(m):
    x = Xdr(m.body, m.body_off + 4)
    post_op_attr(x)
    x.u32(), x.u32()
    return len(x.opaque())


def write_len(m):
    x = Xdr(m.body, m.body_off)
    x.opaque()
    x.u64(), x.u32(), x.u32()
    return len(x.opaque())


# --- output ---------------------------------------------------------------


def describe(name, m):
    kind = "call" if m.is_call else "reply"
    frags = count_fragments(m.raw)
    head = (f"{m.name} {kind}, XID 0x{m.xid:08x}, {len(m.raw)} bytes "
            f"({frags} fragment{'s' if frags > 1 else ''}, RPC message {len(m.raw) - 4 * frags} bytes)")
    facts = call_facts(m) if m.is_call else reply_facts(m)
    return head, [f for f in facts if not f.startswith("__data__")]


def count_fragments(raw):
    n, off = 0, 0
    while off < len(raw):
        (hdr,) = struct.unpack(">I", raw[off : off + 4])
        off += 4 + (hdr & 0x7FFFFFFF)
        n += 1
    return n


def check_read_data(v, small_content, big_content):
    """The READ replies must carry exactly the known file contents."""
    for name, want in (("ganesha_read_reply", small_content), ("ganesha_read_big_reply", big_content)):
        m = v.get(name)
        if m is None:
            continue
        data = next(f for f in reply_facts(m) if f.startswith("__data__"))[8:]
        if bytes.fromhex(data) != want:
            sys.exit(f"{name}: READ data differs from the file written")


def check_invariants(msgs, v):
    """The facts the README states for every capture; fail if one breaks."""
    for m in msgs:
        if count_fragments(m.raw) != 1:
            sys.exit(f"XID {m.xid:08x}: {count_fragments(m.raw)} fragments; README says 1")
        if m.is_call:
            if m.cred_flavor != 1:
                sys.exit(f"XID {m.xid:08x}: call not AUTH_SYS")
            continue
        x = Xdr(m.body, 12)  # after xid, mtype, reply_stat: the verifier
        if m.reply_stat != 0 or x.u32() != 0 or x.u32() != 0:
            sys.exit(f"XID {m.xid:08x}: reply not accepted with an AUTH_NONE verifier")
    w, c = v.get("ganesha_write_reply"), v.get("ganesha_commit_reply")
    if w and c:
        wv = next(f for f in reply_facts(w) if " verf " in f).split()[-1]
        cv = next(f for f in reply_facts(c) if f.startswith("verf ")).split()[-1]
        if wv != cv:
            sys.exit(f"WRITE verf {wv} != COMMIT verf {cv}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pcap")
    ap.add_argument("outdir")
    ap.add_argument("--ports", required=True, help="server ports, comma separated")
    ap.add_argument("--small-file", required=True)
    ap.add_argument("--small-content", required=True, help="local file with the small file's content")
    ap.add_argument("--big-file", required=True)
    ap.add_argument("--big-content", required=True)
    ap.add_argument("--readme-header", required=True, help="markdown prepended to the generated table")
    ap.add_argument("--list", action="store_true", help="list every message and exit")
    args = ap.parse_args()

    ports = {int(p) for p in args.ports.split(",")}
    msgs = parse_capture(args.pcap, ports)
    if args.list:
        for m in msgs:
            print(f"conn {m.conn} {'CALL ' if m.is_call else 'REPLY'} xid {m.xid:08x} {m.name} {len(m.raw)} bytes")
        return
    small_content = Path(args.small_content).read_bytes()
    big_content = Path(args.big_content).read_bytes()
    v = choose(msgs, args.small_file, args.big_file, len(small_content), len(big_content))
    missing = [n for n, m in v.items() if m is None]
    v = {n: m for n, m in v.items() if m is not None}
    check_read_data(v, small_content, big_content)
    check_invariants(msgs, v)

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [Path(args.readme_header).read_text().rstrip("\n"), ""]
    for name, m in v.items():
        (out / f"{name}.bin").write_bytes(m.raw)
        head, facts = describe(name, m)
        lines.append(f"### `{name}.bin`\n\n{head}.\n")
        lines += [f"- {f}" for f in facts]
        lines.append("")
    if missing:
        lines.append("Not captured this time (the tools did not send them): " + ", ".join(missing) + ".\n")
    (out / "README.md").write_text("\n".join(lines))
    print(f"wrote {len(v)} vectors to {out}; missing: {', '.join(missing) or 'none'}", file=sys.stderr)


if __name__ == "__main__":
    main()
