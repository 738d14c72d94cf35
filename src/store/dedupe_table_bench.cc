// The dedupe window's memory and speed: DedupeTable against the map it replaced
// (hub/channel.h until issue 11: unordered_map<string, entry> keyed "from\0id" plus
// a deque of (ts, key copy) for expiry, reproduced here as it was), and the
// topic partitions' DedupeIndex (fingerprint + offset, no key; issue 31).
//
// Each iteration fills one channel's window with `ids` entries (5,000 ids/s over the
// default 120 s window is 600,000) of one key style, then looks every one up. Counters: bytes_per_id is the heap in use (glibc mallinfo2, so allocator
// headers and slack included) divided by the entries; items_per_second counts inserts
// plus lookups.
#include <malloc.h>

#include <cstdio>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <benchmark/benchmark.h>

#include "store/dedupe_index.h"
#include "store/dedupe_key.h"
#include "store/dedupe_table.h"

namespace {

std::string fmt_user(int n) {
  char b[16];
  std::snprintf(b, sizeof b, "player-%05d", n);
  return b;
}

constexpr int64_t kT0 = 1'764'460'800'000;

struct OldWindow {
  struct Dedupe {
    uint64_t seq = 0;
    int64_t ts_ms = 0;
    bool pending = true;
    std::vector<std::function<void(int)>> waiters;
    std::vector<unsigned> waiter_loops;
  };
  std::unordered_map<std::string, Dedupe> dedupe;
  std::deque<std::pair<int64_t, std::string>> order;
};

// Key styles (the benchmark's second argument): 0 like parley-bench's (user
// "u<n>", a 10-digit id: 15 key bytes), 1 like a game client's (a 12-char user id,
// a UUID message id: 50 key bytes).
int g_style = 0;
std::string from_of(int i) {
  return g_style == 0 ? "u" + std::to_string(i % 1000) : fmt_user(i % 1000);
}
std::string id_of(int i) {
  if (g_style == 0) return std::to_string(4'294'967'296ull + i);
  char b[40];
  std::snprintf(b, sizeof b, "%08x-%04x-4%03x-8%03x-%012x", i, i & 0xffff, i & 0xfff, (i >> 3) & 0xfff, i * 7);
  return b;
}

// Allocated bytes in use, small chunks and mmap()ed big ones (a large slot array).
size_t heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

void BM_OldMapWindow(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  g_style = static_cast<int>(state.range(1));
  double per_id = 0;
  for (auto _ : state) {
    const size_t before = heap_in_use();
    auto* w = new OldWindow;
    for (int i = 0; i < n; ++i) {
      std::string key = from_of(i) + '\0' + id_of(i);
      w->dedupe[key] = OldWindow::Dedupe{uint64_t(i) + 1, kT0 + i / 5, false, {}, {}};
      w->order.emplace_back(kT0 + i / 5, std::move(key));
    }
    per_id = double(heap_in_use() - before) / n;
    for (int i = 0; i < n; ++i) benchmark::DoNotOptimize(w->dedupe.find(from_of(i) + '\0' + id_of(i)));
    delete w;
  }
  state.counters["bytes_per_id"] = per_id;
  state.SetItemsProcessed(state.iterations() * n * 2);
}

void BM_DedupeTable(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  g_style = static_cast<int>(state.range(1));
  double per_id = 0, reported = 0;
  for (auto _ : state) {
    const size_t before = heap_in_use();
    auto* t = new parley::store::DedupeTable(120'000);
    for (int i = 0; i < n; ++i) t->insert(parley::store::DedupeKey(from_of(i), id_of(i)), i + 1, kT0 + i / 5);
    per_id = double(heap_in_use() - before) / n;
    reported = double(t->memory_bytes()) / n;
    for (int i = 0; i < n; ++i) benchmark::DoNotOptimize(t->find(parley::store::DedupeKey(from_of(i), id_of(i))));
    delete t;
  }
  state.counters["bytes_per_id"] = per_id;
  state.counters["memory_bytes_per_id"] = reported;
  state.SetItemsProcessed(state.iterations() * n * 2);
}

// Lookups are of fingerprints only: the confirming read of a hit is the
// partition's (a retry's cost, not every event's).
void BM_DedupeIndex(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  g_style = static_cast<int>(state.range(1));
  double per_id = 0, reported = 0;
  std::vector<uint64_t> found;
  for (auto _ : state) {
    const size_t before = heap_in_use();
    auto* x = new parley::store::DedupeIndex(120'000);
    for (int i = 0; i < n; ++i) {
      x->insert(x->fingerprint(parley::store::DedupeKey(from_of(i), id_of(i))), i + 1, kT0 + i / 5);
    }
    per_id = double(heap_in_use() - before) / n;
    reported = double(x->memory_bytes()) / n;
    for (int i = 0; i < n; ++i) {
      x->find(x->fingerprint(parley::store::DedupeKey(from_of(i), id_of(i))), found);
      benchmark::DoNotOptimize(found.data());
    }
    delete x;
  }
  state.counters["bytes_per_id"] = per_id;
  state.counters["memory_bytes_per_id"] = reported;
  state.SetItemsProcessed(state.iterations() * n * 2);
}

BENCHMARK(BM_OldMapWindow)->ArgsProduct({{1'000, 600'000}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DedupeTable)->ArgsProduct({{1'000, 600'000}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DedupeIndex)->ArgsProduct({{1'000, 600'000}, {0, 1}})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
