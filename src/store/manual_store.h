// A Store whose every call waits until the test completes it (or fails it), for
// Dragonfly-style tests of the layers above the store (hub_test,
// client_session_test): the test sees each call the code under test made, in
// order, and answers it when it chooses, from its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include <gtest/gtest.h>

#include "store/store.h"

namespace parley::store::testing {

inline constexpr auto kManualStoreWait = std::chrono::seconds(5);

struct StoreCall {
  enum Kind { kRecover, kAppend, kReadAfter, kReadBefore } kind;
  ChannelId id;
  uint64_t bound = 0;  // after / before
  uint32_t limit = 0;
  AppendRequest append;
  RecoverDone recover_done;
  AppendDone append_done;
  ReadDone read_done;
};

class ManualStore final : public Store {
 public:
  void recover(const ChannelKey& key, int64_t, RecoverDone done) override {
    StoreCall c = call(StoreCall::kRecover, key);
    c.recover_done = std::move(done);
    push(std::move(c));
  }
  void append(AppendRequest req, AppendDone done) override {
    StoreCall c = call(StoreCall::kAppend, req.key);
    c.append = std::move(req);
    c.append_done = std::move(done);
    push(std::move(c));
  }
  void read_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                  ReadDone done) override {
    StoreCall c = call(StoreCall::kReadAfter, key, after, limit);
    c.read_done = std::move(done);
    push(std::move(c));
  }
  void read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                   ReadDone done) override {
    StoreCall c = call(StoreCall::kReadBefore, key, before, limit);
    c.read_done = std::move(done);
    push(std::move(c));
  }
  void flush() override {}
  size_t pending() const override { return 0; }

  // The next call the hub made (waits for it).
  StoreCall next() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, kManualStoreWait, [&] { return !calls_.empty(); })) << "no store call";
    if (calls_.empty()) return call(StoreCall::kRecover, ChannelId{});
    StoreCall c = std::move(calls_.front());
    calls_.pop_front();
    return c;
  }
  StoreCall next(StoreCall::Kind kind) {
    StoreCall c = next();
    EXPECT_EQ(c.kind, kind);
    return c;
  }
  // True when no call arrives within `d`: for "the hub asked nothing more".
  bool quiet_for(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, d, [&] { return !calls_.empty(); });
  }

 private:
  static StoreCall call(StoreCall::Kind kind, const ChannelId& id, uint64_t bound = 0,
                        uint32_t limit = 0) {
    StoreCall c;
    c.kind = kind;
    c.id = id;
    c.bound = bound;
    c.limit = limit;
    return c;
  }
  void push(StoreCall c) {
    {
      std::lock_guard lock(mu_);
      calls_.push_back(std::move(c));
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StoreCall> calls_;
};

// Completes a recover with `last_seq` (no dedupe entries).
inline void recovered(StoreCall& c, uint64_t last_seq) {
  ChannelRecovery r;
  r.last_seq = last_seq;
  c.recover_done(std::move(r));
}

}  // namespace parley::store::testing
