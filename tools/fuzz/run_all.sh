#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (bazel
# --config=fuzz, in an output base of its own so that the g++ build's cache
# stays valid) and runs each for SECONDS.
#
#   tools/fuzz/run_all.sh [--report DIR] [--merge] [--keep-going] SECONDS
#                         [TARGET...]
#   tools/fuzz/run_all.sh --build-only [TARGET...]
#
# --build-only builds the targets and stops (CI builds them while its tests
# run, and runs them after).
#
# Each target starts from a copy of its seed corpus (tests/fuzz/corpus/T/)
# and its regression inputs, so the tree is not written; --merge adds the
# inputs that found new coverage to tests/fuzz/corpus/T/ afterwards. Inputs
# kept in tests/fuzz/known_failures/ are not given to the fuzzer. A target
# stops at its first finding, unless --keep-going (libFuzzer's fork mode,
# which goes on after crashes, timeouts and running out of memory, and
# keeps every input that found one).
#
# Prints, per target, the executions, executions per second, the coverage
# (libFuzzer's cov: edges, ft: features) and whether it found anything (a
# crash, a failed property, a leak, a timeout, running out of memory); the
# input that did is kept in the report folder, and what it said and the
# input itself (gzip, base64) are printed too. With --report, writes
# DIR/test.xml, one test case per target in the gtest format that
# tools/ci/sum_test_xml.py sums, and DIR/<target>.log, libFuzzer's output.
# Exits 1 when a target found something or did not build.
#
# DELAYQ_FUZZ_OUTPUT_BASE sets the clang build's output base (default: a
# folder under ~/.cache named after this checkout).
set -uo pipefail
cd "$(dirname "$0")/../.."

report=""
merge=0
build_only=0
keep_going=()
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --report) report=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --build-only) build_only=1; shift ;;
    --keep-going)
      keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
      shift
      ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
seconds=0
if ((!build_only)); then
  if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 [--report DIR] [--merge] [--keep-going] SECONDS [TARGET...]" >&2
    echo "       $0 --build-only [TARGET...]" >&2
    exit 2
  fi
  seconds=$1
  shift
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=($(ls tests/fuzz/corpus))
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Without --report, logs and findings go to a folder that stays.
out=${report:-$(mktemp -d -t delayq-fuzz.XXXXXX)}
mkdir -p "$out"

output_base=${DELAYQ_FUZZ_OUTPUT_BASE:-$HOME/.cache/delayq-fuzz/$(pwd | md5sum | cut -c1-12)}
mkdir -p "$output_base"
fuzz_bazel() { bazel --output_base="$output_base" "$@"; }

labels=()
for t in "${targets[@]}"; do labels+=("//tests/fuzz:$t"); done
echo "== building ${targets[*]} with clang and libFuzzer" >&2
build_start=$(date +%s)
fuzz_bazel build --config=fuzz "${labels[@]}" >"$work/build.log" 2>&1
build_rc=$?
build_seconds=$(($(date +%s) - build_start))
echo "== build: $build_seconds s" >&2
if ((build_only)); then
  ((build_rc == 0)) || tail -40 "$work/build.log" >&2
  [[ -n $report ]] || rmdir "$out"
  exit $build_rc
fi
bin=""
if ((build_rc == 0)); then
  bin=$(fuzz_bazel info --config=fuzz bazel-bin 2>/dev/null)/tests/fuzz
else
  tail -40 "$work/build.log" >&2
fi

xml_escape() {
  sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'
}

# What a finding said, and its input gzipped in base64: a machine whose
# report folder is gone (CI's) still tells enough to replay the input
# (`base64 -d | gunzip > FILE`, then run the target's binary on FILE).
show_finding() {
  local log=$1 input=$2
  grep -a -A6 -m1 -E 'property failed|ERROR: ' "$log" | head -c 2000 | sed 's/^/    /' >&2
  if [[ -n $input && -f $input ]]; then
    if (($(stat -c %s "$input") <= 65536)); then
      echo "    input, gzip | base64:" >&2
      gzip -9cn "$input" | base64 -w 100 | sed 's/^/    /' >&2
    else
      echo "    input: $(stat -c %s "$input") bytes, too large to print" >&2
    fi
  fi
}

