#!/usr/bin/env python3
"""What else the machine is doing, for the line record.sh writes beside each run:
the load average and the CPU other processes used over SECONDS (default 1), with
the busiest three. Processes of record.sh's own run (pids given with --mine, and
their children) are left out.

usage: load.py [SECONDS] [--mine PID...]
"""
import os
import sys
import time


def ticks():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        out[int(pid)] = (comm, int(rest[1]), int(rest[11]) + int(rest[12]))  # ppid, utime+stime
    return out


def main():
    args = sys.argv[1:]
    secs = float(args.pop(0)) if args and args[0] != "--mine" else 1.0
    mine = {int(p) for p in args[1:]} if args and args[0] == "--mine" else set()
    mine.add(os.getpid())
    hz = os.sysconf("SC_CLK_TCK")
    a = ticks()
    time.sleep(secs)
    b = ticks()
    # Leave out our own processes and their descendants.
    parents = {pid: v[1] for pid, v in b.items()}

    def ours(pid):
        seen = 0
        while pid > 1 and seen < 64:
            if pid in mine:
                return True
            pid = parents.get(pid, 0)
            seen += 1
        return False

    used = []
    for pid, (comm, _, t) in b.items():
        if pid in a and not ours(pid):
            d = (t - a[pid][2]) / hz / secs * 100
            if d > 0:
                used.append((d, comm))
    used.sort(reverse=True)
    total = sum(d for d, _ in used)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    top = ", ".join(f"{c} {d:.0f} %" for d, c in used[:3])
    print(f"load {load}; others' CPU {total:.0f} % of one core over {secs:g} s"
          + (f" ({top})" if top else ""))


if __name__ == "__main__":
    main()
