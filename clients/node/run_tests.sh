#!/usr/bin/env bash
# The client's tests (test/*.test.mjs) under `node --test`, on the client
# as tsc built it (dist/) and the delayq program of this build. They start
# their own `delayq serve` over SQLite and over a redis-server of their own.
# A missing node or redis-server fails the test; nothing is skipped.
#
# Bazel runs it from the runfiles' root; TEST_TMPDIR and XML_OUTPUT_FILE
# come from Bazel (the JUnit report goes there, one case per test).
set -euo pipefail

node=$(command -v node || true)
for candidate in /usr/bin/node /usr/local/bin/node; do
  [[ -n "$node" ]] && break
  [[ -x "$candidate" ]] && node=$candidate
done
if [[ -z "$node" ]]; then
  echo "node is missing: tools/setup.sh installs Debian's nodejs" >&2
  exit 1
fi
if ! "$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  echo "node $("$node" --version) is too old: the client needs Node 18 or newer" >&2
  exit 1
fi

# Node resolves a module's imports from its real path, and the runfiles are
# links into the source tree, where dist/ is not: run on a copy.
package="${TEST_TMPDIR:-$(mktemp -d)}/node-client"
rm -rf "$package"
mkdir -p "$package"
cp -RL clients/node/dist clients/node/test clients/node/package.json "$package/"
export DELAYQ_BIN="$PWD/tools/delayq/delayq"
# redis-server is found on PATH or at /usr/bin (test/servers.mjs).
export PATH="$PATH:/usr/bin:/usr/local/bin"

reporters=(--test-reporter=spec --test-reporter-destination=stdout)
if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
  reporters+=(--test-reporter=./test/junit_reporter.mjs
              "--test-reporter-destination=$XML_OUTPUT_FILE")
fi
cd "$package"
exec "$node" --test "${reporters[@]}" test/*.test.mjs
