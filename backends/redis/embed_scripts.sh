#!/bin/bash
# Turns the Lua scripts into a C++ source: one raw string literal per
# script, with common.lua prepended. Usage: embed_scripts.sh OUT COMMON SCRIPT...
set -euo pipefail
out="$1"
common="$2"
shift 2
{
  echo '// Generated from backends/redis/scripts/*.lua. Do not edit.'
  echo '#include "backends/redis/scripts.h"'
  echo 'namespace delayq {'
  echo 'namespace redis_internal {'
  echo 'const ScriptSource kScriptSources[] = {'
  for f in "$@"; do
    base="$(basename "$f" .lua)"
    name="${base%-*}"
    keys="${base##*-}"
    echo "    {\"${name}\", ${keys}, R\"delayq_lua("
    cat "$common"
    echo "-- ${base}.lua"
    cat "$f"
    echo ')delayq_lua"},'
  done
  echo '};'
  echo 'const int kScriptSourceCount = sizeof(kScriptSources) / sizeof(kScriptSources[0]);'
  echo '}  // namespace redis_internal'
  echo '}  // namespace delayq'
} >"$out"
