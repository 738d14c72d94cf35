#!/usr/bin/env python3
"""Instructions per call of functions in a callgrind profile.

A micro-benchmark runs a variable number of iterations, so a run's total
instruction count means little; a function's inclusive count divided by its
calls is repeatable to a fraction of a percent. See docs/benchmarks.md.

    scripts/ir_per_call.py callgrind.out 'TickBatcher::flush' 'TickBatcher::deliver'

Each pattern is a substring of the function's name; every function matching
it that has callers is printed with its calls, inclusive Ir and Ir per call.
"""
import re
import subprocess
import sys

CALLER = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+<\s+.*\(([\d,]+)x\)")
SELF = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+\*\s+(?:[^:]*:)?(.*?)(?:\s+\[[^\]]*\])?$")


def num(s):
    return int(s.replace(",", ""))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--tree=caller", "--threshold=100",
         sys.argv[1]],
        check=True, capture_output=True, text=True).stdout
    calls = 0
    for line in out.splitlines():
        m = CALLER.match(line)
        if m:
            calls += num(m.group(2))
            continue
        m = SELF.match(line)
        if m:
            name = m.group(2)
            if calls and any(p in name for p in sys.argv[2:]):
                ir = num(m.group(1))
                print(f"{ir / calls:12.1f} Ir/call {calls:10d} calls {ir:14d} Ir  {name}")
        calls = 0


if __name__ == "__main__":
    main()
