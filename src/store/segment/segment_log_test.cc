// The segment log on real files: append, read by offset, sparse index, retention
// by whole segments, recovery (last offset, dedupe ids), torn tails cut at open.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "store/dedupe_key.h"
#include "store/segment/segment_log.h"
#include "store/store_policy.h"
#include "store/store_test_util.h"

namespace parley::store::segment {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const ChannelId kPart{"demo", "hunts\x1f" "3"};
const ChannelId kOther{"demo", "hunts\x1f" "4"};

class SegmentLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    opts_.dir = tmp_.sub("segments");
    opts_.segment_bytes = 4096;       // many small segments
    opts_.index_every_bytes = 512;
    reopen();
  }

  void reopen() {
    log_.reset();
    auto r = SegmentLog::open(opts_);
    ASSERT_TRUE(r) << r.error().msg;
    log_ = std::move(*r);
  }

  static StoredMessage msg(uint64_t off, int64_t ts, std::string id = "") {
    if (id.empty()) id = "e" + std::to_string(off);
    return StoredMessage{off, ts, "player" + std::to_string(off % 3), id,
                         R"({"type":"hit","n":)" + std::to_string(off) + R"(,"pad":"0123456789abcdef"})"};
  }

  // One group commit of appends `first`..`last` to `key` (as the committer's writer does).
  void append(const ChannelId& key, uint64_t first, uint64_t last, uint32_t limit = 100000,
              int64_t ts = 0) {
    for (uint64_t off = first; off <= last; ++off) {
      Status why;
      AppendRequest req{key, msg(off, ts ? ts : now_ + static_cast<int64_t>(off)), limit, 120};
      ASSERT_EQ(log_->stage(req, 0, why), SegmentLog::Staged::kOk) << off;
    }
    Status s = log_->commit(0);
    ASSERT_TRUE(s) << s.error().msg;
  }
  void append_each(const ChannelId& key, uint64_t first, uint64_t last, uint32_t limit = 100000) {
    for (uint64_t off = first; off <= last; ++off) append(key, off, off, limit);
  }

  std::vector<uint64_t> after(const ChannelId& key, uint64_t from, uint32_t limit) {
    auto r = log_->read_after(key, from, limit);
    EXPECT_TRUE(r) << r.error().msg;
    std::vector<uint64_t> out;
    if (!r) return out;
    for (auto& m : *r) out.push_back(m.seq);
    return out;
  }
  std::vector<uint64_t> before(const ChannelId& key, uint64_t until, uint32_t limit) {
    auto r = log_->read_before(key, until, limit);
    EXPECT_TRUE(r) << r.error().msg;
    std::vector<uint64_t> out;
    if (!r) return out;
    for (auto& m : *r) out.push_back(m.seq);
    return out;
  }
  std::vector<std::string> files(const ChannelId& key, const std::string& ext) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(log_->partition_dir(key))) {
      if (e.path().extension() == ext) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  TempDir tmp_;
  SegmentLogOptions opts_;
  std::unique_ptr<SegmentLog> log_;
  const int64_t now_ = wall_ms();
};

std::vector<uint64_t> range(uint64_t a, uint64_t b) {
  std::vector<uint64_t> v;
  for (uint64_t i = a; i <= b; ++i) v.push_back(i);
  return v;
}

TEST_F(SegmentLogTest, ReadsByOffsetAcrossSegmentsAndAfterReopen) {
  append(kPart, 1, 100);
  for (uint64_t b = 101; b <= 1000; b += 100) append(kPart, b, b + 99);
  ASSERT_GT(files(kPart, ".log").size(), 5u);
  ASSERT_GE(files(kPart, ".idx").size(), files(kPart, ".log").size() - 1);  // sealed ones (each batch fills one)
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "written" : "reopened");
    EXPECT_EQ(after(kPart, 0, 10), range(1, 10));
    EXPECT_EQ(after(kPart, 433, 300), range(434, 733));
    EXPECT_EQ(after(kPart, 990, 100), range(991, 1000));
    EXPECT_TRUE(after(kPart, 1000, 10).empty());
    EXPECT_EQ(before(kPart, 501, 20), range(481, 500));
    EXPECT_EQ(before(kPart, UINT64_MAX, 3), range(998, 1000));
    EXPECT_EQ(before(kPart, 5, 100), range(1, 4));
    auto all = log_->read_after(kPart, 0, 5000);
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 1000u);
    const StoredMessage want = msg(777, now_ + 777);
    const StoredMessage& got = (*all)[776];
    EXPECT_EQ(got.seq, 777u);
    EXPECT_EQ(got.ts_ms, want.ts_ms);
    EXPECT_EQ(got.from, want.from);
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.body, want.body);
    auto rec = log_->recover(kPart, 0);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->last_seq, 1000u);
    reopen();
  }
}

