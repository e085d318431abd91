#!/usr/bin/env python3
"""Tests of scripts/ci/check-module-graph.py on small synthetic crates.

Run: python3 scripts/ci/test_check_module_graph.py (scripts/test.sh does). It
exits non-zero when a test fails, or when no test ran at all.
"""

import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "check_module_graph", os.path.join(HERE, "check-module-graph.py"))
cmg = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(cmg)


class Tree:
    """A repository with crates/demo/src/... written from {path: text}."""

    def __init__(self, files, baseline=None):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        for rel, text in files.items():
            path = os.path.join(self.root, "crates", "demo", "src", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(textwrap.dedent(text))
        os.makedirs(os.path.join(self.root, "scripts", "ci"), exist_ok=True)
        self.baseline = os.path.join(self.root, "scripts", "ci", "module-knots.txt")
        if baseline is not None:
            with open(self.baseline, "w", encoding="utf-8") as fh:
                fh.write(baseline)

    def run(self, *extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = cmg.main(["--root", self.root, *extra])
        return rc, out.getvalue()

    def knots(self):
        crate = cmg.Crate("demo", os.path.join(self.root, "crates", "demo", "src", "lib.rs"))
        return [(folder, members) for folder, members, _ in cmg.knots_of(crate)]

    def close(self):
        self.dir.cleanup()


# a <-> b at the top level; c on its own (a names it, it names nothing).
KNOT_AB = {
    "lib.rs": "mod a;\nmod b;\nmod c;\n",
    "a.rs": "use crate::b::Thing;\nuse crate::c;\n",
    "b.rs": "pub struct Thing;\npub fn f() { super::a::g(); }\n",
    "c.rs": "pub fn h() {}\n",
}


class KnotsTest(unittest.TestCase):
    def tree(self, files, baseline=None):
        t = Tree(files, baseline)
        self.addCleanup(t.close)
        return t

    def test_a_use_and_a_path_in_code_make_a_knot(self):
        t = self.tree(KNOT_AB)
        self.assertEqual(t.knots(), [("crate", ["a", "b"])])

    def test_a_one_way_import_is_no_knot(self):
        files = dict(KNOT_AB, **{"b.rs": "pub struct Thing;\n"})
        self.assertEqual(self.tree(files).knots(), [])

    def test_comments_strings_test_code_and_macro_crate_paths_are_not_imports(self):
        files = dict(KNOT_AB, **{"b.rs": """\
            pub struct Thing;
            // crate::a::g()
            /* crate::a::g() /* nested */ crate::a::g() */
            pub const S: &str = "crate::a::g()";
            pub const R: &str = r#"crate::a::g() "quoted""#;
            pub const C: char = '"';
            pub fn life<'a>(x: &'a str) -> &'a str { x }
            pub(in crate::a) fn vis() {}
            macro_rules! m { () => { $crate::a::g() }; }
            #[cfg(test)]
            mod tests {
                use crate::a::g;
            }
            #[cfg(test)]
            fn helper() { crate::a::g(); }
            #[cfg(test)]
            use crate::a::g;
            """})
        self.assertEqual(self.tree(files).knots(), [])

    def test_a_path_through_a_root_re_export_names_the_module_it_comes_from(self):
        # `crate::Thing` is b's Thing (lib.rs re-exports it), `crate::Other`
        # too (renamed, two re-exports deep), so b -> a -> b is a knot.
        files = {
            "lib.rs": "mod a;\nmod b;\nmod c;\npub use b::Thing;\n"
                      "pub use b::{self as bee};\npub use bee::Thing as Other;\n"
                      "pub use c::*;\n",
            "a.rs": "pub fn g() { let _ = crate::Other; }\n",
            "b.rs": "pub struct Thing;\npub fn f() { crate::a::g(); }\n",
            "c.rs": "pub fn h() {}\n",
        }
        self.assertEqual(self.tree(files).knots(), [("crate", ["a", "b"])])
        # Through the first re-export alone, as a use declaration.
        files["a.rs"] = "use crate::Thing;\n"
        self.assertEqual(self.tree(files).knots(), [("crate", ["a", "b"])])
        # A name the root imports from another crate is no module's.
        files["lib.rs"] += "use std::fmt::Debug;\n"
        files["a.rs"] = "pub fn g(_: &dyn crate::Debug) {}\n"
        self.assertEqual(self.tree(files).knots(), [])

    def test_knots_inside_a_folder_and_nested_use_trees(self):
        t = self.tree({
            "lib.rs": "pub mod d;\n",
            "d/mod.rs": "mod x;\nmod y;\nmod z;\nuse self::{x::A, y::B};\n",
            "d/x.rs": "use super::{y::{self, B}, z as zed};\npub struct A;\n",
            "d/y.rs": "pub struct B;\npub fn f() -> self::inner::I { crate::d::x::A; todo!() }\n"
                      "mod inner { pub struct I; }\n",
            "d/z.rs": "",
        })
        self.assertEqual(t.knots(), [("crate::d", ["x", "y"])])

    def test_a_child_module_folder_and_path_attribute_are_followed(self):
        t = self.tree({
            "lib.rs": "mod a;\n#[path = \"elsewhere/bee.rs\"]\nmod b;\n",
            "a.rs": "mod inner;\n",
            "a/inner.rs": "use crate::b::f;\n",
            "elsewhere/bee.rs": "pub fn f() { crate::a::g() }\n",
        })
        self.assertEqual(t.knots(), [("crate", ["a", "b"])])

    def test_the_reader_view_adds_shadowed_super_names_and_paths_in_strings(self):
        # v/file.rs is v's own `file`, which the compiler resolves; a reader
        # of v/io.rs sees `super::file` and thinks of the crate's file.rs.
        # b.rs names `crate::a` in a help string. Neither is an import.
        files = {
            "lib.rs": "mod a;\nmod b;\nmod file;\nmod v;\n",
            "a.rs": "pub fn g() { crate::b::f(); crate::v::h(); }\n",
            "b.rs": "pub fn f() {}\npub const HELP: &str = \"see `crate::a`\";\n",
            "file.rs": "pub fn k() { crate::a::g(); }\n",
            "v/mod.rs": "mod file;\nmod io;\npub fn h() {}\n",
            "v/file.rs": "pub struct Open;\n",
            "v/io.rs": "use super::file::Open;\n// super::super::a\n",
        }
        t = self.tree(files)
        self.assertEqual(t.knots(), [])
        crate = cmg.Crate("demo", os.path.join(t.root, "crates", "demo", "src", "lib.rs"))
        crate.add_reader_view()
        self.assertEqual([(f, m) for f, m, _ in cmg.knots_of(crate)],
                         [("crate", ["a", "b", "file", "v"])])
        # main() applies it to the crates of READER_VIEW only.
        self.assertNotIn("demo", cmg.READER_VIEW)
        self.assertEqual(t.run()[0], 0)

    def test_tarjan_finds_each_component(self):
        graph = {1: {2: 0}, 2: {3: 0}, 3: {1: 0, 4: 0}, 4: {5: 0}, 5: {4: 0}, 6: {}}
        comps = sorted(cmg.tarjan(graph))
        self.assertEqual(comps, [[1, 2, 3], [4, 5], [6]])


class RatchetTest(unittest.TestCase):
    def tree(self, files, baseline=None):
        t = Tree(files, baseline)
        self.addCleanup(t.close)
        return t

    def test_a_knot_in_the_baseline_passes(self):
        rc, out = self.tree(KNOT_AB, "demo crate: a b\n").run()
        self.assertEqual(rc, 0, out)
        self.assertIn("demo crate: a b", out)

    def test_a_new_knot_fails_with_its_cycle_and_the_import_lines(self):
        rc, out = self.tree(KNOT_AB, "").run()
        self.assertEqual(rc, 1, out)
        self.assertIn("NEW knot in demo crate: a b", out)
        self.assertIn("a -> b -> a", out)
        self.assertIn("crates/demo/src/a.rs:1 names crate::b::Thing", out)
        self.assertIn("crates/demo/src/b.rs:2 names super::a::g", out)

    def test_a_module_that_joins_a_knot_fails(self):
        # a -> b, a -> c (KNOT_AB), b -> a, and now c -> a.
        files = dict(KNOT_AB, **{"c.rs": "pub fn h() { crate::a::g() }\n"})
        rc, out = self.tree(files, "demo crate: a b\n").run()
        self.assertEqual(rc, 1, out)
        self.assertIn("GROWN knot in demo crate: a b c (c joined it)", out)
        self.assertIn("c -> a -> c", out)
        self.assertIn("crates/demo/src/c.rs:1 names crate::a::g", out)

    def test_two_knots_that_merge_fail(self):
        files = {
            "lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\n",
            "a.rs": "use crate::b::X;\n",
            "b.rs": "use crate::a::X;\nuse crate::c::X;\n",
            "c.rs": "use crate::d::X;\n",
            "d.rs": "use crate::c::X;\nuse crate::a::X;\n",
        }
        rc, out = self.tree(files, "demo crate: a b\ndemo crate: c d\n").run()
        self.assertEqual(rc, 1, out)
        self.assertIn("GROWN knot in demo crate: a b c d (2 knots of the baseline merged)", out)

    def test_a_knot_that_shrank_is_reported_and_passes(self):
        rc, out = self.tree(KNOT_AB, "demo crate: a b c\n").run()
        self.assertEqual(rc, 0, out)
        self.assertIn("SHRUNK knot in demo crate: c left it", out)
        self.assertIn("demo crate: a b\n", out)

    def test_a_knot_of_the_baseline_that_is_gone_fails(self):
        files = dict(KNOT_AB, **{"b.rs": "pub struct Thing;\n"})
        rc, out = self.tree(files, "# a comment\ndemo crate: a b\n").run()
        self.assertEqual(rc, 1, out)
        self.assertIn("GONE: the baseline lists demo crate: a b", out)

    def test_write_baseline_then_check_passes(self):
        t = self.tree(KNOT_AB)
        self.assertEqual(t.run("--write-baseline")[0], 0)
        with open(t.baseline, encoding="utf-8") as fh:
            self.assertIn("demo crate: a b\n", fh.read())
        rc, out = t.run()
        self.assertEqual(rc, 0, out)

    def test_a_malformed_baseline_line_is_refused(self):
        with self.assertRaises(SystemExit):
            self.tree(KNOT_AB, "demo a b\n").run()


if __name__ == "__main__":
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    if result.testsRun == 0:
        print("test_check_module_graph: no test ran", file=sys.stderr)
        sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
