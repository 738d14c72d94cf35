#!/usr/bin/env python3
"""Medians of bench/pairs.sh's lines: per shape and build, deliveries per server
CPU-s (and its ratio to the first build's median), p99 and server CPU of each run.

usage: bench/pairs_summary.py OUT/pairs.txt [BASE_NAME]"""
import collections
import re
import statistics
import sys

ROW = re.compile(r'(\S+) (\S+) round (\d+) load (\S+) ::\s+parley\s+(\d+)\s+(\S+)\s+(\d+)\s+\S+\s+(\S+)')
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    m = ROW.match(line)
    if m:
        runs[m[1]][m[2]].append((int(m[7]), float(m[8]), float(m[6]), float(m[4])))
for shape, sides in runs.items():
    base_name = sys.argv[2] if len(sys.argv) > 2 else next(iter(sides))
    base = statistics.median(r[0] for r in sides[base_name]) if sides.get(base_name) else None
    for side, rs in sides.items():
        med = statistics.median(r[0] for r in rs)
        ratio = f'{med / base:.3f}' if base else '-'
        print(f'{shape:12} {side:6} deliveries/CPU-s {[r[0] for r in rs]} median {med:.0f} '
              f'ratio {ratio}  p99 ms {[r[1] for r in rs]}  server CPU s {[r[2] for r in rs]}  '
              f'load {[r[3] for r in rs]}')
