#!/usr/bin/env python3
"""Tests of scripts/ci/check-docs.py: a book link that leaves src/ is caught.

Run: python3 scripts/ci/test_check_docs.py (scripts/test.sh does).
"""

import importlib.util
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("check_docs", os.path.join(HERE, "check-docs.py"))
cd = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(cd)


class BookLinks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.src = os.path.join(self.root, "book", "src")
        os.makedirs(os.path.join(self.src, "ref"))
        self.write("notes.md", "# Notes\n")
        self.write("book/src/page.md", "# Page\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        with open(os.path.join(self.root, rel), "w", encoding="utf-8") as f:
            f.write(text)

    def faults(self, chapter):
        return cd.check_book_links(os.path.join(self.src, chapter), self.src)

    def test_a_link_inside_src_passes(self):
        self.write("book/src/ref/a.md", "See [page](../page.md#page).\n")
        self.assertEqual(self.faults("ref/a.md"), [])

    def test_a_link_out_of_src_is_caught(self):
        self.write("book/src/ref/a.md", "See [notes](../../../notes.md).\n")
        self.assertEqual(len(self.faults("ref/a.md")), 1)

    def test_an_included_file_links_from_the_chapter(self):
        # notes.md links to its neighbour: fine in the source tree, but pasted
        # into ref/a.md it points at ref/other.md, which the book lacks.
        self.write("other.md", "# Other\n")
        self.write("notes.md", "See [other](other.md).\n")
        self.write("book/src/ref/a.md", "{{#include ../../../notes.md}}\n")
        faults = self.faults("ref/a.md")
        self.assertEqual(len(faults), 1)
        self.assertIn("other.md", faults[0])
        self.write("book/src/ref/other.md", "# Other\n")
        self.assertEqual(self.faults("ref/a.md"), [])

    def test_urls_and_bare_fragments_are_left_alone(self):
        self.write("book/src/ref/a.md", "[x](https://example.org/a.md) [y](#page)\n")
        self.assertEqual(self.faults("ref/a.md"), [])


if __name__ == "__main__":
    unittest.main()
