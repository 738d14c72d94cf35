#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test suite:
# installs what is needed, builds everything, runs every test (unit,
# conformance, integration over real sockets, the bounded fuzz run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
# As root (a CI machine), the package test builds, installs and purges the .deb
# (tests/package/package_test.sh); PARLEY_PACKAGE_TEST=0 skips it.
[[ $(id -u) -eq 0 ]] && export PARLEY_PACKAGE_TEST="${PARLEY_PACKAGE_TEST:-1}"
# Integration tests start real servers; two at a time keeps a 2-core machine honest.
ctest --output-on-failure --timeout 600 -j 2 "$@"
