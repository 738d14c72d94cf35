// Behaviour of the embedded store beyond the shared contract: durability across
// reopen and kill -9, the directory lock, write failures, dedupe expiry.
#include "store/embedded_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <future>
#include <mutex>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <thread>
#include <chrono>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include "common/clock.h"
#include "runtime/loop_tail.h"
#include "store/record_codec.h"
#include "store/store_policy.h"
#include "store/store_test_util.h"

namespace parley::store {
namespace {

using testing::append_sync;
using testing::read_after_sync;
using testing::read_before_sync;
using testing::recover_sync;
using testing::make_msg;
using testing::make_req;
using testing::seq_range;
using testing::seqs_of;
using testing::TempDir;

const ChannelKey kLobby{"demo", "chat:lobby"};

std::unique_ptr<Store> open_or_die(const std::string& dir, FsyncMode fsync = FsyncMode::kNever) {
  auto r = open_embedded_store(EmbeddedOptions{dir, fsync});
  EXPECT_TRUE(r.is_ok()) << (r ? "" : r.error().msg);
  return r ? std::move(*r) : nullptr;
}

// ---- Child processes: this binary re-executed with a child flag (store_test_main.cc).

struct Child {
  pid_t pid = -1;
  int fd = -1;  // read end of the child's report pipe
};

Child spawn_child(const char* flag, const std::string& dir, std::vector<std::string> extra) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {};
  std::vector<std::string> args = {"store_test", flag, dir, std::to_string(fds[1])};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    fcntl(fds[1], F_SETFD, 0);  // the write end survives exec
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  return Child{pid, fds[0]};
}

int reap(Child& c) {
  int status = 0;
  if (c.fd >= 0) close(c.fd);
  if (c.pid > 0) waitpid(c.pid, &status, 0);
  c = {};
  return status;
}

// ---- Durability across reopen

TEST(EmbeddedStore, ReopenRecoversLastSeqMessagesAndDedupe) {
  TempDir dir;
  const int64_t now = wall_ms();
  {
    auto store = open_or_die(dir.sub("db"));
    ASSERT_NE(store, nullptr);
    for (uint64_t s = 1; s <= 50; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(s, now + int64_t(s)))));
    }
  }
  auto store = open_or_die(dir.sub("db"));
  ASSERT_NE(store, nullptr);
  auto rec = recover_sync(*store, kLobby, now + 41);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 50u);
  std::set<uint64_t> dedupe_seqs;
  for (const auto& e : rec->dedupe) {
    EXPECT_EQ(e.id, "m" + std::to_string(e.seq));
    dedupe_seqs.insert(e.seq);
  }
  EXPECT_EQ(dedupe_seqs.size(), 10u);
  EXPECT_EQ(*dedupe_seqs.begin(), 41u);
  auto msgs = read_after_sync(*store, kLobby, 0, 100);
  ASSERT_TRUE(msgs);
  EXPECT_EQ(seqs_of(*msgs), seq_range(1, 50));
  EXPECT_EQ((*msgs)[9].body, R"({"n":10})");
  // The channel continues where it stopped.
  EXPECT_TRUE(append_sync(*store, make_req(kLobby, make_msg(51, now))));
}

TEST(EmbeddedStore, TrimmingResumesAfterReopen) {
  TempDir dir;
  constexpr uint32_t kLimit = 10;
  const int64_t now = wall_ms();
  for (uint64_t round = 0; round < 3; ++round) {
    auto store = open_or_die(dir.sub("db"));
    ASSERT_NE(store, nullptr);
    for (uint64_t s = round * 200 + 1; s <= round * 200 + 200; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(s, now), kLimit)));
    }
  }
  auto store = open_or_die(dir.sub("db"));
  auto held = read_after_sync(*store, kLobby, 0, 1000);
  ASSERT_TRUE(held);
  EXPECT_GE(held->size(), kLimit);
  EXPECT_LE(held->size(), history_max_held(kLimit));
  EXPECT_EQ(seqs_of(*held), seq_range(601 - held->size(), 600));
}

