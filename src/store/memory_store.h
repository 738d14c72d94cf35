// MemoryStore: the non-durable Store, for tests and `durable = false` namespaces.
//
// Threading: any thread. Channels are spread over kShards maps by a hash of
// (tenant, channel), each behind its own mutex. A lock rather than shard-owned state
// because every hub shard calls this store and it completes inline (store.h allows
// it; callers never rely on it): a critical section is a map update without I/O,
// and two hub shards only contend when their channels hash to the same store shard.
// done() runs inline, after the lock is released, so a callback may call back into
// the store.
//
// Bounded (issue 11, finding 8): nothing here is a durable record, so nothing is
// kept forever. sweep(), called periodically by the server:
//   - drops messages older than their namespace's history_ttl_s;
//   - forgets a channel with no message and no live dedupe entry once nobody has
//     written it for idle_evict_ms (longer than the hub keeps an idle channel
//     loaded, so the hub never reloads a channel it still holds). A channel written
//     again after that starts over at seq 1, as after a restart;
//   - while the estimate of memory held exceeds memory_budget_bytes, drops the
//     whole history of the channels written least recently, oldest first. Each
//     shard keeps its channels with history in a list in the order they were
//     written, so an eviction costs a look at the 16 list heads, not a sort of
//     every channel (which held loop 0 and every shard lock for seconds with
//     500,000 channels).
// Between sweeps a channel's history is still bounded by its `history` count.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "store/dedupe_table.h"
#include "store/store.h"

namespace parley::store {

struct MemoryStoreOptions {
  uint64_t memory_budget_bytes = 0;  // 0: no budget
  int64_t idle_evict_ms = 120'000;
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(MemoryStoreOptions opts = {});

  // Every call completes inline (store.h allows it; callers never rely on it).
  void recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) override;
  void append(AppendRequest req, AppendDone done) override;
  void read_after(const ChannelKey& key, uint64_t after, uint32_t limit, ReadDone done) override;
  void read_before(const ChannelKey& key, uint64_t before, uint32_t limit, ReadDone done) override;
  Result<ChannelRecovery> recover_now(const ChannelKey& key, int64_t dedupe_cutoff_ms);
  // Nothing is ever outstanding.
  void flush() override {}
  size_t pending() const override { return 0; }

  // See the header comment. Any thread; holds one shard's lock at a time.
  // sweep() is sweep_shard() of every shard, then enforce_budget(); a caller on
  // an event loop runs the steps as separate tasks, so that a store holding a
  // million channels never holds the loop (or another loop's appends) for the
  // whole walk.
  void sweep(int64_t now_ms);
  static constexpr size_t shard_count() { return kShards; }
  void sweep_shard(size_t shard, int64_t now_ms);
  void enforce_budget();

  // Estimate of the heap held by channels (records, messages, dedupe tables).
  uint64_t memory_bytes() const { return bytes_.load(std::memory_order_relaxed); }
  size_t channel_count() const { return channels_.load(std::memory_order_relaxed); }
  // Histories dropped because the budget was exceeded.
  uint64_t budget_evictions() const { return budget_evictions_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;

  struct Channel {
    uint64_t last_seq = 0;
    std::deque<StoredMessage> messages;  // ascending seq, trimmed per store_policy.h
    DedupeTable dedupe{0};
    uint32_t dedupe_window_s = 0;
    int64_t history_ttl_ms = 0;          // 0: no age bound
    int64_t last_write_ms = 0;
    uint64_t message_bytes = 0;
    uint64_t bytes = 0;                  // as counted in bytes_
    // The shard's list of channels holding history, least recently written
    // first (the budget's eviction order); linked only while messages are held.
    Channel* older = nullptr;
    Channel* newer = nullptr;
    bool listed = false;
    const std::string* id = nullptr;  // its key in the shard's map (nodes do not move)
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, Channel> channels;  // key: ChannelId::key()
    Channel* oldest = nullptr;  // head of the written-order list
    Channel* newest = nullptr;
    // oldest->last_write_ms (INT64_MAX: none), readable without the lock so
    // that enforce_budget() picks the shard to evict from by peeking.
    std::atomic<int64_t> oldest_write_ms{INT64_MAX};
  };

  Shard& shard_of(const std::string& channel_id);
  static uint64_t message_bytes(const StoredMessage& m);
  // Recounts c.bytes after a change and carries the difference into bytes_.
  void account(const std::string& id, Channel& c);
  void drop_front(Channel& c, size_t n);
  void apply(Channel& ch, AppendRequest& req);
  template <typename Pick>
  Result<std::vector<StoredMessage>> read(const ChannelKey& key, Pick pick);
  void erase_channel(Shard& s, std::unordered_map<std::string, Channel>::iterator it);
  // The written-order list, under s.mu: moves `c` to the newest end, or takes it out.
  static void list_newest(Shard& s, Channel& c);
  static void unlist(Shard& s, Channel& c);

  const MemoryStoreOptions opts_;
  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<size_t> channels_{0};
  std::atomic<uint64_t> budget_evictions_{0};
};

}  // namespace parley::store
