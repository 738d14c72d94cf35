// Micro-benchmarks of Store::append: the embedded store with group commit at several
// depths of appends in flight (the hub keeps many in flight under load), and the
// memory store, and the valkey store against a running redis-server named by
// PARLEY_VALKEY=ip:port (skipped without it). Not run by the tests: ./store_bench
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
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

int64_t cpu_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Issue 9's durable chat shape, paced: one append at a time every 1/rate s over 10
// channels, ids like a client's UUIDs, so that every append is its own group commit
// and the writer sleeps between them, as in `parley-bench compare chat --rate 200`.
// Counter writer_us: CPU of every thread but this one (the store's writer, which
// also runs the completion) per append: the durable pub's store cost, without the
// event loops' noise. Args: rate (appends/s).
void BM_EmbeddedPacedAppend(benchmark::State& state) {
  testing::TempDir dir;
  auto opened = open_embedded_store(EmbeddedOptions{dir.sub("db"), FsyncMode::kNever, 4096});
  if (!opened) {
    state.SkipWithError(opened.error().msg.c_str());
    return;
  }
  Store& store = **opened;
  constexpr int kChatChannels = 10;
  std::vector<uint64_t> seqs(kChatChannels, 0);
  const auto period = std::chrono::nanoseconds(1'000'000'000 / state.range(0));
  std::binary_semaphore done(0);
  char uuid[40];
  uint64_t i = 0;
  int64_t others_ns = 0, n = 0;
  auto next = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const int c = static_cast<int>(i % kChatChannels);
    std::snprintf(uuid, sizeof uuid, "%08x-%04x-4%03x-a%03x-%012llx",
                  static_cast<unsigned>(i * 2654435761u), static_cast<unsigned>(i & 0xffff),
                  static_cast<unsigned>(i % 4096), static_cast<unsigned>((i / 7) % 4096),
                  static_cast<unsigned long long>(i * 0x9e3779b97f4aULL & 0xffffffffffffULL));
    AppendRequest req{ChannelKey{"demo", "chat:room-" + std::to_string(c)},
                      StoredMessage{++seqs[c], wall_ms(), "user-" + std::to_string(i % 200), uuid,
                                    R"({"text":"hello there, this is a message of typical chat size","n":)" +
                                        std::to_string(i) + "}"},
                      100, 120};
    ++i;
    const int64_t before = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    store.append(std::move(req), [&done](AppendOutcome) { done.release(); });
    done.acquire();
    // The writer may still be finishing its round after the release.
    next += period;
    std::this_thread::sleep_until(next);
    others_ns += cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID) - before;
    ++n;
  }
  store.flush();
  state.counters["writer_us"] = n > 0 ? double(others_ns) / 1000.0 / double(n) : 0;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmbeddedPacedAppend)->ArgNames({"rate"})->Arg(200)->Iterations(3000)->UseRealTime();

// Issue 31: a topic's partitions on the embedded store, in RocksDB or in the
// segment log (topic_log), the same appends: 16 partitions of one topic, events of
// the hunt workload's size with an id each, group-committed in emits of 50 as the
// topic's loop hands them over (append_many). Counter cpu_us: the process's CPU per
// append (the writer, RocksDB's flushes and compactions, and this thread's
// submitting), so the two engines' whole cost. Args: log (0 rocksdb, 1 segment),
// fsync (0 never, 1 always).
void BM_TopicAppend(benchmark::State& state) {
  testing::TempDir dir;
  EmbeddedOptions o{dir.sub("db"), state.range(1) ? FsyncMode::kAlways : FsyncMode::kNever, 4096};
  o.topic_log = state.range(0) ? TopicLog::kSegment : TopicLog::kRocksDb;
  o.is_partition = [](const ChannelId& id) { return id.channel.rfind("hunt\x1f", 0) == 0; };
  o.verify_bytes = 0;
  auto opened = open_embedded_store(o);
  if (!opened) {
    state.SkipWithError(opened.error().msg.c_str());
    return;
  }
  Store& store = **opened;
  constexpr int kParts = 16, kEmit = 50, kWindow = 4096;
  std::vector<ChannelKey> keys;
  for (int p = 0; p < kParts; ++p) keys.push_back(ChannelKey{"bench", "hunt\x1f" + std::to_string(p)});
  std::vector<uint64_t> offs(kParts, 0);
  std::counting_semaphore<kMaxInFlight> window(kWindow / kEmit);
  std::vector<std::pair<AppendRequest, AppendDone>> emit;
  uint64_t i = 0;
  const int64_t cpu0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (auto _ : state) {
    const int p = static_cast<int>((i * 2654435761u) % kParts);
    const int64_t ts = wall_ms();
    char id[40];
    std::snprintf(id, sizeof id, "ev-%016llx", static_cast<unsigned long long>(i * 0x9e3779b97f4aULL));
    emit.emplace_back(
        AppendRequest{keys[p],
                      StoredMessage{++offs[p], ts, "game-server", id,
                                    R"({"key":"player-)" + std::to_string(i % 5000) +
                                        R"(","type":"kill","body":{"player":"p)" + std::to_string(i % 5000) +
                                        R"(","points":10,"weapon":"bow","zone":"north-ridge"}})"},
                      1'000'000, 120},
        AppendDone{});
    ++i;
    if (emit.size() == kEmit) {
      window.acquire();
      emit.back().second = [&window](AppendOutcome) { window.release(); };
      store.append_many(std::move(emit));
      emit.clear();
    }
  }
  if (!emit.empty()) store.append_many(std::move(emit));
  store.flush();
  const int64_t cpu = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  state.counters["cpu_us"] = double(cpu) / 1000.0 / double(state.iterations());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopicAppend)
    ->ArgNames({"log", "fsync"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
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
      if (!o) failed.fetch_add(1);
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
