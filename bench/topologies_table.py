#!/usr/bin/python3
"""Turns bench/redis_topologies.sh's JSON lines into markdown tables.

    bench/topologies_table.py topologies.jsonl > topologies.md

One row per topology, W1 mode and concurrency; the runs of a row are listed
in round order. A run of several workloads processes at once (cluster3ns)
counts the jobs of all and adds their jobs/s. Runs on a sharded namespace
(clustersharded) and runs of several processes also get a table of CPU per
primary. CPU per job is CPU seconds
over the run's jobs (each job is enqueued, reserved and acked once). Exits 1
when a run lost, duplicated or left behind a job.
"""

import json
import statistics
import sys

TOPOLOGY_ORDER = ["plain", "tls", "sentinel", "replicated", "wait", "cluster",
                  "plain3ns", "cluster3ns", "plainsharded", "clustersharded"]


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def params(run):
    return run["reports"][0]["params"]


def key(run):
    p = params(run)
    topo = run["topology"]
    return (p["mode"] == "batch", p["concurrency"],
            TOPOLOGY_ORDER.index(topo) if topo in TOPOLOGY_ORDER else 99, topo)


def total(run, metric):
    return sum(r["metrics"][metric] for r in run["reports"])


def per_job_us(seconds, run):
    return seconds * 1e6 / run["jobs"]


def listed(values, fmt):
    return " / ".join(fmt(v) for v in values)


def thousands(v):
    return f"{v / 1000:.1f}k"


def server_cell(runs, role):
    """CPU µs per job of the servers in `role`, each run; "-" if none ran."""
    values = [per_job_us(r["server_cpu_s"][role], r) for r in runs]
    if all(v < 0.5 for v in values):
        return "-"
    return listed(values, lambda v: f"{v:.0f}")


def median_consume(runs):
    return statistics.median(total(r, "consume_jobs_per_s") for r in runs)


def main_table(groups):
    plain = {(k[0], k[1]): median_consume(g) for k, g in groups.items()
             if k[3] == "plain"}
    print("W1, two-process shape (each workloads process's consumers run in "
          "a process of their own); each cell lists the runs in round "
          "order.\n")
    print("| topology | mode | c | jobs | consume jobs/s | median vs plain | "
          "enqueue jobs/s | primary CPU µs/job | replica CPU µs/job | "
          "other servers CPU µs/job | client CPU µs/job | load (1 min) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, g in groups.items():
        p = params(g[0])
        base = plain.get((k[0], k[1]))
        cells = [
            g[0]["label"], p["mode"], str(p["concurrency"]),
            f'{g[0]["jobs"]:,}',
            listed((total(r, "consume_jobs_per_s") for r in g), thousands),
            f"{median_consume(g) / base:.2f}" if base else "",
            listed((total(r, "enqueue_jobs_per_s") for r in g), thousands),
            server_cell(g, "primary"), server_cell(g, "replica"),
            server_cell(g, "others"),
            listed((per_job_us(r["client_cpu_s"], r) for r in g),
                   lambda v: f"{v:.0f}"),
            listed((r["loadavg_1m"] for r in g), lambda v: f"{v:.1f}"),
        ]
        print("| " + " | ".join(cells) + " |")


def split_table(groups):
    """How the primaries shared the work of several namespaces or shards."""
    rows = [(k, g) for k, g in groups.items()
            if len(g[0]["server_cpu_s"]["by_server"]) > 1 and
            (len(g[0]["reports"]) > 1 or g[0]["topology"] == "clustersharded")]
    if not rows:
        return
    print("\nServer CPU per primary, runs with several namespaces at once "
          "or a sharded one (µs per job of all the run's jobs; each run in "
          "round order).\n")
    servers = sorted(rows[0][1][0]["server_cpu_s"]["by_server"])
    print("| topology | mode | c | " + " | ".join(servers) + " |")
    print("|---|---|---:|" + "---:|" * len(servers))
    for k, g in rows:
        p = params(g[0])
        cells = [g[0]["label"], p["mode"], str(p["concurrency"])]
        for s in servers:
            cells.append(listed(
                (per_job_us(r["server_cpu_s"]["by_server"][s], r) for r in g),
                lambda v: f"{v:.0f}"))
        print("| " + " | ".join(cells) + " |")


def main():
    runs = load(sys.argv[1])
    groups = {}
    for r in sorted(runs, key=lambda r: (key(r), r["round"])):
        groups.setdefault(key(r), []).append(r)
    main_table(groups)
    split_table(groups)
    bad = [f'{r["topology"]} round {r["round"]}: {x["metrics"]}'
           for r in runs for x in r["reports"]
           if x["metrics"]["duplicates"] or x["metrics"]["missing"] or
           x["metrics"]["left_in_store"]]
    for b in bad:
        print(f"WARNING: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