// After a power loss with fsync = never (or an accepted data loss) a channel
// continues above the store's seq ceiling, which may be millions of seqs above
// a quiet channel's last one (the ceiling is the busiest channel's). Retention
// counts messages: the 10 messages below such a jump stay until `history` newer
// ones push them out, before and after a reopen (gap records); a trim drops the
// gap records below what it keeps.
TEST(EmbeddedStore, RetentionCountsMessagesNotSeqsAcrossAJump) {
  TempDir dir;
  constexpr uint32_t kLimit = 100;  // trims once history_max_held(100) = 164 are held
  const int64_t now = wall_ms();
  const ChannelKey quiet{"demo", "chat:quiet"};
  auto count_gaps = [&](const std::string& path) {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options o;
    EXPECT_TRUE(rocksdb::DB::OpenForReadOnly(o, path, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    const std::string prefix = channel_prefix(kGapTag, quiet);
    int n = 0;
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
    return n;
  };
  {
    auto store = open_or_die(dir.sub("db"));
    ASSERT_NE(store, nullptr);
    for (uint64_t s = 1; s <= 10; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(quiet, make_msg(s, now), kLimit)));
    }
    // The jump: 5,000,000 seqs, then 100 more messages (110 held, none trimmed).
    for (uint64_t s = 5'000'001; s <= 5'000'100; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(quiet, make_msg(s, now), kLimit)));
    }
    auto held = read_after_sync(*store, quiet, 0, 1000);
    ASSERT_TRUE(held);
    std::vector<uint64_t> want = seq_range(1, 10);
    for (uint64_t s : seq_range(5'000'001, 5'000'100)) want.push_back(s);
    EXPECT_EQ(seqs_of(*held), want);
  }
  EXPECT_EQ(count_gaps(dir.sub("db")), 1);
  {
    // A second jump after a reopen (the committer learns the first gap from its
    // record), then enough to trim: what is kept is the latest 100 messages,
    // counted over both gaps.
    auto store = open_or_die(dir.sub("db"));
    ASSERT_NE(store, nullptr);
    for (uint64_t s = 9'000'001; s <= 9'000'050; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(quiet, make_msg(s, now), kLimit)));
    }
    auto held = read_after_sync(*store, quiet, 0, 1000);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->size(), 160u);  // below 164: nothing trimmed yet
    EXPECT_EQ(held->front().seq, 1u);
    for (uint64_t s = 9'000'051; s <= 9'000'055; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(quiet, make_msg(s, now), kLimit)));
    }
    held = read_after_sync(*store, quiet, 0, 1000);
    ASSERT_TRUE(held);
    // 165 held: trimmed to the latest 100 = the last 45 before the second jump
    // and the 55 after it; the first gap's record went with the trim.
    std::vector<uint64_t> want = seq_range(5'000'056, 5'000'100);
    for (uint64_t s : seq_range(9'000'001, 9'000'055)) want.push_back(s);
    EXPECT_EQ(seqs_of(*held), want);
  }
  EXPECT_EQ(count_gaps(dir.sub("db")), 1);
}

