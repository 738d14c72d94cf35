#!/usr/bin/env python3
"""bench/persister_run.sh's figures.

  persister_summary.py load CSV FROM TO FIGURES
      The load phase of one run (samples with FROM <= t_s <= TO): prints the
      summary's "persister during the load" line and appends the figures
      (key=value) to FIGURES.
  persister_summary.py table OUT RUN...
      One markdown row per run from OUT/RUN.figures.

The CSV is the sampler's: one line a second of the persister's /metrics
(cumulative counters) and the CPU seconds used so far by the persister,
dynalite and PostgreSQL (empty for a sink the run does not have).
"""
import csv
import statistics
import sys


def num(v):
    return float(v) if v not in (None, "") else None


def load(path, lo, hi, figures):
    with open(figures) as f:
        sinks = dict(l.rstrip("\n").partition("=")[::2] for l in f).get("sinks", "")
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            t = num(r["t_s"])
            if t is not None and lo <= t <= hi and r["lag_entries"] != "":
                rows.append({k: num(v) for k, v in r.items()})
    if len(rows) < 2:
        print("no samples")
        return
    first, last = rows[0], rows[-1]
    span = last["t_s"] - first["t_s"]

    def rate(key):
        vals = [r.get(key) for r in rows]
        # Absent, or restarted from 0 (PostgreSQL in the pg-restart run: the
        # stopped instance's CPU is gone), so no rate over the window.
        if None in vals or any(b < a for a, b in zip(vals, vals[1:])):
            return None
        return (vals[-1] - vals[0]) / span

    le = [r["lag_entries"] for r in rows]
    ls = [r["lag_seconds"] for r in rows]
    fig = {
        "lag_entries_median": statistics.median(le), "lag_entries_max": max(le),
        "lag_seconds_median": statistics.median(ls), "lag_seconds_max": max(ls),
        "rows_per_s": rate("rows_written") if "postgres" in sinks else None,
        "items_per_s": rate("items_written") if "dynamodb" in sinks else None,
        # Where the backlog went during the load: + grows, - shrinks.
        "lag_growth_per_s": (last["lag_entries"] - first["lag_entries"]) / span,
        "cpu_persister_pct": rate("cpu_persister"), "cpu_dynalite_pct": rate("cpu_dynalite"),
        "cpu_postgres_pct": rate("cpu_postgres"), "samples": len(rows),
    }
    for k in ("cpu_persister_pct", "cpu_dynalite_pct", "cpu_postgres_pct"):
        if fig[k] is not None:
            fig[k] *= 100
    line = (f"lag entries median {fig['lag_entries_median']:g} max {fig['lag_entries_max']:g}; "
            f"lag seconds median {fig['lag_seconds_median']:.3f} max {fig['lag_seconds_max']:.3f}; ")
    if fig["rows_per_s"] is not None:
        line += f"rows written {fig['rows_per_s']:.0f}/s; "
    if fig["items_per_s"] is not None:
        line += f"items written {fig['items_per_s']:.0f}/s; "
    line += f"lag growing {fig['lag_growth_per_s']:+.0f} entries/s; CPU %:"
    for k, name in (("cpu_persister_pct", "persister"), ("cpu_dynalite_pct", "dynalite"),
                    ("cpu_postgres_pct", "postgres")):
        if fig[k] is not None:
            line += f" {name} {fig[k]:.0f}"
    print(line + f"; over {len(rows)} samples")
    with open(figures, "a") as f:
        for k, v in fig.items():
            f.write(f"{k}={'' if v is None else round(v, 3)}\n")


def table(out, runs):
    cols = [("run", "run"), ("sinks", "sinks"), ("acked msg/s", "acked_per_s"),
            ("PG rows/s", "rows_per_s"), ("items/s", "items_per_s"),
            ("lag entries med / max", ("lag_entries_median", "lag_entries_max")),
            ("lag s med / max", ("lag_seconds_median", "lag_seconds_max")),
            ("lag growth /s", "lag_growth_per_s"), ("drain s", "drain_s"),
            ("retries / throttles / unprocessed", ("dynamo_retries", "dynamo_throttles", "dynamo_unprocessed")),
            ("CPU % persister", "cpu_persister_pct"), ("CPU % dynalite", "cpu_dynalite_pct"),
            ("CPU % postgres", "cpu_postgres_pct"),
            ("CPU s persister / dynalite / postgres", ("cpu_persister_s", "cpu_dynalite_s", "cpu_postgres_s")),
            ("exactly once", "exactly_once")]
    print("| " + " | ".join(c[0] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for run in runs:
        fig = {}
        try:
            with open(f"{out}/{run}.figures") as f:
                for line in f:
                    k, _, v = line.rstrip("\n").partition("=")
                    fig[k] = v
        except OSError:
            continue

        def show(key):
            v = fig.get(key, "")
            if v == "":
                return "—"
            try:
                x = float(v)
            except ValueError:
                return v
            return f"{x:.3f}" if key.startswith("lag_seconds") else f"{x:,.0f}" if abs(x) >= 10 or x == int(x) else f"{x:.1f}"

        cells = []
        for _, key in cols:
            cells.append(" / ".join(show(k) for k in key) if isinstance(key, tuple) else show(key))
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if sys.argv[1] == "load":
        load(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    elif sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
