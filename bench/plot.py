#!/usr/bin/python3
"""Turns bench/run_all.sh's JSON lines into a chart and a markdown table.

    bench/plot.py results.jsonl workloads.png workloads.md

Uses Debian's python3-matplotlib. Prints a warning (and exits 1) when any
run reports duplicates, missing or lost jobs.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEM_ORDER = [
    "delayq-memory",
    "delayq-sqlite",
    "delayq-redis",
    "delayq-postgres",
    "postgres-skip-locked",
    "seed-poller-100ms",
    "seed-poller-10ms",
    "beanstalkd",
]


def order(system):
    return SYSTEM_ORDER.index(system) if system in SYSTEM_ORDER else 99


def shape(r):
    """"2-proc" or "1-proc": where the consumers ran (baselines: one)."""
    return "2-proc" if r["params"].get("shape") == "two-process" else "1-proc"


def system(r):
    """The system and, for delayq's shared stores, the shape."""
    if r["system"] in ("delayq-sqlite", "delayq-redis", "delayq-postgres"):
        return f'{r["system"]} {shape(r)}'
    return r["system"]


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by(runs, workload):
    return sorted((r for r in runs if r["workload"] == workload),
                  key=lambda r: (r["params"].get("n", 0)
                                 if workload in ("w2", "footprint") else 0,
                                 order(r["system"]), shape(r),
                                 r["params"].get("concurrency", 0),
                                 r["params"].get("mode", "") == "batch"))


def w1_label(r):
    p = r["params"]
    ack = ", no ack" if p.get("ack") == "none" else ""
    return f'{system(r)}\n{p["mode"]}, c={p["concurrency"]}{ack}'


