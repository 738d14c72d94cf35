#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test suite:
# installs what is needed, builds everything, runs every test (unit,
# conformance, integration over real sockets, the bounded fuzz run).
#
# The build is configured for the tests whatever an earlier configure cached
# (scripts/demo.sh turns them off), and a run that finds no test fails.
# PARLEY_BUILD_DIR (default build) and PARLEY_TEST_STEPS (default
# "setup configure build ctest") let tests/scripts/scripts_test.sh run single
# steps of this very script on a scratch folder.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${PARLEY_BUILD_DIR:-build}"
steps=" ${PARLEY_TEST_STEPS:-setup configure build ctest} "
[[ $steps == *" setup "* ]] && scripts/setup.sh
if [[ $steps == *" configure "* ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARLEY_TESTS=ON \
    -DPARLEY_BENCH=ON >/dev/null
fi
[[ $steps == *" build "* ]] && cmake --build "$build_dir" -j "$(nproc)"
[[ $steps == *" ctest "* ]] || exit 0
# As root (a CI machine), the package test builds, installs and purges the .deb
# (tests/package/package_test.sh); PARLEY_PACKAGE_TEST=0 skips it.
[[ $(id -u) -eq 0 ]] && export PARLEY_PACKAGE_TEST="${PARLEY_PACKAGE_TEST:-1}"
# Integration tests start real servers; two at a time keeps a 2-core machine honest.
ctest --test-dir "$build_dir" --no-tests=error --output-on-failure --timeout 600 -j 2 "$@"
