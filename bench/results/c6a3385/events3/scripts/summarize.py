import re, sys, glob, statistics, os
out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(out, '*-[0-9]*.txt'))):
    label = os.path.basename(f).rsplit('-', 1)[0]
    t = open(f).read()
    m = re.search(r'acked (\d+) \((\d+)/s\)', t)
    g = re.search(r'group 0:.*p50 ([\d.]+) ms p99 ([\d.]+) ms', t)
    c = re.search(r'server: cpu ([\d.]+) s over ([\d.]+) s', t)
    pk = re.search(r'peak ([\d.]+) MiB', t)
    gen = re.search(r'generator cpu ([\d.]+) s', t)
    audit = 'audit clean' in t
    if not (m and g and c):
        print('incomplete', f); continue
    acked = int(m.group(1))
    r = dict(rate=int(m.group(2)), p50=float(g.group(1)), p99=float(g.group(2)),
             cpu=float(c.group(1)), us=float(c.group(1)) / acked * 1e6,
             rss=float(pk.group(1)) if pk else 0, gen=float(gen.group(1)) if gen else 0, audit=audit)
    rows.setdefault(label, []).append(r)
med = {}
for label, rs in rows.items():
    med[label] = {k: statistics.median([r[k] for r in rs]) for k in ('rate', 'p50', 'p99', 'cpu', 'us', 'rss', 'gen')}
    print(f"{label}: n={len(rs)} audits {'clean' if all(r['audit'] for r in rs) else 'NOT CLEAN'}; medians: acked/s {med[label]['rate']:.0f}, "
          f"p50 {med[label]['p50']:.2f} ms, p99 {med[label]['p99']:.2f} ms, server cpu {med[label]['cpu']:.2f} s, "
          f"{med[label]['us']:.2f} us/event, rss peak {med[label]['rss']:.1f} MiB, generator {med[label]['gen']:.2f} s")
    print('   per run us/event: ' + ', '.join(f"{r['us']:.2f}" for r in rs) + '; p99: ' + ', '.join(f"{r['p99']:.1f}" for r in rs))
if 'base' in med and 'new' in med:
    b, n = med['base'], med['new']
    print(f"new/base: cpu per event {n['us']/b['us']:.3f}x, p50 {n['p50']/b['p50']:.2f}x, p99 {n['p99']/b['p99']:.2f}x, rss {n['rss']/max(b['rss'],1e-9):.2f}x")
# syscalls per event over the perf stat window (8 s at the run's acked rate) and threads
def sysrate(f, rate):
    d = {}
    try:
        for line in open(f):
            p = line.strip().split(',')
            if len(p) > 3 and p[0].replace('.', '').isdigit():
                d[p[2].replace('syscalls:sys_enter_', '')] = float(p[0])
    except OSError:
        return {}
    n = rate * 8
    return {k: v / n for k, v in d.items() if k != 'task-clock'} | {'task-clock-us': d.get('task-clock', 0) * 1000 / n}
for label in sorted(rows):
    per = []
    for f in sorted(glob.glob(os.path.join(out, label + '-[0-9]*.sys'))):
        idx = f.rsplit('-', 1)[1].split('.')[0]
        t = open(os.path.join(out, f'{label}-{idx}.txt')).read()
        m = re.search(r'acked \d+ \((\d+)/s\)', t)
        if m: per.append(sysrate(f, int(m.group(1))))
    if per:
        keys = per[0].keys()
        print(f"{label} per event (medians over the 8 s windows): " + ', '.join(f"{k} {statistics.median([p.get(k,0) for p in per]):.3f}" for k in keys))
    th = {}
    for f in glob.glob(os.path.join(out, label + '-[0-9]*.threads')):
        for line in open(f):
            k, v = line.split()
            th.setdefault(k, []).append(float(v))
    if th:
        print(f"{label} thread CPU-s (medians): " + ', '.join(f"{k} {statistics.median(v):.2f}" for k, v in sorted(th.items())))
# The event path's own CPU per event (loops + the store's writer thread, without
# RocksDB's flush/compaction threads, whose merges come in bursts of varying size).
path = {}
for label in sorted(rows):
    vals = []
    for f in sorted(glob.glob(os.path.join(out, label + '-[0-9]*.threads'))):
        idx = f.rsplit('-', 1)[1].split('.')[0]
        t = open(os.path.join(out, f'{label}-{idx}.txt')).read()
        m = re.search(r'acked (\d+) ', t)
        if not m: continue
        th = dict((l.split()[0], float(l.split()[1])) for l in open(f) if l.strip())
        own = sum(v for k, v in th.items() if not k.startswith('rocksdb'))
        rdb = sum(v for k, v in th.items() if k.startswith('rocksdb'))
        vals.append((own / int(m.group(1)) * 1e6, rdb / int(m.group(1)) * 1e6))
    if vals:
        path[label] = statistics.median(v[0] for v in vals)
        print(f"{label} path CPU per event (loops + writer): " + ', '.join(f"{v[0]:.2f}" for v in vals) +
              f" us, median {path[label]:.2f}; rocksdb threads: " + ', '.join(f"{v[1]:.2f}" for v in vals) + " us")
if 'base' in path and 'new' in path:
    print(f"new/base path CPU per event: {path['new']/path['base']:.3f}x")
