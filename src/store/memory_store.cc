#include "store/memory_store.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "store/dedupe_key.h"
#include "store/store_policy.h"

namespace parley::store {
namespace {

std::string channel_id(const ChannelKey& key) { return key.key(); }

uint64_t heap_of(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// A map node (key, Channel, next pointer, hash) and its bucket slot, roughly.
constexpr uint64_t kChannelRecordBytes = 64 + sizeof(std::string) + 8;

}  // namespace

MemoryStore::MemoryStore(MemoryStoreOptions opts) : opts_(opts) {}

MemoryStore::Shard& MemoryStore::shard_of(const std::string& id) {
  return shards_[std::hash<std::string>{}(id) % kShards];
}

uint64_t MemoryStore::message_bytes(const StoredMessage& m) {
  return sizeof(StoredMessage) + heap_of(m.from) + heap_of(m.id) + heap_of(m.body);
}

void MemoryStore::account(const std::string& id, Channel& c) {
  uint64_t now = kChannelRecordBytes + sizeof(Channel) + heap_of(id) + c.message_bytes +
                 c.dedupe.memory_bytes();
  // std::deque holds its elements in blocks of 512 bytes, plus a map of them.
  if (!c.messages.empty()) now += 512 + 64;
  if (now >= c.bytes) {
    bytes_.fetch_add(now - c.bytes, std::memory_order_relaxed);
  } else {
    bytes_.fetch_sub(c.bytes - now, std::memory_order_relaxed);
  }
  c.bytes = now;
}

void MemoryStore::drop_front(Channel& c, size_t n) {
  for (size_t i = 0; i < n; ++i) c.message_bytes -= message_bytes(c.messages[i]);
  c.messages.erase(c.messages.begin(), c.messages.begin() + static_cast<ptrdiff_t>(n));
  if (c.messages.empty()) std::deque<StoredMessage>().swap(c.messages);  // give the blocks back
}

void MemoryStore::unlist(Shard& s, Channel& c) {
  if (!c.listed) return;
  (c.older ? c.older->newer : s.oldest) = c.newer;
  (c.newer ? c.newer->older : s.newest) = c.older;
  c.older = c.newer = nullptr;
  c.listed = false;
  s.oldest_write_ms.store(s.oldest ? s.oldest->last_write_ms : INT64_MAX, std::memory_order_relaxed);
}

void MemoryStore::list_newest(Shard& s, Channel& c) {
  unlist(s, c);
  c.older = s.newest;
  (s.newest ? s.newest->newer : s.oldest) = &c;
  s.newest = &c;
  c.listed = true;
  s.oldest_write_ms.store(s.oldest->last_write_ms, std::memory_order_relaxed);
}

void MemoryStore::erase_channel(Shard& s, std::unordered_map<std::string, Channel>::iterator it) {
  unlist(s, it->second);
  bytes_.fetch_sub(it->second.bytes, std::memory_order_relaxed);
  channels_.fetch_sub(1, std::memory_order_relaxed);
  s.channels.erase(it);
}

void MemoryStore::recover(const ChannelKey& key, int64_t dedupe_cutoff_ms, RecoverDone done) {
  done(recover_now(key, dedupe_cutoff_ms));
}

Result<ChannelRecovery> MemoryStore::recover_now(const ChannelKey& key, int64_t dedupe_cutoff_ms) {
  ChannelRecovery out;
  std::string id = channel_id(key);
  Shard& shard = shard_of(id);
  std::lock_guard lock(shard.mu);
  auto it = shard.channels.find(id);
  if (it == shard.channels.end()) return out;
  out.last_seq = it->second.last_seq;
  it->second.dedupe.for_each([&](std::string_view k, uint64_t seq, int64_t ts) {
    if (ts < dedupe_cutoff_ms) return;
    auto dk = DedupeKey::from_bytes(k);
    if (dk) out.dedupe.push_back(DedupeEntry{std::string(dk->from()), std::string(dk->id()), seq, ts});
  });
  return out;
}

void MemoryStore::append(AppendRequest req, AppendDone done) {
  // A per-thread buffer: the key is copied only when the channel is new.
  const std::string& id = ChannelId::scratch_key(req.key.tenant, req.key.channel);
  Shard& shard = shard_of(id);
  const uint64_t seq = req.msg.seq;
  Status status;
  {
    std::lock_guard lock(shard.mu);
    auto [it, fresh] = shard.channels.try_emplace(id);
    if (fresh) {
      channels_.fetch_add(1, std::memory_order_relaxed);
      it->second.id = &it->first;
    }
    Channel& ch = it->second;
    if (req.msg.seq <= ch.last_seq) {
      status = Error{ErrorCode::kInternal, std::string(kStaleSeqMessage)};
    } else {
      apply(ch, req);
      if (ch.messages.empty()) {
        unlist(shard, ch);
      } else {
        list_newest(shard, ch);
      }
      account(it->first, ch);
    }
  }
  if (!status) return done(AppendOutcome{status.error()});
  done(Appended{seq, false});
}

void MemoryStore::apply(Channel& ch, AppendRequest& req) {
  StoredMessage& msg = req.msg;
  // The message's own acceptance time is "now": expiry then needs no clock of
  // its own and is deterministic under test.
  const int64_t now = msg.ts_ms;
  ch.last_seq = msg.seq;
  ch.last_write_ms = now;
  ch.history_ttl_ms = int64_t{req.history_ttl_s} * 1000;
  if (ch.dedupe_window_s != req.dedupe_window_s) {
    // The namespace's window changed (or this is the first append): carry the
    // entries over into a table with the new window.
    DedupeTable t(int64_t{req.dedupe_window_s} * 1000);
    ch.dedupe.for_each([&](std::string_view k, uint64_t s, int64_t ts) { t.insert(k, s, ts); });
    ch.dedupe = std::move(t);
    ch.dedupe_window_s = req.dedupe_window_s;
  }
  ch.dedupe.expire(now);
  if (!msg.id.empty()) ch.dedupe.insert(DedupeKey(msg.from, msg.id), msg.seq, now);
  if (req.amended && !ch.messages.empty()) {
    // A moderation event: its target, still held, becomes its new version.
    auto t = std::lower_bound(ch.messages.begin(), ch.messages.end(), req.amended->seq,
                              [](const StoredMessage& m, uint64_t s) { return m.seq < s; });
    if (t != ch.messages.end() && t->seq == req.amended->seq) {
      ch.message_bytes -= message_bytes(*t);
      *t = std::move(*req.amended);
      ch.message_bytes += message_bytes(*t);
    }
  }
  ch.message_bytes += message_bytes(msg);
  ch.messages.push_back(std::move(msg));
  if (ch.messages.size() > history_max_held(req.history_limit)) {
    drop_front(ch, ch.messages.size() - history_keep(req.history_limit));
  }
  if (ch.history_ttl_ms > 0) {
    size_t old = 0;
    while (old < ch.messages.size() && ch.messages[old].ts_ms < now - ch.history_ttl_ms) ++old;
    if (old > 0) drop_front(ch, old);
  }
}

void MemoryStore::sweep(int64_t now_ms) {
  for (size_t i = 0; i < kShards; ++i) sweep_shard(i, now_ms);
  enforce_budget();
}

void MemoryStore::sweep_shard(size_t i, int64_t now_ms) {
  Shard& s = shards_[i];
  std::lock_guard lock(s.mu);
  for (auto it = s.channels.begin(); it != s.channels.end();) {
    Channel& c = it->second;
    if (c.history_ttl_ms > 0) {
      size_t old = 0;
      while (old < c.messages.size() && c.messages[old].ts_ms < now_ms - c.history_ttl_ms) ++old;
      if (old > 0) drop_front(c, old);
      if (c.messages.empty()) unlist(s, c);
    }
    c.dedupe.expire(now_ms);
    if (c.messages.empty() && c.dedupe.size() == 0 &&
        now_ms - c.last_write_ms > opts_.idle_evict_ms) {
      auto gone = it++;
      erase_channel(s, gone);
      continue;
    }
    account(it->first, c);
    ++it;
  }
  // Give back the bucket array once most channels are gone.
  if (s.channels.bucket_count() > 64 && s.channels.size() * 8 < s.channels.bucket_count()) {
    s.channels.rehash(0);
  }
}

void MemoryStore::enforce_budget() {
  while (opts_.memory_budget_bytes > 0 && memory_bytes() > opts_.memory_budget_bytes) {
    // The shard whose least recently written channel is the oldest: the
    // global order, from 16 peeks.
    size_t pick = kShards;
    int64_t oldest = INT64_MAX;
    for (size_t i = 0; i < kShards; ++i) {
      const int64_t t = shards_[i].oldest_write_ms.load(std::memory_order_relaxed);
      if (t < oldest) {
        oldest = t;
        pick = i;
      }
    }
    if (pick == kShards) return;  // no history left to drop
    Shard& s = shards_[pick];
    std::lock_guard lock(s.mu);
    Channel* c = s.oldest;
    if (!c) continue;  // emptied meanwhile
    unlist(s, *c);
    if (c->messages.empty()) continue;
    drop_front(*c, c->messages.size());
    account(*c->id, *c);
    budget_evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

void MemoryStore::read_after(const ChannelKey& key, uint64_t after, uint32_t limit,
                             ReadDone done) {
  done(read(key, [&](const auto& msgs, std::vector<StoredMessage>& out) {
    auto first = std::partition_point(msgs.begin(), msgs.end(),
                                      [&](const StoredMessage& m) { return m.seq <= after; });
    auto n = std::min<size_t>(limit, msgs.end() - first);
    out.assign(first, first + n);
  }));
}

void MemoryStore::read_before(const ChannelKey& key, uint64_t before, uint32_t limit,
                              ReadDone done) {
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
Result<std::vector<StoredMessage>> MemoryStore::read(const ChannelKey& key, Pick pick) {
  std::vector<StoredMessage> out;
  std::string id = channel_id(key);
  Shard& shard = shard_of(id);
  std::lock_guard lock(shard.mu);
  auto it = shard.channels.find(id);
  if (it != shard.channels.end()) pick(it->second.messages, out);
  return out;
}

std::unique_ptr<Store> make_memory_store() { return std::make_unique<MemoryStore>(); }

}  // namespace parley::store
