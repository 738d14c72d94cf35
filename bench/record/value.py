#!/usr/bin/env python3
"""One figure out of a report, for record.sh.

usage: value.py json FILE KEY.PATH       a number from a parley-bench JSON report
                                         (list indices allowed: steps.3.rate)
       value.py ramp FILE                the rate of a ramp's last step that held
       value.py re FILE REGEX [GROUP]    the first match of REGEX in a text report
Prints the value, or nothing (exit 1) when it is not there.
"""
import json
import re
import sys


def main():
    kind, path = sys.argv[1], sys.argv[2]
    try:
        if kind == "json":
            v = json.load(open(path))
            for k in sys.argv[3].split("."):
                v = v[int(k)] if isinstance(v, list) else v[k]
        elif kind == "ramp":
            j = json.load(open(path))
            last = j["last_good_step"]
            if last < 0:
                print(0)
                return 0
            v = j["steps"][last]["rate"]
        elif kind == "re":
            m = re.search(sys.argv[3], open(path, errors="replace").read(), re.M)
            if not m:
                return 1
            v = m.group(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
        else:
            return 2
    except (OSError, KeyError, IndexError, ValueError):
        return 1
    print(v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
