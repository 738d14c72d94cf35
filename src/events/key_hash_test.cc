#include "events/key_hash.h"

#include <gtest/gtest.h>

#include <string>

#include "events/event_service.h"

namespace parley::events {
namespace {

TEST(KeyHash, RecordsReadBackAsWritten) {
  for (KeyHash h : {KeyHash::kSpec, KeyHash::kLegacy}) {
    EXPECT_EQ(parse_key_hash_record(key_hash_record(h)), h);
  }
  EXPECT_NE(key_hash_record(KeyHash::kSpec), key_hash_record(KeyHash::kLegacy));
}

TEST(KeyHash, AnUnknownRecordIsNotGuessed) {
  EXPECT_FALSE(parse_key_hash_record(""));
  EXPECT_FALSE(parse_key_hash_record(R"({"key_hash":"murmur3"})"));
  EXPECT_FALSE(parse_key_hash_record(std::string(key_hash_record(KeyHash::kSpec)) + " "));
}

// The issue's example: a client following PROTOCOL.md puts player-1 in
// partition 2 of 16; the old basis put it in 4.
TEST(KeyHash, TheSpecSeedGivesTheProtocolsPartitions) {
  EXPECT_EQ(partition_of("player-1", 16, seed_of(KeyHash::kSpec)), 2u);
  EXPECT_EQ(partition_of("player-1", 16), 2u);
  EXPECT_EQ(partition_of("player-1", 16, seed_of(KeyHash::kLegacy)), 4u);
}

}  // namespace
}  // namespace parley::events
