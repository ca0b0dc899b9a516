#!/usr/bin/env bash
# W1 (ready throughput) on the Redis topologies the store speaks, each
# against the same plain primary, to show what TLS, Sentinel, replication
# with WAIT and Cluster routing cost per job:
#
#   bench/redis_topologies.sh
#
# Starts, on free loopback ports in a temporary directory, and stops at the
# end (also on failure):
#   plain       one primary (the baseline)              redis://
#   tls         one primary on a TLS-only port          rediss://?tls_ca_file=
#               (a CA and certificate made with openssl now)
#   sentinel    primary + replica + 3 sentinels         redis+sentinel://
#   replicated  primary + replica, no WAIT              redis://
#   wait        the same primary + replica, wait=1      redis://?wait=1&wait_timeout_ms=100
#   cluster     3 primaries, no replicas                redis+cluster://
#   plain3ns    the plain primary, three workloads processes at once, each on
#               a namespace of its own
#   cluster3ns  the same on the cluster, with three namespaces that three
#               different primaries serve
#   plainsharded   the plain primary, one workloads process on a namespace of
#               three shards (shards=3): what sharding costs on one server
#   clustersharded the cluster, one workloads process on a namespace of three
#               shards whose hash tags three different primaries serve
# and runs `workloads --workload=w1` on each in the two-process shape (the
# consumers in a process of their own), once per mode (single calls,
# batches of 100), concurrency and round; the topologies take turns within
# a round, in the opposite order in the next round, so that a change in the
# machine's load shows up as a spread between rounds instead of as a
# difference between topologies.
#
# Per run it records jobs/s (enqueue and consume), the CPU the servers spent
# (INFO cpu used_cpu_user + used_cpu_sys, before and after, per server) and
# the CPU of the workloads process and its consumer process (/usr/bin/time,
# which counts the child it waited for). Writes bench/results/topologies.jsonl
# (one JSON object per run, replaced on every run) and
# bench/results/topologies.md (the table, also printed).
#
# Sizes through the environment: TOPO_N (jobs per workloads process and
# run, 20000), TOPO_ROUNDS (3), TOPO_CONCURRENCY ("1 8"), TOPO_MODES
# ("single batch"), TOPO_LIST (the topologies above but the sharded ones),
# TOPO_OUT (the results' file name, "topologies"). About 4 minutes with
# the defaults on 2 cores (3 min 37 s for the committed results);
# bench/run_all.sh does not run it.
set -euo pipefail

cd "$(dirname "$0")/.."
N=${TOPO_N:-20000}
ROUNDS=${TOPO_ROUNDS:-3}
CONCURRENCY=${TOPO_CONCURRENCY:-1 8}
MODES=${TOPO_MODES:-single batch}
TOPOLOGIES=${TOPO_LIST:-plain tls sentinel replicated wait cluster plain3ns cluster3ns}
OUT=${TOPO_OUT:-topologies}
RESULTS=bench/results
PYTHON=/usr/bin/python3
NS=bench  # the namespace, hence the cluster slot of every run

for tool in redis-server redis-sentinel redis-cli openssl /usr/bin/time; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing (apt-get install redis-server redis-sentinel" \
      "redis-tools openssl time)" >&2
    exit 1
  }
done

bazel build -c opt //bench:workloads
BIN=$(bazel info -c opt bazel-bin 2>/dev/null)/bench

TMP=$(mktemp -d)
declare -A PORT TLS
STARTED=()  # servers in start order; stopped in reverse

stop_all() {
  local i pid
  for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
    pid=$(cat "$TMP/${STARTED[i]}/pid" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || true
  done
  for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
    pid=$(cat "$TMP/${STARTED[i]}/pid" 2>/dev/null) || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$TMP"
}
trap stop_all EXIT

# Free loopback ports, one per server plus the cluster's bus ports.
read -r -a FREE <<<"$("$PYTHON" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(20)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
)"
take_port() {  # take_port NAME: the next free port is NAME's
  PORT[$1]=${FREE[0]}
  FREE=("${FREE[@]:1}")
}

cli() {  # cli NAME ARGS...: redis-cli to server NAME
  local name=$1
  shift
  if [[ -n ${TLS[$name]:-} ]]; then
    redis-cli --tls --cacert "$TMP/tls/ca.crt" -p "${PORT[$name]}" "$@"
  else
    redis-cli -p "${PORT[$name]}" "$@"
  fi
}

