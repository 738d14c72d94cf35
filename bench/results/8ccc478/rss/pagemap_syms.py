#!/usr/bin/env python3
"""Which pages of the binary's text are resident in PID, by symbol category.
usage: pagemap_syms.py PID BINARY"""
import sys, struct, bisect, subprocess, collections, re
pid, binary = sys.argv[1], sys.argv[2]
maps = []
for l in open(f'/proc/{pid}/maps'):
    f = l.split()
    if len(f) >= 6 and f[5].endswith(binary.rsplit('/',1)[1]):
        lo, hi = (int(x, 16) for x in f[0].split('-'))
        maps.append((lo, hi, f[1], int(f[2], 16)))
base = maps[0][0] - maps[0][3]   # PIE load bias (first map at offset 0)
syms = []
for l in subprocess.run(['nm', '-C', '-S', '--defined-only', binary], capture_output=True, text=True).stdout.splitlines():
    p = l.split(' ', 3)
    if len(p) == 4 and p[2] in 'tTwW':
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))
syms.sort()
addrs = [s[0] for s in syms]
def cat(n):
    for k in ('rocksdb', 'parley', 'boost', 'simdjson', 'fmt::', 'spdlog', 'std::'):
        if k in n: return k.rstrip(':')
    return 'other'
pm = open(f'/proc/{pid}/pagemap', 'rb')
res = collections.Counter(); tot = collections.Counter(); win = set(); allwin=set()
for lo, hi, perm, off in maps:
    for va in range(lo, hi, 4096):
        pm.seek(va // 4096 * 8)
        present = struct.unpack('Q', pm.read(8))[0] >> 63
        if 'x' not in perm:
            res['seg '+perm] += 4*present; tot['seg '+perm] += 4; continue
        allwin.add(va // 65536)
        if present: win.add(va // 65536)
        # attribute the page to the symbols it overlaps, by bytes
        rel = va - base
        i = bisect.bisect_right(addrs, rel) - 1
        cats = collections.Counter()
        j = max(i, 0)
        while j < len(syms) and syms[j][0] < rel + 4096:
            a, s, n = syms[j]
            ov = min(a + s, rel + 4096) - max(a, rel)
            if ov > 0: cats[cat(n)] += ov
            j += 1
        c = cats.most_common(1)[0][0] if cats else 'none'
        tot[c] += 4
        if present: res[c] += 4
print(f"{'part':14} {'resident KiB':>12} {'of KiB':>8}")
for k in sorted(tot, key=lambda k: -tot[k]):
    print(f"{k:14} {res[k]:12} {tot[k]:8}")
print(f"text 64 KiB windows touched: {len(win)} of {len(allwin)}")
