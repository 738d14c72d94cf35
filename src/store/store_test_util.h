// Helpers shared by the store tests (test code only).
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "runtime/loop_group.h"
#include "store/store.h"

namespace parley::store::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/parley-store-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Two running event loops for the stores that live on the server's loops (valkey),
// started on first use and kept for the test binary's life.
inline runtime::LoopGroup& test_loops() {
  static runtime::LoopGroup* loops = [] {
    auto* g = new runtime::LoopGroup(2);
    g->start();
    return g;
  }();
  return *loops;
}

inline StoredMessage make_msg(uint64_t seq, int64_t ts_ms, std::string from = "u1",
                              std::string id = "", std::string body = "") {
  if (id.empty()) id = "m" + std::to_string(seq);
  if (body.empty()) body = R"({"n":)" + std::to_string(seq) + "}";
  return StoredMessage{seq, ts_ms, std::move(from), std::move(id), std::move(body)};
}

inline AppendRequest make_req(const ChannelKey& key, StoredMessage msg,
                              uint32_t history_limit = 1000, uint32_t dedupe_window_s = 120) {
  return AppendRequest{key, std::move(msg), history_limit, dedupe_window_s};
}

// Appends and waits for the completion.
inline Status append_sync(Store& store, AppendRequest req) {
  std::promise<Status> p;
  auto f = p.get_future();
  store.append(std::move(req), [&p](AppendOutcome o) { p.set_value(o.status()); });
  return f.get();
}

// Appends and waits for the whole outcome (seq, dup, epoch).
inline AppendOutcome append_outcome(Store& store, AppendRequest req) {
  std::promise<AppendOutcome> p;
  auto f = p.get_future();
  store.append(std::move(req), [&p](AppendOutcome o) { p.set_value(std::move(o)); });
  return f.get();
}

// The asynchronous calls, waited for (tests run off the event loops).
inline Result<ChannelRecovery> recover_sync(Store& store, const ChannelKey& key,
                                            int64_t cutoff_ms) {
  std::promise<Result<ChannelRecovery>> p;
  auto f = p.get_future();
  store.recover(key, cutoff_ms, [&p](Result<ChannelRecovery> r) { p.set_value(std::move(r)); });
  return f.get();
}

inline Result<std::vector<StoredMessage>> read_after_sync(Store& store, const ChannelKey& key,
                                                          uint64_t after, uint32_t limit) {
  std::promise<Result<std::vector<StoredMessage>>> p;
  auto f = p.get_future();
  store.read_after(key, after, limit,
                   [&p](Result<std::vector<StoredMessage>> r) { p.set_value(std::move(r)); });
  return f.get();
}

inline Result<std::vector<StoredMessage>> read_before_sync(Store& store, const ChannelKey& key,
                                                           uint64_t before, uint32_t limit) {
  std::promise<Result<std::vector<StoredMessage>>> p;
  auto f = p.get_future();
  store.read_before(key, before, limit,
                    [&p](Result<std::vector<StoredMessage>> r) { p.set_value(std::move(r)); });
  return f.get();
}

inline std::vector<uint64_t> seqs_of(const std::vector<StoredMessage>& msgs) {
  std::vector<uint64_t> out;
  for (const auto& m : msgs) out.push_back(m.seq);
  return out;
}

inline std::vector<uint64_t> seq_range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

// ---- The crash test's child process (store_test_main.cc) and its expectations.

inline constexpr const char* kCrashChildFlag = "--parley-crash-child";  // dir fd base_ts
inline constexpr const char* kHoldChildFlag = "--parley-hold-child";    // dir fd
inline constexpr int kCrashChannels = 3;
inline constexpr uint32_t kCrashHistoryLimit = 10'000'000;  // nothing trimmed
inline constexpr uint32_t kCrashDedupeWindowS = 24 * 3600;

// What the child reports per completed append.
struct AckRecord {
  uint32_t channel;
  uint32_t pad;
  uint64_t seq;
};

inline ChannelKey crash_channel(int c) { return ChannelKey{"crash", "ch:" + std::to_string(c)}; }

// Contents are a pure function of (channel, seq), so the parent can check them.
inline StoredMessage crash_message(int c, uint64_t seq, int64_t base_ts) {
  std::string body = R"({"c":)" + std::to_string(c) + R"(,"seq":)" + std::to_string(seq) +
                     R"(,"pad":")" + std::string((seq * 37) % 300, 'x') + "\"}";
  return StoredMessage{seq, base_ts + static_cast<int64_t>(seq), "u" + std::to_string(seq % 7),
                       "c" + std::to_string(c) + "-" + std::to_string(seq), std::move(body)};
}

}  // namespace parley::store::testing
