#!/usr/bin/env bash
# The Debian package end to end on this machine: build it with CPack, install
# it with dpkg, start the installed binary as the `parley` user with the
# installed configuration (a copy on port 0), check /healthz and a publish,
# stop it (SIGTERM drain), then remove and purge it and check that nothing is
# left: /usr, /etc/parley, /var/lib/parley, the user and the group.
#
# It changes the machine (dpkg, a system user), so it runs only when asked:
# PARLEY_PACKAGE_TEST=1 and root (scripts/test.sh sets it when run as root).
# Otherwise it exits 77 (ctest: skipped). It refuses to touch a machine where a
# `parley` package or user already exists.
#
# Usage: package_test.sh BUILD_DIR
set -euo pipefail

build_dir=$(cd "${1:?usage: package_test.sh BUILD_DIR}" && pwd)
if [[ "${PARLEY_PACKAGE_TEST:-0}" != 1 ]]; then
  echo "SKIP: set PARLEY_PACKAGE_TEST=1 (as root) to build, install and purge the package"
  exit 77
fi
if [[ $(id -u) -ne 0 ]]; then echo "SKIP: needs root (dpkg, a system user)"; exit 77; fi
for tool in cpack dpkg dpkg-deb curl setpriv; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool missing"; exit 77; }
done

fail() { echo "FAIL: $*" >&2; exit 1; }
if dpkg-query -W -f='${Status}' parley 2>/dev/null | grep -q "installed\|config-files"; then
  fail "a parley package is already on this machine; not touching it"
fi
getent passwd parley >/dev/null && fail "a parley user already exists; not touching it"
[[ -e /etc/parley || -e /var/lib/parley ]] && fail "/etc/parley or /var/lib/parley exists; not touching it"

tmp=$(mktemp -d /tmp/parley-pkg-XXXXXX)
server_pid=""
cleanup() {
  set +e
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid"; wait "$server_pid" 2>/dev/null
  fi
  if dpkg-query -W -f='${Status}' parley 2>/dev/null | grep -q "installed\|config-files"; then
    dpkg_locked --purge parley >/dev/null 2>&1
  fi
  # There was no parley user before this test (checked above): any left is ours.
  getent passwd parley >/dev/null && deluser --system --quiet parley >/dev/null 2>&1
  getent group parley >/dev/null && delgroup --system --quiet parley >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

# dpkg with a bounded wait for its lock (other apt/dpkg runs on the machine).
dpkg_locked() {
  local end=$((SECONDS + 120)) out
  while :; do
    if out=$(dpkg "$@" 2>&1); then echo "$out"; return 0; fi
    if grep -q "lock" <<<"$out" && ((SECONDS < end)); then sleep 1; continue; fi
    echo "$out" >&2
    return 1
  done
}

echo "== build the package"
(cd "$build_dir" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/pkg/parley_*.deb)
echo "$deb ($(du -h "$deb" | cut -f1))"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/parley ./usr/lib/systemd/system/parley.service \
         ./usr/lib/systemd/system/parley-persist.service ./usr/share/parley/parley.toml.in \
         ./usr/share/doc/parley/operations.md ./usr/share/parley/prometheus/parley_alerts.yml \
         ./usr/share/parley/grafana/parley.json; do
  grep -q " $f\$" <<<"$contents" || fail "package lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for d in adduser libssl3 libspdlog libc6; do grep -q "$d" <<<"$depends" || fail "Depends lacks $d"; done

echo "== install"
dpkg_locked -i "$deb" >/dev/null || fail "dpkg -i"
[[ -x /usr/bin/parley ]] || fail "/usr/bin/parley not installed"
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd parley) || fail "no parley user"
((uid < 1000)) || fail "parley is not a system user (uid $uid)"
[[ "$home" == /var/lib/parley && "$shell" == /usr/sbin/nologin ]] || fail "user home/shell: $home $shell"
[[ $(stat -c '%U:%G %a' /var/lib/parley) == "parley:parley 750" ]] || fail "/var/lib/parley: $(stat -c '%U:%G %a' /var/lib/parley)"
[[ $(stat -c '%U:%G %a' /etc/parley/parley.toml) == "root:parley 640" ]] || fail "config: $(stat -c '%U:%G %a' /etc/parley/parley.toml)"
grep -q "@SECRET@\|@API_KEY@" /etc/parley/parley.toml && fail "postinst left placeholders in the config"
/usr/bin/parley check-config /etc/parley/parley.toml || fail "the installed config does not check"