// The memtable links each channel's next message in next to its previous one
// (insert hints per channel prefix) while trims add range tombstones to the
// same memtable: Debian's RocksDB shares those hints between the two skiplists,
// so a tombstone that took a message's hint would corrupt both. Channels of
// several name lengths (7 bytes: the bare prefix minus 8 bytes ends at the
// tenant's NUL) append interleaved, trimming all along; every one reads back
// exactly its newest messages in order, before and after a reopen.
TEST(EmbeddedStore, InterleavedChannelsTrimmingInOneMemtableReadBackInOrder) {
  TempDir dir;
  constexpr uint32_t kLimit = 16;
  const std::vector<ChannelKey> channels = {
      {"demo", "hunt\x1f" "0"}, {"demo", "hunt\x1f" "1"}, {"demo", "abcdefg"},
      {"demo", "a"},          {"de", "chat:lobby-with-a-longer-name"}};
  const int64_t now = wall_ms();
  constexpr uint64_t kPerChannel = 600;
  auto check = [&](Store& store) {
    for (const auto& ch : channels) {
      auto held = read_after_sync(store, ch, 0, 1000);
      ASSERT_TRUE(held);
      EXPECT_GE(held->size(), kLimit) << ch.channel;
      EXPECT_LE(held->size(), history_max_held(kLimit)) << ch.channel;
      EXPECT_EQ(seqs_of(*held), seq_range(kPerChannel + 1 - held->size(), kPerChannel)) << ch.channel;
      auto before = read_before_sync(store, ch, kPerChannel + 1, 5);
      ASSERT_TRUE(before);
      EXPECT_EQ(seqs_of(*before), seq_range(kPerChannel - 4, kPerChannel)) << ch.channel;
      // Every dedupe record (inserted at its channel's run end, through the same
      // insert hints as the messages, beside the trims' range tombstones) is there,
      // in seq order, each with its own message's id.
      auto rec = recover_sync(store, ch, 0);
      ASSERT_TRUE(rec);
      EXPECT_EQ(rec->last_seq, kPerChannel);
      std::vector<uint64_t> dedupe_seqs;
      for (const auto& e : rec->dedupe) {
        EXPECT_EQ(e.id, "m" + std::to_string(e.seq)) << ch.channel;
        dedupe_seqs.push_back(e.seq);
      }
      EXPECT_EQ(dedupe_seqs, seq_range(1, kPerChannel)) << ch.channel;
    }
  };
  {
    auto store = open_or_die(dir.sub("db"));
    ASSERT_NE(store, nullptr);
    std::atomic<int> failed{0};
    for (uint64_t s = 1; s <= kPerChannel; ++s) {
      // Asynchronous, so that many channels' appends and trims share a batch.
      for (const auto& ch : channels) {
        store->append(make_req(ch, make_msg(s, now), kLimit), [&failed](AppendOutcome out) {
          if (!out) failed.fetch_add(1);
        });
      }
      if (s % 100 == 0) {
        ASSERT_TRUE(append_sync(*store, make_req({"demo", "sync"}, make_msg(s / 100, now))));
      }
    }
    ASSERT_TRUE(append_sync(*store, make_req({"demo", "sync"}, make_msg(kPerChannel, now))));
    EXPECT_EQ(failed.load(), 0);
    check(*store);
  }
  auto store = open_or_die(dir.sub("db"));
  ASSERT_NE(store, nullptr);
  check(*store);
}

TEST(EmbeddedStore, FsyncAlwaysAppendsAreDurable) {
  TempDir dir;
  {
    auto store = open_or_die(dir.sub("db"), FsyncMode::kAlways);
    for (uint64_t s = 1; s <= 5; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(s, wall_ms()))));
    }
  }
  auto store = open_or_die(dir.sub("db"));
  auto rec = recover_sync(*store, kLobby, 0);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->last_seq, 5u);
}

// ---- Compaction priority

// The nice value of this process's threads named `name` (/proc/self/task).
std::vector<int> nice_of_threads(const std::string& name) {
  std::vector<int> out;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string c;
    std::getline(comm, c);
    if (c != name) continue;
    std::ifstream stat(t.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the parenthesised name: state is field 3, nice field 19.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i) {
      if (i == 19) out.push_back(std::stoi(field));
    }
  }
  return out;
}

// Compaction yields the CPU to the server's threads (embedded_store.cc,
// CompactionYields): the thread that ran a compaction is 10 nice steps below the
// process, the flush thread is not.
TEST(EmbeddedStore, CompactionThreadRunsTenNiceStepsBelowTheProcess) {
  TempDir dir;
  auto store = open_or_die(dir.sub("db"));
  for (uint64_t s = 1; s <= 50; ++s) {
    ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(s, wall_ms()))));
  }
  auto* embedded = dynamic_cast<EmbeddedStore*>(store.get());
  ASSERT_NE(embedded, nullptr);
  ASSERT_TRUE(embedded->compact());
  errno = 0;
  const int process_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(getpid()));
  ASSERT_EQ(errno, 0);
  const auto low = nice_of_threads("rocksdb:low");
  ASSERT_FALSE(low.empty());
  EXPECT_EQ(low.front(), std::min(19, process_nice + 10));
  for (int n : nice_of_threads("rocksdb:high")) EXPECT_EQ(n, process_nice);
}

// ---- Completion rounds

