#!/usr/bin/env python3
"""Per-mapping RSS breakdown of a process from /proc/PID/smaps, grouped by backing file.
usage: smaps_table.py PID  -> prints a table: object, Rss, file-clean (shared+private clean), Private_Dirty, Anonymous (KiB)"""
import sys, re, collections
pid = sys.argv[1]
rows = collections.OrderedDict()
cur = None
hdr = re.compile(r'^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ (\d+)\s*(.*)$')
for line in open(f'/proc/{pid}/smaps'):
    m = hdr.match(line)
    if m:
        perms, inode, name = m.group(1), m.group(2), m.group(3).strip()
        if not name: name = '[anon]'
        if name.startswith('/'):
            base = name.rsplit('/', 1)[1]
        else:
            base = name
        cur = rows.setdefault(base, collections.Counter())
        cur['maps'] += 1
        continue
    k, _, v = line.partition(':')
    if cur is not None and k in ('Rss', 'Shared_Clean', 'Private_Clean', 'Private_Dirty', 'Shared_Dirty', 'Anonymous'):
        cur[k] += int(v.split()[0])
tot = collections.Counter()
print(f"{'object':32} {'Rss':>7} {'clean':>7} {'P_Dirty':>7} {'Anon':>7}  (KiB)")
for name, c in sorted(rows.items(), key=lambda kv: -kv[1]['Rss']):
    if c['Rss'] == 0: continue
    clean = c['Shared_Clean'] + c['Private_Clean']
    print(f"{name[:32]:32} {c['Rss']:7} {clean:7} {c['Private_Dirty']:7} {c['Anonymous']:7}")
    for k in c: tot[k] += c[k]
print(f"{'TOTAL':32} {tot['Rss']:7} {tot['Shared_Clean']+tot['Private_Clean']:7} {tot['Private_Dirty']:7} {tot['Anonymous']:7}")
