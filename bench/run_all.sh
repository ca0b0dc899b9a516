#!/usr/bin/env bash
# Runs every standard workload on every store, plus the seed-design
# baselines and the idle Redis and PostgreSQL load, and turns the results
# into a chart and a table. SQLite, Redis and PostgreSQL runs put their
# consumers in a process of their own (the deployment shape); a few
# one-process runs are kept beside them for comparison, labelled by their
# "shape":
#
#   bench/run_all.sh
#
# writes bench/results/results.jsonl (one JSON object per run, replaced on
# every run), bench/results/workloads.png and bench/results/workloads.md.
# Starts a private redis-server on a free loopback port in a temporary
# directory and stops it at the end. About 11 minutes on 2 cores, 6 of them
# PostgreSQL's.
#
# Sizes can be changed through the environment: W1_N (memory and Redis),
# W1_N_SQLITE, W2_N (4,000 jobs due per second), W2_LIGHT_N (400 per second),
# W3_N, W4_N, IDLE_N, FOOTPRINT_N (a list: pending timers per memory
# footprint run), STORE_FOOTPRINT_N (Redis, SQLite and PostgreSQL
# footprint), W1_N_POSTGRES, W2_N_POSTGRES (200 jobs due per second),
# IDLE_WINDOW_POSTGRES_S.
#
# beanstalkd (Debian's package) is a reference row for W1: started on a free
# loopback port without a binlog, a producer and a consumer process that
# reserves and deletes one job at a time (bench/baselines/beanstalk_w1.cc).
#
# W1 on TLS, Sentinel, replicated and Cluster Redis is a run of its own:
# bench/redis_topologies.sh (about 4 minutes).
#
# PostgreSQL 15 (Debian's postgresql package) runs beside them: a private
# server from initdb in a temporary directory on a free loopback port, with
# PostgreSQL's default durability (fsync on, synchronous_commit on: every
# commit waits for its WAL flush), since that is how it is deployed, and
# pg_stat_statements loaded to count the idle load's statements. It runs as
# the postgres user when this script runs as root. Beside delayq's
# PostgreSQL store runs its floor: a minimal hand-written SKIP LOCKED queue
# on plain libpq (bench/baselines/postgres_floor_w1.cc), right after
# delayq's W1 in the same run and again right before its second W1, so the
# ratio compares neighbours.
#
#   bench/run_all.sh postgres
#
# runs only the PostgreSQL rows (about 6 minutes) and puts them in place of
# the PostgreSQL rows of the same files, keeping the other stores' rows.
# BAZEL names the bazel command (default: bazel).
set -euo pipefail
ONLY=${1:-all}
[[ $ONLY == all || $ONLY == postgres ]] || {
  echo "usage: bench/run_all.sh [postgres]" >&2
  exit 2
}

cd "$(dirname "$0")/.."
W1_N=${W1_N:-100000}
W1_N_SQLITE=${W1_N_SQLITE:-20000}
W2_N=${W2_N:-20000}
W2_LIGHT_N=${W2_LIGHT_N:-2000}
W3_N=${W3_N:-1000}
W4_N=${W4_N:-1000}
IDLE_N=${IDLE_N:-100000}
FOOTPRINT_N=${FOOTPRINT_N:-100000 1000000}
STORE_FOOTPRINT_N=${STORE_FOOTPRINT_N:-100000}
# Every single-job write on PostgreSQL waits for its commit's WAL flush:
# smaller sizes keep its runs within minutes.
W1_N_POSTGRES=${W1_N_POSTGRES:-3000}
W2_N_POSTGRES=${W2_N_POSTGRES:-1000}
# Longer than Redis's 10 s: it spans two of the scheduler's 30 s looks at
# the store, and PostgreSQL's transaction counts reach pg_stat_database up
# to 10 s late (bench/workloads/postgres_stats.h).
IDLE_WINDOW_POSTGRES_S=${IDLE_WINDOW_POSTGRES_S:-65}
PG_BIN=/usr/lib/postgresql/15/bin
RESULTS=bench/results
OUT=$RESULTS/results.jsonl

# Debian's python3 with matplotlib, for the chart.
PYTHON=/usr/bin/python3
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "installing python3-matplotlib" >&2
  apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null; }
fi
command -v redis-server >/dev/null || {
  echo "redis-server is missing (apt-get install redis-server)" >&2
  exit 1
}
command -v beanstalkd >/dev/null || {
  echo "beanstalkd is missing (apt-get install beanstalkd)" >&2
  exit 1
}

[[ -x $PG_BIN/initdb ]] || {
  echo "PostgreSQL 15 is missing (apt-get install postgresql)" >&2
  exit 1
}

