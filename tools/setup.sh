#!/usr/bin/env bash
# Installs what building and testing delayq needs on Debian bookworm: Bazel,
# the libraries (Abseil, SQLite, hiredis, OpenSSL, GoogleTest, Google
# Benchmark), redis-server and the openssl command for the Redis tests (which
# make throwaway certificates), CMake for the second build, Boost (Beast's
# HTTP parser) and nlohmann-json for `delayq serve`, cpp-httplib for its
# tests' and benchmark's client, headless Chromium for the dashboard's
# test, clang with its libFuzzer runtime for the fuzz targets, Prometheus
# (its promtool checks and tests the shipped alert rules), Node.js with
# Debian's TypeScript compiler for the client in clients/node (built and
# tested with no npm download), PyYAML for the test that holds the OpenAPI
# document against the server, dpkg-dev for the Debian packages
# (tools/packaging/build_debs.sh), beanstalkd, the reference row of the
# workloads (bench/run_all.sh), and PostgreSQL: libpq for the store and the
# server, whose tests start their own. Safe to run again; skips what is
# there.
set -euo pipefail
packages=(bazel-bootstrap libabsl-dev libsqlite3-dev libhiredis-dev libssl-dev
          openssl redis-tools libbenchmark-dev libgtest-dev libgmock-dev
          googletest redis-server pkg-config g++ python3 cmake
          libboost-dev libcpp-httplib-dev nlohmann-json3-dev chromium
          clang libclang-rt-14-dev prometheus nodejs node-typescript
          python3-yaml dpkg-dev beanstalkd postgresql libpq-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "Installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "delayq build dependencies are installed."
