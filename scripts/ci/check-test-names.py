#!/usr/bin/env python3
"""Every test a document names as proof must exist where its name says.

RELIABILITY.md, the READMEs, CONTRIBUTING.md and the book (docs/book/src)
name tests as `suite::test_name` (the prefixes are the book's reliability
chapter "How to read the chapters"). A renamed or deleted test leaves a promise without its proof; this
finds such names. Shorthands it understands: `a::{b,c}` (each of b and c),
`..::name` (the previous name's suite), and `suite::*` / `suite::tests` (the
suite must exist). Run from anywhere; exits 1 and lists what is missing.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["RELIABILITY.md", "README.md", "CONTRIBUTING.md", "crates/sqlite/README.md"]
BOOK = "docs/book/src"
CLIENT_TESTS = {
    "hostile", "environment", "mounting", "logging", "real_server", "root_export",
    "late_server", "handles_links_attrs", "write_behind", "multipath", "v41",
    "links", "examples", "nlm", "kerberos", "kerberos_no_ticket", "kerberos_renewal", "kerberos_restart", "tls",
    "tls_interop", "kerberos_expiry",
}


def expand(text):
    """`a::{b,c}` -> [`a::b`, `a::c`], nested braces too."""
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for alt in m.group(1).split(","):
        out += expand(text[: m.start()] + alt.strip() + text[m.end():])
    return out


def place(parts):
    """The file or directory (prefix) a suite path names, or None if the
    first component is not one of the test prefixes."""
    head, mods = parts[0], [p for p in parts[1:-1] if p != "tests"]
    if "/" in head:
        crate, suite = head.split("/", 1)
        return {"cli": "crates/cli/tests/", "wire": "crates/wire/tests/",
                "engine": "crates/engine/tests/",
                "sqlite": "crates/sqlite/tests/"}.get(crate, "\0") + suite
    if head in CLIENT_TESTS:
        return "crates/client/tests/" + head
    if head == "client":
        return "crates/client/src/" + "/".join(mods)
    if head == "config":
        return "crates/client/src/config/" + "/".join(mods)
    if head in ("wire", "engine", "preload", "testkit"):
        return f"crates/{head}/src/" + "/".join(mods)
    if head == "capi":
        return "crates/capi/src/"
    if head == "cli":
        if mods[:1] == ["exports"]:
            return "crates/cli/tests/exports"
        if mods[:1] == ["ops"]:
            return "crates/cli/src/ops/" + "/".join(mods[1:])
        return "crates/cli/tests/"
    if head == "sql":
        return "crates/sqlite/tests/sql"
    if head == "sqlite":
        return "crates/sqlite/src/" + "/".join(mods)
    if head == "c":
        return "tests/c/"
    return None


def main():
    os.chdir(ROOT)
    listing = subprocess.run(
        ["git", "grep", "-nE", r"fn [a-z0-9_]+|^static int [a-z0-9_]+\(void\)", "--",
         "crates", "tests/c"],
        capture_output=True, text=True, check=True).stdout
    defined = {}
    for line in listing.splitlines():
        path, _, rest = line.split(":", 2)
        for m in re.finditer(r"(?:fn|static int) ([a-z0-9_]+)", rest):
            defined.setdefault(m.group(1), set()).add(path)
    files = set(subprocess.run(["git", "ls-files", "crates", "tests/c"],
                               capture_output=True, text=True, check=True).stdout.split())
    missing = 0
    book = sorted(os.path.join(d, f) for d, _, fs in os.walk(BOOK) for f in fs
                  if f.endswith(".md"))
    for doc in DOCS + book:
        previous = None
        for number, line in enumerate(open(doc, encoding="utf-8"), 1):
            for m in re.finditer(r"`([^`\s]+)`", line):
                for name in expand(m.group(1)):
                    if name.startswith("..::") and previous:
                        name = previous + name[2:]
                    parts = name.split("::")
                    if len(parts) < 2 or not re.fullmatch(r"[a-z0-9_*]+", parts[-1]):
                        continue
                    where = place(parts)
                    if where is None:
                        continue
                    previous = "::".join(parts[:-1])
                    last = parts[-1]
                    if last in ("*", "tests") or last.endswith("*"):
                        stem = "" if last == "tests" else last.rstrip("*")
                        ok = any(f.startswith(where) for f in files) and (
                            not stem or any(p.startswith(where)
                                            for d, ps in defined.items()
                                            if d.startswith(stem) for p in ps))
                    else:
                        ok = any(p.startswith(where) for p in defined.get(last, ()))
                    if not ok:
                        print(f"{doc}:{number}: no test {name} under {where}")
                        missing += 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
