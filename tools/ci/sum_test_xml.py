#!/usr/bin/env python3
"""Sums gtest XML reports (test.xml) under one or more folders: Bazel's
testlogs, and the CMake build's check (tools/ci/cmake_build_check.sh).

Prints one line "N passed, N failed[, N skipped]" and exits 1 when any test
failed, any test target left no report, or no test ran at all.
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    roots = [pathlib.Path(a) for a in sys.argv[1:]] or [pathlib.Path("bazel-testlogs")]
    passed = failed = skipped = 0
    unreadable = []
    for report in sorted(r for root in roots for r in root.rglob("test.xml")):
        try:
            tree = ET.parse(report)
        except ET.ParseError:
            unreadable.append(str(report))
            continue
        cases = tree.getroot().iter("testcase")
        found = False
        for case in cases:
            found = True
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
        if not found:
            # A target that crashed before writing cases: Bazel writes a
            # report with the log but no test cases. Count it as a failure.
            failed += 1
            unreadable.append(str(report))
    for report in unreadable:
        print(f"no test cases in {report}", file=sys.stderr)
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