TEST_F(SegmentLogTest, AnIndexThatDoesNotCheckIsRebuiltByAScan) {
  append(kPart, 1, 600);
  append(kPart, 601, 1200);
  auto idx = files(kPart, ".idx");
  ASSERT_FALSE(idx.empty());
  {
    std::fstream f(idx[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('\x55');
  }
  fs::remove(idx.back());
  reopen();
  EXPECT_EQ(after(kPart, 0, 2000), range(1, 1200));
  EXPECT_EQ(before(kPart, 700, 50), range(650, 699));
}

TEST_F(SegmentLogTest, RetentionDeletesWholeSegmentsAndKeepsTheLimit) {
  constexpr uint32_t kLimit = 300;
  append_each(kPart, 1, 2000, kLimit);
  auto held = after(kPart, 0, 5000);
  ASSERT_GE(held.size(), kLimit);
  EXPECT_LE(held.size(), history_max_held(kLimit));
  EXPECT_EQ(held, range(2001 - held.size(), 2000));
  // Whole files went: what is left starts at a segment's base.
  auto logs = files(kPart, ".log");
  uint64_t first = 0;
  ASSERT_TRUE(parse_segment_file_name(fs::path(logs.front()).filename().string(), first));
  EXPECT_EQ(first, held.front());
  EXPECT_EQ(files(kPart, ".idx").size(), logs.size() - 1);
  reopen();
  EXPECT_EQ(after(kPart, 0, 5000), held);
  auto rec = log_->recover(kPart, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 2000u);
  // Partitions are separate: the other one is untouched by this one's retention.
  append(kOther, 1, 10);
  EXPECT_EQ(after(kOther, 0, 100), range(1, 10));
}

TEST_F(SegmentLogTest, RecoverFindsTheDedupeIdsOfTheWindowAcrossARestart) {
  // Three eras: old (before the cutoff), then recent, each many segments.
  const int64_t cutoff = now_ - 60'000;
  for (uint64_t b = 1; b <= 600; b += 100) append(kPart, b, b + 99, 100000, cutoff - 1000);
  for (uint64_t b = 601; b <= 900; b += 100) append(kPart, b, b + 99, 100000, cutoff + 5);
  append(kPart, 901, 901, 100000, cutoff + 6);
  reopen();
  auto rec = log_->recover(kPart, cutoff);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 901u);
  std::vector<uint64_t> seqs;
  for (const auto& e : rec->dedupe) {
    seqs.push_back(e.seq);
    EXPECT_EQ(e.id, "e" + std::to_string(e.seq));
    EXPECT_EQ(e.from, "player" + std::to_string(e.seq % 3));
    EXPECT_GE(e.ts_ms, cutoff);
  }
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, range(601, 901));
  // Events without an id leave no entry.
  Status why;
  StoredMessage m = msg(902, now_);
  m.id.clear();
  ASSERT_EQ(log_->stage(AppendRequest{kPart, m, 100000, 120}, 0, why), SegmentLog::Staged::kOk);
  ASSERT_TRUE(log_->commit(0));
  rec = log_->recover(kPart, now_ - 1);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 902u);
  EXPECT_TRUE(rec->dedupe.empty());
}

// A fingerprint a test can check: the key's bytes folded, nothing seeded.
uint64_t test_hash(std::string_view key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return h;
}

