#!/usr/bin/env bash
# after_publish.sh LABEL BIN: idle RSS of a fresh demo-tenant server (embedded store),
# then after one HTTP publish (the README's curl) and 10 s of idle.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
label=$1; bin=$2
pid=$("$here/start_idle.sh" "$bin" "/tmp/rss-pub-$label" 7975)
a=$(awk '/^VmRSS/{print $2}' /proc/$pid/status)
curl -s -H 'Authorization: Bearer demo-api-key' -d '{"ch":"chat:lobby","body":{"text":"hi"}}' http://127.0.0.1:7975/v1/publish > /dev/null
sleep 10
b=$(awk '/^VmRSS/{print $2}' /proc/$pid/status)
echo "$label idle $a KiB, 10 s after one publish $b KiB"
kill -TERM $pid; while kill -0 $pid 2>/dev/null; do sleep 0.05; done
