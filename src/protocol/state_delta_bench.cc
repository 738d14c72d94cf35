// State deltas (PROTOCOL.md "State deltas"): the two ways a server can hold
// bases, measured on world-6k's tick (issue 25): 100 avatars per world, 10 Hz
// states, tick 20 ms, so a world's drain holds ~20 states for 99 receivers.
// - SharedPerTick: one base per stream (the body its last drain sent); each
//   state's delta is written once and every receiver that got the base takes
//   the same bytes (what the tick batcher does).
// - PerReceiver: a base per (receiver, stream); each state's delta is written
//   for each receiver against the body that receiver got last.
// For a receiver that got every drain both send the same bytes; per-receiver
// bases differ only for receivers that missed the previous body (a join, an
// interest-area move), where they send a delta instead of the full body.
// Not run by the tests: see docs/architecture.md ("State deltas").
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "protocol/state_delta.h"

namespace parley::protocol {
namespace {

constexpr int kStatesPerTick = 20;
constexpr int kReceivers = 99;

// parley-bench's world body: the sender's clock, a moving x, a fixed y, plus
// the few fields a game adds (a heading, an animation, hit points).
std::string body(int sender, int tick) {
  return "{\"t\":" + std::to_string(1764460800123000000LL + tick * 20000000LL + sender) +
         ",\"x\":" + std::to_string((tick + sender) % 1000) + ",\"y\":" + std::to_string(sender % 1000) +
         ",\"rot\":" + std::to_string((tick * 7) % 360) + ",\"anim\":\"walk\",\"hp\":100}";
}

struct Base {
  std::string text;
  BodyFields fields;
};

void SharedPerTick(benchmark::State& state) {
  std::vector<Base> bases(kStatesPerTick);
  for (int s = 0; s < kStatesPerTick; ++s) {
    bases[s].text = body(s, 0);
    parse_body_fields(bases[s].text, bases[s].fields);
  }
  std::string out;
  BodyFields next_fields;
  int tick = 1;
  size_t bytes = 0;
  for (auto _ : state) {
    out.clear();
    for (int s = 0; s < kStatesPerTick; ++s) {
      std::string next = body(s, tick);
      parse_body_fields(next, next_fields);
      append_state_delta(out, bases[s].text, bases[s].fields, next, next_fields);
      bases[s].text = std::move(next);
      std::swap(bases[s].fields, next_fields);
    }
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
    ++tick;
  }
  state.counters["delta_bytes_per_state"] = double(bytes) / kStatesPerTick;
  state.counters["full_bytes_per_state"] = double(body(1, 1).size());
  state.SetItemsProcessed(state.iterations() * kStatesPerTick * kReceivers);  // deliveries
}
BENCHMARK(SharedPerTick);

void PerReceiver(benchmark::State& state) {
  std::vector<Base> bases(kStatesPerTick * kReceivers);
  for (int r = 0; r < kReceivers; ++r) {
    for (int s = 0; s < kStatesPerTick; ++s) {
      Base& b = bases[r * kStatesPerTick + s];
      b.text = body(s, 0);
      parse_body_fields(b.text, b.fields);
    }
  }
  std::string out;
  std::vector<std::string> next(kStatesPerTick);
  std::vector<BodyFields> next_fields(kStatesPerTick);
  int tick = 1;
  for (auto _ : state) {
    for (int s = 0; s < kStatesPerTick; ++s) {
      next[s] = body(s, tick);
      parse_body_fields(next[s], next_fields[s]);
    }
    for (int r = 0; r < kReceivers; ++r) {
      out.clear();  // each receiver's frame of its own
      for (int s = 0; s < kStatesPerTick; ++s) {
        Base& b = bases[r * kStatesPerTick + s];
        append_state_delta(out, b.text, b.fields, next[s], next_fields[s]);
        b.text = next[s];
        b.fields = next_fields[s];
      }
      benchmark::DoNotOptimize(out.data());
    }
    ++tick;
  }
  state.SetItemsProcessed(state.iterations() * kStatesPerTick * kReceivers);
}
BENCHMARK(PerReceiver);

}  // namespace
}  // namespace parley::protocol

BENCHMARK_MAIN();
