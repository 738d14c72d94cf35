#!/usr/bin/env bash
# scripts/test.sh cannot pass empty (issue 22): after scripts/demo.sh's
# configure (tests off), the test command's configure turns the tests on and its
# ctest runs them; and its ctest fails on a build that has no test. Both scripts
# run for real, only their configure and ctest steps, on a scratch build folder
# (two cmake configures and one test: a few seconds, nothing compiled).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="$(mktemp -d /tmp/parley-scripts-test-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
export PARLEY_BUILD_DIR="$scratch/build"
fail=0
check() {  # what, then the command that must succeed
  local what="$1"; shift
  if "$@" >"$scratch/out" 2>&1; then echo "ok: $what"; else echo "FAILED: $what"; cat "$scratch/out"; fail=1; fi
}

# A build with no tests (demo's configure): the test command's ctest fails.
check "demo configures" env PARLEY_DEMO_STEPS=configure "$root/scripts/demo.sh"
check "demo's build has no tests" grep -q '^PARLEY_TESTS:BOOL=OFF' "$PARLEY_BUILD_DIR/CMakeCache.txt"
if PARLEY_TEST_STEPS=ctest "$root/scripts/test.sh" >"$scratch/out" 2>&1; then
  echo "FAILED: the test command passed with no tests:"; cat "$scratch/out"; fail=1
else
  echo "ok: the test command fails when there is no test"
fi

# Then the test command's own configure: the tests are back and its ctest runs them.
check "the test command configures" env PARLEY_TEST_STEPS=configure "$root/scripts/test.sh"
check "its build has the tests" grep -q '^PARLEY_TESTS:BOOL=ON' "$PARLEY_BUILD_DIR/CMakeCache.txt"
# One test that needs no compiled binary (the layering check, a script).
check "its ctest runs a test" env PARLEY_TEST_STEPS=ctest "$root/scripts/test.sh" -R '^layering$'
grep -q '100% tests passed, 0 tests failed out of 1' "$scratch/out" || { echo "FAILED: no test ran"; cat "$scratch/out"; fail=1; }
listed=$(ctest --test-dir "$PARLEY_BUILD_DIR" -N | sed -n 's/^Total Tests: //p')
if [[ "${listed:-0}" -ge 50 ]]; then echo "ok: $listed tests registered"; else echo "FAILED: ${listed:-0} tests registered"; fail=1; fi
exit $fail