def bar_groups(ax, labels, series, colors, log=True):
    """Grouped bars: series is [(name, [value per label])]."""
    width = 0.8 / len(series)
    for k, (name, values) in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(labels))]
        bars = ax.bar(xs, values, width, label=name, color=colors[k])
        for x, v in zip(xs, values):
            ax.annotate(fmt(v), (x, v), ha="center", va="bottom", fontsize=7,
                        rotation=90, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    top = max(v for _, values in series for v in values)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(top=top * 4)  # room for the value labels
    else:
        ax.set_ylim(top=top * 1.2)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def fmt(v):
    if v >= 1000:
        return f"{v/1000:.0f}k" if v >= 10000 else f"{v/1000:.1f}k"
    if v >= 10:
        return f"{v:.0f}"
    return f"{v:.2g}"


def plot(runs, png):
    fig, axes = plt.subplots(2, 2, figsize=(16, 11))
    colors = ["#4c72b0", "#dd8452", "#c44e52"]

    w2 = by(runs, "w2")
    ax = axes[0][0]
    labels = [f'{system(r)}\nn={r["params"]["n"]:,}' for r in w2]
    bar_groups(ax, labels, [
        (q, [max(r["metrics"]["lateness_ms"][q], 0.01) for r in w2])
        for q in ("p50", "p99", "max")], colors)
    for label in ax.get_xticklabels():
        label.set_rotation(45)
        label.set_ha("right")
    ax.set_title("W2 delayed lateness: delivery minus due time, n jobs due over 5 s\n"
                 "(ms, log; lower is better)")
    ax.set_ylabel("ms")

    w3 = by(runs, "w3")
    ax = axes[0][1]
    bar_groups(ax, [system(r) for r in w3], [
        (q, [max(r["metrics"]["redelivery_ms"][q], 0.01) for r in w3])
        for q in ("p50", "p99", "max")], colors)
    ax.set_title("W3 TTR redelivery: redelivery minus lease deadline (ms, log)")
    ax.set_ylabel("ms")

    w1 = by(runs, "w1")
    ax = axes[1][0]
    bar_groups(ax, [w1_label(r) for r in w1], [
        ("enqueue jobs/s", [r["metrics"]["enqueue_jobs_per_s"] for r in w1]),
        ("consume jobs/s", [r["metrics"]["consume_jobs_per_s"] for r in w1]),
    ], colors[:2])
    for label in ax.get_xticklabels():
        label.set_rotation(45)
        label.set_ha("right")
    ax.set_title("W1 ready throughput (jobs/s, log; higher is better)")

    idle = [r for r in by(runs, "idle") if "commands_per_s" in r["metrics"]]
    ax = axes[1][1]
    bar_groups(ax, [r["system"] for r in idle], [
        ("all commands/s (incl. those run inside Lua scripts)",
         [r["metrics"]["commands_per_s"] for r in idle]),
        ("script calls/s (EVALSHA)",
         [r["metrics"]["script_calls"] / r["params"]["window_s"] for r in idle]),
    ], colors[2:] + ["#8172b2"], log=False)
    pending = idle[0]["params"]["pending"] if idle else 0
    ax.set_title(f"Idle Redis load: {pending:,} jobs due in 24 h, nothing due\n"
                 "(commands/s; lower is better)")

    fig.tight_layout()
    fig.savefig(png, dpi=100)


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def num(v):
    if isinstance(v, float):
        return f"{v:,.1f}" if v >= 100 else f"{v:.2f}"
    return f"{v:,}"


def markdown(runs):
    out = []
    out.append("Shapes: 2-proc = consumers in a process of their own; 1-proc = one"
               " scheduler produces and consumes.\n\nW1 ready throughput (jobs/s)\n")
    out.append(md_table(
        ["system", "mode", "concurrency", "n", "enqueue jobs/s", "consume jobs/s",
         "duplicates", "missing"],
        [[system(r), r["params"]["mode"], r["params"]["concurrency"],
          num(r["params"]["n"]), num(r["metrics"]["enqueue_jobs_per_s"]),
          num(r["metrics"]["consume_jobs_per_s"]), r["metrics"]["duplicates"],
          r["metrics"]["missing"]] for r in by(runs, "w1")]))
    out.append("\nW2 delayed lateness (ms after the due time)\n")
    out.append(md_table(
        ["system", "n", "p50", "p99", "max", "duplicates", "missing",
         "host stall max (ms)"],
        [[system(r), num(r["params"]["n"])] +
         [num(r["metrics"]["lateness_ms"][q]) for q in ("p50", "p99", "max")] +
         [r["metrics"]["duplicates"], r["metrics"]["missing"],
          num(r["metrics"].get("host_oversleep_ms", {}).get("max", float("nan")))]
         for r in by(runs, "w2")]))
    out.append("\nW3 TTR redelivery (ms after the lease deadline, ttr 1 s)\n")
    out.append(md_table(
        ["system", "n", "p50", "p99", "max", "lost", "duplicates"],
        [[system(r), num(r["params"]["n"])] +
         [num(r["metrics"]["redelivery_ms"][q]) for q in ("p50", "p99", "max")] +
         [r["metrics"]["lost"], r["metrics"]["duplicates"]]
         for r in by(runs, "w3")]))
    out.append("\nW4 handler start (ms from Enqueue() to an idle worker's handler,"
               " one job every 10 ms)\n")
    out.append(md_table(
        ["system", "n", "p50", "p99", "max", "duplicates", "missing"],
        [[system(r), num(r["params"]["n"])] +
         [num(r["metrics"]["handler_start_ms"][q]) for q in ("p50", "p99", "max")] +
         [r["metrics"]["duplicates"], r["metrics"]["missing"]]
         for r in by(runs, "w4")]))
    out.append("\nIdle Redis load (jobs pending far in the future, nothing due)\n")
    out.append(md_table(
        ["system", "pending", "commands/s", "of which script calls/s", "commands"],
        [[r["system"], num(r["params"]["pending"]), num(r["metrics"]["commands_per_s"]),
          num(r["metrics"]["script_calls"] / r["params"]["window_s"]),
          ", ".join(f"{k} {v}" for k, v in r["metrics"]["by_command"].items())]
         for r in by(runs, "idle") if "commands_per_s" in r["metrics"]]))
    out.append("\nIdle PostgreSQL load (jobs pending far in the future, nothing"
               " due; statements from pg_stat_statements, transactions from"
               " pg_stat_database)\n")
    out.append(md_table(
        ["system", "pending", "window (s)", "statements/s", "transactions/s",
         "statements"],
        [[r["system"], num(r["params"]["pending"]), r["params"]["window_s"],
          num(r["metrics"]["statements_per_s"]),
          num(r["metrics"]["transactions_per_s"]),
          ", ".join(f"{k} {v}" for k, v in r["metrics"]["by_statement"].items())]
         for r in by(runs, "idle") if "statements_per_s" in r["metrics"]]))
    out.append("\nFootprint (pending delayed jobs, one process; baseline: a"
               " hand-written binary heap of timers in the same run, and the"
               " same heap with a hash set of live ids for cancel by id)\n")
    out.append(md_table(
        ["system", "n", "bytes/job", "baseline bytes/job",
         "cancellable baseline bytes/job", "enqueue jobs/s",
         "baseline inserts/s", "cancellable baseline inserts/s",
         "store alone (Backend::Add) jobs/s", "idle Tick() ns", "60 Hz frame mean / p99 us",
         "RSS left after drain (after malloc_trim)", "heap left"],
        [[r["system"], num(r["params"]["n"])] +
         [footprint(r["metrics"], k) for k in (
             "bytes_per_job", "baseline_bytes_per_job",
             "cancellable_baseline_bytes_per_job", "enqueue_jobs_per_s",
             "baseline_enqueue_per_s", "cancellable_baseline_enqueue_per_s",
             "store_alone_enqueue_per_s", "idle_tick_ns")] +
         [frame(r["metrics"]), rss_left(r["metrics"]),
          footprint(r["metrics"], "heap_left_share")]
         for r in by(runs, "footprint")]))
    return "\n".join(out) + "\n"


def footprint(m, key):
    """A footprint figure, or a dash where the store has none."""
    if key not in m:
        return "-"
    return f"{100 * m[key]:.0f}%" if key.endswith("_share") else num(m[key])


def frame(m):
    if "frame_mean_us" not in m:
        return "-"
    return f'{m["frame_mean_us"]:.1f} / {m["frame_p99_us"]:.1f}'


def rss_left(m):
    if "rss_left_share" not in m:
        return "-"
    return (f'{100 * m["rss_left_share"]:.0f}% '
            f'({100 * m["rss_left_after_trim_share"]:.0f}%)')


def problems(runs):
    bad = []
    for r in runs:
        m = r["metrics"]
        for key in ("duplicates", "missing", "lost"):
            if m.get(key, 0):
                bad.append(f'{r["system"]} {r["workload"]} {r["params"]}: {key}={m[key]}')
    return bad


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    runs = load(sys.argv[1])
    plot(runs, sys.argv[2])
    with open(sys.argv[3], "w") as f:
        f.write(markdown(runs))
    bad = problems(runs)
    for line in bad:
        print("WARNING: " + line, file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