await() {  # await WHAT COMMAND...: until COMMAND succeeds, at most 30 s
  local what=$1
  shift
  for _ in $(seq 300); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$what: not ready after 30 s; logs in $TMP" >&2
  tail -n 20 "$TMP"/*/log >&2 || true
  exit 1
}

pongs() { [[ $(cli "$1" ping) == PONG ]]; }

# start_redis NAME ARGS...: a redis-server in $TMP/NAME on PORT[NAME] (the
# caller's ARGS say how it listens).
start_redis() {
  local name=$1
  shift
  mkdir -p "$TMP/$name"
  STARTED+=("$name")
  redis-server --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$TMP/$name/pid" --logfile "$TMP/$name/log" --dir "$TMP/$name" "$@"
  await "redis-server $name" pongs "$name"
}

make_certificates() {
  mkdir -p "$TMP/tls"
  (
    cd "$TMP/tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=delayq bench CA" \
      -keyout ca.key -out ca.crt
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -days 2 -extfile server.ext -out server.crt
  ) >"$TMP/tls/openssl.log" 2>&1 || {
    cat "$TMP/tls/openssl.log" >&2
    exit 1
  }
}

replica_synced() {  # replica_synced PRIMARY: its replica confirms a WAIT 1
  [[ $(cli "$1" wait 1 1000) == 1 ]]
}

start_replicated() {  # start_replicated PREFIX: PREFIX_primary, PREFIX_replica
  take_port "$1_primary"
  take_port "$1_replica"
  start_redis "$1_primary" --port "${PORT[$1_primary]}"
  start_redis "$1_replica" --port "${PORT[$1_replica]}" \
    --replicaof 127.0.0.1 "${PORT[$1_primary]}"
  await "replica of $1_primary" replica_synced "$1_primary"
}

start_sentinels() {  # three sentinels that monitor s_primary as "bench"
  local i
  for i in 1 2 3; do
    take_port "sentinel$i"
    mkdir -p "$TMP/sentinel$i"
    STARTED+=("sentinel$i")
    printf 'sentinel monitor bench 127.0.0.1 %s 2\n' "${PORT[s_primary]}" \
      >"$TMP/sentinel$i/sentinel.conf"
    redis-sentinel "$TMP/sentinel$i/sentinel.conf" --port "${PORT[sentinel$i]}" \
      --bind 127.0.0.1 --daemonize yes --pidfile "$TMP/sentinel$i/pid" \
      --logfile "$TMP/sentinel$i/log" --dir "$TMP/sentinel$i"
  done
  for i in 1 2 3; do
    await "sentinel$i" sentinels_agree "sentinel$i"
  done
}

sentinels_agree() {  # each sentinel has found the two others
  cli "$1" sentinel ckquorum bench | grep -q '^OK 3 usable'
}

start_cluster() {  # cluster1..3, every slot assigned
  local i nodes=()
  for i in 1 2 3; do
    take_port "cluster$i"
    take_port "cluster${i}_bus"
    start_redis "cluster$i" --port "${PORT[cluster$i]}" --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-port "${PORT[cluster${i}_bus]}"
    nodes+=("127.0.0.1:${PORT[cluster$i]}")
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
    >"$TMP/cluster1/create.log" 2>&1 || {
    cat "$TMP/cluster1/create.log" >&2
    exit 1
  }
  for i in 1 2 3; do
    await "cluster$i" cluster_ok "cluster$i"
  done
}

cluster_ok() { cli "$1" cluster info | grep -q '^cluster_state:ok'; }

# serving_node NS: the cluster node that serves namespace NS's slot.
serving_node() {
  local slot port i
  slot=$(cli cluster1 cluster keyslot "$1")
  port=$(cli cluster1 cluster nodes | awk -v slot="$slot" '
    $3 ~ /master/ {
      for (i = 9; i <= NF; i++) {
        n = split($i, r, "-"); lo = r[1]; hi = (n == 2 ? r[2] : r[1])
        if (slot + 0 >= lo + 0 && slot + 0 <= hi + 0) {
          sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2
        }
      }
    }')
  for i in 1 2 3; do
    if [[ ${PORT[cluster$i]} == "$port" ]]; then echo "cluster$i"; fi
  done
}

# Three namespaces that three different primaries serve.
namespaces_one_per_primary() {
  local i ns node found=() owners=" "
  for ((i = 0; ${#found[@]} < 3 && i < 1000; i++)); do
    ns="$NS$i"
    node=$(serving_node "$ns")
    [[ $owners == *" $node "* ]] && continue
    owners+="$node "
    found+=("$ns")
  done
  echo "${found[*]}"
}

# A namespace of three shards whose hash tags ("{ns}", "{ns#1}", "{ns#2}")
# three different primaries serve.
sharded_namespace_one_per_primary() {
  local i ns a b c
  for ((i = 0; i < 1000; i++)); do
    ns="${NS}s$i"
    a=$(serving_node "$ns")
    b=$(serving_node "$ns#1")
    c=$(serving_node "$ns#2")
    if [[ $a != "$b" && $b != "$c" && $a != "$c" ]]; then
      echo "$ns"
      return
    fi
  done
  echo "no namespace spreads its shards over the three primaries" >&2
  exit 1
}

cpu_seconds() {  # cpu_seconds NAME: used_cpu_user + used_cpu_sys of NAME
  cli "$1" info cpu | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.6f", s }'
}

start_redis_plain() {
  take_port plain
  start_redis plain --port "${PORT[plain]}"
}

# What each topology's store URLs are (one per workloads process, all run at
# once) and which servers do its work: the primaries that serve it, their
# replica, others (sentinels, other primaries).
declare -A URL PRIMARY REPLICA OTHERS LABEL
setup() {
  local topo i
  for topo in $TOPOLOGIES; do
    echo "== starting $topo" >&2
    case $topo in
      plain)
        [[ -n ${PORT[plain]:-} ]] || start_redis_plain
        URL[plain]="redis://127.0.0.1:${PORT[plain]}?namespace=$NS"
        PRIMARY[plain]=plain
        LABEL[plain]="plain primary"
        ;;
      plain3ns)
        [[ -n ${PORT[plain]:-} ]] || start_redis_plain
        URL[plain3ns]=""
        for i in 0 1 2; do
          URL[plain3ns]+="redis://127.0.0.1:${PORT[plain]}?namespace=$NS$i "
        done
        PRIMARY[plain3ns]=plain
        LABEL[plain3ns]="plain primary, 3 namespaces at once"
        ;;
      tls)
        make_certificates
        take_port tls
        TLS[tls]=1
        start_redis tls --port 0 --tls-port "${PORT[tls]}" \
          --tls-cert-file "$TMP/tls/server.crt" --tls-key-file "$TMP/tls/server.key" \
          --tls-ca-cert-file "$TMP/tls/ca.crt" --tls-auth-clients no
        URL[tls]="rediss://127.0.0.1:${PORT[tls]}?namespace=$NS&tls_ca_file=$TMP/tls/ca.crt"
        PRIMARY[tls]=tls
        LABEL[tls]="TLS primary"
        ;;
      sentinel)
        start_replicated s
        start_sentinels
        URL[sentinel]="redis+sentinel://127.0.0.1:${PORT[sentinel1]},127.0.0.1:${PORT[sentinel2]},127.0.0.1:${PORT[sentinel3]}/bench?namespace=$NS"
        PRIMARY[sentinel]=s_primary
        REPLICA[sentinel]=s_replica
        OTHERS[sentinel]="sentinel1 sentinel2 sentinel3"
        LABEL[sentinel]="sentinel: primary + replica + 3 sentinels"
        ;;
      replicated | wait)
        [[ -n ${PORT[r_primary]:-} ]] || start_replicated r
        URL[replicated]="redis://127.0.0.1:${PORT[r_primary]}?namespace=$NS"
        URL[wait]="${URL[replicated]}&wait=1&wait_timeout_ms=100"
        PRIMARY[$topo]=r_primary
        REPLICA[$topo]=r_replica
        LABEL[replicated]="primary + replica"
        LABEL[wait]="primary + replica, wait=1"
        ;;
      cluster)
        [[ -n ${PORT[cluster1]:-} ]] || start_cluster
        URL[cluster]="$(cluster_url)$NS"
        PRIMARY[cluster]=$(serving_node "$NS")
        local others=()
        for i in 1 2 3; do
          [[ cluster$i == "${PRIMARY[cluster]}" ]] || others+=("cluster$i")
        done
        OTHERS[cluster]="${others[*]}"
        LABEL[cluster]="cluster of 3 primaries"
        ;;
      cluster3ns)
        [[ -n ${PORT[cluster1]:-} ]] || start_cluster
        local ns
        URL[cluster3ns]=""
        for ns in $(namespaces_one_per_primary); do
          URL[cluster3ns]+="$(cluster_url)$ns "
        done
        PRIMARY[cluster3ns]="cluster1 cluster2 cluster3"
        LABEL[cluster3ns]="cluster, 3 namespaces at once"
        ;;
      plainsharded)
        [[ -n ${PORT[plain]:-} ]] || start_redis_plain
        URL[plainsharded]="redis://127.0.0.1:${PORT[plain]}?namespace=${NS}sh&shards=3"
        PRIMARY[plainsharded]=plain
        LABEL[plainsharded]="plain primary, 3 shards"
        ;;
      clustersharded)
        [[ -n ${PORT[cluster1]:-} ]] || start_cluster
        URL[clustersharded]="$(cluster_url)$(sharded_namespace_one_per_primary)&shards=3"
        PRIMARY[clustersharded]="cluster1 cluster2 cluster3"
        LABEL[clustersharded]="cluster, 3 shards on 3 primaries"
        ;;
      *)
        echo "unknown topology $topo (TOPO_LIST)" >&2
        exit 2
        ;;
    esac
  done
}

cluster_url() {  # the cluster's URL up to the namespace's value
  echo "redis+cluster://127.0.0.1:${PORT[cluster1]},127.0.0.1:${PORT[cluster2]},127.0.0.1:${PORT[cluster3]}?namespace="
}

sum() { awk '{ s += $1 } END { printf "%.6f", s }'; }

# run TOPO MODE CONCURRENCY ROUND: one W1 run (one workloads process per URL
# of the topology, at once), one JSON line on stdout.
run() {
  local topo=$1 mode=$2 c=$3 round=$4
  local -a servers pids=()
  local -A before spent
  local s role url k=0 load jobs by_server="" roles=""
  # shellcheck disable=SC2206  # lists of server names
  servers=(${PRIMARY[$topo]} ${REPLICA[$topo]:-} ${OTHERS[$topo]:-})
  echo "== round $round: $topo, w1 $mode, concurrency $c" >&2
  load=$(cut -d' ' -f1 /proc/loadavg)
  for s in "${servers[@]}"; do before[$s]=$(cpu_seconds "$s"); done
  for url in ${URL[$topo]}; do
    /usr/bin/time -f '%U %S' -o "$TMP/time.$k" "$BIN/workloads" --store="$url" \
      --workload=w1 --w1_mode="$mode" --n="$N" --concurrency="$c" --json \
      >"$TMP/report.$k" &
    pids+=($!)
    k=$((k + 1))
  done
  for s in "${pids[@]}"; do wait "$s"; done
  for s in "${servers[@]}"; do
    spent[$s]=$(awk -v a="${before[$s]}" -v b="$(cpu_seconds "$s")" 'BEGIN { printf "%.6f", b - a }')
    by_server+="${by_server:+, }\"$s\": ${spent[$s]}"
  done
  for role in PRIMARY REPLICA OTHERS; do
    declare -n names=$role
    # shellcheck disable=SC2086
    roles+="\"${role,,}\": $(for s in ${names[$topo]:-}; do echo "${spent[$s]}"; done | sum), "
    unset -n names
  done
  jobs=$((N * k))
  printf '{"topology": "%s", "label": "%s", "round": %d, "jobs": %d, "loadavg_1m": %s, ' \
    "$topo" "${LABEL[$topo]}" "$round" "$jobs" "$load"
  printf '"server_cpu_s": {%s"by_server": {%s}}, ' "$roles" "$by_server"
  printf '"client_cpu_s": %s, ' "$(awk '{ s += $1 + $2 } END { printf "%.2f", s }' "$TMP"/time.*)"
  printf '"reports": [%s]}\n' "$(cat "$TMP"/report.* | paste -sd,)"
  rm -f "$TMP"/time.* "$TMP"/report.*
}

setup
mkdir -p "$RESULTS"
: >"$TMP/topologies.jsonl"
read -r -a order <<<"$TOPOLOGIES"
for ((round = 1; round <= ROUNDS; round++)); do
  for c in $CONCURRENCY; do
    for mode in $MODES; do
      for topo in "${order[@]}"; do
        run "$topo" "$mode" "$c" "$round" >>"$TMP/topologies.jsonl"
      done
    done
  done
  # The next round takes the topologies in the opposite order.
  for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do
    t=${order[i]}
    order[i]=${order[j]}
    order[j]=$t
  done
done
cp "$TMP/topologies.jsonl" "$RESULTS/$OUT.jsonl"
"$PYTHON" bench/topologies_table.py "$RESULTS/$OUT.jsonl" >"$RESULTS/$OUT.md"
cat "$RESULTS/$OUT.md"
