// MemoryStore: the non-durable Store, for tests and `durable = false` namespaces.
//
// Threading: any thread. Channels are spread over kShards maps by a hash of
// (tenant, channel), each behind its own mutex. A lock rather than shard-owned state
// because every hub shard calls this store and it completes inline (store.h allows
// it; callers never rely on it): a critical section is a map update without I/O,
// and two hub shards only contend when their channels hash to the same store shard.
// done() runs inline, after the lock is released, so a callback may call back into
// the store.
#include <algorithm>
#include <array>
#include <cassert>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "store/store.h"
#include "store/store_policy.h"

namespace parley::store {
namespace {

struct DedupeRecord {
  DedupeEntry entry;
  int64_t expiry_ms = 0;
};

struct Channel {
  uint64_t last_seq = 0;
  std::deque<StoredMessage> messages;  // ascending seq, trimmed per store_policy.h
  std::unordered_map<std::string, DedupeRecord> dedupe;  // key: from \0 id
  // (key, expiry) in insertion order, so expired entries leave from the front
  // without scanning the map.
  std::deque<std::pair<std::string, int64_t>> dedupe_order;
};

std::string channel_id(const ChannelKey& key) { return key.key(); }

class MemoryStore final : public Store {
 public:
  void recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) override {
    done(recover_now(key, dedupe_cutoff_ms));
  }

  Result<ChannelRecovery> recover_now(const ChannelKey& key, int64_t dedupe_cutoff_ms) {
    ChannelRecovery out;
    std::string id = channel_id(key);
    Shard& shard = shard_of(id);
    std::lock_guard lock(shard.mu);
    auto it = shard.channels.find(id);
    if (it == shard.channels.end()) return out;
    out.last_seq = it->second.last_seq;
    for (const auto& [k, rec] : it->second.dedupe) {
      if (rec.entry.ts_ms >= dedupe_cutoff_ms) out.dedupe.push_back(rec.entry);
    }
    return out;
  }

  void append(AppendRequest req, AppendDone done) override {
    std::string id = channel_id(req.key);
    Shard& shard = shard_of(id);
    const uint64_t seq = req.msg.seq;
    Status status;
    {
      std::lock_guard lock(shard.mu);
      Channel& ch = shard.channels[id];
      if (req.msg.seq <= ch.last_seq) {
        status = Error{ErrorCode::kInternal, std::string(kStaleSeqMessage)};
      } else {
        apply(ch, req);
      }
    }
    done(AppendOutcome{std::move(status), seq, false});
  }

  void read_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                  ReadDone done) override {
    done(read(key, [&](const auto& msgs, std::vector<StoredMessage>& out) {
      auto first = std::partition_point(msgs.begin(), msgs.end(),
                                        [&](const StoredMessage& m) { return m.seq <= after; });
      auto n = std::min<size_t>(limit, msgs.end() - first);
      out.assign(first, first + n);
    }));
  }

  void read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                   ReadDone done) override {
    done(read(key, [&](const auto& msgs, std::vector<StoredMessage>& out) {
      auto last = std::partition_point(msgs.begin(), msgs.end(),
                                       [&](const StoredMessage& m) { return m.seq < before; });
      auto n = std::min<size_t>(limit, last - msgs.begin());
      out.assign(last - n, last);
    }));
  }

  // Runs `pick(messages, out)` under the channel's shard lock; empty when the
  // channel has never been written.
  template <typename Pick>
  Result<std::vector<StoredMessage>> read(const ChannelKey& key, Pick pick) {
    std::vector<StoredMessage> out;
    std::string id = channel_id(key);
    Shard& shard = shard_of(id);
    std::lock_guard lock(shard.mu);
    auto it = shard.channels.find(id);
    if (it != shard.channels.end()) pick(it->second.messages, out);
    return out;
  }

  // Every call completes inline: nothing is ever outstanding.
  void flush() override {}
  size_t pending() const override { return 0; }

 private:
  static constexpr size_t kShards = 16;

  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, Channel> channels;  // key: ChannelId::key()
  };

  Shard& shard_of(const std::string& channel_id) {
    return shards_[std::hash<std::string>{}(channel_id) % kShards];
  }

  static void apply(Channel& ch, AppendRequest& req) {
    StoredMessage& msg = req.msg;
    ch.last_seq = msg.seq;
    // The message's own acceptance time is "now": expiry then needs no clock of
    // its own and is deterministic under test.
    expire_dedupe(ch, msg.ts_ms);
    if (!msg.id.empty()) add_dedupe(ch, msg, req.dedupe_window_s);
    ch.messages.push_back(std::move(msg));
    if (ch.messages.size() > history_max_held(req.history_limit)) {
      ch.messages.erase(ch.messages.begin(), ch.messages.end() - history_keep(req.history_limit));
    }
  }

  static void expire_dedupe(Channel& ch, int64_t now_ms) {
    while (!ch.dedupe_order.empty() && ch.dedupe_order.front().second < now_ms) {
      auto it = ch.dedupe.find(ch.dedupe_order.front().first);
      // The same (from, id) may have been written again since: only its newest
      // record decides.
      if (it != ch.dedupe.end() && it->second.expiry_ms < now_ms) ch.dedupe.erase(it);
      ch.dedupe_order.pop_front();
    }
  }

  static void add_dedupe(Channel& ch, const StoredMessage& msg, uint32_t window_s) {
    std::string k;
    k.reserve(msg.from.size() + 1 + msg.id.size());
    k.append(msg.from).push_back('\0');
    k.append(msg.id);
    int64_t expiry = msg.ts_ms + int64_t{window_s} * 1000;
    ch.dedupe[k] = DedupeRecord{DedupeEntry{msg.from, msg.id, msg.seq, msg.ts_ms}, expiry};
    ch.dedupe_order.emplace_back(std::move(k), expiry);
  }

  std::array<Shard, kShards> shards_;
};

}  // namespace

std::unique_ptr<Store> make_memory_store() { return std::make_unique<MemoryStore>(); }

}  // namespace parley::store
