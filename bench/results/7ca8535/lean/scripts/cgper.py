#!/usr/bin/env python3
# cgper.py CALLGRIND_FILE [FUNC_SUBSTR]: total Ir, the calls into FUNC (default Shard::publish),
# and Ir per call; plus inclusive Ir per call of a few per-message functions.
import re, sys
path = sys.argv[1]; key = sys.argv[2] if len(sys.argv) > 2 else 'parley::hub::Shard::publish('
names = {}; calls = {}; incl = {}
total = 0
cur_cfn = None; pending_calls = None
for line in open(path, errors='replace'):
    line = line.rstrip('\n')
    m = re.match(r'^(c?fn)=\((\d+)\)(?: (.*))?$', line)
    if m:
        kind, id_, name = m.groups()
        if name: names[id_] = name
        if kind == 'cfn': cur_cfn = id_
        else: cur_cfn = None
        continue
    m = re.match(r'^calls=(\d+)', line)
    if m:
        pending_calls = int(m.group(1)); continue
    if pending_calls is not None:
        parts = line.split()
        if len(parts) >= 2 and cur_cfn:
            calls[cur_cfn] = calls.get(cur_cfn, 0) + pending_calls
            incl[cur_cfn] = incl.get(cur_cfn, 0) + int(parts[1])
        pending_calls = None
        continue
    m = re.match(r'^summary: (\d+)', line)
    if m: total = int(m.group(1))
def find(sub):
    return [i for i, n in names.items() if sub in n]
ids = find(key)
n = sum(calls.get(i, 0) for i in ids)
print(f'total Ir {total:,}  calls of {key}: {n}  Ir per call: {total / max(n,1):,.0f}')
for sub in ['operator new(unsigned long)', 'malloc', 'free', 'epoll_wait', 'parley::protocol::encode_msg', 'parley::protocol::encode_ack',
            'parley::protocol::decode_client_op', 'parley::hub::TickBatcher::drain', 'parley::store::MemoryStore::append']:
    for i in find(sub):
        if names[i].startswith(sub) or sub in names[i].split('(')[0]:
            c = calls.get(i, 0)
            if c: print(f'  {names[i][:70]:70s} calls/msg {c / max(n,1):6.2f}  Ir/msg {incl.get(i,0) / max(n,1):8,.0f}')
