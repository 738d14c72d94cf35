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

#include "tenant/tenant_config.h"
#include "hub/requests.h"
#include "hub/upstream_sink.h"
#include "net/out_frame.h"
#include "store/dedupe_key.h"
#include "store/dedupe_table.h"
#include "store/log_follower.h"
#include "store/store.h"

namespace parley::hub {

struct Channel {
  const TenantConfig* tenant = nullptr;
  const NamespaceConfig* ns = nullptr;
  store::Store* store = nullptr;
  store::ChannelId id;      // tenant + name, as the store knows it
  std::string fanout_key;   // id.key(), as the tick batchers know it

  uint64_t last_seq = 0;       // highest seq assigned
  uint64_t committed_seq = 0;  // highest seq durable and delivered
  bool failed = false;         // the store failed: reload before reuse
  uint32_t epoch = 1;          // the store's epoch when the channel was loaded
  // The store's recover() is in flight: operations wait in `waiting`, in arrival
  // order, and run once the counters are known (or fail with the recovery).
  bool loading = false;
  std::vector<std::function<void(Channel*, const Error*)>> waiting;
  uint32_t backfills = 0;  // joins reading their backfill: not unloaded meanwhile

  // (from, id) -> seq of the last dedupe_window_s, and of every append in flight
  // (seq > committed_seq: a duplicate of one waits for it to commit).
  store::DedupeTable dedupe{0};
  struct DedupeWaiter {
    std::function<void(PublishOutcome)> done;
    unsigned loop = 0;
  };
  std::unordered_map<uint64_t, std::vector<DedupeWaiter>> dedupe_waiters;  // by seq

  // Appends in flight, in seq order (the store completes them in that order).
  struct InFlight {
    uint64_t seq = 0;
    store::DedupeKey dedupe_key;
    net::SharedBuf msg_json;
    int64_t arrived_ns = 0;
    int64_t append_start_ns = 0;
    unsigned reply_loop = 0;
    std::function<void(PublishOutcome)> done;
    // The namespace forwards msg events: sent upstream once written.
    std::unique_ptr<UpstreamEvent> upstream;
    // Upstream events of this channel that arrived while this append was in
    // flight (a connection's `up` after its `pub`): forwarded right after it.
    std::vector<UpstreamEvent> after;
    // A store that assigns seqs (Store::assigns_seq): the message, encoded once
    // the answer names its seq.
    std::unique_ptr<store::StoredMessage> unsequenced;
  };
  std::deque<InFlight> inflight;

  // A store that assigns seqs, several nodes writing (docs/architecture.md
  // "Cross-node fan-out"): committed messages that arrived ahead of
  // committed_seq + 1 (this node's own answers and other nodes' pushes) wait in
  // the follower, delivered once contiguous; a gap that outlives fanout_gap_ms
  // is read from the store.
  struct Held {
    net::SharedBuf json;
    std::unique_ptr<UpstreamEvent> upstream;
    std::vector<UpstreamEvent> after;
  };
  std::unique_ptr<store::LogFollower<Held>> follower;
  bool watched = false;    // Store::watch made for this channel
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
