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

// config.cc accepts ':' in a board's name; its pushes go to lb:NAME[:ROUND]
// with the name as it is, so a join of that channel must find the board.
TEST(BoardChannel, ABoardWhoseNameHoldsAColonIsFound) {
  TenantConfig t;
  t.leaderboards["season:1"] = LeaderboardConfig{};
  LeaderboardConfig cup;
  cup.round = "match";
  t.leaderboards["cup:eu"] = cup;
  auto season = parse_board_channel("lb:season:1", t);
  ASSERT_TRUE(season);
  EXPECT_EQ(season->board, "season:1");
  EXPECT_EQ(season->round, "");
  auto cup_round = parse_board_channel(board_channel("cup:eu", "r3"), t);
  ASSERT_TRUE(cup_round);
  EXPECT_EQ(cup_round->board, "cup:eu");
  EXPECT_EQ(cup_round->round, "r3");
  EXPECT_FALSE(parse_board_channel("lb:cup:eu", t)) << "a board with rounds needs one";
  EXPECT_FALSE(parse_board_channel("lb:season:1:r1", t)) << "one without takes none";
}

// Boards "a" (with rounds) and "a:b" (without) both fit lb:a:b: the first ':'
// decides, as it did before names with ':' were looked for.
TEST(BoardChannel, TheFirstColonThatNamesABoardDecides) {
  TenantConfig t;
  LeaderboardConfig rounds;
  rounds.round = "match";
  t.leaderboards["a"] = rounds;
  t.leaderboards["a:b"] = LeaderboardConfig{};
  auto b = parse_board_channel("lb:a:b", t);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->board, "a");
  EXPECT_EQ(b->round, "b");
}

}  // namespace
}  // namespace parley::events
