#!/usr/bin/env bash
# Runs the SDK's tests (node's test runner) against the real server binary.
# ctest runs it (tests/CMakeLists.txt): exit 77 (skipped) only when node is
# missing. Missing npm packages (a fresh checkout or worktree) are installed
# from the committed lock file by scripts/setup_node.sh; if that fails, so
# does the test.
#   PARLEY_BIN=build/src/server/parley sdk/js/test/run.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "js_sdk_test: node is not installed (scripts/setup.sh installs it): skipped"
  exit 77
fi
if [[ ! -f "$here/../node_modules/ws/package.json" || ! -f "$here/../node_modules/@msgpack/msgpack/package.json" ]]; then
  echo "js_sdk_test: sdk/js/node_modules is missing: running scripts/setup_node.sh"
  bash "$here/../../../scripts/setup_node.sh" || {
    echo "js_sdk_test: scripts/setup_node.sh failed; the SDK's tests need its packages" >&2
    exit 1
  }
fi
# The tests run in this folder: a relative PARLEY_BIN is the caller's.
[[ -z "${PARLEY_BIN:-}" || "$PARLEY_BIN" == /* ]] || export PARLEY_BIN="$PWD/$PARLEY_BIN"
cd "$here"
status=0
# One file at a time: each starts its own servers, and the machine is small.
for f in *.test.mjs; do
  node --test "$f" || status=1
done
exit $status
