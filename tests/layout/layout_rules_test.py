"""Tests of the layout rules (tools/layout/layout_rules.py) on made-up graphs."""

import unittest

from tools.layout import layout_rules


class LayoutRulesTest(unittest.TestCase):

    def test_layers_that_run_one_way_pass(self):
        edges = [("tests/cli", "tools/delayq", "t"), ("tools/delayq", "delayq", "t"),
                 ("delayq", "backends", "t"), ("backends", "backends/redis", "t"),
                 ("backends/redis", "backends/redis/client", "t"),
                 ("backends/redis", "src/common", "t"), ("src/scheduler", "src/common", "t"),
                 ("src/common", "include", "t")]
        self.assertEqual(layout_rules.violations(edges), [])

    def test_a_folder_that_uses_its_parent_fails(self):
        edges = [("backends/redis/client", "backends/redis", "//backends/redis/client:x -> //backends/redis:y")]
        problems = layout_rules.violations(edges)
        self.assertEqual(len(problems), 1)
        self.assertIn("backends/redis/client depends on backends/redis, which contains it", problems[0])
        self.assertIn("//backends/redis/client:x", problems[0])

    def test_siblings_that_use_each_other_fail(self):
        edges = [("src/scheduler", "src/metrics", "a"), ("src/metrics", "src/scheduler", "b")]
        problems = layout_rules.violations(edges)
        self.assertEqual(len(problems), 1)
        self.assertIn("src/metrics and src/scheduler depend on each other", problems[0])

    def test_a_loop_through_nested_folders_counts_at_the_level_they_part(self):
        # src/open uses the stores, a store uses src/common: src <-> backends.
        edges = [("src/open", "backends/memory", "open"), ("backends/memory", "src/common", "store")]
        problems = layout_rules.violations(edges)
        self.assertEqual(len(problems), 1)
        self.assertIn("backends and src depend on each other", problems[0])
        self.assertIn("backends -> src (store)", problems[0])
        self.assertIn("src -> backends (open)", problems[0])

    def test_a_loop_of_three_is_found(self):
        edges = [("a", "b", "1"), ("b", "c", "2"), ("c", "a", "3"), ("c", "d", "4")]
        problems = layout_rules.violations(edges)
        self.assertEqual(len(problems), 1)
        self.assertIn("a and b and c depend on each other", problems[0])

    def test_describe_lists_each_levels_uses(self):
        text = layout_rules.describe([("backends/redis", "src/common", "x"),
                                      ("src/scheduler", "src/common", "y")])
        self.assertIn("in the top folder:\n  backends -> src", text)
        self.assertIn("in src:\n  src/scheduler -> src/common", text)


if __name__ == "__main__":
    unittest.main()