TEST_F(SegmentLogTest, RecoverWithAHashHandsTheSameIdsAsFingerprints) {
  const int64_t cutoff = now_ - 60'000;
  for (uint64_t b = 1; b <= 300; b += 100) append(kPart, b, b + 99, 100000, cutoff - 1000);
  for (uint64_t b = 301; b <= 700; b += 100) append(kPart, b, b + 99, 100000, cutoff + 5);
  Status why;
  StoredMessage no_id = msg(701, cutoff + 6);
  no_id.id.clear();
  ASSERT_EQ(log_->stage(AppendRequest{kPart, no_id, 100000, 120}, 0, why), SegmentLog::Staged::kOk);
  ASSERT_TRUE(log_->commit(0));
  reopen();
  auto strings = log_->recover(kPart, cutoff);
  auto marks = log_->recover(kPart, cutoff, &test_hash);
  ASSERT_TRUE(strings);
  ASSERT_TRUE(marks);
  EXPECT_EQ(marks->last_seq, 701u);
  EXPECT_TRUE(marks->dedupe.empty()) << "no strings beside the marks";
  ASSERT_EQ(marks->marks.size(), strings->dedupe.size());
  std::vector<std::tuple<uint64_t, uint64_t, int64_t>> want, got;
  for (const auto& e : strings->dedupe) want.emplace_back(e.seq, test_hash(DedupeKey(e.from, e.id).bytes()), e.ts_ms);
  for (const auto& m : marks->marks) got.emplace_back(m.seq, m.fp, m.ts_ms);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::get<0>(got.front()), 301u);
  EXPECT_EQ(std::get<0>(got.back()), 700u);
}

TEST_F(SegmentLogTest, ATruncatedTailIsCutAtTheLastWholeRecord) {
  append(kPart, 1, 50);
  append(kPart, 51, 60);
  const std::string newest = files(kPart, ".log").back();
  const auto size = fs::file_size(newest);
  fs::resize_file(newest, size - 7);  // the last record loses its end
  reopen();
  auto rec = log_->recover(kPart, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 59u);
  EXPECT_EQ(log_->torn_tails(), 1u);
  EXPECT_LT(fs::file_size(newest), size - 7);  // cut at the record's start, on disk
  EXPECT_EQ(after(kPart, 0, 100), range(1, 59));
  // Writing goes on from the cut, and a restart reads everything back.
  append(kPart, 60, 70);
  reopen();
  EXPECT_EQ(after(kPart, 0, 100), range(1, 70));
  EXPECT_EQ(log_->torn_tails(), 0u);
}

TEST_F(SegmentLogTest, AFlippedByteInTheTailIsCutThere) {
  append(kPart, 1, 30);
  const std::string newest = files(kPart, ".log").back();
  const auto size = fs::file_size(newest);
  {
    // A byte inside the second-to-last record's body.
    auto all = log_->read_after(kPart, 0, 100);
    ASSERT_TRUE(all);
    const size_t last_two = 2 * (16 + 40 + all->back().body.size());
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - last_two / 2 - 20));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(size - last_two / 2 - 20));
    f.put(static_cast<char>(c ^ 0x01));
  }
  reopen();
  auto rec = log_->recover(kPart, 0);
  ASSERT_TRUE(rec);
  EXPECT_LT(rec->last_seq, 30u);
  EXPECT_GE(rec->last_seq, 27u);
  EXPECT_EQ(after(kPart, 0, 100), range(1, rec->last_seq));
  EXPECT_EQ(log_->torn_tails(), 1u);
}

