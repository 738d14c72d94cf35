// compare --ramp (issue 29): capacity, not only cost. Each target runs the ramp
// scenario on the compare's shape (the pub rate, or the state rate for a world)
// from the shape's offered load, x--step-factor every --step-s, until a step breaks
// (p99 above --max-p99-ms, a rejection, a gap, a disconnect, or the generator
// behind); the last step that held is the target's capacity on this machine.
// Thread: compare's thread.
#pragma once

#include <vector>

#include "options.h"
#include "runner.h"

namespace bench {

// Turns a compare's options into its ramp (scenario, what is raised, the bound).
void make_ramp(Options& o);
// The capacity table: the highest rate held per target, its deliveries/s, why the
// next step broke, and each as a ratio to the first target.
void print_ramp_table(const Options& base, const std::vector<const RunResult*>& results);

}  // namespace bench
