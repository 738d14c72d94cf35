#!/usr/bin/env python3
"""bench/hooks.sh's figures: per rate, the median over rounds of each side (Parley
without the hook, with the `pub` hook) and the ratio, from compare's JSON reports,
plus the hook's outcome counts. Exit 1 unless every run passed, every acked pub of
the hooked side was asked once and allowed (no denial, timeout, failure or
backpressure), the app server saw exactly those requests and refused none.

usage: bench/hooks_summary.py OUT   (OUT/hooks.txt and OUT/chat-RATE.rN-TARGET.json)"""
import collections
import json
import os
import re
import statistics
import sys

out = sys.argv[1]
LINE = re.compile(r'(chat-(\d+)\.r(\d+)) targets (\S+) load (.+?) exit (\d+) app_before (\{.*?\}) app_after (\{.*\})')
runs = collections.defaultdict(lambda: collections.defaultdict(list))  # rate -> side -> [figures]
loads = collections.defaultdict(list)
problems = []
for line in open(os.path.join(out, 'hooks.txt')):
    m = LINE.match(line.strip())
    if not m:
        continue
    name, rate, rnd, _targets, load, code = m[1], int(m[2]), int(m[3]), m[4], m[5], int(m[6])
    before, after = json.loads(m[7]), json.loads(m[8])
    loads[rate].append(load.split()[0])
    if code != 0:
        problems.append(f'{name}: compare exited {code} (see {name}.txt)')
    for side in ('parley', 'parley-hook'):
        path = os.path.join(out, f'{name}-{side}.json')
        if not os.path.exists(path):
            problems.append(f'{name}: no report {os.path.basename(path)}')
            continue
        j = json.load(open(path))
        f = j['figures']
        msgs = f['msgs_per_s'] * f['load_seconds']
        row = {
            'round': rnd,
            'msgs_per_s': f['msgs_per_s'],
            'ack_p50': j['latency_ms']['ack']['p50'],
            'ack_p99': j['latency_ms']['ack']['p99'],
            'srv_us_msg': f['server_cpu_s'] * 1e6 / msgs if msgs else float('nan'),
            'deliv_cpu': f['deliveries_per_server_cpu_s'],
            'acked': j['counters']['acked'],
        }
        h = j.get('hook')
        if side == 'parley-hook':
            if not h:
                problems.append(f'{name}: the hooked run has no hook figures')
                continue
            if h['problem']:
                problems.append(f'{name}: hook not clean: {h["problem"]}')
            seen = after['requests'] - before['requests']
            if seen != h['requests']:
                problems.append(f'{name}: the app server saw {seen} requests, the server sent {h["requests"]}')
            if after['refused'] != before['refused']:
                problems.append(f'{name}: the app server refused {after["refused"] - before["refused"]} requests')
            row['hook'] = h
            # The /stats request after the run is a connection of its own.
            row['conns'] = after['connections'] - before['connections'] - 1
            row['app_us_msg'] = h['app_cpu_s'] * 1e6 / h['requests'] if h['requests'] and h['app_cpu_s'] >= 0 else float('nan')
        elif h:
            problems.append(f'{name}: the run without the hook has hook figures')
        runs[rate][side].append(row)


def med(rows, key):
    vals = [r[key] for r in rows]
    return statistics.median(vals) if vals else float('nan'), vals


def fmt(v, digits):
    return f'{v:,.{digits}f}'


for rate in sorted(runs):
    plain, hooked = runs[rate]['parley'], runs[rate]['parley-hook']
    print(f'\nchat at {rate:,} msg/s (chat-6k shape: 10,000 connections, channels of 20, durable), '
          f'{len(plain)}+{len(hooked)} runs; load average at each start {" ".join(loads[rate])}')
    print(f'  {"median [per round]":<26} {"without hook":<34} {"with pub hook":<34} with/without')
    for key, label, digits in (('msgs_per_s', 'msgs acked/s', 0), ('ack_p50', 'ack p50 ms', 2),
                               ('ack_p99', 'ack p99 ms', 2), ('srv_us_msg', 'server CPU us/msg', 1),
                               ('deliv_cpu', 'deliveries/server CPU-s', 0)):
        a, av = med(plain, key)
        b, bv = med(hooked, key)
        ratio = f'{b / a:.3f}' if a else '-'
        left = f'{fmt(a, digits)} [{" ".join(fmt(v, digits) for v in av)}]'
        right = f'{fmt(b, digits)} [{" ".join(fmt(v, digits) for v in bv)}]'
        print(f'  {label:<26} {left:<34} {right:<34} {ratio}')
    b, bv = med(hooked, 'app_us_msg')
    print(f'  {"app server CPU us/msg":<26} {"-":<34} {fmt(b, 1) + " [" + " ".join(fmt(v, 1) for v in bv) + "]":<34}')
    hs = [r['hook'] for r in hooked]
    lat = statistics.median(h['mean_latency_us'] for h in hs) if hs else float('nan')
    print(f'  {"hook round trip mean us":<26} {"-":<34} {fmt(lat, 0):<34} (server side: from the op\'s turn to the answer)')
    tot = {k: sum(h[k] for h in hs) for k in ('requests', 'allowed', 'modified', 'denied', 'timeouts',
                                              'failures', 'backpressure')}
    acked = sum(r['acked'] for r in hooked)
    print('  hook outcomes, all rounds: ' + ', '.join(f'{k} {int(v):,}' for k, v in tot.items()) +
          f'; acked pubs {acked:,}')
    print(f'  connections the server opened to the app server, per run: {[r["conns"] for r in hooked]}')

if not runs:
    problems.append('no runs found in hooks.txt')
if problems:
    print('\nFAIL:\n  ' + '\n  '.join(problems))
    sys.exit(1)
print('\nclean: every hooked pub allowed, no timeout, failure, backpressure or refusal')
