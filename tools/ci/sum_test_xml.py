#!/usr/bin/env python3
"""Sums the gtest XML reports (test.xml) of one `bazel test` run, and every
report under other folders (the CMake build's check,
tools/ci/cmake_build_check.sh).

  sum_test_xml.py --events FILE --targets FILE [FOLDER...]

--events is the run's build event protocol file (`bazel test
--build_event_json_file=FILE`): it names the report of each test target,
shard and run of this run, cached or not. Reports are not looked up in the
testlogs folder, which in a reused output base also holds the reports of
removed targets, of old shard counts and of runs that did not happen this
time (a build that failed leaves the last run's reports in place).

--targets lists the test labels that the run should have tested, one a line
(`bazel query 'tests(//...) except attr(tags, manual, //...)'`). A target
without a result in the events counts as a failure, as does a result whose
status is not PASSED even when its report shows no failing case.

Prints one line "N passed, N failed[, N skipped]", whatever happens, and
exits 1 when any test failed, any test target left no result, or no test
ran at all.
"""
import argparse
import json
import pathlib
import sys
import urllib.parse
import xml.etree.ElementTree as ET


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.problems = []

    def fail(self, problem: str):
        self.failed += 1
        self.problems.append(problem)

    def add_report(self, report: pathlib.Path) -> bool:
        """Counts the cases of one report; False when it has none."""
        try:
            cases = list(ET.parse(report).getroot().iter("testcase"))
        except (ET.ParseError, OSError):
            cases = []
        if not cases:
            # A target that crashed before writing cases: Bazel writes a
            # report with the log but no test cases.
            self.fail(f"no test cases in {report}")
            return False
        for case in cases:
            if case.find("failure") is not None or case.find("error") is not None:
                self.failed += 1
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                self.skipped += 1
            else:
                self.passed += 1
        return True

    def line(self) -> str:
        text = f"{self.passed} passed, {self.failed} failed"
        return text + (f", {self.skipped} skipped" if self.skipped else "")


def run_results(events: pathlib.Path) -> dict:
    """label -> {(run, shard): (attempt, status, report path or None)}, the
    last attempt of each run and shard."""
    results = {}
    for line in events.read_text().splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        key = event.get("id", {}).get("testResult")
        if key is None or "testResult" not in event:
            continue
        result = event["testResult"]
        report = None
        for output in result.get("testActionOutput", []):
            if output.get("name") == "test.xml":
                report = pathlib.Path(urllib.parse.unquote(
                    urllib.parse.urlparse(output["uri"]).path))
        slot = (key.get("run", 1), key.get("shard", 1))
        attempt = key.get("attempt", 1)
        runs = results.setdefault(key["label"], {})
        if slot not in runs or runs[slot][0] < attempt:
            runs[slot] = (attempt, result.get("status", "NO_STATUS"), report)
    return results


def tally_run(tally: Tally, events: pathlib.Path, targets: pathlib.Path):
    labels = [l.strip() for l in targets.read_text().splitlines() if l.strip()]
    if not labels:
        tally.fail(f"no test targets listed in {targets}")
    results = run_results(events)
    for label in labels:
        runs = results.get(label)
        if not runs:
            tally.fail(f"no result for {label} (not built, or not run)")
            continue
        for (run, shard), (_, status, report) in sorted(runs.items()):
            where = f"{label} (run {run}, shard {shard})"
            failed_before = tally.failed
            if report is None:
                tally.fail(f"no test.xml for {where}")
            else:
                tally.add_report(report)
            if status != "PASSED" and tally.failed == failed_before:
                tally.fail(f"{where} ended {status}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=pathlib.Path, required=True)
    parser.add_argument("--targets", type=pathlib.Path, required=True)
    parser.add_argument("folders", nargs="*", type=pathlib.Path)
    args = parser.parse_args()

    tally = Tally()
    try:
        tally_run(tally, args.events, args.targets)
        for folder in args.folders:
            for report in sorted(folder.rglob("test.xml")):
                tally.add_report(report)
    except Exception as error:  # the summary line must come out regardless
        tally.fail(f"cannot read the results: {error!r}")
    for problem in tally.problems:
        print(problem, file=sys.stderr)
    print(tally.line())
    return 0 if tally.failed == 0 and tally.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
