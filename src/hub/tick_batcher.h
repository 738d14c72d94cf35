// The per-loop half of fan-out: which of this loop's connections are in which
// channel, and the batcher that sends each of them its channels' events.
//
// Owned by one loop; every method runs on it. Hub shards post committed events
// here (one post per loop, not per receiver). When a batch goes out, the
// pending events of a channel are encoded once into one immutable buffer, and
// every member gets slices of it (gathered writes, no copy per receiver): all
// of it usually, minus its own `state` or presence events, minus what preceded
// its join. A member in several channels of one batch gets one frame. Events
// are JSON; when a channel has MessagePack members the batch is also converted
// once into a MessagePack buffer (each event one map), sliced the same way,
// and such a member's frame is an array header plus those slices.
//
// When a batch goes out (PROTOCOL.md "Ticks, batching and coalescing"):
// - `msg` and presence of a quiet channel (it sent nothing in the last
//   tick_ms): at the end of the loop iteration that delivered them (a drain
//   task posted behind what the loop already has queued; everything delivered
//   meanwhile rides along, one frame per member: corking);
// - of a busy channel (it sent within the last tick_ms): at its next tick
//   (multiples of tick_ms), so under load a channel still costs one frame per
//   member per tick, as before, and a quiet one adds no latency;
// - `state`: at the channel's next tick, its coalescing window (latest wins
//   per sender and key). Everything else pending for a channel waiting for its
//   tick waits with it, so a channel's events never overtake each other;
// - tick_ms = 0: at once, one frame per event.
// A drain yields between slices of about kSliceDeliveries deliveries (the rest
// is posted again), so acks, replies and store completions queued on the loop
// never wait behind a whole fan-out.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/metrics.h"
#include "hub/interest_grid.h"
#include "hub/subscriber.h"
#include "protocol/state_delta.h"

namespace parley::hub {

// Every state event starts so (protocol::encode_state); the batch's stamp
// (tick and time) replaces it.
inline constexpr std::string_view kStateFrameOpen = R"({"op":"state",)";

struct ChannelEvent {
  net::SharedBuf json;           // one encoded server frame object
  uint64_t exclude_conn = 0;     // state: not echoed to its sender connection
  std::string exclude_user;      // presence: not sent to the user it is about
  std::string coalesce_key;      // state: latest wins per (sender conn, key) in a tick
  int64_t created_ns = 0;        // for the fan-out stage histogram
  // state with a position in a namespace with aoi_cell (interest_grid.h):
  // only members in `cell` and the neighbouring cells receive it, and its
  // sender (exclude_conn) is now in `cell`.
  std::optional<Cell> cell = std::nullopt;
  // state in a namespace with state_delta (PROTOCOL.md "State deltas"): its
  // body is the last body_len bytes before the closing '}' of `json`.
  bool delta = false;
  uint32_t body_len = 0;
};

class TickBatcher {
 public:
  TickBatcher(unsigned index, boost::asio::io_context& loop, metrics::ThreadMetrics& metrics);

  // Adds a member; it receives events delivered from now on. Idempotent.
  void add_member(const std::string& channel_key, uint32_t tick_ms, SubscriberRef sub);
  void remove_member(const std::string& channel_key, uint64_t conn_id);
  void deliver(const std::string& channel_key, ChannelEvent ev);

  size_t channel_count() const { return channels_.size(); }

  // Runs at the start of every drain, before the slice assembles anything: the
  // loop's hub shard takes its store completions there (Shard's constructor), so
  // their acks and events leave in this slice instead of queueing behind it and
  // every slice after it (issue 9: acks never wait behind fan-out). Set before
  // the loop runs. What it delivers or corks goes out with the slice: a drain
  // is a flush point (runtime/loop_tail.h), which writes the corked frames
  // (acks) first, each in one write with its subscriber's frame of the slice
  // when it has one (a publisher's ack and the echo of its message: one
  // syscall, not two), then everyone's deliveries.
  void set_before_drain(std::function<void()> fn) { before_drain_ = std::move(fn); }

  // Deliveries (member frames) a drain assembles before it yields to the loop.
  static constexpr size_t kSliceDeliveries = 256;

 private:
  // tick_batcher_bench.cc: flushes a tick without waiting for the timer.
  friend struct TickBatcherTestPeer;

