// Which channels are a leaderboard's (PROTOCOL.md "Event streams and
// leaderboards"): lb:NAME for a board without rounds, lb:NAME:ROUND with.
#include "events/board_channel.h"

#include <gtest/gtest.h>

namespace parley::events {
namespace {

TenantConfig tenant_with_boards() {
  TenantConfig t;
  t.id = "demo";
  t.leaderboards["kills"] = LeaderboardConfig{};  // no rounds
  LeaderboardConfig hunt;
  hunt.round = "match";
  t.leaderboards["hunt"] = hunt;
  return t;
}

TEST(BoardChannel, NamesTheBoardAndItsRound) {
  EXPECT_EQ(board_channel("kills", ""), "lb:kills");
  EXPECT_EQ(board_channel("hunt", "r12"), "lb:hunt:r12");
}

TEST(BoardChannel, ABoardWithoutRoundsIsItsNameAlone) {
  const TenantConfig t = tenant_with_boards();
  auto b = parse_board_channel("lb:kills", t);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->board, "kills");
  EXPECT_EQ(b->round, "");
  EXPECT_FALSE(parse_board_channel("lb:kills:r1", t)) << "a round on a board without rounds";
}

TEST(BoardChannel, ABoardWithRoundsNeedsOne) {
  const TenantConfig t = tenant_with_boards();
  auto b = parse_board_channel("lb:hunt:r12", t);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->board, "hunt");
  EXPECT_EQ(b->round, "r12");
  EXPECT_FALSE(parse_board_channel("lb:hunt", t));
  EXPECT_FALSE(parse_board_channel("lb:hunt:", t)) << "an empty round is none";
}

TEST(BoardChannel, TheRoundIsEverythingAfterTheBoardsName) {
  auto b = parse_board_channel("lb:hunt:2026:12:02", tenant_with_boards());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->board, "hunt");
  EXPECT_EQ(b->round, "2026:12:02");
}

TEST(BoardChannel, OtherChannelsAreNoBoards) {
  const TenantConfig t = tenant_with_boards();
  EXPECT_FALSE(parse_board_channel("lobby", t));
  EXPECT_FALSE(parse_board_channel("lb:", t));
  EXPECT_FALSE(parse_board_channel("lb:deaths", t)) << "not a configured board";
  EXPECT_FALSE(parse_board_channel("LB:kills", t));
  EXPECT_FALSE(parse_board_channel("xlb:kills", t));
  EXPECT_FALSE(parse_board_channel("kills", t));
  EXPECT_FALSE(parse_board_channel("lb:kills", TenantConfig{})) << "a tenant without boards";
}

TEST(BoardChannel, WhatABoardPushesToParsesBackToIt) {
  const TenantConfig t = tenant_with_boards();
  for (auto [board, round] : {std::pair{"kills", ""}, std::pair{"hunt", "r1"}}) {
    auto b = parse_board_channel(board_channel(board, round), t);
    ASSERT_TRUE(b) << board;
    EXPECT_EQ(b->board, board);
    EXPECT_EQ(b->round, round);
  }
}

}  // namespace
}  // namespace parley::events
