#!/usr/bin/env python3
# callers.py CALLGRIND_FILE FUNC_PREFIX N: who calls FUNC and how often per message (per Shard::publish call)
import re, sys
path, target, per = sys.argv[1], sys.argv[2], None
names = {}; cur_fn = None; cur_cfn = None; pending = None
by_caller = {}; pubs = 0
for line in open(path, errors='replace'):
    line = line.rstrip('\n')
    m = re.match(r'^(c?fn)=\((\d+)\)(?: (.*))?$', line)
    if m:
        kind, id_, name = m.groups()
        if name: names[id_] = name
        if kind == 'fn': cur_fn = id_
        else: cur_cfn = id_
        continue
    m = re.match(r'^calls=(\d+)', line)
    if m: pending = int(m.group(1)); continue
    if pending is not None:
        n = names.get(cur_cfn, '')
        if n.startswith(target):
            by_caller[cur_fn] = by_caller.get(cur_fn, 0) + pending
        if n.startswith('parley::hub::Shard::publish('): pubs += pending
        pending = None
for fn, c in sorted(by_caller.items(), key=lambda x: -x[1])[:int(sys.argv[3])]:
    print(f'{c / max(pubs,1):6.2f}  {names.get(fn, fn)[:150]}')