// runtime::Inbox posts one drain per round of the writer (runtime/loop_tail.h):
// what a callback defers runs after every completion of its group commit, on
// the writer thread, and never before its own completion.
TEST(EmbeddedStore, DeferredWorkRunsAfterTheWholeRoundOfCompletions) {
  TempDir dir;
  auto store = open_or_die(dir.sub("db"));
  constexpr int kN = 200;
  struct Round {
    std::atomic<int> completed{0};
    std::mutex mu;
    std::vector<std::pair<int, int>> deferred;  // (completions when deferred, when run)
    std::promise<void> all;
  } round;
  struct Deferral {
    Round* round;
    int at = 0;
    static void run(void* arg) {
      auto* d = static_cast<Deferral*>(arg);
      std::lock_guard lock(d->round->mu);
      d->round->deferred.emplace_back(d->at, d->round->completed.load());
      if (d->round->deferred.size() == kN) d->round->all.set_value();
    }
  };
  std::vector<Deferral> deferrals(kN, Deferral{&round});
  std::vector<std::pair<AppendRequest, AppendDone>> reqs;
  for (int i = 1; i <= kN; ++i) {
    reqs.emplace_back(make_req(kLobby, make_msg(static_cast<uint64_t>(i), wall_ms())),
                      [&, i](AppendOutcome out) {
                        EXPECT_TRUE(out.status());
                        Deferral& d = deferrals[i - 1];
                        d.at = ++round.completed;
                        EXPECT_TRUE(runtime::TailScope::defer(&Deferral::run, &d));
                      });
  }
  // One submission under one lock: the writer takes all of it in one group
  // commit (max_batch 4096), so every deferred call sees all 200 completed.
  store->append_many(std::move(reqs));
  ASSERT_EQ(round.all.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  std::lock_guard lock(round.mu);
  for (const auto& [at, ran] : round.deferred) {
    EXPECT_GE(ran, at);
    EXPECT_EQ(ran, kN);
  }
  // Outside a round (this thread) nothing is deferred: the caller runs it now.
  EXPECT_FALSE(runtime::TailScope::defer(&Deferral::run, &deferrals[0]));
}

// ---- Opening

TEST(EmbeddedStore, OpeningAnOpenDirInTheSameProcessFails) {
  TempDir dir;
  auto first = open_or_die(dir.sub("db"));
  ASSERT_NE(first, nullptr);
  auto second = open_embedded_store(EmbeddedOptions{dir.sub("db")});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(second.error().msg.find("already in use"), std::string::npos) << second.error().msg;
}

TEST(EmbeddedStore, OpeningADirHeldByAnotherProcessFails) {
  TempDir dir;
  Child child = spawn_child(testing::kHoldChildFlag, dir.sub("db"), {});
  ASSERT_GT(child.pid, 0);
  char ready = 0;
  ASSERT_EQ(read(child.fd, &ready, 1), 1) << "the child could not open the store";
  auto second = open_embedded_store(EmbeddedOptions{dir.sub("db")});
  kill(child.pid, SIGKILL);
  reap(child);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(second.error().msg.find("already in use"), std::string::npos) << second.error().msg;
  // The lock dies with its process.
  EXPECT_NE(open_or_die(dir.sub("db")), nullptr);
}

TEST(EmbeddedStore, OpeningAnUnusableDirFails) {
  TempDir dir;
  int fd = open(dir.sub("file").c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  auto r = open_embedded_store(EmbeddedOptions{dir.sub("file") + "/db"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(open_embedded_store(EmbeddedOptions{""}));
}

// ---- Dedupe expiry

TEST(EmbeddedStore, RecoverDeletesExpiredDedupeRecordsItSkips) {
  TempDir dir;
  auto store = open_or_die(dir.sub("db"));
  const int64_t now = wall_ms();
  const int64_t hours_ago = now - 3 * 3600 * 1000;
  ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(1, hours_ago))));
  ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(2, now))));
  auto rec = recover_sync(*store, kLobby, now - 120 * 1000);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->dedupe.size(), 1u);
  EXPECT_EQ(rec->dedupe[0].seq, 2u);
  // Seq 1's record (expired three hours ago) is gone, not merely skipped.
  rec = recover_sync(*store, kLobby, 0);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->dedupe.size(), 1u);
  EXPECT_EQ(rec->dedupe[0].seq, 2u);
  EXPECT_EQ(rec->last_seq, 2u);
}

