#!/usr/bin/env python3
"""No new import knots: the module graph of every crate, checked against a
baseline that may only tighten.

For every crate under crates/ (its src/lib.rs, or src/main.rs), this reads
the `mod` declarations (files, `#[path]`, inline `mod x { }`) to build the
module tree, and every path that names a module of the crate: `use`
declarations (`crate::`, `super::`, `self::`, and a child module's name)
and paths in code (`crate::a::b()`, `super::c::D`); a path through what
the crate root imports (`crate::Client` after lib.rs's `pub use
client::Client`) names the module it comes from. Items under
`#[cfg(test)]` are left out: a test's imports are not the design.

For the crates of READER_VIEW (the client crate), the graph also has the
edges a reader sees in the text: a `super::x` that the compiler resolves
to a sibling named like a module one level up, and a `crate::` path in a
string (`Crate.add_reader_view`). So a name that reads like a knot is
renamed, not only a real import cut.

Then, for the crate's top level and for every folder (a module with
children), it builds the graph whose nodes are that folder's direct
children, with an edge A -> B when anything in A (or below it) names
anything in B (or below it), and finds its strongly connected components
(Tarjan). A component of more than one module is a knot: every member
reaches every other through imports.

Every knot is printed. The baseline (scripts/ci/module-knots.txt, one knot a
line: `CRATE FOLDER: MEMBER MEMBER ...`, CRATE being the crate's folder
under crates/) lists the knots allowed today. The check fails when a knot is new or grew (a module joined it, or two merged),
printing a cycle through the newcomer with the line of each import on it,
and when the baseline lists a knot that is gone. A knot that shrank is
reported so the baseline can be tightened (its line rewritten), and it
does not fail. `--write-baseline` writes the current knots as the
baseline.

Python 3 standard library only. Exit status 0 (no new or grown knot, no
stale baseline line), 1 (some), 2 (usage or a file it cannot read).
"""

import argparse
import os
import re
import sys
from collections import defaultdict

# --- lexing -----------------------------------------------------------------

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokens(text):
    """(kind, value, line) for identifiers ('id'), `::` and single
    punctuation ('p'), with comments, strings, chars and numbers dropped
    (lifetimes are dropped too)."""
    i, n, line = 0, len(text), 1
    out = []
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 260]):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            line += text.count("\n", i, j)
            i = j
        elif c == "b" and i + 1 < n and text[i + 1] in "\"'":
            i += 1  # a byte string or byte: the literal follows
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                i += len(m.group(0))
            else:
                m = IDENT.match(text, i + 1)
                i = m.end() if m else i + 1
        elif c.isdigit():
            m = re.match(r"[0-9][0-9A-Za-z_.]*", text[i:])
            i += len(m.group(0))
        elif IDENT.match(c):
            m = IDENT.match(text, i)
            out.append(("id", m.group(0), line))
            i = m.end()
        elif text.startswith("::", i):
            out.append(("p", "::", line))
            i += 2
        else:
            out.append(("p", c, line))
            i += 1
    return out


# --- the module tree and its references ---------------------------------------


