// A channel's authoritative state. Owned by one hub shard; touched only on it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth/token_bucket.h"
#include "tenant/tenant_config.h"
#include "hub/requests.h"
#include "hub/upstream_sink.h"
#include "net/out_frame.h"
#include "seqlog/sequenced_log.h"
#include "store/store.h"

namespace parley::hub {

struct Channel {
  Channel(bool store_numbers, int64_t dedupe_window_ms) : log(store_numbers, dedupe_window_ms) {}

  const TenantConfig* tenant = nullptr;
  const NamespaceConfig* ns = nullptr;
  store::Store* store = nullptr;
  store::ChannelId id;      // tenant + name, as the store knows it
  std::string fanout_key;   // id.key(), as the tick batchers know it

  // The store's recover() is in flight (or the presence read after it):
  // operations wait in `waiting`, in arrival order, and run once the counters
  // are known (or fail with the recovery).
  bool loading = false;
  std::vector<std::function<void(Channel*, const Error*)>> waiting;
  uint32_t epoch = 1;          // the store's epoch when the channel was loaded
  uint32_t backfills = 0;  // joins reading their backfill: not unloaded meanwhile
  // The namespace's channel_pub_rate (PROTOCOL.md "Moderation"), over this
  // node's client pubs of the channel; pub_rate is the rate it was made for.
  auth::TokenBucket pub_bucket;
  uint32_t pub_rate = 0;

  // An append in flight (seqlog::SequencedLog keeps them in seq order).
  struct Pending {
    net::SharedBuf msg_json;  // the server numbers the log: encoded at once
    int64_t arrived_ns = 0;
    int64_t append_start_ns = 0;
    unsigned reply_loop = 0;
    std::function<void(store::AppendOutcome)> done;
    // The namespace forwards msg events: sent upstream once written.
    std::unique_ptr<UpstreamEvent> upstream;
    // Upstream events of this channel that arrived while this append was in
    // flight (a connection's `up` after its `pub`): forwarded right after it.
    std::vector<UpstreamEvent> after;
    // The store numbers the log (Store::assigns_seq): the message, encoded once
    // the answer names its seq.
    std::unique_ptr<store::StoredMessage> unsequenced;
    // An edit or delete (shard_moderation.cc): its completion starts the
    // channel's next one.
    bool moderation = false;
  };
  // A duplicate of an append in flight, answered when it completes.
  struct DedupeWaiter {
    std::function<void(store::AppendOutcome)> done;
    unsigned loop = 0;
  };
  // The store numbers the log, several nodes writing (docs/architecture.md
  // "Cross-node fan-out"): a committed message held until every seq before it
  // was delivered (this node's own answers and other nodes' pushes).
  struct Held {
    net::SharedBuf json;
    std::unique_ptr<UpstreamEvent> upstream;
    std::vector<UpstreamEvent> after;
  };
  using Log = seqlog::SequencedLog<Pending, DedupeWaiter, Held>;
  // The channel's order, dedupe window (dedupe_window_s), appends in flight,
  // recovery and failure rules.
  Log log;

  // Edits and deletes run one at a time (shard_moderation.cc), so each one's
  // read of its target sees every earlier one's change; the rest wait here.
  bool moderating = false;
  std::deque<ModerateRequest> moderation_queue;

  bool watched = false;    // watched in the cluster's broker (cluster::Broker::watch)
  // Presence of several nodes (a store that assigns seqs, a namespace with
  // presence): users with a connection on another node -> those nodes. A user
  // is present while in `users` (here) or in `remote_users`.
  bool shared_presence = false;
  std::unordered_map<std::string, std::vector<std::string>> remote_users;

  struct Member {
    std::string user;
    unsigned loop = 0;
    // Registered for live delivery on its loop (counted in loop_members). A member
    // reading its backfill is not yet: it gets those messages in the backfill.
    bool live = false;
    uint64_t join_gen = 0;  // which join's backfill is current
  };
  std::unordered_map<uint64_t, Member> members;   // by connection id
  std::unordered_map<std::string, uint32_t> users;  // user -> its connections here
  std::vector<uint32_t> loop_members;              // live members per loop

  int64_t idle_since_ms = 0;

  // Shard::busiest: last_seq at the previous ranking (admin page).
  uint64_t stats_seq = 0;
  bool stats_seen = false;
};

}  // namespace parley::hub
