// OrderBoard at a million members (issue 12: "a board of a million members
// still answers and pushes inside the interval"): one score update, one rank
// lookup, a top-10 and a rank-around of 5, each on a full board.
// Run: build/src/events/order_board_bench (a Release or RelWithDebInfo build).
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "events/order_board.h"

namespace parley::events {
namespace {

constexpr int kMembers = 1'000'000;

OrderBoard& full_board() {
  static OrderBoard* board = [] {
    auto* b = new OrderBoard(Agg::kSum, true);
    std::mt19937 rng(7);
    for (int i = 0; i < kMembers; ++i) b->apply("player-" + std::to_string(i), rng() % 100000);
    return b;
  }();
  return *board;
}

void BM_Update(benchmark::State& state) {
  OrderBoard& b = full_board();
  std::mt19937 rng(1);
  std::vector<std::string> names;
  for (int i = 0; i < 4096; ++i) names.push_back("player-" + std::to_string(rng() % kMembers));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(b.apply(names[i++ & 4095], static_cast<double>(rng() % 50)));
  }
  state.counters["members"] = static_cast<double>(b.size());
}
BENCHMARK(BM_Update);

void BM_Rank(benchmark::State& state) {
  OrderBoard& b = full_board();
  std::mt19937 rng(2);
  std::vector<std::string> names;
  for (int i = 0; i < 4096; ++i) names.push_back("player-" + std::to_string(rng() % kMembers));
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(b.find(names[i++ & 4095]));
}
BENCHMARK(BM_Rank);

void BM_UpdateThenRank(benchmark::State& state) {
  OrderBoard& b = full_board();
  std::mt19937 rng(3);
  std::vector<std::string> names;
  for (int i = 0; i < 4096; ++i) names.push_back("player-" + std::to_string(rng() % kMembers));
  size_t i = 0;
  for (auto _ : state) {
    const std::string& m = names[i++ & 4095];
    b.apply(m, static_cast<double>(rng() % 50));
    benchmark::DoNotOptimize(b.find(m));
  }
}
BENCHMARK(BM_UpdateThenRank);

void BM_Top10(benchmark::State& state) {
  OrderBoard& b = full_board();
  for (auto _ : state) benchmark::DoNotOptimize(b.top(10));
}
BENCHMARK(BM_Top10);

void BM_Around5(benchmark::State& state) {
  OrderBoard& b = full_board();
  std::mt19937 rng(4);
  std::vector<std::string> names;
  for (int i = 0; i < 4096; ++i) names.push_back("player-" + std::to_string(rng() % kMembers));
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(b.around(names[i++ & 4095], 5));
}
BENCHMARK(BM_Around5);

}  // namespace
}  // namespace parley::events

BENCHMARK_MAIN();
