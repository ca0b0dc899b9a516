#!/usr/bin/env bash
# Builds Debian's own Abseil source with ThreadSanitizer into PREFIX, so that
# `bazel test --config=tsan` sees absl::Mutex. Debian's prebuilt libabsl is
# not instrumented: TSan cannot see its locks and reports races on every
# absl::Mutex-guarded variable. The source is Debian's (same version, same
# patches, same inline namespace), so headers and libraries agree.
#
# Usage: tools/sanitizers/build_tsan_abseil.sh    (installs into /opt/delayq-tsan)
# then:  bazel test --config=tsan //tests/...
set -euo pipefail
prefix=/opt/delayq-tsan/absl
# .bazelrc's tsan config reads the suppressions from beside the libraries.
mkdir -p "$prefix/.."
cp "$(dirname "$0")/tsan.supp" "$prefix/../tsan.supp"
if [[ -f "$prefix/lib/libabsl_synchronization.a" ]]; then
  echo "TSan Abseil already in $prefix"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
  "http://deb.debian.org/debian bookworm main" > sources
mkdir -p lists/partial
apt_opts=(-o Dir::Etc::sourcelist="$work/sources" -o Dir::Etc::sourceparts=/dev/null
          -o Dir::State::Lists="$work/lists")
echo "Fetching Debian's Abseil source..."
apt-get "${apt_opts[@]}" update -qq
apt-get "${apt_opts[@]}" source --download-only abseil >/dev/null 2>&1
dpkg-source -x abseil_*.dsc src >/dev/null
echo "Building it with -fsanitize=thread (several minutes on 2 cores)..."
cmake -S src -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF \
  -DABSL_PROPAGATE_CXX_STD=ON -DBUILD_TESTING=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build >/dev/null
echo "TSan Abseil installed in $prefix"