// Issue 11: ("a", "b\0c") and ("a\0b", "c") were one record; now two.
TEST(EmbeddedStore, DedupeRecordsOfPairsThatShareBytesStayApart) {
  using namespace std::string_literals;
  TempDir dir;
  {
    auto store = open_or_die(dir.sub("db"));
    StoredMessage m1 = make_msg(1, wall_ms()), m2 = make_msg(2, wall_ms());
    m1.from = "a", m1.id = "b\0c"s;
    m2.from = "a\0b"s, m2.id = "c";
    ASSERT_TRUE(append_sync(*store, make_req(kLobby, m1)));
    ASSERT_TRUE(append_sync(*store, make_req(kLobby, m2)));
  }
  auto store = open_or_die(dir.sub("db"));
  auto rec = testing::recover_sync(*store, kLobby, 0);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->dedupe.size(), 2u);
  for (const auto& e : rec->dedupe) {
    if (e.seq == 1) {
      EXPECT_EQ(e.from, "a");
      EXPECT_EQ(e.id, "b\0c"s);
    } else {
      EXPECT_EQ(e.seq, 2u);
      EXPECT_EQ(e.from, "a\0b"s);
      EXPECT_EQ(e.id, "c");
    }
  }
}

// A data dir written before issue 11 holds 'd' tenant\0channel\0from\0id records:
// they are still recovered (and expire as before).
TEST(EmbeddedStore, RecoversDedupeRecordsOfThePreviousLayout) {
  TempDir dir;
  const int64_t now = wall_ms();
  {
    auto store = open_or_die(dir.sub("db"));
    ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(1, now))));
  }
  {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options o;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir.sub("db"), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string v;
    encode_dedupe_value({1, now, now + 120'000}, v);
    std::string k = channel_prefix(kLegacyDedupeTag, kLobby) + std::string("old-user\0old-id", 15);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), k, v).ok());
    encode_dedupe_value({1, now - 7'200'000, now - 7'080'000}, v);
    k = channel_prefix(kLegacyDedupeTag, kLobby) + std::string("old-user\0gone", 13);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), k, v).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  auto store = open_or_die(dir.sub("db"));
  auto rec = testing::recover_sync(*store, kLobby, now - 120'000);
  ASSERT_TRUE(rec);
  bool legacy = false;
  for (const auto& e : rec->dedupe) {
    EXPECT_NE(e.id, "gone");
    if (e.from == "old-user" && e.id == "old-id") legacy = e.seq == 1;
  }
  EXPECT_TRUE(legacy);
}

// A data dir written before dedupe records were ordered by seq holds 'k' tenant \0
// channel \0 DedupeKey records (issue 11's layout): recovered beside the new ones
// (older layouts first), expired ones skipped and deleted, and appends go on.
TEST(EmbeddedStore, RecoversDedupeRecordsOfTheIdOrderedLayout) {
  TempDir dir;
  const int64_t now = wall_ms();
  {
    auto store = open_or_die(dir.sub("db"));
    ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(1, now))));
  }
  std::string live_key, gone_key;
  {
    // What the previous build wrote for seqs 2 and 3 (and one record long expired).
    rocksdb::DB* raw = nullptr;
    rocksdb::Options o;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir.sub("db"), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string v;
    encode_dedupe_value({2, now, now + 120'000}, v);
    live_key = channel_prefix(kIdDedupeTag, kLobby) + std::string(DedupeKey("old-user", "old-id").bytes());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), live_key, v).ok());
    encode_dedupe_value({3, now - 7'200'000, now - 7'080'000}, v);
    gone_key = channel_prefix(kIdDedupeTag, kLobby) + std::string(DedupeKey("old-user", "gone").bytes());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), gone_key, v).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  auto store = open_or_die(dir.sub("db"));
  ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(4, now))));
  auto rec = testing::recover_sync(*store, kLobby, now - 120'000);
  ASSERT_TRUE(rec);
  std::vector<std::pair<uint64_t, std::string>> got;
  for (const auto& e : rec->dedupe) got.emplace_back(e.seq, e.from + "/" + e.id);
  // The 'k' record first (older layout), then the seq-ordered ones.
  const std::vector<std::pair<uint64_t, std::string>> want = {
      {2, "old-user/old-id"}, {1, "u1/m1"}, {4, "u1/m4"}};
  EXPECT_EQ(got, want);
  // The expired 'k' record was deleted by that recovery (not merely skipped: a
  // cutoff of 0 would return it), the live one kept.
  rec = testing::recover_sync(*store, kLobby, 0);
  ASSERT_TRUE(rec);
  std::set<uint64_t> seqs;
  for (const auto& e : rec->dedupe) seqs.insert(e.seq);
  EXPECT_EQ(seqs, (std::set<uint64_t>{1, 2, 4}));
}

