#include "cluster/valkey_sanctions.h"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <random>

#include "cluster/sanction_codec.h"
#include "common/clock.h"
#include "store/valkey/partition_map.h"
#include "store/valkey/replies.h"
#include "store/valkey/valkey_store.h"

namespace parley::cluster {

namespace {

using store::valkey::Reply;
using store::valkey::error_text;
using store::valkey::format_command;

// No client can join it: '$' is no character of a channel name, "" no tenant.
const store::ChannelId kModeration{"", "$moderation"};

// Every entry still in force, the expired ones deleted on the way (one step:
// an entry renewed meanwhile is never lost to a stale read).
constexpr const char* kReadAll = R"lua(
local all = redis.call('HGETALL', KEYS[1])
local out = {}
local now = tonumber(ARGV[1])
for i = 1, #all, 2 do
  local until_ms = tonumber(all[i + 1])
  if until_ms ~= nil and until_ms > now then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return out
)lua";

Status reply_status(const Result<Reply>& r) {
  if (!r) return r.error();
  if (const std::string err = error_text(r.value().get()); !err.empty()) {
    return Error{ErrorCode::kUnavailable, "store: valkey: " + err, 1000};
  }
  return Status::ok();
}

}  // namespace

ValkeySanctions::ValkeySanctions(store::valkey::ValkeyStore& store, Broker& broker)
    : store_(store), broker_(broker) {
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
  node_ = id;
  key_ = store::valkey::channel_keys(kModeration, store_.partitions()).tag + ":x";
}

ValkeySanctions::~ValkeySanctions() {
  if (listener_) broker_.unwatch(kModeration);
}

void ValkeySanctions::listen(SanctionListener& l) {
  listener_ = &l;
  // The subscription's confirmation reads the hash (on_resync).
  broker_.watch(kModeration, *this);
}

void ValkeySanctions::put(const Sanction& s, std::function<void(Status)> done) {
  const bool lift = s.until_ms <= wall_ms();
  std::vector<std::string> cmd = lift ? std::vector<std::string>{"HDEL", key_, sanction_field(s)}
                                      : std::vector<std::string>{"HSET", key_, sanction_field(s),
                                                                 std::to_string(s.until_ms)};
  store_.command(kModeration, format_command(cmd),
                 [this, s, done = std::move(done)](Result<Reply> r) {
                   Status st = reply_status(r);
                   // Told only once stored: a node that hears it and reads the
                   // hash at once finds it there.
                   if (st) broker_.publish_note(kModeration, sanction_note(node_, s));
                   done(std::move(st));
                 });
}

void ValkeySanctions::kick(const Kick& k) { broker_.publish_note(kModeration, kick_note(node_, k)); }

void ValkeySanctions::reload() {
  if (!listener_) return;
  const int64_t asked_at = steady_ns();
  store_.command(kModeration, format_command({"EVAL", kReadAll, "1", key_, std::to_string(wall_ms())}),
                 [this, asked_at](Result<Reply> r) {
                   if (!reply_status(r)) return;  // kept as held; the next read tries again
                   const redisReply* rep = r.value().get();
                   if (rep->type != REDIS_REPLY_ARRAY) return;
                   std::vector<Sanction> all;
                   for (size_t i = 0; i + 1 < rep->elements; i += 2) {
                     const redisReply* f = rep->element[i];
                     const redisReply* v = rep->element[i + 1];
                     if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
                     auto s = parse_sanction({f->str, f->len}, {v->str, v->len});
                     if (s) all.push_back(std::move(*s));
                   }
                   listener_->on_all(std::move(all), asked_at);
                 });
}

void ValkeySanctions::on_note(const store::ChannelId&, std::string note) {
  auto n = parse_sanction_note(note);
  if (!n || n->node == node_ || !listener_) return;  // ours was applied when made
  if (n->is_kick) return listener_->on_kick(std::move(n->kick));
  listener_->on_sanction(std::move(n->sanction));
}

}  // namespace parley::cluster
