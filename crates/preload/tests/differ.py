#!/usr/bin/env python3
"""The differential harness's judge, and the check that its deviations and
docs/run-deviations.md name the same things.

    differ.py LOCAL NFS   compare two outputs of a harness program
                          (tests/c/randops.c) run in a local directory and
                          on NFS: every line must be the same, except a
                          line tagged [dev:ID] on both sides with the same
                          tags, where ID is a deviation of the file. Exit 1
                          on any other difference.
    differ.py --check     every [dev:ID] tag in the harness (the files
                          under crates/preload/tests/) is a deviation of
                          the file, and every deviation whose "Harness"
                          column names files is tagged in each of them.

The file's table rows look like
    | `id` | calls | on NFS | why | harness files, or — |
"""
import difflib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
DEVIATIONS = ROOT / "docs" / "run-deviations.md"
HARNESS = ROOT / "crates" / "preload" / "tests"
TAG = re.compile(r"\[dev:([a-z0-9-]+)\]")
ROW = re.compile(r"^\|\s*`([a-z0-9-]+)`\s*\|")


def deviations():
    """The deviations of the file: id -> the harness files its row names."""
    rows = {}
    for line in DEVIATIONS.read_text().splitlines():
        m = ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5:
            sys.exit(f"{DEVIATIONS}: row {m.group(1)} has {len(cells)} cells, not 5")
        if m.group(1) in rows:
            sys.exit(f"{DEVIATIONS}: {m.group(1)} twice")
        rows[m.group(1)] = re.findall(r"`([^`]+\.(?:c|sh))`", cells[4])
    return rows


def check():
    rows = deviations()
    bad = 0
    used = {}
    for path in sorted(HARNESS.rglob("*")):
        if path.suffix in (".c", ".sh") and path.is_file():
            for tag in TAG.findall(path.read_text()):
                used.setdefault(tag, set()).add(path.name)
    for tag, files in sorted(used.items()):
        if tag not in rows:
            print(f"[dev:{tag}] in {', '.join(sorted(files))} is not in {DEVIATIONS.name}")
            bad = 1
    for dev, files in sorted(rows.items()):
        for f in files:
            if f not in used.get(dev, set()):
                print(f"{DEVIATIONS.name}: {dev} names {f}, which has no [dev:{dev}]")
                bad = 1
    if not bad:
        print(f"deviations: {len(rows)} in {DEVIATIONS.name}, {len(used)} tagged in the harness, all listed")
    return bad


def compare(local_path, nfs_path):
    rows = deviations()
    local = pathlib.Path(local_path).read_text().splitlines()
    nfs = pathlib.Path(nfs_path).read_text().splitlines()
    seen = {}
    hunks = []
    # Lines are matched as diff matches them, so one extra or missing line
    # shows as itself, not as every line after it.
    matcher = difflib.SequenceMatcher(None, local, nfs, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            pairs = list(zip(local[i1:i2], nfs[j1:j2]))
            if all(tolerated(a, b, rows) for a, b in pairs):
                for a, _ in pairs:
                    for t in TAG.findall(a):
                        seen[t] = seen.get(t, 0) + 1
                continue
        hunks.append((i1, local[i1:i2], nfs[j1:j2]))
    for i, a, b in hunks[:8]:
        print(f"at local line {i + 1}:")
        for line in a[:10]:
            print(f"  local: {line}")
        for line in b[:10]:
            print(f"  NFS:   {line}")
    if len(hunks) > 8:
        print(f"... and {len(hunks) - 8} more places")
    said = ", ".join(f"{t} x{n}" for t, n in sorted(seen.items())) or "none"
    if hunks:
        print(f"{len(hunks)} places differ that no deviation explains (documented ones seen: {said})")
        return 1
    print(f"{len(local)} lines the same but for documented deviations: {said}")
    return 0


def tolerated(a, b, rows):
    """Two lines that differ but carry the same deviations' tags."""
    tags = TAG.findall(a)
    return bool(tags) and tags == TAG.findall(b) and all(t in rows for t in tags)


def main(argv):
    if argv == ["--check"]:
        return check()
    if len(argv) == 2:
        return compare(*argv)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
