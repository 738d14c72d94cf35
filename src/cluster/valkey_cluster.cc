#include "cluster/valkey_cluster.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "cluster/valkey_broker.h"
#include "cluster/valkey_sanctions.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"
#include "store/valkey/scripts.h"
#include "store/valkey/valkey_store.h"

namespace parley::cluster {

namespace {

using store::ChannelId;
using store::valkey::ChannelKeys;
using store::valkey::Reply;
using store::valkey::ValkeyStore;
using store::valkey::channel_keys;
using store::valkey::dedupe_field;
using store::valkey::error_text;
using store::valkey::format_command;
using store::valkey::split_dedupe_field;

// Presence: hash {t.pk}:m:<channel>, field <len(node)>:<node><user> -> expiry
// ms; the key itself expires a minute after the last write.
class ValkeyPresence final : public Presence {
 public:
  explicit ValkeyPresence(ValkeyStore& store) : store_(store) {}
  void set(const ChannelId& id, const std::string& node, const std::string& user, int64_t expires_ms) override {
    const std::string key = keys(id).members;
    store_.command(id, format_command({"HSET", key, dedupe_field(node, user), std::to_string(expires_ms)}),
                   [](Result<Reply>) {});
    store_.command(id, format_command({"PEXPIRE", key, "60000"}), [](Result<Reply>) {});
  }
  void remove(const ChannelId& id, const std::string& node, const std::string& user) override {
    store_.command(id, format_command({"HDEL", keys(id).members, dedupe_field(node, user)}), [](Result<Reply>) {});
  }
  void read(const ChannelId& id, PresenceDone done) override {
    store_.command(id, format_command({"HGETALL", keys(id).members}),
                   [done = std::move(done)](Result<Reply> r) { done(parse(r)); });
  }

 private:
  ChannelKeys keys(const ChannelId& id) const { return channel_keys(id, store_.partitions()); }
  // HGETALL's fields and values; a field of another shape is skipped (it came
  // from outside: never an assertion).
  static Result<std::vector<PresenceEntry>> parse(const Result<Reply>& r) {
    if (!r) return r.error();
    const redisReply* rep = r.value().get();
    if (const std::string err = error_text(rep); !err.empty()) {
      return Error{ErrorCode::kUnavailable, "store: valkey: " + err, 1000};
    }
    if (rep->type != REDIS_REPLY_ARRAY) {
      return Error{ErrorCode::kUnavailable, "store: unexpected reply from valkey (presence)", 1000};
    }
    std::vector<PresenceEntry> out;
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
      const redisReply* f = rep->element[i];
      const redisReply* v = rep->element[i + 1];
      if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
      PresenceEntry e;
      if (!split_dedupe_field(std::string(f->str, f->len), e.node, e.user)) continue;
      int64_t exp = 0;
      auto [p, ec] = std::from_chars(v->str, v->str + v->len, exp);
      if (ec != std::errc() || p != v->str + v->len) continue;
      e.expires_ms = exp;
      out.push_back(std::move(e));
    }
    return out;
  }

  ValkeyStore& store_;
};

// EVAL, not EVALSHA: a hold is taken or renewed every few seconds per group.
constexpr const char* kClaim = R"lua(
local h = redis.call('GET', KEYS[1])
if h == false or h == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
return h
)lua";

constexpr const char* kRelease = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
)lua";

// The hold: string {t.pk}:o:<channel> = node, with a PX expiry; taken or
// renewed only by one script call (check and set in one step).
class ValkeyLeases final : public Leases {
 public:
  explicit ValkeyLeases(ValkeyStore& store) : store_(store) {}
  void claim(const ChannelId& id, const std::string& node, int64_t ttl_ms, ClaimDone done) override {
    const std::string key = channel_keys(id, store_.partitions()).holder;
    store_.command(id, format_command({"EVAL", kClaim, "1", key, node, std::to_string(std::max<int64_t>(ttl_ms, 1))}),
                   [done = std::move(done)](Result<Reply> r) {
                     if (!r) {
                       done(r.error());
                     } else if ((*r)->type == REDIS_REPLY_STRING) {
                       done(std::string((*r)->str, (*r)->len));
                     } else {
                       done(Error{ErrorCode::kUnavailable, "unexpected answer to a claim", 1000});
                     }
                   });
  }
  void release(const ChannelId& id, const std::string& node) override {
    const std::string key = channel_keys(id, store_.partitions()).holder;
    store_.command(id, format_command({"EVAL", kRelease, "1", key, node}), [](Result<Reply>) {});
  }

 private:
  ValkeyStore& store_;
};

class ValkeyCluster final : public Cluster {
 public:
  explicit ValkeyCluster(ValkeyStore& store)
      : broker_(store), presence_(store), leases_(store), sanctions_(store, broker_) {}
  Broker& broker() override { return broker_; }
  Presence& presence() override { return presence_; }
  Leases& leases() override { return leases_; }
  Sanctions& sanctions() override { return sanctions_; }

 private:
  ValkeyBroker broker_;
  ValkeyPresence presence_;
  ValkeyLeases leases_;
  ValkeySanctions sanctions_;  // after the broker: it unwatches first
};

}  // namespace

std::unique_ptr<Cluster> valkey_cluster(ValkeyStore& store) { return std::make_unique<ValkeyCluster>(store); }

}  // namespace parley::cluster
