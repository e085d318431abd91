#!/usr/bin/env python3
"""The repository's Markdown links resolve, fragments included, and the
README and the book keep prose within 100 columns.

A link `[text](path#fragment)` in a tracked `.md` file must name a file
that exists, and its fragment a heading of that file (or of a file it
pulls in with mdBook's `{{#include}}`), by the anchor rules GitHub and
mdBook share: lower case, letters, digits, `_` and `-` kept, spaces made
`-`, everything else dropped, `-1`, `-2` ... added to repeats. An
`{{#include path}}` must name a file that exists. In README.md and
docs/book/src, a prose line is at most 100 characters: code blocks,
tables, headings and lines that are one link or one URL are exempt.
A link in a book chapter, or in a file a chapter includes (mdBook pastes
it in, so its links resolve from the chapter), must stay inside the
book's src/: the HTML has no page for a file outside it.
Run from anywhere; exits 1 and lists each fault as FILE:LINE.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WIDTH = 100
WRAPPED = ("README.md", "docs/book/src/")
BOOK_SRC = "docs/book/src"
LINK = re.compile(r"\]\(([^)\s]+)\)")
INCLUDE = re.compile(r"\{\{#include\s+([^}\s:]+)[^}]*\}\}")


def anchor(heading):
    """The anchor GitHub and mdBook give a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return "".join("-" if c == " " else c for c in text
                   if c.isalnum() or c in "_- ")


def prose_lines(path):
    """(number, line, in_code) for each line of `path`."""
    code = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        fence = line.lstrip().startswith("```")
        yield number, line, code or fence
        if fence:
            code = not code


def anchors(path, seen=None):
    """Every anchor `path` has, following `{{#include}}`."""
    seen = seen if seen is not None else set()
    if path in seen or not os.path.isfile(path):
        return set()
    seen.add(path)
    found, count = set(), {}
    for _, line, code in prose_lines(path):
        if code:
            continue
        m = INCLUDE.search(line)
        if m:
            found |= anchors(os.path.normpath(os.path.join(os.path.dirname(path), m.group(1))),
                             seen)
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            a = anchor(m.group(1))
            n = count.get(a, 0)
            count[a] = n + 1
            found.add(a if n == 0 else f"{a}-{n}")
        for m in re.finditer(r"""<a\s+(?:name|id)=["']([^"']+)["']""", line):
            found.add(m.group(1))
    return found


def check_links(path):
    faults = []
    here = os.path.dirname(path)
    for number, line, code in prose_lines(path):
        if code:
            continue
        for m in INCLUDE.finditer(line):
            if not os.path.isfile(os.path.join(here, m.group(1))):
                faults.append(f"{path}:{number}: include of a missing file {m.group(1)}")
        for m in LINK.finditer(line):
            target = m.group(1)
            if "://" in target or target.startswith("mailto:"):
                continue
            file, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(here, file)) if file else path
            if not os.path.exists(dest):
                faults.append(f"{path}:{number}: broken link to {target}")
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                faults.append(f"{path}:{number}: no heading #{fragment} in {dest}")
    return faults


def check_book_links(chapter, src=BOOK_SRC, text_of=None, seen=None):
    """Links of `chapter` and of the Markdown it includes that leave `src`."""
    faults = []
    here = os.path.dirname(chapter)
    seen = seen if seen is not None else set()
    path = text_of or chapter
    if path in seen or not os.path.isfile(path):
        return faults
    seen.add(path)
    for number, line, code in prose_lines(path):
        if code:
            continue
        for m in INCLUDE.finditer(line):
            included = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            if included.endswith(".md"):
                faults += check_book_links(chapter, src, included, seen)
        for m in LINK.finditer(line):
            target = m.group(1)
            file = target.partition("#")[0]
            if "://" in target or target.startswith("mailto:") or not file:
                continue
            dest = os.path.normpath(os.path.join(here, file))
            if os.path.commonpath([os.path.abspath(dest), os.path.abspath(src)]) != \
                    os.path.abspath(src) or not os.path.exists(dest):
                faults.append(f"{path}:{number}: link {target} has no page in the book "
                              f"(from {chapter})")
    return faults


def check_width(path):
    faults = []
    for number, line, code in prose_lines(path):
        if code or len(line) <= WIDTH:
            continue
        stripped = line.strip()
        if stripped.startswith(("|", "#", "{{#")) or " " not in stripped.lstrip("*-0123456789. "):
            continue
        faults.append(f"{path}:{number}: {len(line)} columns (prose wraps at {WIDTH})")
    return faults


def main():
    os.chdir(ROOT)
    files = subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True,
                           check=True).stdout.split()
    # Files not yet committed (a new chapter) are checked too.
    files += subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "*.md"],
                            capture_output=True, text=True, check=True).stdout.split()
    faults = []
    for path in sorted(set(files)):
        if not os.path.isfile(path):
            continue
        faults += check_links(path)
        if path.startswith(BOOK_SRC + "/") and path.endswith(".md"):
            faults += check_book_links(path)
        if path == WRAPPED[0] or path.startswith(WRAPPED[1]):
            faults += check_width(path)
    for fault in faults:
        print(fault)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
