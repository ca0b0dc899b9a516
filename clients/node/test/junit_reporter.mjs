// A `node --test` reporter that writes JUnit XML, one <testcase> per test
// (suites are not cases): what CI sums from each Bazel test's test.xml.
// Node 18's test runner has no JUnit reporter of its own.
//
//   node --test --test-reporter=./test/junit_reporter.mjs \
//     --test-reporter-destination=out.xml test/*.test.mjs
//
// Tests report after their subtests, so a test that had subtests reported
// before it is a suite: its name becomes its subtests' class name.

const xml = (text) =>
  String(text).replace(/[<>&"\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, (c) =>
    ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c] ?? "");

export default async function* junit(source) {
  // buffer[n]: the cases finished at nesting n whose parent has not reported yet.
  const buffer = [];
  const cases = [];
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { name, nesting = 0, details = {}, skip, todo } = event.data;
    const children = buffer[nesting + 1] ?? [];
    buffer[nesting + 1] = [];
    buffer[nesting] = buffer[nesting] ?? [];
    if (children.length > 0 || details.type === "suite") {
      for (const c of children) c.classname = c.classname ? `${name}.${c.classname}` : name;
      buffer[nesting].push(...children);
      // A suite that failed by itself (a before() hook, say): a case of its own.
      if (event.type === "test:fail" && details.error?.failureType !== "subtestsFailed") {
        buffer[nesting].push({ name: `${name} (suite)`, classname: "", time: 0, failure: details.error });
      }
      continue;
    }
    buffer[nesting].push({
      name,
      file: event.data.file ? event.data.file.replace(/^.*\//, "").replace(/\.test\.mjs$/, "") : "",
      classname: "",
      time: (details.duration_ms ?? 0) / 1000,
      failure: event.type === "test:fail" ? details.error ?? "failed" : undefined,
      skipped: event.type === "test:pass" && (skip !== undefined && skip !== false || todo !== undefined && todo !== false),
    });
    if (nesting === 0) cases.push(...buffer[0].splice(0));
  }
  cases.push(...(buffer[0] ?? []));
  const failures = cases.filter((c) => c.failure).length;
  const skipped = cases.filter((c) => c.skipped).length;
  let out = '<?xml version="1.0" encoding="UTF-8"?>\n';
  out += `<testsuites tests="${cases.length}" failures="${failures}" skipped="${skipped}">\n`;
  out += `  <testsuite name="node --test" tests="${cases.length}" failures="${failures}" skipped="${skipped}">\n`;
  for (const c of cases) {
    out += `    <testcase classname="${xml([c.file, c.classname].filter(Boolean).join(".") || "node")}" name="${xml(c.name)}" time="${c.time.toFixed(3)}"`;
    if (c.failure) {
      const error = c.failure instanceof Error ? `${c.failure.message}\n${c.failure.cause ?? ""}` : String(c.failure);
      out += `>\n      <failure message="${xml(error.split("\n")[0])}">${xml(error)}</failure>\n    </testcase>\n`;
    } else if (c.skipped) {
      out += ">\n      <skipped/>\n    </testcase>\n";
    } else {
      out += "/>\n";
    }
  }
  out += "  </testsuite>\n</testsuites>\n";
  yield out;
}
