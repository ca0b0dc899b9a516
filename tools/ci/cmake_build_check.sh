#!/usr/bin/env bash
# The CMake build, as CI checks it: the generated target list matches the
# Bazel build (no source file in one build and not the other), the README's
# build (the library and the program) builds, `cmake --install` installs
# it, and a project outside the tree builds and runs on the install, once
# with find_package(delayq) and once with pkg-config. Then the same build
# makes the Debian packages (cmake/packaging.cmake), which are installed on
# this machine, checked the same way from /usr, and removed again. Last,
# the tests are turned on in the same build folder and a sample of them
# runs under ctest (CTEST_SAMPLE below); their gtest reports are summed
# with the rest.
#
#   tools/ci/cmake_build_check.sh REPORT_DIR
#
#   tools/ci/cmake_build_check.sh --drift-checked RC REPORT_DIR
#
# takes the drift check's exit status RC from a caller that ran it already
# (it asks Bazel, which waits while another Bazel command runs; CI checks
# it before its tests start and builds with CMake beside them).
#
# Writes REPORT_DIR/test.xml (one test case per step, in the gtest format
# tools/ci/sum_test_xml.py sums) and exits 1 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
drift_rc=""
if [[ ${1:-} == --drift-checked ]]; then
  drift_rc=$2
  shift 2
fi
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
    $(PKG_CONFIG_PATH="$(dirname "$(find "$work/prefix" -name delayq.pc)")" \
      pkg-config --cflags --libs delayq) &&
    "$work/consumer_pc"
}

if [[ -n $drift_rc ]]; then
  step drift_check test "$drift_rc" -eq 0
else
  step drift_check python3 tools/cmake/bazel_targets.py --check
fi
# The README's commands: tests and benchmarks are off by default.
step configure cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX=/usr
step build cmake --build "$work/build" -j2
step install cmake --install "$work/build" --prefix "$work/prefix"
step find_package_example bash -c "
  cmake -S tools/examples/cmake_consumer -B '$work/consumer' \
    -DCMAKE_PREFIX_PATH='$work/prefix' && cmake --build '$work/consumer' &&
  '$work/consumer/consumer'"
step pkg_config_example pc_build

# The packages: built from the same build, installed, used, removed.
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
deb_installed() {
  local version
  version=$(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' include/delayq/version.h)
  [[ "$(/usr/bin/delayq --version)" == "delayq $version" ]] &&
    [[ -f /lib/systemd/system/delayq-serve.service ]] &&
    dpkg -L libdelayq-dev | grep -q '/usr/lib/.*/libdelayq.a$' &&
    [[ -f /usr/share/doc/delayq/copyright && -f /usr/share/doc/libdelayq-dev/copyright ]]
}
deb_examples() {
  cmake -S tools/examples/cmake_consumer -B "$work/deb_consumer" &&
    cmake --build "$work/deb_consumer" && "$work/deb_consumer/consumer" &&
    g++ -std=c++17 tools/examples/cmake_consumer/main.cc -o "$work/deb_pc" \
      $(pkg-config --cflags --libs delayq) && "$work/deb_pc"
}
step deb_build bash -c "cd '$work/build' && cpack -G DEB -B '$work/debs'"
step deb_install as_root env DEBIAN_FRONTEND=noninteractive apt-get install \
  -y -qq "$work"/debs/*.deb
step deb_installed deb_installed
step deb_examples deb_examples
step deb_remove as_root env DEBIAN_FRONTEND=noninteractive apt-get remove \
  -y -qq delayq libdelayq-dev

# The tests under ctest. Building all 80 takes as long as the rest of CI on
# 2 cores, so CI runs one test for each way a test finds what it needs
# under CMake: a conformance suite linked whole (alwayslink), a
# redis-server it starts, the delayq program in the runfiles tree
# (tools/delayq), and helper processes it spawns (tests/testing).
CTEST_SAMPLE=(
  tests_wheel_timing_wheel_test
  tests_sqlite_sqlite_conformance_test
  tests_redis_redis_conformance_test
  tests_cli_cli_test
  tests_sqlite_sqlite_multiprocess_test
)
ctest_sample() {
  local names=() target
  for target in "${CTEST_SAMPLE[@]}"; do
    names+=("$(grep -o "delayq_cc_test($target DIR [^ ]* NAME [^ ]*" \
      cmake/bazel_targets.cmake | awk '{print $3 "/" $5}')")
  done
  local regex
  regex="^($(IFS='|'; echo "${names[*]}"))\$"
  ctest --test-dir "$work/build" -R "$regex" --output-on-failure -j2 &&
    [[ $(ctest --test-dir "$work/build" -N -R "$regex" |
      grep -c 'Test *#') -eq ${#CTEST_SAMPLE[@]} ]]
}
step tests_configure cmake -S . -B "$work/build" -DDELAYQ_BUILD_TESTS=ON
step tests_build cmake --build "$work/build" -j2 --target "${CTEST_SAMPLE[@]}"
step ctest ctest_sample
# Each test's own cases, counted with the rest (one report per test).
for report in "$work"/build/testxml/*.xml; do
  [[ -f $report ]] || continue
  mkdir -p "$report_dir/ctest/$(basename "$report" .xml)"
  cp "$report" "$report_dir/ctest/$(basename "$report" .xml)/test.xml"
done

{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo "<testsuites><testsuite name=\"cmake\">"
  printf '%s\n' "${cases[@]}"
  echo "</testsuite></testsuites>"
} >"$report_dir/test.xml"
exit $failed
