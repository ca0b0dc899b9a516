#!/bin/bash
# Turns the Lua scripts into a C++ source: one raw string literal per
# script, with the keys and arguments its header declares ("-- KEYS[n]",
# "-- ARGV[n]", and "-- ARGV[n..]" for a list that follows them). Usage:
# embed_scripts.sh OUT LIBDIR SCRIPT...
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

# The names on a script's "-- loads:" lines: helpers it needs only now and
# then. Each is wrapped in a function load_<name>() that defines it (and
# whatever it requires that the script's own helpers do not) when called and
# returns a table of the helper file's functions, so a call that does not
# need it does not pay for building its closures.
loads() {
  sed -n 's/^-- loads:\(.*\)$/\1/p' "$1"
}

declare -A emitted
declare -A visiting
body=""
# Appends helper $1 to $body after everything it requires.
emit() {
  local name="$1"
  [[ -n "${emitted[$name]:-}" ]] && return 0
  if [[ ! "$name" =~ ^[a-z_][a-z0-9_]*$ ]]; then
    echo "embed_scripts.sh: helper name '${name}' is not a Lua identifier" >&2
    exit 1
  fi
  local file="${libdir}/${name}.lua"
  if [[ ! -f "$file" ]]; then
    echo "embed_scripts.sh: unknown helper '${name}' (no ${file})" >&2
    exit 1
  fi
  if [[ -n "${visiting[$name]:-}" ]]; then
    echo "embed_scripts.sh: helpers require each other in a cycle at '${name}'" >&2
    exit 1
  fi
  if [[ -n "$(loads "$file")" ]]; then
    echo "embed_scripts.sh: ${file}: only scripts may have a '-- loads:' line" >&2
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
  echo '#include "backends/redis/internal/scripts.h"'
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
    top_emitted="${!emitted[*]}"
    for lazy in $(loads "$f"); do
      # Start from the script's own helpers for each, so two loaded
      # helpers sharing a requirement each define it.
      emitted=()
      visiting=()
      for e in $top_emitted; do emitted[$e]=1; done
      outer="$body"
      body=""
      emit "$lazy"
      inner="$body"
      exports=""
      for fn in $(sed -n 's/^local function \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' \
                  "${libdir}/${lazy}.lua"); do
        exports+="${fn} = ${fn}, "
      done
      body="${outer}local function load_${lazy}()"$'\n'"${inner}return {${exports}}"$'\n'"end"$'\n'
    done
    # The header declares the script's keys and arguments, once: the C++
    # side's calls are checked against it (client/connection.cc) and the
    # key count against the file's name.
    declared_keys="$(grep -cE '^-- KEYS\[[0-9]+\][[:space:]]' "$f" || true)"
    if [[ "$declared_keys" != "$keys" ]]; then
      echo "embed_scripts.sh: ${f}: its name says ${keys} keys, its header declares ${declared_keys}" >&2
      exit 1
    fi
    args="$(grep -cE '^-- ARGV\[[0-9]+\][[:space:]]' "$f" || true)"
    for ((i = 1; i <= args; i++)); do
      if ! grep -qE "^-- ARGV\[${i}\][[:space:]]" "$f"; then
        echo "embed_scripts.sh: ${f}: ARGV[${i}] is not declared in order" >&2
        exit 1
      fi
    done
    more=false
    if grep -qE '^-- ARGV\[[0-9]+\.\.\]' "$f"; then more=true; fi
    echo "    {\"${name}\", ${keys}, ${args}, ${more}, R\"delayq_lua("
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
