#!/usr/bin/env bash
# Builds the Debian packages of delayq from this tree:
#
#   tools/packaging/build_debs.sh OUT_DIR [BUILD_DIR]
#
# libdelayq-dev (the library, headers, CMake package, pkg-config file) and
# delayq (the program and a systemd unit for `delayq serve`) land in OUT_DIR,
# to install with `sudo apt install ./OUT_DIR/*.deb`. BUILD_DIR (default: a
# new temporary folder) is a CMake Release build of the library and the
# program with prefix /usr; cmake/packaging.cmake says what goes where.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ $# -lt 1 ]]; then
  echo "usage: $0 OUT_DIR [BUILD_DIR]" >&2
  exit 2
fi
mkdir -p "$1"
out=$(realpath "$1")
build=${2:-$(mktemp -d -t delayq-deb.XXXXXX)}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DDELAYQ_BUILD_TESTS=OFF -DDELAYQ_BUILD_BENCHMARKS=OFF
cmake --build "$build" -j"$(nproc)"
(cd "$build" && cpack -G DEB -B "$out")
rm -rf "$out/_CPack_Packages"
ls "$out"/*.deb