TEST_F(SegmentLogTest, DamageBeforeTheNewestSegmentMakesThePartitionUnreadableNotTheLog) {
  std::vector<std::string> damaged;
  opts_.on_damage = [&](const std::string& dir, const std::string&) { damaged.push_back(dir); };
  append(kPart, 1, 600);
  append(kPart, 601, 700);
  append(kOther, 1, 5);
  const auto logs = files(kPart, ".log");
  ASSERT_GE(logs.size(), 2u);
  fs::remove(files(kPart, ".idx").front());  // so the damaged segment is scanned
  {
    std::fstream f(logs.front(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  reopen();
  auto rec = log_->recover(kPart, 0);
  ASSERT_FALSE(rec);
  EXPECT_EQ(rec.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(damaged.size(), 1u);
  Status why;
  EXPECT_EQ(log_->stage(AppendRequest{kPart, msg(701, now_), 100000, 120}, 0, why),
            SegmentLog::Staged::kRejected);
  EXPECT_FALSE(why);
  // Other partitions go on.
  append(kOther, 6, 8);
  EXPECT_EQ(after(kOther, 0, 100), range(1, 8));
}

TEST_F(SegmentLogTest, StaleOffsetsAreRejectedWithoutWriting) {
  append(kPart, 1, 5);
  Status why;
  EXPECT_EQ(log_->stage(AppendRequest{kPart, msg(5, now_), 1000, 120}, 0, why),
            SegmentLog::Staged::kRejected);
  EXPECT_EQ(why.error().code, ErrorCode::kInternal);
  EXPECT_FALSE(log_->has_staged());
  // Within a batch too.
  ASSERT_EQ(log_->stage(AppendRequest{kPart, msg(6, now_), 1000, 120}, 0, why), SegmentLog::Staged::kOk);
  EXPECT_EQ(log_->stage(AppendRequest{kPart, msg(6, now_), 1000, 120}, 0, why),
            SegmentLog::Staged::kRejected);
  ASSERT_TRUE(log_->commit(0));
  EXPECT_EQ(after(kPart, 0, 100), range(1, 6));
}

TEST_F(SegmentLogTest, ADiscardedBatchLeavesNoTrace) {
  append(kPart, 1, 5);
  Status why;
  ASSERT_EQ(log_->stage(AppendRequest{kPart, msg(6, now_), 1000, 120}, 0, why), SegmentLog::Staged::kOk);
  log_->discard();
  EXPECT_EQ(after(kPart, 0, 100), range(1, 5));
  append(kPart, 6, 7);
  reopen();
  EXPECT_EQ(after(kPart, 0, 100), range(1, 7));
}

TEST_F(SegmentLogTest, OffsetsThatJumpAreReadInOrder) {
  append(kPart, 1, 10);
  append(kPart, 70000, 70040);  // after an accepted loss, offsets continue above the floor
  reopen();
  EXPECT_EQ(before(kPart, UINT64_MAX, 45).size(), 45u);
  auto b = before(kPart, UINT64_MAX, 45);
  EXPECT_EQ(b.front(), 7u);
  EXPECT_EQ(b.back(), 70040u);
  auto a = after(kPart, 5, 10);
  EXPECT_EQ(a.front(), 6u);
  EXPECT_EQ(a[5], 70000u);
  auto rec = log_->recover(kPart, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 70040u);
}

TEST_F(SegmentLogTest, OneBatchAcrossPartitionsAndStrangeNames) {
  const ChannelId odd{"t/../x", "a b%\x1f" "0"};
  Status why;
  for (uint64_t off = 1; off <= 20; ++off) {
    for (const ChannelId* k : {&kPart, &kOther, &odd}) {
      ASSERT_EQ(log_->stage(AppendRequest{*k, msg(off, now_), 1000, 120}, 0, why), SegmentLog::Staged::kOk);
    }
  }
  ASSERT_TRUE(log_->commit(0));
  reopen();
  for (const ChannelId* k : {&kPart, &kOther, &odd}) EXPECT_EQ(after(*k, 0, 100), range(1, 20));
  EXPECT_EQ(fs::path(log_->partition_dir(odd)).parent_path(), fs::path(opts_.dir));
}

TEST_F(SegmentLogTest, ReadersRunBesideTheWriter) {
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  append(kPart, 1, 10, 2000);
  std::thread reader([&] {
    while (!stop) {
      auto r = log_->read_after(kPart, 0, 100000);
      if (!r) {
        ++bad;
        continue;
      }
      // Always a gap-free run ending at a committed offset.
      for (size_t i = 1; i < r->size(); ++i) {
        if ((*r)[i].seq != (*r)[i - 1].seq + 1) ++bad;
      }
    }
  });
  for (uint64_t b = 11; b <= 3000; b += 10) append(kPart, b, b + 9, 2000);
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace parley::store::segment