  struct Member {
    SubscriberRef sub;
    uint32_t from_index;  // events before this pending index predate the join
    // State deltas: it received every event of this channel's drains from
    // number since_gen on (those its cell and its own exclusions allowed),
    // in that first drain from index first_from on (it joined while events
    // were pending).
    uint64_t since_gen = 0;
    uint32_t first_from = 0;
  };
  // One (sender connection, key) of a namespace with state_delta
  // (tick_batcher_delta.cc): the body its last drain sent, which is the base
  // of the next delta for every member that received it.
  struct StateStream {
    uint32_t sid = 0;
    net::SharedBuf base;            // the event whose body is the base
    uint32_t body_len = 0;
    protocol::BodyFields fields;    // of the base body
    uint64_t base_gen = 0;          // the drain that sent it; 0: no base
    uint32_t base_index = 0;        // its index in that drain
    std::optional<Cell> base_cell;  // where it was sent from (interest areas)
    uint64_t seen_gen = 0;          // the last drain holding an event of it
  };
  struct Local {
    uint32_t tick_ms = 0;
    std::vector<Member> members;
    std::vector<ChannelEvent> pending;
    std::unordered_map<std::string, size_t> coalesced;  // coalesce_key -> pending index
    bool ready = false;  // listed in ready_: the next drain encodes it
    bool held = false;   // listed in its tick class: waits for the tick
    bool ticked = false;  // ready by its tick: states join that batch until it is sent
    int64_t sent_ns = INT64_MIN / 2;  // when its events last went out
    // Made by the channel's first positioned event; members' cells from then on.
    std::unique_ptr<InterestGrid> grid;
    // The tick that made it ready (PROTOCOL.md "Time for games"): its number
    // and the server's time then, stamped on the `state` events it sends.
    uint64_t tick_no = 0;
    int64_t tick_ts_ms = 0;
    // Its namespace's fan-out counters (metrics/namespace_traffic.h).
    metrics::NamespaceTraffic* traffic = nullptr;
    // State deltas: drains so far, the streams by coalesce_key, and when each
    // member's cell last changed (the first drain that saw the new cell).
    uint64_t gen = 0;
    std::unordered_map<std::string, StateStream> streams;
    std::unordered_map<uint64_t, uint64_t> cell_changed;
  };
  // Node-based: a channel's entry stays put while others come and go, and a
  // listed (ready or held) channel is never erased, so the lists hold pointers.
  using Channels = std::unordered_map<std::string, Local>;
  using Entry = Channels::value_type;
  struct TickClass {
    explicit TickClass(boost::asio::io_context& loop) : timer(loop) {}
    boost::asio::steady_timer timer;
    bool armed = false;
    std::vector<Entry*> held;
  };
  // One subscriber's frame in the flush being assembled.
  struct Assembly {
    explicit Assembly(SubscriberRef s) : sub(std::move(s)) {}
    SubscriberRef sub;
    net::OutFrame frame;
    uint32_t events = 0;   // in the frame (a MessagePack frame's array header)
    bool msgpack = false;  // the subscriber's encoding
    bool sent = false;  // with the subscriber's corked frames, first
  };
  // The channel being encoded, as one buffer per encoding: the events and
  // where each one is in it. MessagePack is made at the first member that
  // needs it, once per channel per drain.
  struct Encoded {
    const net::SharedBuf* buf;
    const std::vector<std::pair<size_t, size_t>>* spans;
    bool msgpack;
    metrics::WireForm form;
    metrics::NamespaceTraffic* traffic;
  };
  Encoded encoded_for(Local& local, const Subscriber& sub, const net::SharedBuf& json);
  // Appends events [i, j] (consecutive) of the channel to `a`'s frame.
  void add_run(Assembly& a, const Encoded& e, uint32_t i, uint32_t j);
  // Ends an assembled frame: "]" in JSON, the array header in MessagePack.
  static void finish_frame(Assembly& a);

  // Lists the channel for the next drain (posting one if none is).
  void make_ready(Entry* entry);
  // Schedules the next drain: at the end of the current read task when there
  // is one (runtime::TailScope), else posted. Sets drain_posted_.
  void post_drain();
  void hold(Entry* entry);
  void arm(uint32_t tick_ms, TickClass& tc);
  // The tick of a class: its held channels become ready and a drain runs.
  void on_tick(uint32_t tick_ms);
  // One slice: encodes ready channels until kSliceDeliveries member frames are
  // assembled, sends them, and posts itself again if channels remain.
  void drain();
  // tick_ms = 0: this channel's events go out now, in a drain of their own.
  void send_now(Entry* entry);
  void send_assemblies();
  // Returns how many members were given a frame.
  size_t encode_channel(Local& local);
  // Appends one event to the channel's batch buffer: a `state` with the tick's
  // number and time added after its "op" (`stamp`), anything else as it is.
  static void append_event(std::string& buf, const ChannelEvent& ev, std::string_view stamp);
  // MessagePack of each span of `json`, into `out` (one buffer) and `out_spans`.
  static void convert_spans(const std::string& json, const std::vector<std::pair<size_t, size_t>>& spans,
                            net::SharedBuf& out, std::vector<std::pair<size_t, size_t>>& out_spans);

