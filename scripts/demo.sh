#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running demo: installs what
# is needed, builds `parley`, and starts it with the world example's app server
# (examples/world): a page with a live world of moving avatars and a chat, all
# through Parley. Ctrl-C stops both (Parley drains).
#
#   scripts/demo.sh            # then open http://127.0.0.1:8080/
#   scripts/demo.sh --server   # only `parley serve` with the demo tenant (no page)
#
# It configures build/ without the tests (a faster build); scripts/test.sh turns
# them back on. PARLEY_BUILD_DIR (default build) and PARLEY_DEMO_STEPS (default
# "setup configure build run") let tests/scripts/scripts_test.sh run single steps.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${PARLEY_BUILD_DIR:-build}"
steps=" ${PARLEY_DEMO_STEPS:-setup configure build run} "
[[ $steps == *" setup "* ]] && scripts/setup.sh
if [[ $steps == *" configure "* ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARLEY_TESTS=OFF \
    -DPARLEY_BENCH=OFF >/dev/null
fi
[[ $steps == *" build "* ]] && cmake --build "$build_dir" --target parley -j "$(nproc)"
[[ $steps == *" run "* ]] || exit 0
if [[ "${1:-}" == "--server" ]]; then
  exec "$build_dir"/src/server/parley serve
fi
echo
echo "Starting Parley on 127.0.0.1:7700 and the world's app server on 127.0.0.1:8080."
echo "Open http://127.0.0.1:8080/ in a browser (twice, to see each other move and chat)."
echo
exec node examples/world/start.mjs --parley "$build_dir"/src/server/parley --port 8080 --parley-port 7700
