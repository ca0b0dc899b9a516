#!/usr/bin/env bash
# The CMake build, as CI checks it: the generated target list matches the
# Bazel build (no source file in one build and not the other), the library
# and the program build, `cmake --install` installs them, and a project
# outside the tree builds and runs on the install, once with
# find_package(delayq) and once with pkg-config.
#
#   tools/ci/cmake_build_check.sh REPORT_DIR
#
# Writes REPORT_DIR/test.xml (one test case per step, in the gtest format
# tools/ci/sum_test_xml.py sums) and exits 1 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
report_dir=$1
mkdir -p "$report_dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cases=()
failed=0

# step NAME COMMAND...: runs it, shows its output on failure.
step() {
  local name=$1
  shift
  echo "== cmake: $name" >&2
  if "$@" >"$work/log" 2>&1; then
    cases+=("<testcase name=\"$name\" classname=\"cmake\"/>")
  else
    tail -40 "$work/log" >&2
    cases+=("<testcase name=\"$name\" classname=\"cmake\"><failure message=\"failed\"/></testcase>")
    failed=1
  fi
}

pc_build() {
  g++ -std=c++17 tools/examples/cmake_consumer/main.cc -o "$work/consumer_pc" \
    $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs delayq) &&
    "$work/consumer_pc"
}

step drift_check python3 tools/cmake/bazel_targets.py --check
step configure cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DDELAYQ_BUILD_TESTS=OFF -DDELAYQ_BUILD_BENCHMARKS=OFF
step build cmake --build "$work/build" -j2
step install cmake --install "$work/build" --prefix "$work/prefix"
step find_package_example bash -c "
  cmake -S tools/examples/cmake_consumer -B '$work/consumer' \
    -DCMAKE_PREFIX_PATH='$work/prefix' && cmake --build '$work/consumer' &&
  '$work/consumer/consumer'"
step pkg_config_example pc_build

{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo "<testsuites><testsuite name=\"cmake\">"
  printf '%s\n' "${cases[@]}"
  echo "</testsuite></testsuites>"
} >"$report_dir/test.xml"
exit $failed
