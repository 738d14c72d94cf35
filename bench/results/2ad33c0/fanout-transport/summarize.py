#!/usr/bin/env python3
# Medians per (mode, follow) of runs.txt (bench/fanout_transport.sh's output).
# usage: python3 summarize.py runs.txt
import collections, re, statistics, sys

text = open(sys.argv[1]).read()
runs = collections.defaultdict(list)
for block in text.split('\n== ')[1:]:
    m = re.match(r'round (\d+) mode (\w+) follow (\d+)', block)
    mode, follow = m.group(2), int(m.group(3))
    w = dict(re.findall(r'(\w+)=([0-9.]+)', re.search(r'role=write.*', block).group(0)))
    r = re.search(r'role=read.*', block)
    r = dict(re.findall(r'(\w+)[=~]([0-9.]+)', r.group(0))) if r else {}
    red = dict(re.findall(r'(redis_cpu_\w+)=([0-9.]+)', block))
    cs = {k: (int(c), int(u)) for k, c, u in re.findall(r'(\w+) calls=(\d+) usec=(\d+)', block)}
    sent = float(w['sent'])
    script_us = sum(u for k, (c, u) in cs.items() if k in ('evalsha',)) / sent
    cmd_us = sum(u for (c, u) in cs.values()) / sent
    xread = cs.get('xread', (0, 0))
    runs[(mode, follow)].append(dict(
        ack50=float(w['ack_p50_ms']), ack99=float(w['ack_p99_ms']),
        redis_us=float(red['redis_cpu_us_per_msg']), script_us=script_us, cmd_us=cmd_us,
        xread_calls=xread[0], xread_us=xread[1] / sent,
        lat50=float(r.get('lat_p50_ms', 0)), lat99=float(r.get('lat_p99_ms', 0)),
        rd_us=float(r.get('cpu_us_per_msg', 0)), recv=int(float(r.get('received', 0))),
        exp=float(r.get('expected', 0)), cmds=int(float(r.get('commands', 0))), conns=int(float(r.get('conns', 0)))))

def med(v, k):
    return statistics.median(x[k] for x in v)

def spread(v, k):
    return '%.0f-%.0f' % (min(x[k] for x in v), max(x[k] for x in v))

print('%-7s %6s %4s | %13s | %15s | %9s %9s %9s %10s | %10s | %5s %6s' % (
    'mode', 'follow', 'n', 'ack p50/p99', 'reader p50/p99', 'redis us', 'script us', 'cmds us', 'xread us',
    'reader us', 'conns', 'recv%  redis us min-max  reader us min-max'))
for (mode, follow), v in sorted(runs.items(), key=lambda kv: (-kv[0][1], ['base', 'pubsub', 'tail', 'poll'].index(kv[0][0]))):
    recv = ' '.join('%.1f' % (100 * x['recv'] / x['exp']) for x in v) if v[0]['exp'] else '-'
    print('%-7s %6d %4d | %6.2f/%6.2f | %6.2f/%8.2f | %9.1f %9.1f %9.1f %10.2f | %10.2f | %5d %s' % (
        mode, follow, len(v), med(v, 'ack50'), med(v, 'ack99'), med(v, 'lat50'), med(v, 'lat99'),
        med(v, 'redis_us'), med(v, 'script_us'), med(v, 'cmd_us'), med(v, 'xread_us'), med(v, 'rd_us'),
        v[0]['conns'], recv + '  ' + spread(v, 'redis_us') + '  ' + spread(v, 'rd_us')))
