#!/usr/bin/env python3
"""Compares the medians of two Google Benchmark JSON outputs (before, after).

    build-micro/src/hub/tick_batcher_bench --benchmark_repetitions=10 \\
        --benchmark_report_aggregates_only=true --benchmark_out=before.json
    ... change, rebuild, same with --benchmark_out=after.json ...
    scripts/bench_compare.py before.json after.json

Prints, per benchmark, the median CPU time before and after, their ratio, and
the allocations per iteration when the benchmark counts them. See
docs/benchmarks.md.
"""
import json
import sys


def medians(path):
    with open(path) as f:
        data = json.load(f)
    out = {}
    for b in data["benchmarks"]:
        # With repetitions only the aggregates carry "median"; a single run is its own median.
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "iteration" and name in out:
            continue
        out[name] = b
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = medians(sys.argv[1]), medians(sys.argv[2])
    width = max((len(n) for n in before), default=10)
    print(f"{'benchmark':<{width}} {'before':>12} {'after':>12} {'after/before':>12}"
          f" {'allocs':>15}")
    for name, b in before.items():
        a = after.get(name)
        if not a:
            continue
        unit = b.get("time_unit", "ns")
        tb, ta = b["cpu_time"], a["cpu_time"]
        allocs = ""
        if "allocs" in b and "allocs" in a:
            allocs = f"{b['allocs']:.1f} -> {a['allocs']:.1f}"
        print(f"{name:<{width}} {tb:>9.0f} {unit} {ta:>9.0f} {unit} {ta / tb:>12.3f} {allocs:>15}")


if __name__ == "__main__":
    main()
