// Helpers shared by the tests of the valkey store and of the cluster over it
// (test code only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "store/store_test_util.h"
#include "store/valkey/valkey_store.h"

namespace parley::store::valkey::testing {

// A store on `nodes` (seeds with `cluster`), on the test loops; null if it
// does not open.
inline std::unique_ptr<ValkeyStore> open_on(const std::vector<std::string>& nodes, bool cluster = false,
                                            uint32_t timeout_ms = 2000) {
  ValkeyOptions o;
  o.nodes = nodes;
  o.cluster = cluster;
  o.command_timeout_ms = timeout_ms;
  auto r = ValkeyStore::open(store::testing::test_loops(), o);
  return r ? std::move(*r) : nullptr;
}

}  // namespace parley::store::valkey::testing
