#!/usr/bin/env bash
# Runs the SDK conformance suite (sdk/conformance/README.md) against one SDK's
# driver, one scenario file at a time (each starts its own servers; the
# machine is small).
#   sdk/conformance/run.sh --sdk js                  # every scenario
#   sdk/conformance/run.sh --sdk js drain kill9      # the files whose names contain these
#   sdk/conformance/run.sh --driver "CMD" [--transport tcp|wss] [--encoding json|msgpack]
# PARLEY_BIN is the server binary (default build/src/server/parley). Exit 77
# (ctest: skipped) only when node is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sdk=""
driver="${SDK_DRIVER:-}"
transport="${SDK_TRANSPORT:-ws}"
encoding="${SDK_ENCODING:-json}"
filters=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sdk) sdk="$2"; shift 2 ;;
    --driver) driver="$2"; shift 2 ;;
    --transport) transport="$2"; shift 2 ;;
    --encoding) encoding="$2"; shift 2 ;;
    -h|--help) sed -n 2,10p "${BASH_SOURCE[0]}"; exit 0 ;;
    *) filters+=("$1"); shift ;;
  esac
done

if ! command -v node >/dev/null 2>&1; then
  echo "sdk_conformance: node is not installed (scripts/setup.sh installs it): skipped"
  exit 77
fi

# Each SDK's driver command (DRIVER.md). An SDK adds its line here.
case "$sdk" in
  js)
    if [[ ! -f "$root/sdk/js/node_modules/ws/package.json" || ! -f "$root/sdk/js/node_modules/@msgpack/msgpack/package.json" ]]; then
      echo "sdk_conformance: sdk/js/node_modules is missing: running scripts/setup_node.sh"
      bash "$root/scripts/setup_node.sh"
    fi
    : "${driver:=node $root/sdk/js/conformance/driver.mjs}"
    ;;
  "") ;;
  *) [[ -n "$driver" ]] || { echo "sdk_conformance: no driver known for --sdk $sdk; pass --driver" >&2; exit 2; } ;;
esac
[[ -n "$driver" ]] || { echo "usage: run.sh --sdk js | --driver CMD [scenario ...]" >&2; exit 2; }

case "$encoding" in json|msgpack) ;; *) echo "sdk_conformance: --encoding json or msgpack, not $encoding" >&2; exit 2 ;; esac
export SDK_DRIVER="$driver" SDK_TRANSPORT="$transport" SDK_ENCODING="$encoding"
PARLEY_BIN="${PARLEY_BIN:-$root/build/src/server/parley}"
export PARLEY_BIN
[[ -x "$PARLEY_BIN" ]] || { echo "sdk_conformance: no server binary at $PARLEY_BIN (build it or set PARLEY_BIN)" >&2; exit 1; }

# Run from the caller's folder, so a relative --driver or PARLEY_BIN works.
files=()
for f in $(cd "$here/scenarios" && ls *.test.mjs); do
  if [[ ${#filters[@]} -eq 0 ]]; then files+=("$f"); continue; fi
  for p in "${filters[@]}"; do [[ "$f" == *"$p"* ]] && { files+=("$f"); break; }; done
done
[[ ${#files[@]} -gt 0 ]] || { echo "sdk_conformance: no scenario matches ${filters[*]}" >&2; exit 2; }

# Every process a scenario file starts (node, its drivers, their children, the
# servers) inherits this marker; after the file, any still running is killed by
# its pid and named. Drivers run in process groups of their own (so a scenario
# can kill one driver's whole tree), which a timeout's group kill misses.
run_mark="sdk-conformance-$$-$RANDOM$RANDOM"
sweep() {
  local left=() env pid
  # grep -z: environ is NUL-separated; one grep over every process.
  for env in $(grep -lzxF "SDK_RUN_MARK=$run_mark" /proc/[0-9]*/environ 2>/dev/null); do
    pid="${env#/proc/}"; pid="${pid%/environ}"
    left+=("$pid $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)")
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ ${#left[@]} -gt 0 ]]; then
    echo "sdk_conformance: $1 left ${#left[@]} process(es) running; killed:"
    printf '  %s\n' "${left[@]}"
  fi
}
tls_dir=""
trap 'sweep "run.sh (interrupted)"; [[ -z "$tls_dir" ]] || rm -rf "$tls_dir"' EXIT

# wss: one certificate for localhost, served by every server of the run,
# handed to each driver as its CA (connect.caFile) and trusted by the
# harness's own https calls (NODE_EXTRA_CA_CERTS).
if [[ "$transport" == wss ]]; then
  tls_dir="$(mktemp -d)"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" >/dev/null 2>&1 ||
    { echo "sdk_conformance: openssl could not make the wss certificate" >&2; exit 1; }
  export SDK_TLS_CERT="$tls_dir/cert.pem" SDK_TLS_KEY="$tls_dir/key.pem" NODE_EXTRA_CA_CERTS="$tls_dir/cert.pem"
fi

# A file's scenarios each have a 30 s deadline of their own (lib/world.mjs);
# this bound is for a harness that cannot reach its own (a spinning process).
FILE_TIMEOUT_S="${SDK_FILE_TIMEOUT_S:-75}"

echo "sdk_conformance: driver \"$driver\" over $transport in $encoding, ${#files[@]} scenario file(s)"
status=0
failed=()
start=$SECONDS
for f in "${files[@]}"; do
  t0=$SECONDS
  rc=0
  SDK_RUN_MARK="$run_mark" timeout --kill-after=5 "$FILE_TIMEOUT_S" \
    node --test --test-reporter=spec "$here/scenarios/$f" || rc=$?
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "sdk_conformance: $f did not finish within ${FILE_TIMEOUT_S} s (the harness process was killed)"
  fi
  sweep "$f"
  if [[ $rc -eq 0 ]]; then
    echo "sdk_conformance: PASS $f ($((SECONDS - t0)) s)"
  else
    status=1
    failed+=("$f")
    echo "sdk_conformance: FAIL $f ($((SECONDS - t0)) s, exit $rc)"
  fi
done
echo "sdk_conformance: $(( ${#files[@]} - ${#failed[@]} ))/${#files[@]} passed in $((SECONDS - start)) s${failed:+; failed: ${failed[*]}}"
exit $status
