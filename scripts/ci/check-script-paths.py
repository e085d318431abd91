#!/usr/bin/env python3
"""Every path under scripts/ that a tracked file names exists.

The scripts live in one folder per job (scripts/README.md). A script that
moves leaves its old path behind in docs, comments and tests; this check
finds it. It reads every file git tracks, takes each `scripts/...` path
(alone, after `../`, `./` or a `$ROOT/`-like variable; not a path under
another folder, such as `/db/scripts/x.sh` in an example) and fails,
with file and line, on each one that does not exist.

Run: python3 scripts/ci/check-script-paths.py (scripts/test.sh does).
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A scripts/ path, and what stands before it: nothing that makes it a path
# under another folder. `./` (and so `../`), `$ROOT/` and `$REPO_DIR/` lead
# back to the repository, so they count.
PATH = re.compile(
    r"(?:(?<![\w./$-])|(?<=\./)|(?<=\$ROOT/)|(?<=\$\{ROOT\}/)|(?<=\$REPO_DIR/)|(?<=\"\$ROOT\"/))"
    r"scripts/([\w./-]*[\w])"
)


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                         capture_output=True).stdout
    return [f for f in out.decode().split("\0") if f]


def missing_paths():
    """(file, line number, path) for each named path that does not exist."""
    bad = []
    for rel in tracked_files():
        full = os.path.join(ROOT, rel)
        if not os.path.isfile(full):
            continue
        try:
            with open(full, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except UnicodeDecodeError:
            continue  # binary files (vectors, images) name no scripts
        for number, line in enumerate(lines, 1):
            for path in named_paths(line):
                if not os.path.exists(os.path.join(ROOT, path)):
                    bad.append((rel, number, path))
    return bad


def named_paths(line):
    """The scripts/ paths of the repository that LINE names."""
    return ["scripts/" + match.group(1) for match in PATH.finditer(line)]


def main():
    bad = missing_paths()
    for rel, number, path in bad:
        print(f"{rel}:{number}: {path} does not exist", file=sys.stderr)
    if bad:
        print(f"check-script-paths: {len(bad)} reference(s) to paths under "
              "scripts/ that do not exist (scripts/README.md says where "
              "each script lives)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
