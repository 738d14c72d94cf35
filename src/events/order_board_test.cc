// OrderBoard against a brute-force recomputation: after every batch of random
// updates (few distinct scores, so ties are common), every member's rank, the
// top and the entries around members equal what sorting everything says.
#include "events/order_board.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace parley::events {
namespace {

struct Brute {
  Agg agg;
  bool desc;
  std::map<std::string, double> scores;

  void apply(const std::string& m, double s) {
    auto it = scores.find(m);
    if (it == scores.end()) {
      scores[m] = s;
      return;
    }
    switch (agg) {
      case Agg::kSum: it->second += s; break;
      case Agg::kMax: it->second = std::max(it->second, s); break;
      case Agg::kMin: it->second = std::min(it->second, s); break;
      case Agg::kLast: it->second = s; break;
    }
  }
  // Everything in rank order, with PROTOCOL.md's ranks (ties share the best).
  std::vector<std::tuple<std::string, double, uint64_t>> ranked() const {
    std::vector<std::pair<std::string, double>> all(scores.begin(), scores.end());
    std::sort(all.begin(), all.end(), [this](const auto& a, const auto& b) {
      if (a.second != b.second) return desc ? a.second > b.second : a.second < b.second;
      return a.first < b.first;
    });
    std::vector<std::tuple<std::string, double, uint64_t>> out;
    for (size_t i = 0; i < all.size(); ++i) {
      uint64_t better = 0;
      for (const auto& [m, s] : all) better += desc ? s > all[i].second : s < all[i].second;
      out.emplace_back(all[i].first, all[i].second, better + 1);
    }
    return out;
  }
};

void expect_same(const std::vector<BoardEntry>& got,
                 const std::vector<std::tuple<std::string, double, uint64_t>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].member, std::get<0>(want[i])) << i;
    EXPECT_EQ(got[i].score, std::get<1>(want[i])) << i;
    EXPECT_EQ(got[i].rank, std::get<2>(want[i])) << i;
  }
}

class OrderBoardModel : public ::testing::TestWithParam<std::tuple<Agg, bool>> {};

TEST_P(OrderBoardModel, MatchesABruteForceRecomputation) {
  const auto [agg, desc] = GetParam();
  OrderBoard board(agg, desc);
  Brute brute{agg, desc, {}};
  std::mt19937 rng(42);
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 50; ++i) {
      const std::string m = "m" + std::to_string(rng() % 120);
      const double s = static_cast<double>(static_cast<int>(rng() % 9) - 2);
      board.apply(m, s);
      brute.apply(m, s);
    }
    const auto all = brute.ranked();
    ASSERT_EQ(board.size(), all.size());
    expect_same(board.top(all.size()), all);
    expect_same(board.top(7), {all.begin(), all.begin() + std::min<size_t>(7, all.size())});
    for (size_t i = 0; i < all.size(); i += 5) {
      const auto& [m, s, r] = all[i];
      auto e = board.find(m);
      ASSERT_TRUE(e);
      EXPECT_EQ(e->rank, r) << m;
      EXPECT_EQ(e->score, s) << m;
      const size_t lo = i >= 3 ? i - 3 : 0, hi = std::min(all.size(), i + 4);
      expect_same(board.around(m, 3), {all.begin() + lo, all.begin() + hi});
    }
  }
  EXPECT_FALSE(board.find("nobody"));
  EXPECT_TRUE(board.around("nobody", 5).empty());
}

INSTANTIATE_TEST_SUITE_P(AllAggregations, OrderBoardModel,
                         ::testing::Combine(::testing::Values(Agg::kSum, Agg::kMax, Agg::kMin,
                                                              Agg::kLast),
                                            ::testing::Bool()));

TEST(OrderBoard, TiesShareTheBestRankAndAreOrderedByMember) {
  OrderBoard b(Agg::kSum, true);
  b.apply("d", 5);
  b.apply("b", 7);
  b.apply("c", 7);
  b.apply("a", 9);
  const auto top = b.top(10);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].member, "a");
  EXPECT_EQ(top[0].rank, 1u);
  EXPECT_EQ(top[1].member, "b");
  EXPECT_EQ(top[1].rank, 2u);
  EXPECT_EQ(top[2].member, "c");
  EXPECT_EQ(top[2].rank, 2u);
  EXPECT_EQ(top[3].member, "d");
  EXPECT_EQ(top[3].rank, 4u);
  EXPECT_FALSE(b.apply("d", 0));  // a sum of 0 changes nothing
  EXPECT_TRUE(b.apply("d", 5));  // 10: above a
  EXPECT_EQ(b.find("d")->rank, 1u);
}

// apply's answer decides whether a board is pushed: true only when the member
// is new or its score moved.
TEST(OrderBoard, ApplySaysWhetherTheScoreChanged) {
  OrderBoard max(Agg::kMax, true), min(Agg::kMin, true), last(Agg::kLast, true);
  for (OrderBoard* b : {&max, &min, &last}) EXPECT_TRUE(b->apply("a", 0)) << "a new member at 0";
  EXPECT_TRUE(max.apply("a", 5));
  EXPECT_FALSE(max.apply("a", 3));
  EXPECT_EQ(max.find("a")->score, 5);
  EXPECT_TRUE(min.apply("a", -2));
  EXPECT_FALSE(min.apply("a", 4));
  EXPECT_EQ(min.find("a")->score, -2);
  EXPECT_FALSE(last.apply("a", 0));
  EXPECT_TRUE(last.apply("a", 4));
  EXPECT_TRUE(last.apply("a", 1));
  EXPECT_EQ(last.find("a")->score, 1);
}

TEST(OrderBoard, AroundStopsAtEitherEnd) {
  OrderBoard b(Agg::kSum, true);
  for (int i = 1; i <= 5; ++i) b.apply("m" + std::to_string(i), i);  // m5 best
  auto names = [](const std::vector<BoardEntry>& es) {
    std::string out;
    for (const auto& e : es) out += std::string(e.member) + ' ';
    return out;
  };
  EXPECT_EQ(names(b.around("m5", 2)), "m5 m4 m3 ");
  EXPECT_EQ(names(b.around("m1", 2)), "m3 m2 m1 ");
  EXPECT_EQ(names(b.around("m3", 0)), "m3 ");
  EXPECT_EQ(names(b.around("m3", 100)), "m5 m4 m3 m2 m1 ");
  EXPECT_TRUE(b.top(0).empty());
  EXPECT_EQ(b.top(100).size(), 5u);
}

// A tie that starts above the window keeps the tie's rank, not the position.
TEST(OrderBoard, ATieCutByTheWindowKeepsItsRank) {
  OrderBoard b(Agg::kSum, true);
  b.apply("a", 9);
  b.apply("b", 7);
  b.apply("c", 7);
  b.apply("d", 7);
  const auto es = b.around("d", 1);
  ASSERT_EQ(es.size(), 2u);
  EXPECT_EQ(es[0].member, "c");
  EXPECT_EQ(es[0].rank, 2u);
  EXPECT_EQ(es[1].member, "d");
  EXPECT_EQ(es[1].rank, 2u);
}

}  // namespace
}  // namespace parley::events
