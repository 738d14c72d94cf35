// Micro-benchmarks of Store::append: the embedded store with group commit at several
// depths of appends in flight (the hub keeps many in flight under load), and the
// memory store, and the valkey store against a running redis-server named by
// PARLEY_VALKEY=ip:port (skipped without it). Not run by the tests: ./store_bench
#include <atomic>
#include <cstdlib>
#include <semaphore>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "common/clock.h"
#include "store/store.h"
#include "store/store_test_util.h"
#include "store/valkey/valkey_store.h"

namespace parley::store {
namespace {

constexpr int kChannels = 64;
constexpr int kMaxInFlight = 4096;

// A chat-sized message: ~100 bytes of JSON body.
AppendRequest next_request(std::vector<uint64_t>& seqs, uint64_t i, int64_t ts) {
  int c = static_cast<int>(i % kChannels);
  uint64_t seq = ++seqs[c];
  return AppendRequest{ChannelKey{"bench", "chat:room" + std::to_string(c)},
                       StoredMessage{seq, ts, "user" + std::to_string(i % 1000),
                                     "m" + std::to_string(i),
                                     R"({"text":"hello there, this is a message of typical chat size","n":)" +
                                         std::to_string(i) + "}"},
                       1000, 120};
}

// Args: fsync (0 never, 1 always), appends in flight.
void BM_EmbeddedAppend(benchmark::State& state) {
  testing::TempDir dir;
  FsyncMode fsync = state.range(0) ? FsyncMode::kAlways : FsyncMode::kNever;
  auto opened = open_embedded_store(EmbeddedOptions{dir.sub("db"), fsync, 4096});
  if (!opened) {
    state.SkipWithError(opened.error().msg.c_str());
    return;
  }
  Store& store = **opened;
  std::counting_semaphore<kMaxInFlight> window(state.range(1));
  std::vector<uint64_t> seqs(kChannels, 0);
  const int64_t ts = wall_ms();
  uint64_t i = 0;
  for (auto _ : state) {
    window.acquire();
    store.append(next_request(seqs, i++, ts), [&window](AppendOutcome) { window.release(); });
  }
  store.flush();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmbeddedAppend)
    ->ArgNames({"fsync", "inflight"})
    ->Args({0, 1})
    ->Args({0, 64})
    ->Args({0, 1024})
    ->Args({1, 1})
    ->Args({1, 64})
    ->Args({1, 1024})
    ->UseRealTime();

// Args: appends in flight. One pipelined connection per node and loop
// (pool_size 2 on the two test loops); each channel's appends on one of them.
void BM_ValkeyAppend(benchmark::State& state) {
  const char* node = std::getenv("PARLEY_VALKEY");
  if (node == nullptr || *node == 0) {
    state.SkipWithError("set PARLEY_VALKEY=ip:port of a redis-server to run");
    return;
  }
  valkey::ValkeyOptions o;
  o.nodes = {node};
  auto opened = valkey::ValkeyStore::open(testing::test_loops(), o);
  if (!opened) {
    state.SkipWithError(opened.error().msg.c_str());
    return;
  }
  Store& store = **opened;
  std::counting_semaphore<kMaxInFlight> window(state.range(0));
  // Seqs continue from what the server holds (a rerun appends after the last).
  std::vector<uint64_t> seqs(kChannels, 0);
  for (int c = 0; c < kChannels; ++c) {
    auto rec = testing::recover_sync(store, ChannelKey{"bench", "chat:room" + std::to_string(c)}, 0);
    if (rec) seqs[c] = rec->last_seq;
  }
  const int64_t ts = wall_ms();
  uint64_t i = 0;
  std::atomic<uint64_t> failed{0};
  for (auto _ : state) {
    window.acquire();
    store.append(next_request(seqs, i++, ts), [&window, &failed](AppendOutcome o) {
      if (!o.status) failed.fetch_add(1);
      window.release();
    });
  }
  store.flush();
  if (failed.load() > 0) state.SkipWithError("appends failed");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ValkeyAppend)->ArgNames({"inflight"})->Arg(1)->Arg(64)->Arg(1024)->UseRealTime();

void BM_MemoryAppend(benchmark::State& state) {
  auto store = make_memory_store();
  std::vector<uint64_t> seqs(kChannels, 0);
  const int64_t ts = wall_ms();
  uint64_t i = 0;
  for (auto _ : state) {
    store->append(next_request(seqs, i++, ts), [](AppendOutcome) {});
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemoryAppend)->UseRealTime();

}  // namespace
}  // namespace parley::store

BENCHMARK_MAIN();
