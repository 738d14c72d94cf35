#!/bin/sh
# Installs the peers parley-bench compares Parley against (Node `ws`, Bun) from the
# committed package-lock.json, and builds parley-bench. Idempotent: a second run
# with nothing changed does no network work and no rebuild.
#   bench/setup.sh            peers + parley-bench in build-bench/
#   BUILD_DIR=build bench/setup.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-bench}

command -v node >/dev/null || { echo "setup: node (>= 18) is needed for the peers"; exit 1; }

# npm ci wipes node_modules, so only run it when the lock file changed since the
# last install (npm records what it installed in node_modules/.package-lock.json).
cd "$HERE"
if [ ! -x node_modules/bun/bin/bun.exe ] || [ ! -f node_modules/.package-lock.json ] ||
   [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # bun's postinstall only links the binary its platform package (@oven/bun-*) ships.
  npm ci --no-audit --no-fund
fi
node_modules/bun/bin/bun.exe --version >/dev/null
node -e 'require("ws")' 

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DPARLEY_TESTS=OFF
fi
nice cmake --build "$BUILD_DIR" --target parley-bench parley-floor
echo "setup: peers in $HERE/node_modules, parley-bench at $BUILD_DIR/tools/bench/parley-bench"
