#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running demo server:
# installs what is needed, builds `parley`, and serves on 127.0.0.1:7700 with
# the embedded store in ./data and a demo tenant. Ctrl-C drains and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARLEY_TESTS=OFF -DPARLEY_BENCH=OFF >/dev/null
cmake --build build --target parley -j "$(nproc)"
exec build/src/server/parley serve
