#include "common/fnv1a.h"

#include <gtest/gtest.h>

namespace parley {
namespace {

// The reference vectors of the FNV authors' test suite (fnv-1a, 64 bit).
TEST(Fnv1a64, MatchesTheStandardTestVectors) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

TEST(Fnv1a64, TheBasisIsTheHashOfNothing) { EXPECT_EQ(fnv1a_64(""), kFnv1a64Basis); }

TEST(Fnv1a64, ASeedContinuesAHash) {
  EXPECT_EQ(fnv1a_64("bar", fnv1a_64("foo")), fnv1a_64("foobar"));
}

TEST(Fnv1a64, ComputesAtCompileTime) {
  static_assert(fnv1a_64("a") == 0xaf63dc4c8601ec8cull);
  SUCCEED();
}

// The placement seed is not the spec's basis: the two give different values
// (so topics record which one they use, events/topic_key_hash.h).
TEST(Fnv1a64, ThePlacementSeedIsNotTheStandardBasis) {
  EXPECT_NE(kParleyPlacementSeed, kFnv1a64Basis);
  EXPECT_NE(fnv1a_64("player-1", kParleyPlacementSeed), fnv1a_64("player-1"));
}

}  // namespace
}  // namespace parley
