#!/usr/bin/env bash
# Installs what building and testing Parley needs on Debian 12. Idempotent:
# packages already present are left alone, and apt-get runs only when
# something is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-system-dev libsimdjson-dev librocksdb-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev libssl-dev
  openssl                       # tests/integration/tls_test makes its certificate with the CLI
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev      # libFuzzer + sanitizers for tests/fuzz
  ccache
  python3 python3-yaml          # tests/prometheus
  prometheus                    # tests/prometheus: a real Prometheus and promtool
  chromium                      # tests/admin: the admin page in headless Chromium
  libhiredis-dev                # the valkey store's RESP reader (src/store/valkey)
  redis-server                  # the valkey store's tests: standalone and a 3-master cluster
  postgresql                    # the WAL persister's tests (issue 10)
  libpq-dev                     # the persister and the history fallback talk to PostgreSQL (src/persist, src/store/postgres)
  liburing-dev                  # bench/floor's --io-uring mode (issue 9: sends of one iteration batched)
  curl iproute2                 # bench/record.sh --quick (ctest record_quick): healthz polls, ss for free redis ports
  libfuse3-dev fuse3            # tests/powerloss: a FUSE file system that drops unsynced writes (issue 26)
  mono-devel nunit-console libnunit-cil-dev  # the C# SDK (sdk/csharp): mcs, Mono, NUnit 2.6
  nlohmann-json3-dev            # sdk/cpp: the C++ client SDK's JSON value and codec
  libmsgpack-cxx-dev            # msgpack-c (C++): the protocol's MessagePack encoding (issue 25)
)
# Node.js runs the independent-client test (tests/node); a machine may already
# have a newer Node from elsewhere, which is fine.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: system packages already installed"
fi

here="$(cd "$(dirname "$0")" && pwd)"
[[ -x "$here/setup_node.sh" ]] && "$here/setup_node.sh"
exit 0