// Keyed by seq, an id reused after its window has a record per use: recovery
// answers it once, with its newest seq, and keeps the others in their order.
TEST(EmbeddedStore, RecoveryAnswersAReusedIdOnceWithItsNewestSeq) {
  TempDir dir;
  const int64_t now = wall_ms();
  {
    auto store = open_or_die(dir.sub("db"));
    const char* ids[] = {"a", "b", "a", "c", "a"};
    for (uint64_t s = 1; s <= 5; ++s) {
      ASSERT_TRUE(append_sync(*store, make_req(kLobby, make_msg(s, now, "u1", ids[s - 1]))));
    }
  }
  auto store = open_or_die(dir.sub("db"));
  auto rec = recover_sync(*store, kLobby, 0);
  ASSERT_TRUE(rec);
  std::vector<std::pair<uint64_t, std::string>> got;
  for (const auto& e : rec->dedupe) got.emplace_back(e.seq, e.id);
  const std::vector<std::pair<uint64_t, std::string>> want = {{2, "b"}, {4, "c"}, {5, "a"}};
  EXPECT_EQ(got, want);
}

// Issue 11, finding 8: the writer's per-channel state (~150 B) used to stay for
// every channel ever written.
TEST(EmbeddedStore, TheWriterForgetsIdleChannelsAndReloadsThemWhenWrittenAgain) {
  TempDir dir;
  EmbeddedOptions eo{dir.sub("db")};
  eo.channel_idle_ms = 2000;  // far above the time the 150 appends take, even loaded
  auto opened = EmbeddedStore::open(eo);
  ASSERT_TRUE(opened);
  EmbeddedStore& store = **opened;
  for (int c = 0; c < 50; ++c) {
    ChannelKey ch{"demo", "chat:" + std::to_string(c)};
    for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(append_sync(store, make_req(ch, make_msg(s, wall_ms()), 1)));
  }
  EXPECT_EQ(store.channels_tracked(), 50u);
  // No more writes: the writer wakes up by itself to forget them.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (store.channels_tracked() > 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(store.channels_tracked(), 0u);
  // Written again: its range comes back from the disk, so a stale seq is still
  // refused and trimming goes on from the stored oldest message.
  ChannelKey ch{"demo", "chat:7"};
  Status stale = append_sync(store, make_req(ch, make_msg(3, wall_ms()), 1));
  EXPECT_FALSE(stale);
  for (uint64_t s = 4; s <= 200; ++s) ASSERT_TRUE(append_sync(store, make_req(ch, make_msg(s, wall_ms()), 1)));
  auto msgs = testing::read_after_sync(store, ch, 0, 1000);
  ASSERT_TRUE(msgs);
  EXPECT_LE(msgs->size(), history_max_held(1));
  EXPECT_EQ(msgs->back().seq, 200u);
  EXPECT_EQ(store.channels_tracked(), 1u);
}

