#!/usr/bin/env python3
"""Sums gtest XML reports (test.xml): Bazel's, for the test targets the
workspace has now, and every report under other folders (the CMake build's
check, tools/ci/cmake_build_check.sh).

  sum_test_xml.py --testlogs DIR --targets FILE [FOLDER...]

FILE lists the Bazel test labels, one a line (`bazel query 'tests(//...)'`).
Only their reports count: a reused output base still holds the reports of
targets since removed or renamed, which must not be counted again. A target
with no report counts as a failure.

Prints one line "N passed, N failed[, N skipped]" and exits 1 when any test
failed, any test target left no report, or no test ran at all.
"""
import argparse
import pathlib
import sys
import xml.etree.ElementTree as ET


def target_reports(testlogs: pathlib.Path, label: str) -> list:
    """The reports of one Bazel test target: its test.xml, or one per shard.

    When both are there (the target was sharded once and is not now, or the
    other way round), the newer kind is the current run's.
    """
    package, _, name = label.removeprefix("//").partition(":")
    folder = testlogs / package / name
    whole = folder / "test.xml"
    shards = sorted(folder.glob("shard_*/test.xml"))
    if not shards:
        return [whole] if whole.exists() else []
    if whole.exists() and whole.stat().st_mtime > max(s.stat().st_mtime for s in shards):
        return [whole]
    return shards


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--testlogs", type=pathlib.Path, required=True)
    parser.add_argument("--targets", type=pathlib.Path, required=True)
    parser.add_argument("folders", nargs="*", type=pathlib.Path)
    args = parser.parse_args()

    labels = [l.strip() for l in args.targets.read_text().splitlines() if l.strip()]
    reports = []
    problems = []
    failed = 0
    for label in labels:
        found = target_reports(args.testlogs, label)
        if not found:
            failed += 1
            problems.append(f"no report for {label}")
        reports += found
    for folder in args.folders:
        reports += sorted(folder.rglob("test.xml"))

    passed = skipped = 0
    for report in reports:
        try:
            cases = list(ET.parse(report).getroot().iter("testcase"))
        except ET.ParseError:
            cases = []
        if not cases:
            # A target that crashed before writing cases: Bazel writes a
            # report with the log but no test cases. Count it as a failure.
            failed += 1
            problems.append(f"no test cases in {report}")
        for case in cases:
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    for problem in problems:
        print(problem, file=sys.stderr)
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
