#!/usr/bin/env python3
# callees.py CALLGRIND_FILE FUNC_PREFIX: inclusive Ir per message of each callee of FUNC, and FUNC's self Ir
import re, sys
path, target = sys.argv[1], sys.argv[2]
names = {}; cur_fn = None; cur_cfn = None; pending = None
out = {}; selfc = 0; pubs = 0
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
    parts = line.split()
    if pending is not None:
        if names.get(cur_cfn, '').startswith('parley::hub::Shard::publish('): pubs += pending
        if names.get(cur_fn, '').startswith(target) and len(parts) >= 2:
            k = names.get(cur_cfn, cur_cfn)
            c, ir = out.get(k, (0, 0)); out[k] = (c + pending, ir + int(parts[1]))
        pending = None
        continue
    if len(parts) >= 2 and parts[0][0] in '0123456789+-*' and names.get(cur_fn, '').startswith(target):
        try: selfc += int(parts[1])
        except ValueError: pass
print(f'self Ir/msg {selfc / max(pubs,1):,.0f}')
for k, (c, ir) in sorted(out.items(), key=lambda x: -x[1][1])[:25]:
    print(f'{ir / max(pubs,1):8,.0f} Ir/msg {c / max(pubs,1):6.2f} calls/msg  {k[:120]}')
