#!/usr/bin/env bash
# scripts/check_layers.sh fails on each way the layout can stop telling the
# truth, and passes on the tree: each case plants one defect in a scratch copy
# of the sources and CMakeLists.txt files (no build; a few seconds in all).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="$(mktemp -d /tmp/parley-layers-test-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
fail=0

# What the check reads, copied once; each case plants into a hard-linked copy
# of it (sed -i and the check's own writes replace files, never edit a linked one).
mkdir -p "$scratch/base/scripts" "$scratch/base/tests"
cp -r "$root/src" "$scratch/base/src"
cp "$root/scripts/check_layers.sh" "$scratch/base/scripts/"
(cd "$root/tests" && find . -name CMakeLists.txt -exec cp --parents {} "$scratch/base/tests/" \;)
cp -r "$root/tests/support" "$scratch/base/tests/support"
fresh() {
  rm -rf "$scratch/tree"
  cp -al "$scratch/base" "$scratch/tree"
}
# what, the message the check must print; the tree was planted before.
expect_fail() {
  if bash "$scratch/tree/scripts/check_layers.sh" >"$scratch/out" 2>&1; then
    echo "FAILED: $1: the check passed"; fail=1
  elif ! grep -qF -- "$2" "$scratch/out"; then
    echo "FAILED: $1: the check failed without saying: $2"; cat "$scratch/out"; fail=1
  else
    echo "ok: $1"
  fi
}
plant_include() {  # file (under src/), the include line, planted as its line 1
  sed -i "1i $2" "$scratch/tree/src/$1"
}

fresh
if bash "$scratch/tree/scripts/check_layers.sh" >"$scratch/out" 2>&1; then
  echo "ok: the tree passes"
else
  echo "FAILED: the tree does not pass"; cat "$scratch/out"; fail=1
fi

fresh
plant_include hub/hub.cc '#include "session/gateway.h"'
expect_fail "an upward include" "src/hub/hub.cc:1 includes session/, above hub/ in the layer order"

fresh
plant_include persist/persister.cc '#include "net/connection.h"'
expect_fail "a lower folder the target does not link" \
  "src/persist/persister.cc:1 includes net/, but parley_persist (src/persist/CMakeLists.txt) does not link parley_net"

fresh
plant_include events/order_board.h '#include "hub/channel.h"'
expect_fail "a header of a target that does not link the folder" \
  "src/events/order_board.h:1 includes hub/, but parley_events (src/events/CMakeLists.txt) does not link parley_hub"

fresh
# A PRIVATE link is the linking target's own, not passed on: tenant links auth,
# which links protocol privately.
plant_include tenant/tenant_registry.cc '#include "protocol/encoder.h"'
expect_fail "an include through a dependency's PRIVATE link" \
  "src/tenant/tenant_registry.cc:1 includes protocol/, but parley_tenant (src/tenant/CMakeLists.txt) does not link parley_protocol"

fresh
sed -i 's/^target_link_libraries(parley_net PUBLIC parley_runtime/target_link_libraries(parley_net PUBLIC parley_hub parley_runtime/' \
  "$scratch/tree/src/net/CMakeLists.txt"
expect_fail "a library linking one above it" "parley_net links parley_hub, of hub/ above net/"

fresh
plant_include hub/shard.cc '#include "support/client.h"'
expect_fail "tests/support outside a unit test" "src/hub/shard.cc:1 includes support/, which only a *_test.cc may use"

fresh
printf '#include "hub/hub.h"\n' >"$scratch/tree/src/hub/orphan.cc"
expect_fail "a source no target builds" "src/hub/orphan.cc is built by no target of src/hub/CMakeLists.txt"

fresh
plant_include hub/shard.cc '#include "cluster/valkey_broker.h"'
expect_fail "a cluster implementation named outside cluster/ and server/" \
  "src/hub/shard.cc:1 includes cluster/valkey_broker.h: only cluster/ and server/ name a cluster implementation"

fresh
sed -i '1i const char* kSub = "SSUBSCRIBE";' "$scratch/tree/src/store/valkey/valkey_store.cc"
expect_fail "a feed subscription outside cluster/" \
  "src/store/valkey/valkey_store.cc:1 subscribes to a feed channel (SSUBSCRIBE): only cluster/ does"

fresh
mkdir "$scratch/tree/src/extra"
expect_fail "a folder outside the layer list" "src/extra is not in the layer list"

exit $fail
