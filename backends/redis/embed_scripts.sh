#!/bin/bash
# Turns the Lua scripts into C++: a source with one raw string literal per
# script, and a header with one struct per script for its call. Usage:
# embed_scripts.sh SOURCE_OUT HEADER_OUT LIBDIR SCRIPT...
#
# A script's header declares its keys and arguments, once, each on a line
#   -- KEYS[n]  name: what it is
#   -- ARGV[n]  name: what it is
#   -- ARGV[n..] name: what follows them, a list of any length
# The source records how many of each the script takes (the client refuses
# a call that passes others, client/connection.cc); the header has a struct
# <Name>Args with a member per line, named by it, and ToCall(), which lays
# the members out as KEYS and ARGV in the declared order (see
# internal/script_args.h). A line without a name, a name used twice, keys
# or arguments not numbered 1, 2, ... in order, or a time argument out of
# its place (now is ARGV[1], clock_mode ARGV[2]) fails the build.
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
header_out="$2"
libdir="$3"
shift 3

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

fail() {
  echo "embed_scripts.sh: $*" >&2
  exit 1
}

# Reads the declaration lines of script $1: the names and texts of its keys
# (key_names, key_texts) and arguments (arg_names, arg_texts), in order, and
# of the list that follows them, if any (list_name, list_text).
read_call() {
  local f="$1" line kind at dots rest name text where
  local -A seen=()
  local decl_re='^-- (KEYS|ARGV)\[([0-9]+)(\.\.)?\][[:space:]]+(.*)$'
  local name_re='^([a-z_][a-z0-9_]*):([[:space:]]+(.*))?$'
  key_names=()
  key_texts=()
  arg_names=()
  arg_texts=()
  list_name=""
  list_text=""
  local cont_re='^--[[:space:]]{2,}([^[:space:]].*)$' last=""
  while IFS= read -r line || [[ -n "$line" ]]; do
    # An indented line continues the text of the declaration above it.
    if [[ -n "$last" && "$line" =~ $cont_re ]]; then
      text="${BASH_REMATCH[1]%%\\}"
      case "$last" in
        KEYS) key_texts[-1]+=" ${text}" ;;
        ARGV) arg_texts[-1]+=" ${text}" ;;
        LIST) list_text+=" ${text}" ;;
      esac
      continue
    fi
    last=""
    [[ "$line" =~ $decl_re ]] || continue
    kind="${BASH_REMATCH[1]}"
    at="${BASH_REMATCH[2]}"
    dots="${BASH_REMATCH[3]}"
    rest="${BASH_REMATCH[4]}"
    where="${kind}[${at}${dots}]"
    if [[ ! "$rest" =~ $name_re ]]; then
      fail "${f}: ${where} has no name (write '-- ${where}  name: what it is')"
    fi
    name="${BASH_REMATCH[1]}"
    # A trailing backslash would continue the generated // comment.
    text="${BASH_REMATCH[3]%%\\}"
    if [[ -n "${seen[$name]:-}" ]]; then
      fail "${f}: ${seen[$name]} and ${where} are both named '${name}'"
    fi
    seen[$name]="$where"
    if [[ -n "$list_name" ]]; then
      fail "${f}: ${where} follows the list ARGV[n..], which comes last"
    fi
    if [[ -n "$dots" ]]; then
      [[ "$kind" == ARGV ]] || fail "${f}: ${where}: only ARGV ends in a list"
      if ((at != ${#arg_names[@]} + 1)); then
        fail "${f}: ARGV[$((${#arg_names[@]} + 1))] is not declared in order"
      fi
      list_name="$name"
      list_text="$text"
      last=LIST
    elif [[ "$kind" == KEYS ]]; then
      if ((at != ${#key_names[@]} + 1)); then
        fail "${f}: KEYS[$((${#key_names[@]} + 1))] is not declared in order"
      fi
      key_names+=("$name")
      key_texts+=("$text")
      last=KEYS
    else
      if ((at != ${#arg_names[@]} + 1)); then
        fail "${f}: ARGV[$((${#arg_names[@]} + 1))] is not declared in order"
      fi
      arg_names+=("$name")
      arg_texts+=("$text")
      last=ARGV
    fi
  done <"$f"
  # One argument order for every script: the time first, then whose clock.
  local i
  for i in "${!arg_names[@]}"; do
    if [[ "${arg_names[$i]}" == now && "$i" != 0 ]]; then
      fail "${f}: now is ARGV[$((i + 1))]; the time comes first, ARGV[1]"
    fi
    if [[ "${arg_names[$i]}" == clock_mode &&
          ("$i" != 1 || "${arg_names[0]}" != now) ]]; then
      fail "${f}: clock_mode is ARGV[$((i + 1))]; it follows now, as ARGV[2]"
    fi
  done
}

# Appends to $members a member for each name in the array named $2 (its
# text in the array named $3), declared as $1[n], and to $places the line
# of ToCall() that puts it there (CallBuilder's method $4).
add_members() {
  local kind="$1" method="$4" i
  local -n names="$2" texts="$3"
  for i in "${!names[@]}"; do
    members+="  std::optional<std::string> ${names[$i]};  // ${kind}[$((i + 1))] ${texts[$i]}"$'\n'
    places+="  call.${method}(\"${names[$i]}\", &a.${names[$i]});"$'\n'
  done
}

# Appends to $calls the struct and ToCall() of script $1 (file name $2), as
# read_call read it.
emit_call() {
  local name="$1" base="$2" type members="" places=""
  type="$(sed -E 's/(^|_)([a-z0-9])/\U\2/g' <<<"$name")Args"
  add_members KEYS key_names key_texts Key
  add_members ARGV arg_names arg_texts Arg
  if [[ -n "$list_name" ]]; then
    members+="  ArgList ${list_name};  // ARGV[$((${#arg_names[@]} + 1))..] ${list_text}"$'\n'
    places+="  call.List(&a.${list_name});"$'\n'
  fi
  calls+="// ${base}.lua"$'\n'
  calls+="struct ${type} {"$'\n'
  calls+="  static constexpr char kScript[] = \"${name}\";"$'\n'
  calls+="${members}};"$'\n'
  calls+="inline absl::StatusOr<Scripts::Call> ToCall(${type} a) {"$'\n'
  calls+="  CallBuilder call(${type}::kScript, ${#key_names[@]}, ${#arg_names[@]});"$'\n'
  calls+="${places}  return std::move(call).Done();"$'\n'
  calls+="}"$'\n'$'\n'
}

declare -A emitted
calls=""
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
    read_call "$f"
    if [[ "${#key_names[@]}" != "$keys" ]]; then
      fail "${f}: its name says ${keys} keys, its header declares ${#key_names[@]}"
    fi
    args="${#arg_names[@]}"
    more=false
    if [[ -n "$list_name" ]]; then more=true; fi
    emit_call "$name" "$base"
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

{
  echo '// Generated from backends/redis/scripts/*.lua by embed_scripts.sh. Do'
  echo '// not edit: the scripts'"'"' headers declare each call.'
  echo '#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPT_CALLS_H_'
  echo '#define DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPT_CALLS_H_'
  echo '#include <optional>'
  echo '#include <string>'
  echo '#include <utility>'
  echo '#include "backends/redis/internal/script_args.h"'
  echo 'namespace delayq {'
  echo 'namespace redis_internal {'
  echo
  printf '%s' "$calls"
  echo '}  // namespace redis_internal'
  echo '}  // namespace delayq'
  echo '#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_SCRIPT_CALLS_H_'
} >"$header_out"
