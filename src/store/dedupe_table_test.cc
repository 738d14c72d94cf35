#include "store/dedupe_table.h"

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/dedupe_key.h"

namespace parley::store {
namespace {

constexpr int64_t kWindowMs = 120'000;
constexpr int64_t kT0 = 1'764'460'800'000;

uint64_t same_hash(std::string_view) { return 0x1234'5678'9abc'def0ull; }
uint64_t two_hashes(std::string_view k) { return k.size() % 2 ? 7 : 0x7'0000'0007ull; }

TEST(DedupeKey, LengthPrefixKeepsPairsThatShareBytesApart) {
  using namespace std::string_literals;
  DedupeKey a("a", "b\0c"s), b("a\0b"s, "c");
  EXPECT_NE(a.bytes(), b.bytes());
  EXPECT_EQ(a.from(), "a");
  EXPECT_EQ(a.id(), "b\0c"s);
  EXPECT_EQ(b.from(), "a\0b"s);
  EXPECT_EQ(b.id(), "c");
  EXPECT_NE(DedupeKey("ab", "c").bytes(), DedupeKey("a", "bc").bytes());
}

TEST(DedupeKey, ParsesItsOwnBytesAndRefusesTruncatedOnes) {
  const std::string from(200, 'u');  // a two-byte length
  DedupeKey k(from, "id-1");
  auto back = DedupeKey::from_bytes(k.bytes());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->from(), from);
  EXPECT_EQ(back->id(), "id-1");
  EXPECT_FALSE(DedupeKey::from_bytes(""));
  EXPECT_FALSE(DedupeKey::from_bytes(std::string_view(k.bytes()).substr(0, 50)));
  EXPECT_FALSE(DedupeKey::from_bytes("\x80"));
}

TEST(DedupeTable, FindsWhatWasInsertedAndNothingElse) {
  DedupeTable t(kWindowMs);
  t.insert(DedupeKey("u1", "m1"), 1, kT0);
  t.insert(DedupeKey("u1", "m2"), 2, kT0);
  t.insert(DedupeKey("u2", "m1"), 3, kT0);
  EXPECT_EQ(t.find(DedupeKey("u1", "m1")), 1u);
  EXPECT_EQ(t.find(DedupeKey("u1", "m2")), 2u);
  EXPECT_EQ(t.find(DedupeKey("u2", "m1")), 3u);
  EXPECT_FALSE(t.find(DedupeKey("u2", "m2")));
  EXPECT_EQ(t.size(), 3u);
}

TEST(DedupeTable, SeparatorLookalikesAreDifferentEntries) {
  using namespace std::string_literals;
  DedupeTable t(kWindowMs);
  t.insert(DedupeKey("a", "b\0c"s), 10, kT0);
  EXPECT_FALSE(t.find(DedupeKey("a\0b"s, "c")));
  t.insert(DedupeKey("a\0b"s, "c"), 11, kT0);
  EXPECT_EQ(t.find(DedupeKey("a", "b\0c"s)), 10u);
  EXPECT_EQ(t.find(DedupeKey("a\0b"s, "c")), 11u);
}

TEST(DedupeTable, AFullHashCollisionNeverAnswersForAnotherKey) {
  DedupeTable t(kWindowMs, &same_hash);  // every key has the same hash and tag
  for (uint64_t i = 0; i < 300; ++i) t.insert(DedupeKey("u", "m" + std::to_string(i)), i + 1, kT0);
  for (uint64_t i = 0; i < 300; ++i) {
    EXPECT_EQ(t.find(DedupeKey("u", "m" + std::to_string(i))), i + 1);
  }
  EXPECT_FALSE(t.find(DedupeKey("u", "m300")));
  EXPECT_FALSE(t.find(DedupeKey("v", "m1")));
  EXPECT_TRUE(t.erase(DedupeKey("u", "m7")));
  EXPECT_FALSE(t.find(DedupeKey("u", "m7")));
  EXPECT_EQ(t.find(DedupeKey("u", "m8")), 9u);  // the probe goes past the erased slot
}

TEST(DedupeTable, ReinsertingAKeyReplacesItsSeq) {
  DedupeTable t(kWindowMs);
  t.insert(DedupeKey("u", "m"), 1, kT0);
  t.insert(DedupeKey("u", "m"), 5, kT0 + 60'000);
  EXPECT_EQ(t.find(DedupeKey("u", "m")), 5u);
  EXPECT_EQ(t.size(), 1u);
  // Its first bucket expiring does not take the newer entry with it.
  t.expire(kT0 + kWindowMs + 30'000);
  EXPECT_EQ(t.find(DedupeKey("u", "m")), 5u);
}

TEST(DedupeTable, EntriesLastTheWindowThenGoWithTheirBucket) {
  DedupeTable t(kWindowMs);
  t.insert(DedupeKey("u", "old"), 1, kT0);
  t.insert(DedupeKey("u", "new"), 2, kT0 + 60'000);
  t.expire(kT0 + kWindowMs);  // exactly the window: still remembered
  EXPECT_EQ(t.find(DedupeKey("u", "old")), 1u);
  t.expire(kT0 + kWindowMs + 1);
  EXPECT_FALSE(t.find(DedupeKey("u", "old")));
  EXPECT_EQ(t.find(DedupeKey("u", "new")), 2u);
  EXPECT_EQ(t.size(), 1u);
  t.expire(kT0 + 60'000 + kWindowMs + 1);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.memory_bytes(), 0u);  // nothing is held for an empty window
}

TEST(DedupeTable, AnEntryOutlivesItsWindowByAtMostABucket) {
  DedupeTable t(kWindowMs);
  t.insert(DedupeKey("u", "a"), 1, kT0);
  t.insert(DedupeKey("u", "b"), 2, kT0 + kWindowMs / 16 - 1);  // same bucket
  t.expire(kT0 + kWindowMs + kWindowMs / 16);
  EXPECT_FALSE(t.find(DedupeKey("u", "a")));
}

TEST(DedupeTable, EntriesBeingWrittenStayPastTheirWindow) {
  DedupeTable t(0);  // dedupe_window_s = 0: only in-flight ids are remembered
  t.insert(DedupeKey("u", "a"), 7, kT0);
  t.expire(kT0 + 10'000, /*keep_seq=*/7);
  EXPECT_EQ(t.find(DedupeKey("u", "a")), 7u);
  t.expire(kT0 + 10'000, /*keep_seq=*/8);  // committed
  EXPECT_FALSE(t.find(DedupeKey("u", "a")));
}

TEST(DedupeTable, ShrinksWhenMostEntriesExpire) {
  DedupeTable t(kWindowMs);
  for (int i = 0; i < 100'000; ++i) {
    t.insert(DedupeKey("user-1", std::to_string(i)), i + 1, kT0 + i / 10);
  }
  const size_t full = t.memory_bytes();
  t.insert(DedupeKey("user-1", "late"), 100'001, kT0 + kWindowMs);
  t.expire(kT0 + kWindowMs + 20'000);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_LT(t.memory_bytes(), full / 100);
  EXPECT_EQ(t.find(DedupeKey("user-1", "late")), 100'001u);
}

TEST(DedupeTable, HoldsAtMost64BytesPerIdOfATypicalKey) {
  // 5,000 ids/s for a 120 s window, keys like parley-bench's (user "u123",
  // a 10-digit id): 15 key bytes.
  DedupeTable t(kWindowMs);
  const int n = 600'000;
  for (int i = 0; i < n; ++i) {
    t.insert(DedupeKey("u" + std::to_string(i % 1000), std::to_string(4'294'967'296ull + i)),
             i + 1, kT0 + i / 5);
  }
  EXPECT_EQ(t.size(), static_cast<size_t>(n));
  const double per_id = static_cast<double>(t.memory_bytes()) / n;
  RecordProperty("bytes_per_id", std::to_string(per_id));
  EXPECT_LE(per_id, 64.0);
}

// A game client's key: a 12-character user id and a UUID message id (50 key
// bytes as text, 30 stored).
TEST(DedupeTable, HoldsAtMost64BytesPerIdOfAUuidKey) {
  DedupeTable t(kWindowMs);
  const int n = 600'000;
  char id[40];
  for (int i = 0; i < n; ++i) {
    std::snprintf(id, sizeof id, "%08x-%04x-4%03x-8%03x-%012x", i, i & 0xffff, i & 0xfff,
                  (i >> 3) & 0xfff, i * 7);
    char user[16];
    std::snprintf(user, sizeof user, "player%06d", i % 1000);
    t.insert(DedupeKey(user, id), i + 1, kT0 + i / 5);
  }
  EXPECT_EQ(t.size(), static_cast<size_t>(n));
  const double per_id = static_cast<double>(t.memory_bytes()) / n;
  RecordProperty("bytes_per_id", std::to_string(per_id));
  EXPECT_LE(per_id, 64.0);
}

// Keys ending in a UUID are stored packed: each is still found exactly, a
// near miss (another case, a bad digit, a missing dash) is another key, and
// for_each gives back the text as it was inserted.
TEST(DedupeTable, PackedUuidKeysMatchExactlyAndComeBackAsText) {
  DedupeTable t(kWindowMs);
  const std::vector<std::string> ids = {
      "0f8e2a9c-51b3-4d7e-9a01-23456789abcd",  // lowercase: packed
      "0F8E2A9C-51B3-4D7E-9A01-23456789ABCD",  // uppercase: packed, another key
      "0f8e2a9c-51B3-4d7e-9a01-23456789abcd",  // mixed case: as it is
      "12345678-1234-1234-1234-123456789012",  // digits only: one form
      "0f8e2a9c-51b3-4d7e-9a01-23456789abcg",  // not hex
      "0f8e2a9c_51b3-4d7e-9a01-23456789abcd",  // not a dash
      "x0f8e2a9c-51b3-4d7e-9a01-23456789abcd", // a prefix before the UUID
  };
  uint64_t seq = 0;
  for (const auto& id : ids) t.insert(DedupeKey("alice", id), ++seq, kT0);
  seq = 0;
  for (const auto& id : ids) EXPECT_EQ(t.find(DedupeKey("alice", id)), ++seq) << id;
  EXPECT_FALSE(t.find(DedupeKey("bob", ids[0])));
  EXPECT_FALSE(t.find(DedupeKey("alice", "0f8e2a9c-51b3-4d7e-9a01-23456789abce")));
  EXPECT_FALSE(t.find(DedupeKey("alice", ids[0].substr(1))));
  std::map<std::string, uint64_t> seen;
  t.for_each([&](std::string_view key, uint64_t s, int64_t) { seen[std::string(key)] = s; });
  ASSERT_EQ(seen.size(), ids.size());
  seq = 0;
  for (const auto& id : ids) EXPECT_EQ(seen[std::string(DedupeKey("alice", id).bytes())], ++seq);
  EXPECT_TRUE(t.erase(DedupeKey("alice", ids[1])));
  EXPECT_FALSE(t.find(DedupeKey("alice", ids[1])));
  EXPECT_EQ(t.find(DedupeKey("alice", ids[0])), 1u);
}

// The table against a std::map model, with random inserts, erases and expiries,
// and a hash with only two values so that every probe chain is long.
TEST(DedupeTable, AgreesWithAMapUnderRandomOperations) {
  for (auto hash : {DedupeTable::HashFn{nullptr}, DedupeTable::HashFn{&two_hashes}}) {
    DedupeTable t(10'000, hash);
    std::map<std::string, std::pair<uint64_t, int64_t>> model;  // key -> (seq, ts)
    std::mt19937_64 rng(42);
    int64_t now = kT0;
    uint64_t seq = 0;
    for (int step = 0; step < 20'000; ++step) {
      now += static_cast<int64_t>(rng() % 20);
      const uint64_t r = rng() % (hash ? 200 : 3000);
      // Half the ids UUID-shaped (stored packed), in either case.
      std::string id = std::to_string(r);
      if (r % 2) {
        char u[40];
        std::snprintf(u, sizeof u, r % 4 == 1 ? "%08llx-0000-4000-8000-%012llx" : "%08llX-0000-4000-8000-%012llX",
                      static_cast<unsigned long long>(r), static_cast<unsigned long long>(r * 977));
        id = u;
      }
      DedupeKey k("u" + std::to_string(rng() % 3), id);
      switch (rng() % 10) {
        case 0:
          t.erase(k);
          model.erase(std::string(k.bytes()));
          break;
        case 1: {
          t.expire(now);
          // The table may keep an entry up to a bucket (window / 16) longer.
          for (auto it = model.begin(); it != model.end();) {
            bool gone = !t.find(std::string_view(it->first));
            if (gone) {
              EXPECT_LT(it->second.second, now - 10'000) << "expired too early";
              it = model.erase(it);
            } else {
              EXPECT_GE(it->second.second, now - 10'000 - 10'000 / 16 - 1000);
              ++it;
            }
          }
          break;
        }
        default:
          t.insert(k, ++seq, now);
          model[std::string(k.bytes())] = {seq, now};
      }
      if (step % 1000 == 0) {
        ASSERT_EQ(t.size(), model.size());
        for (const auto& [key, v] : model) ASSERT_EQ(t.find(std::string_view(key)), v.first);
      }
    }
    size_t seen = 0;
    t.for_each([&](std::string_view key, uint64_t s, int64_t ts) {
      ++seen;
      auto it = model.find(std::string(key));
      ASSERT_NE(it, model.end());
      EXPECT_EQ(it->second.first, s);
      EXPECT_EQ(ts, it->second.second);
    });
    EXPECT_EQ(seen, model.size());
  }
}

}  // namespace
}  // namespace parley::store