  // State deltas (tick_batcher_delta.cc). Before the members: which events
  // belong to a stream and the base each would be a delta of; after them:
  // the streams' bases become this drain's bodies.
  void prepare_streams(Local& local);
  void commit_streams(Local& local);
  // A delta member's two views of the batch: `primary` (per event: its `sd`
  // where the stream has a base, else the full state with sid) and `alt` (the
  // full state with sid, for events whose base the member lacks).
  std::pair<Encoded, Encoded> delta_encoded_for(Local& local, const Subscriber& sub,
                                                const net::SharedBuf& json);
  void build_delta_buffers(Local& local, const net::SharedBuf& json);
  bool has_base(const Local& local, const Member& m, uint32_t i) const;
  // Appends `events` (ascending indexes) to the member's frame, each from the
  // view it can use. Returns how many.
  uint64_t append_delta_member(Local& local, Member& m, const std::vector<uint32_t>& events,
                               const net::SharedBuf& json);
  bool delta_member(const Subscriber& sub) const { return batch_streams_ && sub.state_deltas(); }
  // Batched state deltas (PROTOCOL.md "Batched state deltas"): the batch's
  // delta entries (`sid,{fields}` or `sid,[pos,{fields}(,unset)]`), once per
  // encoding per drain, behind a head (`{"op":"sds","tick","ts","d":[`; in
  // MessagePack the map up to "d", the array header being a member's own).
  struct SdsView {
    const net::SharedBuf* buf;
    const std::vector<std::pair<size_t, size_t>>* spans;  // per event; empty: no entry
    size_t head;
    bool msgpack;
    metrics::WireForm form;
    metrics::NamespaceTraffic* traffic;
  };
  SdsView sds_for(Local& local, const Subscriber& sub);
  void build_sds_buffer(Local& local);
  // Appends one `sds` of events[k..j] (each with an entry) to `a`'s frame.
  static void add_sds(Assembly& a, const SdsView& v, const std::vector<uint32_t>& events, size_t k,
                      size_t j);
  // Entries of one `sds` at most: a member's MessagePack array header of `d`
  // is then one of a static table (no bytes of its own to allocate).
  static constexpr size_t kMaxSdsEntries = 1024;
  // Whether every event of the batch is primary-ready for a member received
  // everything since since_gen (no exclusions, no grid).
  bool settled(const Member& m) const {
    return !positioned_base_ &&
           (m.since_gen < min_base_gen_ || (m.since_gen == min_base_gen_ && m.first_from == 0));
  }
  // This flush's frame for `sub`, or nullptr when it has none yet.
  Assembly* assembly_of(Subscriber& sub);
  // A member with a cell in a batch with positioned events: its share is read
  // from the grid. Returns how many events it was given.
  uint64_t append_from_grid(Local& local, Member& m, const net::SharedBuf& shared, uint32_t from);
  // Frames Assembly opens for `sub` in this flush.
  Assembly& open_assembly(const SubscriberRef& sub);

  unsigned index_;
  boost::asio::io_context& loop_;
  metrics::ThreadMetrics& metrics_;
  Channels channels_;
  std::map<uint32_t, TickClass> ticks_;

  std::vector<Entry*> ready_;  // FIFO from ready_head_
  size_t ready_head_ = 0;
  bool drain_posted_ = false;
  std::function<void()> before_drain_;
  bool in_before_drain_ = false;  // what it makes ready, this drain sends

  // Scratch of a drain slice, kept between slices so that one allocates
  // (almost) nothing but its shared buffers. Subscriber::fanout_flush_ marks
  // which subscribers have an assembly in the slice numbered flush_count_.
  uint64_t flush_count_ = 0;
  bool flushing_ = false;
  std::vector<Assembly> assemblies_;
  std::vector<std::pair<size_t, size_t>> spans_;               // [begin, end) of each event
  net::SharedBuf msgpack_;                                     // the channel's batch in MessagePack
  std::vector<std::pair<size_t, size_t>> msgpack_spans_;       // each event in msgpack_
  std::vector<std::pair<uint64_t, uint32_t>> conn_excluded_;   // (conn id, event), sorted
  std::vector<std::pair<std::string_view, uint32_t>> user_excluded_;  // (user id, event), sorted
  std::vector<bool> skip_;
  std::vector<uint32_t> picked_;  // a positioned member's events (interest_grid.h)

  // State deltas, one drain's: per event its stream (nullptr: none) and base.
  struct DeltaEvent {
    StateStream* stream = nullptr;
    uint64_t base_gen = 0;  // 0: sent whole to everyone
    uint32_t base_index = 0;
    std::optional<Cell> base_cell;
  };
  std::vector<DeltaEvent> devents_;
  std::vector<protocol::BodyFields> next_fields_;  // each event's body fields
  bool batch_streams_ = false;       // some event belongs to a stream
  uint64_t min_base_gen_ = 0;        // over events with a base
  bool positioned_base_ = false;     // some base was sent with a cell
  std::string stamp_;                // the batch's {"op":"state","tick","ts",
  net::SharedBuf dprim_, dalt_, mp_dprim_, mp_dalt_;
  std::vector<std::pair<size_t, size_t>> dprim_spans_, dalt_spans_, mp_dprim_spans_, mp_dalt_spans_;
  std::vector<uint32_t> kept_;
  net::SharedBuf dsds_, mp_dsds_;
  std::vector<std::pair<size_t, size_t>> dsds_spans_, mp_dsds_spans_;
  std::vector<uint32_t> dsds_value_at_;  // where each entry's value starts (after "sid,")
  size_t dsds_head_ = 0, mp_dsds_head_ = 0;
  std::vector<uint8_t> kinds_;  // a batch member's view of each of its events
  uint32_t next_sid_ = 1;            // sids are unique per loop, so per connection
};

}  // namespace parley::hub