TEST(EmbeddedStore, CompactionDropsExpiredDedupeRecords) {
  TempDir dir;
  auto opened = EmbeddedStore::open(EmbeddedOptions{dir.sub("db")});
  ASSERT_TRUE(opened);
  EmbeddedStore& store = **opened;
  const int64_t now = wall_ms();
  const int64_t hours_ago = now - 3 * 3600 * 1000;
  for (uint64_t s = 1; s <= 20; ++s) {
    int64_t ts = s <= 15 ? hours_ago : now;
    ASSERT_TRUE(append_sync(store, make_req(kLobby, make_msg(s, ts))));
  }
  ASSERT_TRUE(store.compact());
  auto rec = recover_sync(store, kLobby, 0);
  ASSERT_TRUE(rec);
  std::set<uint64_t> seqs;
  for (const auto& e : rec->dedupe) seqs.insert(e.seq);
  EXPECT_EQ(seqs, (std::set<uint64_t>{16, 17, 18, 19, 20}));
  // Messages are history, not dedupe state: compaction keeps them all.
  auto msgs = read_after_sync(store, kLobby, 0, 100);
  ASSERT_TRUE(msgs);
  EXPECT_EQ(msgs->size(), 20u);
}

// ---- Write failure

// Fails every append to a WAL file (*.log) while `fail` is set.
class FailingWalFs final : public rocksdb::FileSystemWrapper {
 public:
  FailingWalFs(std::shared_ptr<std::atomic<bool>> fail)
      : FileSystemWrapper(rocksdb::FileSystem::Default()), fail_(std::move(fail)) {}
  const char* Name() const override { return "FailingWalFs"; }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(name, opts, file, dbg);
    if (s.ok() && name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0) {
      *file = std::make_unique<File>(std::move(*file), fail_);
    }
    return s;
  }

 private:
  class File final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> f, std::shared_ptr<std::atomic<bool>> fail)
        : FSWritableFileOwnerWrapper(std::move(f)), fail_(std::move(fail)) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (*fail_) return rocksdb::IOStatus::IOError("injected WAL failure");
      return FSWritableFileOwnerWrapper::Append(data, o, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (*fail_) return rocksdb::IOStatus::IOError("injected WAL failure");
      return FSWritableFileOwnerWrapper::Append(data, o, info, dbg);
    }

   private:
    std::shared_ptr<std::atomic<bool>> fail_;
  };

  std::shared_ptr<std::atomic<bool>> fail_;
};

TEST(EmbeddedStore, WriteFailureFailsTheBatchAndLaterAppendsUntilTheStoreRecovers) {
  TempDir dir;
  auto fail = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(std::make_shared<FailingWalFs>(fail));
  const int64_t now = wall_ms();
  {
    auto opened = EmbeddedStore::open(EmbeddedOptions{dir.sub("db")}, env.get());
    ASSERT_TRUE(opened) << opened.error().msg;
    EmbeddedStore& store = **opened;
    ASSERT_TRUE(append_sync(store, make_req(kLobby, make_msg(1, now))));
    ASSERT_TRUE(append_sync(store, make_req(kLobby, make_msg(2, now))));
    EXPECT_TRUE(store.health().writable);

    *fail = true;
    Status st = append_sync(store, make_req(kLobby, make_msg(3, now)));
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
    EXPECT_GT(st.error().retry_ms, 0);
    // The client's text names no file (the WAL's path is in the store's error).
    EXPECT_EQ(st.error().msg.find('/'), std::string::npos) << st.error().msg;
    StoreHealth h = store.health();
    EXPECT_FALSE(h.writable);
    EXPECT_EQ(h.reason, "io_error");
    EXPECT_GT(h.since_ms, 0);

    // Appends right after the failure are refused: writing 4 after a lost 3 would
    // leave a gap.
    *fail = false;
    std::vector<Status> later(3);
    for (uint64_t s = 4; s <= 6; ++s) {
      store.append(make_req(kLobby, make_msg(s, now)), [&later, s](AppendOutcome r) { later[s - 4] = r.status(); });
    }
    store.flush();
    for (const Status& r : later) {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
    }

    // The disk works again: within a few retry periods the store takes appends, and
    // the channel continues from what was written, as the hub reloads it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    Status resumed = Error{ErrorCode::kUnavailable, "not tried"};
    uint64_t next = 0;
    while (!resumed && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto rec = store.recover_now(kLobby, 0);
      ASSERT_TRUE(rec);
      next = rec->last_seq + 1;
      resumed = append_sync(store, make_req(kLobby, make_msg(next, now)));
    }
    ASSERT_TRUE(resumed) << resumed.error().msg;
    EXPECT_TRUE(next == 3 || next == 4) << next;
    EXPECT_TRUE(store.health().writable);
  }
  auto store = open_or_die(dir.sub("db"));
  auto msgs = read_after_sync(*store, kLobby, 0, 100);
  ASSERT_TRUE(msgs);
  // Seq 3 may or may not have reached the WAL (RocksDB can retry its buffered
  // record when it recovers); either way the history is gap-free.
  std::vector<uint64_t> seqs = seqs_of(*msgs);
  EXPECT_TRUE(seqs == seq_range(1, 3) || seqs == seq_range(1, 4)) << seqs.size();
}

