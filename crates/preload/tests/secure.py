#!/usr/bin/env python3
"""secure.py DIR: the `secure` group's program (crates/preload/tests/secure.sh).

Writes, fsyncs, reads back, renames, replaces, truncates, lists and removes
files in DIR, and prints what it saw, one line a step. Run in a local
directory and on NFS through `dnfs run`: the two transcripts must be the same,
and so must the two trees it leaves (a.bin is gone, sub/c.bin is 12,345 bytes,
log.txt says "replaced").
"""

import hashlib
import os
import sys


def digest(data):
    return hashlib.sha256(data).hexdigest()[:16]


def main():
    d = sys.argv[1]
    data = bytes((i * 131 + i // 977) & 0xFF for i in range(1 << 20)) + b"tail" * 5
    a = os.path.join(d, "a.bin")
    fd = os.open(a, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    for off in range(0, len(data), 65536):
        os.pwrite(fd, data[off:off + 65536], off)
    os.fsync(fd)
    os.close(fd)
    with open(a, "rb") as f:
        back = f.read()
    print("a.bin", len(back), digest(back), back == data)

    log = os.path.join(d, "log.txt")
    with open(log, "w") as f:
        for i in range(1000):
            f.write(f"line {i}\n")
        f.flush()
        os.fsync(f.fileno())
    print("log.txt", os.stat(log).st_size)

    tmp = os.path.join(d, "log.tmp")
    with open(tmp, "w") as f:
        f.write("replaced\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, log)
    with open(log) as f:
        print("log.txt after replace:", f.read().strip())

    sub = os.path.join(d, "sub")
    os.mkdir(sub)
    c = os.path.join(sub, "c.bin")
    os.rename(a, c)
    print("a.bin after rename:", os.path.exists(a))
    with open(c, "rb") as f:
        f.seek(500000)
        print("c.bin at 500000:", digest(f.read(4096)))
    with open(c, "r+b") as f:
        f.seek(4096)
        f.write(b"overwritten")
        f.flush()
        os.fsync(f.fileno())
    os.truncate(c, 12345)
    with open(c, "rb") as f:
        print("c.bin truncated:", os.fstat(f.fileno()).st_size, digest(f.read()))

    gone = os.path.join(d, "gone")
    with open(gone, "wb") as f:
        f.write(b"x" * 100)
    os.unlink(gone)
    print("listing:", sorted(os.listdir(d)), sorted(os.listdir(sub)))
    sizes = sorted(
        (os.path.relpath(os.path.join(root, n), d), os.stat(os.path.join(root, n)).st_size)
        for root, _, names in os.walk(d) for n in names)
    print("sizes:", sizes)


if __name__ == "__main__":
    main()
