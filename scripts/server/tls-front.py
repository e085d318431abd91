#!/usr/bin/env python3
"""tls-front.py: an RPC-with-TLS (RFC 9289) front for a plain NFS server, for tests.

NFS-Ganesha has no RPC-with-TLS. This front listens on four ports in front of
each backend port it is given (the NFS port, and the MOUNT or NLM port when
those must be in TLS too: RFC 9289 applies to every RPC program) and relays
every connection to it:

  BASE    STARTTLS: answers the AUTH_TLS NULL probe (RFC 9289 section 4.1:
          accepted, verifier AUTH_NONE "STARTTLS"), then the TLS 1.3 server
          handshake on the same socket (ALPN "sunrpc"), then relays. A
          connection whose first call is not the probe is closed: TLS is
          required, so a client that does not use it fails.
  BASE+1  as BASE, and a client certificate signed by the CA is required (mtls)
  BASE+2  TLS from the first byte (no probe), as a TLS terminator does
  BASE+3  no TLS at all: the same relay in clear, to measure the relay's cost

Usage:
  tls-front.py start STATE_DIR BACKEND_PORT BASE_PORT [BACKEND_PORT BASE_PORT ...]
                                                        start in the background
  tls-front.py stop STATE_DIR                           stop the one started
  tls-front.py status STATE_DIR                         exit 3 if not running

`start` makes, once, in STATE_DIR with openssl: ca.pem, server.pem/server.key
(for IP 127.0.0.1 and the name nfs.test), client.pem/client.key (signed by
the CA) and other-ca.pem (a CA that signed nothing here). It writes the PID
to STATE_DIR/front.pid, the log to STATE_DIR/front.log, and prints
key=value lines (dir, the first pair's ports). A BACKEND_PORT is a port on
127.0.0.1 or HOST:PORT (a test server in a network namespace); the fronts
listen on 127.0.0.1 only. One process serves all the pairs with the same
certificates. `stop` kills exactly the PID in the file.
"""

import os
import select
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

AUTH_TLS = 7
CHUNK = 256 * 1024


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(d):
    if os.path.exists(os.path.join(d, "client.pem")):
        return
    ext = os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:nfs.test\n"
                "extendedKeyUsage=serverAuth\n")
    cext = os.path.join(d, "client.ext")
    with open(cext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "3650",
                "-subj", f"/CN=directnfs test {ca}", cwd=d)
    for who, e in (("server", ext), ("client", cext)):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{who}.key", "-out", f"{who}.csr",
                "-subj", f"/CN=directnfs test {who}", cwd=d)
        openssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{who}.pem", "-days", "3650", "-extfile", e,
                cwd=d)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        got = sock.recv(n - len(buf))
        if not got:
            raise EOFError("peer closed")
        buf += got
    return buf


def read_record(sock):
    """One RPC record (all fragments) with its marks, as read."""
    raw = b""
    body = b""
    while True:
        mark = recv_exact(sock, 4)
        (word,) = struct.unpack(">I", mark)
        n = word & 0x7FFFFFFF
        if n > 1 << 20:
            raise ValueError("record too long")
        frag = recv_exact(sock, n)
        raw += mark + frag
        body += frag
        if word & 0x80000000:
            return raw, body


def is_auth_tls_probe(body):
    if len(body) < 32:
        return None
    xid, mtype, _rpcvers, _prog, _vers, proc, flavor = struct.unpack(">7I", body[:28])
    if mtype == 0 and proc == 0 and flavor == AUTH_TLS:
        return xid
    return None


def starttls_reply(xid):
    body = struct.pack(">5I", xid, 1, 0, 0, 8) + b"STARTTLS" + struct.pack(">I", 0)
    return struct.pack(">I", 0x80000000 | len(body)) + body


def relay(a, b):
    """Copies both ways between a and b (either may be an SSLSocket) until
    one side closes."""
    for s in (a, b):
        s.setblocking(True)
    socks = [a, b]
    try:
        while True:
            ready = [s for s in socks if isinstance(s, ssl.SSLSocket) and s.pending()]
            if not ready:
                ready, _, _ = select.select(socks, [], [], 60)
            for s in ready:
                other = b if s is a else a
                data = s.recv(CHUNK)
                if not data:
                    return
                other.sendall(data)
    except (OSError, ssl.SSLError, EOFError):
        return


