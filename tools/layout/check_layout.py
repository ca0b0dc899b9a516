#!/usr/bin/python3
"""Checks that the folders of the tree depend on each other one way.

    tools/layout/check_layout.py            # exit 1, naming each violation
    tools/layout/check_layout.py --graph    # also prints the folder graph
    tools/layout/check_layout.py --report DIR   # also writes DIR/test.xml,
                                            # one test case in the gtest
                                            # format tools/ci/sum_test_xml.py
                                            # sums

A folder is a Bazel package; it depends on another when one of its rules
lists one of the other's in `deps`. Two rules hold:

  * a folder never depends on a folder above it (its parent, or the
    parent's parent): a part does not reach back into what contains it;
  * two folders side by side never depend on each other, directly or
    around a loop; within one parent the folders form layers.

The dependencies of nested folders count for their ancestors too: when
`backends/redis` uses `src/common`, `backends` uses `src` one level up.
The root package holds two things: //:delayq, the library as a program
sees it, which stands above everything (the folder "delayq"); and the
targets of include/ (the public headers' include path, the timing wheel),
which stand below everything (the folder "include").

The graph is read from `bazel query`; the rules themselves are in
layout_rules.py, which tests/layout/ tests on made-up graphs.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layout_rules  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def folder_of(label):
    """The folder a rule stands for."""
    package = label[2:].split(":")[0]
    if package:
        return package
    return "delayq" if label == "//:delayq" else "include"


def rule_edges():
    """(folder, folder, example rule edge) for every cross-folder dependency."""
    xml = subprocess.run(
        ["bazel", "query", "--noshow_progress",
         "kind(rule, //...) except //third_party/...", "--output=xml"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    edges = []
    for rule in ET.fromstring(xml).findall("rule"):
        name = rule.get("name")
        for lst in rule.findall("list"):
            if lst.get("name") != "deps":
                continue
            for dep in (e.get("value") for e in lst):
                if not dep.startswith("//") or dep.startswith("//third_party"):
                    continue
                a, b = folder_of(name), folder_of(dep)
                if a != b:
                    edges.append((a, b, f"{name} -> {dep}"))
    return edges


def write_report(folder, problems):
    os.makedirs(folder, exist_ok=True)
    failure = ""
    if problems:
        message = escape("; ".join(problems), {'"': "&quot;"})
        failure = f'<failure message="{message}"/>'
    with open(os.path.join(folder, "test.xml"), "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>'
                '<testsuite name="layout"><testcase name="folders_depend_one_way"'
                f' classname="layout">{failure}</testcase></testsuite>'
                '</testsuites>\n')


def main():
    edges = rule_edges()
    problems = layout_rules.violations(edges)
    if "--graph" in sys.argv:
        print(layout_rules.describe(edges))
    for problem in problems:
        print(problem, file=sys.stderr)
    if "--report" in sys.argv:
        write_report(sys.argv[sys.argv.index("--report") + 1], problems)
    if problems:
        print(f"{len(problems)} layout violation(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
