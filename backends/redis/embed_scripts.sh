#!/bin/bash
# Turns the Lua scripts into a C++ source: one raw string literal per
# script. Usage: embed_scripts.sh OUT LIBDIR SCRIPT...
#
# A script names the helper files it uses on a line
#   -- requires: keys lease index
# and each name is LIBDIR/<name>.lua. A helper file may require others the
# same way. The loaded script is the required helpers, each once and after
# the ones it requires, then the script itself: every script carries only
# the helpers it calls, since Redis runs a script's whole body (and so
# re-creates every helper closure and table) on each call.
set -euo pipefail
out="$1"
libdir="$2"
shift 2

# The names on a file's "-- requires:" lines.
requires() {
  sed -n 's/^-- requires:\(.*\)$/\1/p' "$1"
}

declare -A emitted
declare -A visiting
body=""
# Appends helper $1 to $body after everything it requires.
emit() {
  local name="$1"
  [[ -n "${emitted[$name]:-}" ]] && return 0
  local file="${libdir}/${name}.lua"
  if [[ ! -f "$file" ]]; then
    echo "embed_scripts.sh: unknown helper '${name}' (no ${file})" >&2
    exit 1
  fi
  if [[ -n "${visiting[$name]:-}" ]]; then
    echo "embed_scripts.sh: helpers require each other in a cycle at '${name}'" >&2
    exit 1
  fi
  visiting[$name]=1
  local dep
  for dep in $(requires "$file"); do emit "$dep"; done
  emitted[$name]=1
  body+="$(cat "$file")"$'\n'
}

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
    emitted=()
    visiting=()
    body=""
    for dep in $(requires "$f"); do emit "$dep"; done
    echo "    {\"${name}\", ${keys}, R\"delayq_lua("
    printf '%s' "$body"
    echo "-- ${base}.lua"
    cat "$f"
    echo ')delayq_lua"},'
  done
  echo '};'
  echo 'const int kScriptSourceCount = sizeof(kScriptSources) / sizeof(kScriptSources[0]);'
  echo '}  // namespace redis_internal'
  echo '}  // namespace delayq'
} >"$out"