def serve_conn(conn, mode, ctx, backend):
    upstream = None
    try:
        conn.settimeout(30)
        if mode in ("starttls", "mtls"):
            raw, body = read_record(conn)
            xid = is_auth_tls_probe(body)
            if xid is None:
                # TLS is required here: a client that did not ask for it
                # is refused (the tests show the client really uses TLS).
                print(f"{mode}: first call is not the AUTH_TLS probe: closed", flush=True)
                return
            conn.sendall(starttls_reply(xid))
            conn = ctx.wrap_socket(conn, server_side=True)
            first = b""
        elif mode == "direct":
            conn = ctx.wrap_socket(conn, server_side=True)
            first = b""
        else:
            first = b""
        conn.settimeout(None)
        upstream = socket.create_connection(backend)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if first:
            upstream.sendall(first)
        relay(conn, upstream)
    except (OSError, ssl.SSLError, EOFError, ValueError) as e:
        print(f"{mode}: connection ended: {e}", flush=True)
    finally:
        for s in (conn, upstream):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


def context(d, mtls):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(os.path.join(d, "server.pem"), os.path.join(d, "server.key"))
    ctx.set_alpn_protocols(["sunrpc"])
    if mtls:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(os.path.join(d, "ca.pem"))
    return ctx


def backend_addr(spec):
    """BACKEND_PORT or HOST:PORT as an address to connect to."""
    host, _, port = spec.rpartition(":")
    return (host or "127.0.0.1", int(port))


def serve(d, pairs):
    modes = [("starttls", context(d, False)), ("mtls", context(d, True)),
             ("direct", context(d, False)), ("plain", None)]
    listeners = []
    for backend, base in pairs:
        for i, (mode, ctx) in enumerate(modes):
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", base + i))
            ls.listen(128)
            listeners.append((ls, mode, ctx, backend))
        print(f"listening on 127.0.0.1:{base}..{base + 3} -> {backend[0]}:{backend[1]}",
              flush=True)

    def accept(ls, mode, ctx, backend):
        while True:
            conn, _ = ls.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=serve_conn, args=(conn, mode, ctx, backend),
                             daemon=True).start()

    for ls, mode, ctx, backend in listeners:
        threading.Thread(target=accept, args=(ls, mode, ctx, backend), daemon=True).start()
    signal.sigwait([signal.SIGTERM, signal.SIGINT])


def parse_pairs(args):
    """[BACKEND, BASE, BACKEND, BASE, ...] as [((host, port), base), ...]."""
    if not args or len(args) % 2:
        raise ValueError("BACKEND_PORT BASE_PORT pairs expected")
    return [(backend_addr(args[i]), int(args[i + 1])) for i in range(0, len(args), 2)]


def pid_of(d):
    try:
        with open(os.path.join(d, "front.pid")) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, d = argv[1], os.path.abspath(argv[2])
    if cmd == "serve":
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
        serve(d, parse_pairs(argv[3:]))
        return 0
    if cmd == "start":
        try:
            pairs = parse_pairs(argv[3:])
        except ValueError:
            print(__doc__, file=sys.stderr)
            return 2
        base = pairs[0][1]
        os.makedirs(d, exist_ok=True)
        make_certs(d)
        if pid_of(d) is None:
            log = open(os.path.join(d, "front.log"), "a")
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", d,
                                  *argv[3:]],
                                 stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
            with open(os.path.join(d, "front.pid"), "w") as f:
                f.write(f"{p.pid}\n")
            deadline = time.time() + 10
            for _, b in pairs:
                while True:
                    try:
                        socket.create_connection(("127.0.0.1", b + 3), timeout=1).close()
                        break
                    except OSError:
                        if p.poll() is not None or time.time() > deadline:
                            print(f"tls-front: did not start; see {d}/front.log",
                                  file=sys.stderr)
                            return 1
                        time.sleep(0.1)
        print(f"dir={d}\nstarttls_port={base}\nmtls_port={base + 1}\n"
              f"direct_port={base + 2}\nplain_port={base + 3}")
        return 0
    if cmd == "stop":
        pid = pid_of(d)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                if pid_of(d) is None:
                    break
                time.sleep(0.1)
        try:
            os.remove(os.path.join(d, "front.pid"))
        except OSError:
            pass
        return 0
    if cmd == "status":
        pid = pid_of(d)
        print(f"pid={pid}")
        return 0 if pid else 3
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