class Crate:
    """A crate's modules (tuples of names from the root) and the references
    between them: refs[(from, to)] = [(file, line, text), ...]."""

    def __init__(self, name, root_file):
        self.name = name
        self.modules = {(): root_file}
        self.children = defaultdict(set)
        self.refs = defaultdict(list)
        self._raw = []  # (from module, absolute segments, file, line, text)
        # What the crate root's `use` items bring in, by the name they
        # give it: `pub use client::Client;` makes `crate::Client` name
        # the module `client`.
        self.root_uses = {}
        self._load(root_file, (), os.path.dirname(root_file))
        for frm, segs, f, ln, text in self._raw:
            to = self._longest_module(self._through_root_use(segs))
            if to is not None and to != frm:
                self.refs[(frm, to)].append((f, ln, text))

    def add_reader_view(self):
        """Adds the edges a reader sees in the text (READER_VIEW): in each
        folder, a child whose files mention a sibling as `super::x`,
        `super::super::x`, `super::{.., x, ..}` or by its full `crate::` path
        (in code or in a string) names that sibling, even where the
        compiler resolves the name elsewhere: a `super::file` inside v4/
        that means v4's own `file` reads as the crate's `file`, and an
        option's help text that says `see crate::io::spare` sends its
        reader there. Comments and a file's `#[cfg(test)] mod` tail are
        not read."""
        for folder, kids in self.children.items():
            prefix = "crate" + "".join("::" + f for f in folder)
            for kid in kids:
                files = sorted({f for m, f in self.modules.items() if m[:len(folder) + 1] == folder + (kid,)})
                for f in files:
                    text = reader_text(f)
                    for other in kids - {kid}:
                        o = re.escape(other)
                        pat = re.compile(rf"\bsuper::(super::)?{o}\b|\bsuper::\{{[^}}]*\b{o}\b"
                                         rf"|\b{re.escape(prefix)}::{o}\b|\b{re.escape(prefix)}::\{{[^}}]*\b{o}\b")
                        m = pat.search(text)
                        if m:
                            line = text.count("\n", 0, m.start()) + 1
                            self.refs[(folder + (kid,), folder + (other,))].append((f, line, m.group(0)))

    def _through_root_use(self, segs):
        """`segs` with a first segment the crate root imports (and is no
        module of the crate) replaced by where it comes from, a few
        re-exports deep."""
        for _ in range(4):
            if not segs or (segs[0],) in self.modules or segs[0] not in self.root_uses:
                break
            segs = self.root_uses[segs[0]] + list(segs[1:])
        return segs

    def _longest_module(self, segs):
        best = None
        for k in range(len(segs) + 1):
            if tuple(segs[:k]) in self.modules:
                best = tuple(segs[:k])
            else:
                break
        return best

    def _add(self, module, file):
        self.modules[module] = file
        if module:
            self.children[module[:-1]].add(module[-1])

    def _load(self, file, module, child_dir):
        try:
            with open(file, encoding="utf-8") as fh:
                toks = tokens(fh.read())
        except OSError as e:
            raise SystemExit(f"check-module-graph: {file}: {e}") from e
        Parser(self, file, toks).run(module, child_dir)