// ---- kill -9

// Reads AckRecords from the child; kills it with SIGKILL once `kill_after` acks
// have arrived, then drains what it had already reported.
std::vector<testing::AckRecord> run_and_kill(Child& child, size_t kill_after, std::mt19937_64& rng) {
  std::vector<testing::AckRecord> acks;
  std::string buf;
  char chunk[4096];
  bool killed = false;
  for (;;) {
    ssize_t n = read(child.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t used = 0;
    for (; buf.size() - used >= sizeof(testing::AckRecord); used += sizeof(testing::AckRecord)) {
      testing::AckRecord r;
      memcpy(&r, buf.data() + used, sizeof r);
      acks.push_back(r);
    }
    buf.erase(0, used);
    if (!killed && acks.size() >= kill_after) {
      // A little jitter so the kill lands anywhere in the writer's cycle.
      usleep(static_cast<useconds_t>(rng() % 2000));
      kill(child.pid, SIGKILL);
      killed = true;
    }
  }
  return acks;
}

TEST(EmbeddedStoreCrash, AcknowledgedAppendsSurviveKill9WithoutGaps) {
  TempDir dir;
  const std::string db = dir.sub("db");
  const int64_t base_ts = wall_ms();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> max_acked(testing::kCrashChannels, 0);

  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Child child = spawn_child(testing::kCrashChildFlag, db, {std::to_string(base_ts)});
    ASSERT_GT(child.pid, 0);
    size_t kill_after = 100 + rng() % 20'000;
    auto acks = run_and_kill(child, kill_after, rng);
    int status = reap(child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child ended on its own, status " << status << ", after " << acks.size() << " acks";
    ASSERT_GE(acks.size(), kill_after);
    for (const auto& a : acks) {
      ASSERT_LT(a.channel, uint32_t{testing::kCrashChannels});
      // Per channel, acks arrive in seq order and continue the previous round.
      ASSERT_EQ(a.seq > max_acked[a.channel], true);
      max_acked[a.channel] = a.seq;
    }

    auto store = open_or_die(db);
    ASSERT_NE(store, nullptr);
    for (int c = 0; c < testing::kCrashChannels; ++c) {
      SCOPED_TRACE("channel " + std::to_string(c));
      ChannelKey key = testing::crash_channel(c);
      auto rec = recover_sync(*store, key, 0);
      ASSERT_TRUE(rec);
      EXPECT_GE(rec->last_seq, max_acked[c]);
      auto msgs = read_after_sync(*store, key, 0, UINT32_MAX);
      ASSERT_TRUE(msgs);
      // Every acked seq, and whatever was written beyond, with no gap.
      ASSERT_EQ(seqs_of(*msgs), seq_range(1, rec->last_seq));
      for (const auto& m : *msgs) {
        StoredMessage want = testing::crash_message(c, m.seq, base_ts);
        ASSERT_EQ(m.ts_ms, want.ts_ms);
        ASSERT_EQ(m.from, want.from);
        ASSERT_EQ(m.id, want.id);
        ASSERT_EQ(m.body, want.body);
      }
      // Each message's dedupe record was written with it, atomically.
      ASSERT_EQ(rec->dedupe.size(), rec->last_seq);
      for (const auto& e : rec->dedupe) {
        ASSERT_EQ(e.id, testing::crash_message(c, e.seq, base_ts).id);
      }
    }
  }
}

}  // namespace
}  // namespace parley::store
