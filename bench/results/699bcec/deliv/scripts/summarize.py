#!/usr/bin/env python3
"""summarize.py SEQUENCE_LOG: final.sh's sequence.log as a table of deliveries per
server CPU-s, per shape and run: new, base, new/base, and the peers' ratios."""
import re, sys
cur = None; rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"== \S+ (\S+) load=(.*)", line)
    if m:
        cur = m.group(1); continue
    f = line.split()
    if cur and f and f[0] in ("parley", "bun", "floor"):
        rows.setdefault(cur, []).append((f[0], float(f[3]), float(f[5])))
shapes = ["room200", "room2000", "durable"]
out = []
runs = sorted({int(k.rsplit("-", 1)[1]) for k in rows if k != "end"})
def get(name, tgt, idx=0):
    c = [r for r in rows.get(name, []) if r[0] == tgt]
    return c[idx] if len(c) > idx else None
print("| shape | run | Parley new deliv/CPU-s | base | new/base | Bun | Parley/Bun | floor | floor/Parley | p99 new ms |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in shapes:
    for r in runs:
        n = get(f"{s}-new-{r}", "parley"); b = get(f"{s}-base-{r}", "parley")
        bun = get(f"{s}-new-{r}", "bun"); fl = get(f"{s}-new-{r}", "floor")
        if not n or not b: continue
        print(f"| {s} | {r} | {n[1]:,.0f} | {b[1]:,.0f} | {n[1]/b[1]:.2f} | {bun[1]:,.0f} | {n[1]/bun[1]:.2f} | "
              + (f"{fl[1]:,.0f} | {fl[1]/n[1]:.2f}" if fl else "— | —") + f" | {n[2]} |")
names = ["broadcast 1x", "broadcast 5x", "world 1x", "world 5x"]
for i, nm in enumerate(names):
    for r in runs:
        n = get(f"worlds-new-{r}", "parley", i); b = get(f"worlds-base-{r}", "parley", i)
        bun = get(f"worlds-new-{r}", "bun", i)
        if not n or not b: continue
        print(f"| {nm} | {r} | {n[1]:,.0f} | {b[1]:,.0f} | {n[1]/b[1]:.2f} | {bun[1]:,.0f} | {n[1]/bun[1]:.2f} | — | — | {n[2]} |")
