// The per-loop half of fan-out: which of this loop's connections are in which
// channel, and the tick batcher that sends each of them one frame per tick.
//
// Owned by one loop; every method runs on it. Hub shards post committed events
// here (one post per loop, not per receiver). At each tick the pending events of
// a channel are encoded once into one immutable buffer, and every member gets
// slices of it (gathered writes, no copy per receiver): all of it usually, minus
// its own `state` or presence events, minus what preceded its join.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/metrics.h"
#include "hub/subscriber.h"

namespace parley::hub {

struct ChannelEvent {
  net::SharedBuf json;           // one encoded server frame object
  uint64_t exclude_conn = 0;     // state: not echoed to its sender connection
  std::string exclude_user;      // presence: not sent to the user it is about
  std::string coalesce_key;      // state: latest wins per (sender conn, key) in a tick
  int64_t created_ns = 0;        // for the fan-out stage histogram
};

class TickBatcher {
 public:
  TickBatcher(unsigned index, boost::asio::io_context& loop, metrics::ThreadMetrics& metrics);

  // Adds a member; it receives events delivered from now on. Idempotent.
  void add_member(const std::string& channel_key, uint32_t tick_ms, SubscriberRef sub);
  void remove_member(const std::string& channel_key, uint64_t conn_id);
  void deliver(const std::string& channel_key, ChannelEvent ev);

  size_t channel_count() const { return channels_.size(); }

 private:
  // tick_batcher_bench.cc: flushes a tick without waiting for the timer.
  friend struct TickBatcherTestPeer;

  struct Member {
    SubscriberRef sub;
    uint32_t from_index;  // events before this pending index predate the join
  };
  struct Local {
    uint32_t tick_ms = 0;
    std::vector<Member> members;
    std::vector<ChannelEvent> pending;
    std::unordered_map<std::string, size_t> coalesced;  // coalesce_key -> pending index
    bool dirty = false;
  };
  // Node-based: a channel's entry stays put while others come and go, and a
  // dirty channel is never erased before its flush, so tick classes list
  // their dirty channels by pointer.
  using Channels = std::unordered_map<std::string, Local>;
  using Entry = Channels::value_type;
  struct TickClass {
    explicit TickClass(boost::asio::io_context& loop) : timer(loop) {}
    boost::asio::steady_timer timer;
    bool armed = false;
    std::vector<Entry*> dirty;
  };
  // One subscriber's frame in the flush being assembled.
  struct Assembly {
    explicit Assembly(SubscriberRef s) : sub(std::move(s)) {}
    SubscriberRef sub;
    net::OutFrame frame;
  };

  void schedule(uint32_t tick_ms, Entry* entry);
  void arm(uint32_t tick_ms, TickClass& tc);
  void flush(uint32_t tick_ms);
  void encode_channel(Local& local);
  // This flush's frame for `sub`, or nullptr when it has none yet.
  Assembly* assembly_of(Subscriber& sub);

  unsigned index_;
  boost::asio::io_context& loop_;
  metrics::ThreadMetrics& metrics_;
  Channels channels_;
  std::map<uint32_t, TickClass> ticks_;

  // Scratch of flush(), kept between ticks so that a tick allocates (almost)
  // nothing but its shared buffers. Subscriber::fanout_flush_ marks which
  // subscribers have an assembly in the flush numbered flush_count_.
  uint64_t flush_count_ = 0;
  bool flushing_ = false;
  std::vector<Entry*> flushing_channels_;
  std::vector<Assembly> assemblies_;
  std::vector<std::pair<size_t, size_t>> spans_;               // [begin, end) of each event
  std::vector<std::pair<uint64_t, uint32_t>> conn_excluded_;   // (conn id, event), sorted
  std::vector<std::pair<std::string_view, uint32_t>> user_excluded_;  // (user id, event), sorted
  std::vector<bool> skip_;
};

}  // namespace parley::hub
