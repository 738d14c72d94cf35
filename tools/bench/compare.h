// `parley-bench compare SCENARIO`: the same workload against Parley, the Node `ws`
// peer and the Bun peer, one after the other, each server started (and stopped) by
// the bench so its CPU and RSS are measured from /proc.
#pragma once

#include "options.h"

namespace bench {

int compare(const Options& o);

}  // namespace bench