def reader_text(file):
    """The file as a reader of its design sees it: comment lines blanked
    (line numbers kept), and nothing from its `#[cfg(test)] mod x {`."""
    with open(file, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod \w+\s*\{", text)
    if m:
        text = text[:m.start()]
    return "\n".join("" if l.lstrip().startswith("//") else l for l in text.splitlines())


# Crates whose graph also has the reader's edges (Crate.add_reader_view):
# the client crate, whose knot issue 29 untangled.
READER_VIEW = {"client"}


class Parser:
    """One file: its `mod` items (loaded in turn), `use` trees and paths."""

    def __init__(self, crate, file, toks):
        self.crate, self.file, self.t, self.i = crate, file, toks, 0

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else ("eof", "", 0)

    def run(self, module, child_dir):
        # Scopes of inline modules: (module, its children's folder, brace depth).
        scopes = [(module, child_dir, 0)]
        depth = 0
        attrs = []
        while self.i < len(self.t):
            kind, val, line = self.t[self.i]
            mod, cdir, _ = scopes[-1]
            if val == "#" and kind == "p":
                inner = self.peek(1)[1] == "!"
                attr = self.attribute()
                if inner and is_cfg_test(attr):
                    return  # the whole file is test-only
                if not inner:
                    attrs.append(attr)
                continue
            test_only = any(is_cfg_test(a) for a in attrs)
            path_attr = next((a for a in attrs if a and a[0] == "path"), None)
            if kind == "id" and val == "pub":
                # Visibility keeps the attributes for the item it starts
                # (`pub(crate)`, `pub(in crate::x)`: not references).
                self.skip_visibility()
                continue
            attrs = []
            if test_only:
                self.skip_item()
                continue
            if kind == "id" and val == "mod" and self.peek(1)[0] == "id":
                name = self.peek(1)[1]
                nxt = self.peek(2)[1]
                if nxt == ";":
                    self.i += 3
                    self.declare(mod, cdir, name, path_attr)
                    continue
                if nxt == "{":
                    self.i += 3
                    depth += 1
                    self.crate._add(mod + (name,), self.file)
                    scopes.append((mod + (name,), os.path.join(cdir, name), depth))
                    continue
            if kind == "id" and val == "use":
                self.i += 1
                for segs, ln, alias in self.use_tree():
                    absolute = self.reference(mod, segs, ln)
                    if mod == () and not absolute and segs and segs[0] in self.crate.root_uses:
                        # `use bee::Thing;` after `use b as bee;`
                        absolute = self.crate.root_uses[segs[0]] + list(segs[1:])
                    if mod == () and absolute and alias:
                        if absolute[-1] == "self":
                            absolute = absolute[:-1]
                        self.crate.root_uses[alias] = absolute
                continue
            if kind == "id" and val in ("crate", "super", "self") and self.peek(1)[1] == "::":
                prev = self.t[self.i - 1][1] if self.i else ""
                segs, ln = self.path()
                if prev != "$":  # `$crate::` in a macro names the caller's crate
                    self.reference(mod, segs, ln)
                continue
            if kind == "p" and val == "{":
                depth += 1
            elif kind == "p" and val == "}":
                if len(scopes) > 1 and scopes[-1][2] == depth:
                    scopes.pop()
                depth -= 1
            self.i += 1

    def attribute(self):
        """Consumes `#[...]` or `#![...]`; returns its tokens' values."""
        self.i += 1
        if self.peek()[1] == "!":
            self.i += 1
        if self.peek()[1] != "[":
            return []
        depth, vals = 0, []
        while self.i < len(self.t):
            v = self.t[self.i][1]
            self.i += 1
            if v == "[":
                depth += 1
                if depth == 1:
                    continue
            elif v == "]":
                depth -= 1
                if depth == 0:
                    break
            vals.append(v)
        if vals and vals[0] == "path":
            # `#[path = "x.rs"]`: the string was dropped by the lexer; read
            # it back from the source line.
            vals = ["path", self.path_literal()]
        return vals

    def path_literal(self):
        line = self.t[self.i - 1][2]
        with open(self.file, encoding="utf-8") as fh:
            text = fh.read().split("\n")[line - 1]
        m = re.search(r'#\[path\s*=\s*"([^"]+)"\]', text)
        return m.group(1) if m else ""

    def skip_visibility(self):
        self.i += 1
        if self.peek()[1] == "(":
            depth = 0
            while self.i < len(self.t):
                v = self.t[self.i][1]
                self.i += 1
                depth += v == "("
                depth -= v == ")"
                if depth == 0:
                    break

    def skip_item(self):
        """Skips one item: to its `;` or through its `{ }` block."""
        depth = 0
        while self.i < len(self.t):
            v = self.t[self.i][1]
            self.i += 1
            if v in "([":
                depth += 1
            elif v in ")]":
                depth -= 1
            elif v == ";" and depth == 0:
                return
            elif v == "{" and depth == 0:
                braces = 1
                while self.i < len(self.t) and braces:
                    w = self.t[self.i][1]
                    braces += (w == "{") - (w == "}")
                    self.i += 1
                return

    def declare(self, mod, cdir, name, path_attr):
        child = mod + (name,)
        if path_attr and path_attr[1]:
            file = os.path.normpath(os.path.join(os.path.dirname(self.file), path_attr[1]))
            sub = os.path.splitext(file)[0]
            if os.path.basename(file) == "mod.rs":
                sub = os.path.dirname(file)
        else:
            flat, nested = os.path.join(cdir, name + ".rs"), os.path.join(cdir, name, "mod.rs")
            file = flat if os.path.exists(flat) else nested
            sub = os.path.join(cdir, name)
        if not os.path.exists(file):
            return  # a module generated at build time, or a cfg'd one
        self.crate._add(child, file)
        self.crate._load(file, child, sub)

    def path(self):
        """Consumes `a::b::c` (stopping at `::<` or `::{`); segments and line."""
        segs, line = [self.t[self.i][1]], self.t[self.i][2]
        self.i += 1
        while self.peek()[1] == "::" and self.peek(1)[0] == "id":
            segs.append(self.peek(1)[1])
            self.i += 2
        return segs, line

    def use_tree(self):
        """Consumes a `use` tree through its `;`: every leaf path, with the
        name it brings in (its `as` name, else its last segment; None for
        a glob)."""
        out = []

        def tree(prefix):
            segs = list(prefix)
            line = self.peek()[2]
            glob = False
            while True:
                kind, v, _ = self.peek()
                if kind == "id" and v != "as":
                    segs.append(v)
                    self.i += 1
                elif v == "::":
                    self.i += 1
                elif v == "{":
                    self.i += 1
                    while self.peek()[1] not in ("}", "eof"):
                        tree(segs)
                        if self.peek()[1] == ",":
                            self.i += 1
                    self.i += 1
                    return
                elif v == "*":
                    glob = True
                    self.i += 1
                else:
                    break
            alias = None
            if segs and not glob:
                alias = segs[-2] if segs[-1] == "self" and len(segs) > 1 else segs[-1]
            if self.peek()[1] == "as":
                alias = self.peek(1)[1]
                self.i += 2
            out.append((segs, line, alias))

        tree([])
        while self.peek()[1] not in (";", "eof"):
            self.i += 1
        self.i += 1
        return out

    def reference(self, mod, segs, line):
        """Records that module `mod` names the path `segs`, if it is the
        crate's; returns the path from the crate root (None if not)."""
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            absolute = list(segs[1:])
        elif head in ("super", "self"):
            base = list(mod)
            rest = list(segs)
            while rest and rest[0] in ("super", "self"):
                if rest.pop(0) == "super":
                    if not base:
                        return None
                    base.pop()
            absolute = base + rest
        else:
            # A child module named without `self::` (`use handles::x;`),
            # or another crate.
            if head not in self.crate.children.get(mod, ()):
                return None
            absolute = list(mod) + list(segs)
        text = "::".join(segs[:-1] if len(segs) > 1 and segs[-1] == "self" else segs)
        self.crate._raw.append((mod, absolute, self.file, line, text))
        return absolute


def is_cfg_test(attr):
    return attr[:4] == ["cfg", "(", "test", ")"]


# --- knots --------------------------------------------------------------------


def level_graphs(crate):
    """{folder: {child: {child: evidence}}} for the root and every folder."""
    graphs = {}
    for folder, kids in crate.children.items():
        graph = {k: {} for k in kids}
        n = len(folder)
        for (frm, to), ev in crate.refs.items():
            if frm[:n] != folder or to[:n] != folder:
                continue
            if len(frm) <= n or len(to) <= n or frm[n] == to[n]:
                continue
            graph[frm[n]].setdefault(to[n], ev[0])
        graphs[folder] = graph
    return graphs


def tarjan(graph):
    """Strongly connected components of {node: {node: _}} (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {})))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
    return out


def cycle_through(graph, members, start):
    """A shortest cycle from `start` back to it inside `members`."""
    prev = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, {})):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return [start]


def folder_name(folder):
    return "crate" + "".join("::" + f for f in folder)


def knots_of(crate):
    """[(folder name, sorted members, graph)] of every knot of the crate."""
    out = []
    for folder, graph in sorted(level_graphs(crate).items()):
        for comp in tarjan(graph):
            if len(comp) > 1:
                out.append((folder_name(folder), comp, graph))
    return out


def describe_cycle(graph, cycle, root, folder):
    lines = ["    " + " -> ".join(cycle)]
    for a, b in zip(cycle, cycle[1:]):
        f, ln, text = graph[a][b]
        lines.append(f"      {a} -> {b}: {os.path.relpath(f, root)}:{ln} names {text}")
    return "\n".join(lines)


# --- the baseline -------------------------------------------------------------


def read_baseline(path):
    """{(crate, folder): [set of members, ...]}; lines `CRATE FOLDER: A B ...`."""
    base = defaultdict(list)
    if not os.path.exists(path):
        return base
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"(\S+)\s+(\S+):\s*(.+)", line)
            if not m:
                raise SystemExit(f"check-module-graph: {path}:{n}: not `CRATE FOLDER: A B ...`")
            base[(m.group(1), m.group(2))].append(set(m.group(3).split()))
    return base


def baseline_line(crate, folder, members):
    return f"{crate} {folder}: {' '.join(sorted(members))}"


def compare(current, base, root):
    """Problems (fail) and notes (tighten) of the current knots against the
    baseline. current: [(crate, folder, members, graph)]."""
    problems, notes = [], []
    seen = set()
    for crate, folder, members, graph in current:
        key = (crate, folder)
        mset = set(members)
        touching = [i for i, b in enumerate(base.get(key, [])) if b & mset]
        for i in touching:
            seen.add((key, i))
        if not touching:
            cyc = cycle_through(graph, mset, members[0])
            problems.append(
                f"NEW knot in {crate} {folder}: {' '.join(members)}\n"
                + describe_cycle(graph, cyc, root, folder))
            continue
        allowed = set().union(*(base[key][i] for i in touching))
        joined = sorted(mset - allowed)
        if len(touching) > 1 or joined:
            start = joined[0] if joined else members[0]
            cyc = cycle_through(graph, mset, start)
            why = (f"{', '.join(joined)} joined it" if joined else
                   f"{len(touching)} knots of the baseline merged")
            problems.append(
                f"GROWN knot in {crate} {folder}: {' '.join(members)} ({why})\n"
                + describe_cycle(graph, cyc, root, folder))
            continue
        b = base[key][touching[0]]
        if mset < b:
            notes.append(
                f"SHRUNK knot in {crate} {folder}: {' '.join(sorted(b - mset))} left it; "
                f"tighten the baseline to:\n    {baseline_line(crate, folder, members)}")
    for key, knots in sorted(base.items()):
        for i, b in enumerate(knots):
            if (key, i) not in seen:
                problems.append(
                    f"GONE: the baseline lists {baseline_line(key[0], key[1], b)}, "
                    "which is no knot any more: remove the line (the baseline only tightens)")
    return problems, notes


# --- main ---------------------------------------------------------------------


def crates_under(root):
    out = []
    base = os.path.join(root, "crates")
    for name in sorted(os.listdir(base)):
        for entry in ("lib.rs", "main.rs"):
            f = os.path.join(base, name, "src", entry)
            if os.path.exists(f):
                out.append((name, f))
                break
    return out


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(here)),
                    help="the repository (its crates/ folder is read)")
    ap.add_argument("--baseline", help="default: ROOT/scripts/ci/module-knots.txt")
    ap.add_argument("--write-baseline", action="store_true",
                    help="write the current knots as the baseline")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    baseline = args.baseline or os.path.join(root, "scripts", "ci", "module-knots.txt")
    if not os.path.isdir(os.path.join(root, "crates")):
        print(f"check-module-graph: no crates/ in {root}", file=sys.stderr)
        return 2

    current = []
    for name, lib in crates_under(root):
        crate = Crate(name, lib)
        if name in READER_VIEW:
            crate.add_reader_view()
        for folder, members, graph in knots_of(crate):
            current.append((name, folder, members, graph))

    print(f"module knots (strongly connected components of more than one module): {len(current)}")
    for crate, folder, members, _ in current:
        print(f"  {baseline_line(crate, folder, members)}")

    if args.write_baseline:
        with open(baseline, "w", encoding="utf-8") as fh:
            fh.write("# Import knots allowed today (scripts/ci/check-module-graph.py):\n"
                     "# CRATE FOLDER: MEMBERS. Only ever remove or shorten lines.\n")
            for crate, folder, members, _ in current:
                fh.write(baseline_line(crate, folder, members) + "\n")
        print(f"wrote {baseline}")
        return 0

    problems, notes = compare(current, read_baseline(baseline), root)
    for n in notes:
        print(n)
    for p in problems:
        print(p)
    if problems:
        print(f"check-module-graph: {len(problems)} problem(s) against {os.path.relpath(baseline, root)}",
              file=sys.stderr)
        return 1
    print("no new or grown knot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
