#!/usr/bin/env bash
# bench/events.sh with the server's log kept (KEEP_LOG=FILE): the option now lives
# in bench/events.sh itself; this name stays for the commands recorded here.
exec "$(cd "$(dirname "$0")/../../../.." && pwd)/events.sh" "$@"
