#!/usr/bin/env python3
"""Tests of scripts/ci/check-script-paths.py: which paths a line names.

Run: python3 scripts/ci/test_check_script_paths.py (scripts/test.sh does).
"""

import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "check_script_paths", os.path.join(HERE, "check-script-paths.py"))
csp = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(csp)


class NamedPaths(unittest.TestCase):
    def test_finds_a_path_in_backquotes_and_after_a_space(self):
        self.assertEqual(
            csp.named_paths("run `scripts/server/nfs-server.sh start` or scripts/test.sh."),
            ["scripts/server/nfs-server.sh", "scripts/test.sh"])

    def test_finds_paths_that_lead_back_to_the_repository(self):
        self.assertEqual(
            csp.named_paths('[map](../scripts/README.md) . "$ROOT/scripts/lib/apt.sh" ./scripts/demo.sh'),
            ["scripts/README.md", "scripts/lib/apt.sh", "scripts/demo.sh"])

    def test_ignores_a_scripts_folder_of_another_tree(self):
        self.assertEqual(csp.named_paths("sh /db/scripts/archive.sh and my_scripts/x.sh"), [])

    def test_drops_trailing_punctuation(self):
        self.assertEqual(csp.named_paths("(see scripts/ci/soak.sh)."), ["scripts/ci/soak.sh"])

    def test_the_repository_names_no_missing_path(self):
        self.assertEqual(csp.missing_paths(), [])


if __name__ == "__main__":
    unittest.main()