cases=()
found=0
printf '%-10s %12s %10s %8s %8s  %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
  log="$out/$t.log"
  if ((build_rc != 0)); then
    cases+=("<testcase name=\"$t\" classname=\"fuzz\"><failure message=\"the fuzz build failed\"/></testcase>")
    found=1
    continue
  fi
  corpus="$work/corpus-$t"
  cp -r "tests/fuzz/corpus/$t" "$corpus"
  extra=()
  [[ -d tests/fuzz/regressions/$t ]] && extra+=("tests/fuzz/regressions/$t")
  start=$(date +%s)
  # -timeout: one input may take 10 s; -rss_limit_mb: and 2 GiB.
  "$bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$t-" "${keep_going[@]}" \
    "$corpus" "${extra[@]}" >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  if [[ -z $runs ]]; then  # fork mode: "#RUNS: cov: C ft: F ... time: Ns"
    totals=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
    runs=$(grep -oE '^#[0-9]+' <<<"$totals" | tr -d '#')
    fork_seconds=$(grep -oE 'time: [0-9]+s' <<<"$totals" | tr -dc '0-9')
    speed=$((${runs:-0} / (${fork_seconds:-0} > 0 ? fork_seconds : 1)))
    cov=$(grep -oE 'cov: [0-9]+' <<<"$totals" | cut -d' ' -f2)
    ft=$(grep -oE 'ft: [0-9]+' <<<"$totals" | cut -d' ' -f2)
  fi
  artifact=$(grep -o 'Test unit written to .*' "$log" | tail -1 | cut -d' ' -f5-)
  if [[ -z $artifact && ${#keep_going[@]} -gt 0 ]]; then
    artifact=$(ls "$out/$t"-crash-* "$out/$t"-timeout-* "$out/$t"-oom-* \
      "$out/$t"-leak-* 2>/dev/null | head -1)
  fi
  if ((rc == 0)) && [[ -z $artifact ]]; then
    result="nothing found"
    cases+=("<testcase name=\"$t\" classname=\"fuzz\" time=\"$took\"/>")
  else
    found=1
    # The first line that says what happened: a sanitizer's, a failed
    # property's, or libFuzzer's own (timeout, leak, out of memory).
    what=$(grep -a -m1 -E 'property failed|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" ||
      echo "exit status $rc")
    result="FOUND: $what (input: ${artifact:-none})"
    message=$(printf '%s; input %s' "$what" "${artifact:-none}" | xml_escape)
    detail=$(grep -a -A12 -m1 -E 'property failed|ERROR: ' "$log" | head -c 4000 | xml_escape)
    cases+=("<testcase name=\"$t\" classname=\"fuzz\" time=\"$took\"><failure message=\"$message\">$detail</failure></testcase>")
  fi
  printf '%-10s %12s %10s %8s %8s  %s\n' "$t" "${runs:-?}" "${speed:-?}" \
    "${cov:-?}" "${ft:-?}" "$result"
  if ((rc != 0)) || [[ -n $artifact ]]; then
    show_finding "$log" "$artifact"
  fi
  if ((merge)); then
    "$bin/$t" -merge=1 "tests/fuzz/corpus/$t" "$corpus" >>"$log" 2>&1 ||
      echo "merging the corpus of $t failed (see $log)" >&2
  fi
done

if [[ -n $report ]]; then
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuites><testsuite name=\"fuzz\">"
    printf '%s\n' "${cases[@]}"
    echo "</testsuite></testsuites>"
  } >"$report/test.xml"
  cp "$work/build.log" "$report/build.log"
fi
echo "logs and findings: $out" >&2
# The clang build's server is not needed any more (its cache stays).
fuzz_bazel shutdown >/dev/null 2>&1
exit $found