unit=/usr/lib/systemd/system/parley.service
for d in LimitNOFILE= NoNewPrivileges=yes ProtectSystem=strict ReadWritePaths=/var/lib/parley \
         Restart=on-failure KillSignal=SIGTERM TimeoutStopSec= User=parley; do
  grep -q "^$d" "$unit" || fail "unit lacks $d"
done
if command -v systemd-analyze >/dev/null; then
  # Works without systemd as PID 1: it loads the unit and checks its commands exist.
  # Unknown keys are only warnings there: any output fails the test.
  verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $verify"
  [[ -z "$verify" ]] || fail "systemd-analyze verify $unit: $verify"
  echo "systemd-analyze verify: ok"
fi

echo "== run the installed binary as parley"
mkdir -p "$tmp/run" && chmod 755 "$tmp" "$tmp/run"
sed 's/^listen = .*/listen = "127.0.0.1:0"/' /etc/parley/parley.toml >"$tmp/run/parley.toml"
chown root:parley "$tmp/run/parley.toml" && chmod 640 "$tmp/run/parley.toml"
api_key=$(sed -n 's/^api_key = "\(.*\)"/\1/p' "$tmp/run/parley.toml")
cd /var/lib/parley
setpriv --reuid=parley --regid=parley --init-groups -- /usr/bin/parley serve --config "$tmp/run/parley.toml" >"$tmp/run/out.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 200); do
  port=$(sed -n 's/.*parley ready http=\([0-9]*\).*/\1/p' "$tmp/run/out.log")
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/run/out.log"; fail "parley exited at start"; }
  sleep 0.1
done
[[ -n "$port" ]] || { cat "$tmp/run/out.log"; fail "no ready line in 20 s"; }
[[ $(ps -o user= -p "$server_pid") == parley ]] || fail "not running as parley"
health=$(curl -sS -o - -w ' %{http_code}' "http://127.0.0.1:$port/healthz")
[[ "$health" == '{"status":"ok"} 200' ]] || fail "/healthz: $health"
echo "/healthz: $health"
pub=$(curl -sS -w ' %{http_code}' -H "Authorization: Bearer $api_key" \
  -d '{"ch":"chat:lobby","body":{"text":"from the package test"}}' "http://127.0.0.1:$port/v1/publish")
[[ "$pub" == *' 200' ]] || fail "publish: $pub"
echo "publish: $pub"
cd /
kill -TERM "$server_pid"
rc=0; wait "$server_pid" || rc=$?
server_pid=""
((rc == 0)) || { cat "$tmp/run/out.log"; fail "exit status $rc after SIGTERM"; }
grep -q "draining" "$tmp/run/out.log" || fail "no drain in the log"
[[ -z $(find /var/lib/parley -mindepth 1 ! -user parley) ]] || fail "files in /var/lib/parley not owned by parley"
[[ -n $(find /var/lib/parley -mindepth 1) ]] || fail "nothing written to /var/lib/parley"

echo "== remove (keeps config, data, user), then purge (removes them)"
dpkg_locked -r parley >/dev/null || fail "dpkg -r"
[[ ! -e /usr/bin/parley && ! -e "$unit" ]] || fail "remove left the binary or the unit"
[[ -f /etc/parley/parley.toml ]] || fail "remove deleted the configuration"
getent passwd parley >/dev/null || fail "remove deleted the user"
dpkg_locked --purge parley >/dev/null || fail "dpkg --purge"
dpkg-query -W parley >/dev/null 2>&1 && fail "dpkg still knows parley"
for p in /usr/bin/parley "$unit" /usr/share/parley /usr/share/doc/parley /etc/parley /var/lib/parley; do
  [[ ! -e "$p" ]] || fail "purge left $p"
done
getent passwd parley >/dev/null && fail "purge left the parley user"
getent group parley >/dev/null && fail "purge left the parley group"
echo "PASS: built, installed, served as parley, drained, removed and purged"