BAZEL=${BAZEL:-bazel}
TARGETS=(//bench:workloads //bench:redis_footprint //bench:postgres_floor_w1)
[[ $ONLY == postgres ]] ||
  TARGETS+=(//bench:seed_poller //bench:memory_footprint //bench:beanstalk_w1)
$BAZEL build -c opt "${TARGETS[@]}"
BIN=$($BAZEL info -c opt bazel-bin 2>/dev/null)/bench

TMP=$(mktemp -d)
free_port() {
  "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
BEANSTALK_PORT=$(free_port)
BEANSTALK_PID=""
PG_PORT=$(free_port)
# Not under $TMP: the postgres user must be able to enter it.
PG_DIR=$(mktemp -d /tmp/delayq-bench-pg.XXXXXX)
as_postgres() {
  if [[ $EUID -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
stop_servers() {
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  [[ -z $BEANSTALK_PID ]] || kill "$BEANSTALK_PID" 2>/dev/null || true
  as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$TMP" "$PG_DIR"
}
trap stop_servers EXIT
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize yes --pidfile "$TMP/redis.pid" --logfile "$TMP/redis.log" \
  --dir "$TMP"
for _ in $(seq 50); do
  redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
  sleep 0.1
done
REDIS=redis://127.0.0.1:$PORT
beanstalkd -l 127.0.0.1 -p "$BEANSTALK_PORT" &
BEANSTALK_PID=$!
[[ $EUID -ne 0 ]] || chown postgres: "$PG_DIR"
as_postgres "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U postgres >"$PG_DIR/initdb.log"
as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -o \
  "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements" \
  start >/dev/null
PG=postgres://postgres@127.0.0.1:$PG_PORT/postgres

mkdir -p "$RESULTS"
if [[ $ONLY == postgres && -f $OUT ]]; then
  grep -v -e '"system": "delayq-postgres"' -e '"system": "postgres-skip-locked"' \
    "$OUT" >"$TMP/kept.jsonl" || true
  cp "$TMP/kept.jsonl" "$OUT"
else
  : >"$OUT"
fi

# run LABEL COMMAND...: appends the JSON lines; a failed run stops the script.
run() {
  local label=$1
  shift
  echo "== $label" >&2
  "$@" --json >>"$OUT"
}
fresh_redis() { redis-cli -p "$PORT" flushall >/dev/null; }
sqlite_url() { rm -rf "$TMP"/bench.db*; echo "sqlite:$TMP/bench.db"; }
# A new schema for every run, as a flushed Redis is a new keyspace.
postgres_url() { echo "$PG?schema=bench_$(date +%s%N)"; }

postgres_runs() {
  local c
  for c in 1 8; do
    run "postgres w1 c=$c" "$BIN/workloads" --store="$(postgres_url)" --workload=w1 \
      --n="$W1_N_POSTGRES" --concurrency="$c"
    run "postgres floor w1 c=$c" "$BIN/postgres_floor_w1" --postgres="$PG" \
      --n="$W1_N_POSTGRES" --concurrency="$c"
  done
  # The same pair again in the other order, so neither always runs first.
  run "postgres floor w1 c=8 (second)" "$BIN/postgres_floor_w1" --postgres="$PG" \
    --n="$W1_N_POSTGRES" --concurrency=8
  run "postgres w1 c=8 (second)" "$BIN/workloads" --store="$(postgres_url)" --workload=w1 \
    --w1_mode=single --n="$W1_N_POSTGRES" --concurrency=8
  run "postgres w1 chained c=8" "$BIN/workloads" --store="$(postgres_url)" --workload=w1 \
    --w1_mode=chained --n="$W1_N_POSTGRES" --concurrency=8
  run "postgres w2 n=$W2_N_POSTGRES" "$BIN/workloads" --store="$(postgres_url)" \
    --workload=w2 --n="$W2_N_POSTGRES"
  run "postgres w4" "$BIN/workloads" --store="$(postgres_url)" --workload=w4 --n="$W4_N"
  run "postgres idle" "$BIN/workloads" --store="$(postgres_url)" --workload=idle \
    --n="$IDLE_N" --window_s="$IDLE_WINDOW_POSTGRES_S"
  run "postgres footprint" "$BIN/redis_footprint" --store=postgres \
    --postgres="$(postgres_url)" --n="$STORE_FOOTPRINT_N"
}

if [[ $ONLY == postgres ]]; then
  postgres_runs
  stop_servers
  trap - EXIT
  "$PYTHON" bench/plot.py "$OUT" "$RESULTS/workloads.png" "$RESULTS/workloads.md"
  cat "$RESULTS/workloads.md"
  exit 0
fi

for c in 1 8; do
  run "memory w1 c=$c" "$BIN/workloads" --store=memory: --workload=w1 --n="$W1_N" --concurrency="$c"
  run "sqlite w1 c=$c" "$BIN/workloads" --store="$(sqlite_url)" --workload=w1 --n="$W1_N_SQLITE" --concurrency="$c"
  fresh_redis
  run "redis w1 c=$c" "$BIN/workloads" --store="$REDIS" --workload=w1 --n="$W1_N" --concurrency="$c"
  fresh_redis
  run "redis w1 chained c=$c" "$BIN/workloads" --store="$REDIS" --workload=w1 --w1_mode=chained \
    --n="$W1_N" --concurrency="$c"
  run "beanstalkd w1 c=$c" "$BIN/beanstalk_w1" --beanstalk="127.0.0.1:$BEANSTALK_PORT" \
    --n="$W1_N" --concurrency="$c"
done
for n in "$W2_LIGHT_N" "$W2_N"; do
  run "memory w2 n=$n" "$BIN/workloads" --store=memory: --workload=w2 --n="$n"
  run "sqlite w2 n=$n" "$BIN/workloads" --store="$(sqlite_url)" --workload=w2 --n="$n"
  fresh_redis
  run "redis w2 n=$n" "$BIN/workloads" --store="$REDIS" --workload=w2 --n="$n"
  for interval in 100 10; do
    fresh_redis
    run "seed poller ${interval}ms w2 n=$n" "$BIN/seed_poller" --redis="127.0.0.1:$PORT" \
      --interval_ms="$interval" --workload=w2 --n="$n"
  done
done
run "memory w3" "$BIN/workloads" --store=memory: --workload=w3 --n="$W3_N"
run "sqlite w3" "$BIN/workloads" --store="$(sqlite_url)" --workload=w3 --n="$W3_N"
fresh_redis
run "redis w3" "$BIN/workloads" --store="$REDIS" --workload=w3 --n="$W3_N"

for store in sqlite redis; do
  if [[ $store == sqlite ]]; then url=$(sqlite_url); else fresh_redis; url=$REDIS; fi
  run "$store w4" "$BIN/workloads" --store="$url" --workload=w4 --n="$W4_N"
done
run "memory w4" "$BIN/workloads" --store=memory: --workload=w4 --n="$W4_N"

# The same stores with producer and consumers on one scheduler in one process.
run "sqlite w1 c=8 one-process" "$BIN/workloads" --store="$(sqlite_url)" --workload=w1 \
  --n="$W1_N_SQLITE" --concurrency=8 --shape=one-process
fresh_redis
run "redis w1 c=8 one-process" "$BIN/workloads" --store="$REDIS" --workload=w1 \
  --n="$W1_N" --concurrency=8 --shape=one-process
run "sqlite w2 n=$W2_N one-process" "$BIN/workloads" --store="$(sqlite_url)" --workload=w2 \
  --n="$W2_N" --shape=one-process
fresh_redis
run "redis w2 n=$W2_N one-process" "$BIN/workloads" --store="$REDIS" --workload=w2 \
  --n="$W2_N" --shape=one-process

fresh_redis
run "seed poller w1 c=8" "$BIN/seed_poller" --redis="127.0.0.1:$PORT" \
  --workload=w1 --n="$W1_N" --concurrency=8

# Idle load: one consumer each, like delayq's default single worker.
for interval in 100 10; do
  fresh_redis
  run "seed poller ${interval}ms idle" "$BIN/seed_poller" --redis="127.0.0.1:$PORT" \
    --interval_ms="$interval" --workload=idle --n="$IDLE_N" --concurrency=1
done
fresh_redis
run "redis idle" "$BIN/workloads" --store="$REDIS" --workload=idle --n="$IDLE_N"

# Pending timers in one process on the memory store beside a hand-written heap,
# and bytes per pending job in Redis (its own private server) and SQLite.
for n in $FOOTPRINT_N; do
  run "memory footprint n=$n" "$BIN/memory_footprint" --n="$n"
done
run "redis footprint" "$BIN/redis_footprint" --n="$STORE_FOOTPRINT_N"
run "sqlite footprint" "$BIN/redis_footprint" --store=sqlite --n="$STORE_FOOTPRINT_N"

postgres_runs

stop_servers
BEANSTALK_PID=""
trap - EXIT
"$PYTHON" bench/plot.py "$OUT" "$RESULTS/workloads.png" "$RESULTS/workloads.md"
cat "$RESULTS/workloads.md"
