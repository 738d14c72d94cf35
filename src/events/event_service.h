// What a session needs from the event pipeline (PROTOCOL.md "Event streams and
// leaderboards"), and what the pipeline needs from a connection: Engine
// implements EventService, session::ClientSession implements EventSink (events/
// sits below session/ and never includes it), and the Server hands the engine
// to the Gateway.
//
// Any thread may call an EventService; each `done` runs on the request's
// reply_loop. An EventSink is called on its own loop only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fnv1a.h"
#include "common/status.h"
#include "protocol/client_op.h"
#include "tenant/tenant_config.h"

namespace parley::events {

// A connection that receives `events`, `assigned`, `revoked` and `board` frames.
// Every frame for one connection is posted from the one loop that owns the topic
// (or board) it is about, so frames of one topic arrive in the order they were
// made: a reply before the events it announces, `revoked` before `assigned`.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual uint64_t conn_id() const = 0;
  virtual unsigned loop() const = 0;
  // Queues a frame. With `written`, the frame is a catch-up read from the store:
  // it is queued on the connection's backfill allowance and `written` runs (on
  // this loop) once the connection has written its backfill out, so a reader
  // far behind asks the store for its next page only as fast as the client
  // reads. `written` never runs when the connection closes first.
  virtual void deliver_event_frame(std::string frame, std::function<void()> written) = 0;
  // Queues live frames corked: they leave with everything else the task has
  // for the connection, in one write at its flush point, behind what was
  // queued before them (net::Connection::send_corked).
  virtual void deliver_event_frames(std::vector<std::string> frames) = 0;
};

struct EmitOutcome {
  static EmitOutcome failed(Error e) {
    EmitOutcome o;
    o.status = std::move(e);
    return o;
  }
  Status status;
  std::vector<std::pair<uint32_t, uint64_t>> offs;  // [p, off] per event, in the order sent
  std::vector<bool> dup;
};

struct EmitRequest {
  const TenantConfig* tenant = nullptr;
  std::string topic;
  std::string from;  // sender user id ("server" for an api key or HTTP)
  std::vector<protocol::EmitEvent> events;
  int64_t arrived_ns = 0;
  unsigned reply_loop = 0;
  std::function<void(EmitOutcome)> done;
};

struct PartNext {
  uint32_t p = 0;
  uint64_t next = 0;  // the first offset that will be delivered
};

// A tail's or a consume's answer: the parts and where each starts, or an error
// (out_of_range carries its range).
struct StartOutcome {
  static StartOutcome failed(Error e) {
    StartOutcome o;
    o.status = std::move(e);
    return o;
  }
  Status status;
  std::optional<OffsetRange> range;
  uint64_t gen = 0;  // consume
  std::vector<PartNext> parts;
};

struct TailRequest {
  const TenantConfig* tenant = nullptr;
  std::string topic;
  std::optional<uint32_t> p;  // none: every partition
  protocol::TailFrom from = protocol::TailFrom::kLatest;
  uint64_t from_off = 0;
  std::weak_ptr<EventSink> sink;
  uint64_t conn = 0;
  unsigned reply_loop = 0;
  // Runs before any `events` frame of this tail reaches the sink.
  std::function<void(StartOutcome)> done;
};

struct ConsumeRequest {
  const TenantConfig* tenant = nullptr;
  std::string topic;
  std::string group;
  std::weak_ptr<EventSink> sink;
  uint64_t conn = 0;
  unsigned reply_loop = 0;
  std::function<void(StartOutcome)> done;
};

struct CommitRequest {
  const TenantConfig* tenant = nullptr;
  std::string topic;
  std::string group;
  uint64_t conn = 0;
  uint64_t gen = 0;
  uint32_t p = 0;
  uint64_t off = 0;
  unsigned reply_loop = 0;
  std::function<void(Status, std::optional<OffsetRange>)> done;
};

struct RankEntry {
  std::string member;
  double score = 0;
  uint64_t rank = 0;
};

struct RankRequest {
  const TenantConfig* tenant = nullptr;
  std::string board;
  std::string member;
  uint32_t around = 5;
  std::optional<std::string> round;
  uint32_t top = 0;  // HTTP: also the top N (0: none)
  unsigned reply_loop = 0;
  std::function<void(Status, std::vector<RankEntry> top, std::vector<RankEntry> entries)> done;
};

class EventService {
 public:
  virtual ~EventService() = default;
  virtual void emit(EmitRequest req) = 0;
  virtual void tail(TailRequest req) = 0;
  virtual void consume(ConsumeRequest req) = 0;
  virtual void commit(CommitRequest req) = 0;
  virtual void rank(RankRequest req) = 0;
  // leave of a topic: ends conn's tail of it (group empty) or its membership of
  // the group. `done` runs on reply_loop once it is over (no frame of it after).
  virtual void leave(const TenantConfig* tenant, const std::string& topic,
                     const std::string& group, uint64_t conn, unsigned reply_loop,
                     std::function<void()> done) = 0;
  // A connection joined (left) channel lb:BOARD[:ROUND] of a configured board:
  // it gets the board's pushes (with its own entry as `me`).
  virtual void watch_board(const TenantConfig* tenant, const std::string& board,
                           const std::string& round, std::weak_ptr<EventSink> sink, uint64_t conn,
                           const std::string& user) = 0;
  virtual void unwatch_board(const TenantConfig* tenant, const std::string& board,
                             const std::string& round, uint64_t conn) = 0;
  // The connection closed: ends its tails and group memberships of the topic.
  virtual void disconnect(const TenantConfig* tenant, const std::string& topic, uint64_t conn) = 0;
};

// fnv1a_64 over the key's bytes, mod partitions (PROTOCOL.md); `seed` is the
// spec's basis except for a topic created before the server followed it
// (events/topic_key_hash.h).
inline uint32_t partition_of(std::string_view key, uint32_t partitions,
                             uint64_t seed = kFnv1a64Basis) {
  return static_cast<uint32_t>(fnv1a_64(key, seed) % partitions);
}

}  // namespace parley::events
