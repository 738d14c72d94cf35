#!/usr/bin/env bash
# Installs the Node.js packages of tests/node (the independent `ws` client
# test), sdk/js (the JavaScript SDK's @msgpack/msgpack and test dependencies) and tests/admin
# (playwright-core, driving Debian's chromium) and tests/dynamodb (dynalite and
# @aws-sdk/client-dynamodb for the persister's DynamoDB tests) exactly as their
# package-lock.json files pin them. Idempotent: does nothing for a folder whose
# node_modules already matches its lock file. Needs node and npm
# (scripts/setup.sh installs them).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v npm >/dev/null 2>&1; then
  echo "setup_node: npm not found; install nodejs and npm first (scripts/setup.sh)" >&2
  exit 1
fi

for rel in tests/node sdk/js tests/admin tests/dynamodb; do
  dir="$root/$rel"
  # After a successful `npm ci` the lock file is copied into node_modules; while
  # the copy equals the committed lock, the installed tree is current.
  stamp="$dir/node_modules/.parley-lock"
  if [[ -f "$stamp" ]] && cmp -s "$stamp" "$dir/package-lock.json"; then
    echo "setup_node: $rel/node_modules is up to date"
    continue
  fi
  echo "setup_node: npm ci in $rel"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  cp "$dir/package-lock.json" "$stamp"
done
