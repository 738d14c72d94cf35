#include "hub/tick_batcher.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/check.h"
#include "protocol/msgpack_encoder.h"
#include "common/clock.h"
#include "runtime/loop_group.h"
#include "runtime/loop_tail.h"

namespace parley::hub {

namespace {
constexpr char kOpen[] = "[";
constexpr char kComma[] = ",";
constexpr char kClose[] = "]";
// {"op":"state","tick":N,"ts":T, — `tick` only where the namespace has ticks.
std::string state_stamp(uint64_t tick_no, int64_t ts_ms) {
  std::string s(kStateFrameOpen);
  if (tick_no) fmt::format_to(std::back_inserter(s), R"("tick":{},)", tick_no);
  fmt::format_to(std::back_inserter(s), R"("ts":{},)", ts_ms);
  return s;
}
}  // namespace

TickBatcher::TickBatcher(unsigned index, boost::asio::io_context& loop, metrics::ThreadMetrics& metrics)
    : index_(index), loop_(loop), metrics_(metrics) {}

void TickBatcher::add_member(const std::string& channel_key, uint32_t tick_ms, SubscriberRef sub) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  Local& local = channels_[channel_key];
  local.tick_ms = tick_ms;
  if (!local.traffic && metrics_.traffic) local.traffic = metrics_.traffic->of_channel_key(channel_key);
  for (auto& m : local.members) {
    if (m.sub->conn_id() == sub->conn_id()) return;
  }
  if (local.grid) local.grid->add_member(sub->conn_id());
  // It receives every drain from the next on, the next from the events after
  // those pending now.
  const auto from = static_cast<uint32_t>(local.pending.size());
  local.members.push_back({std::move(sub), from, local.gen + 1, from});
}

void TickBatcher::remove_member(const std::string& channel_key, uint64_t conn_id) {
  auto it = channels_.find(channel_key);
  if (it == channels_.end()) return;
  auto& members = it->second.members;
  std::erase_if(members, [&](const Member& m) { return m.sub->conn_id() == conn_id; });
  if (it->second.grid) it->second.grid->remove_member(conn_id);
  // Its streams end (a re-join starts new ones, sent whole first).
  auto& streams = it->second.streams;
  if (!streams.empty()) {
    const std::string prefix = std::to_string(conn_id) + '\0';
    std::erase_if(streams, [&](const auto& s) { return s.first.starts_with(prefix); });
  }
  it->second.cell_changed.erase(conn_id);
  if (members.empty() && !it->second.ready && !it->second.held) channels_.erase(it);
}

void TickBatcher::deliver(const std::string& channel_key, ChannelEvent ev) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(channel_key);
  if (it == channels_.end() || it->second.members.empty()) return;
  Local& local = it->second;
  if (ev.cell) {
    // Moving is this: the sender's cell changes before the batch is encoded.
    if (!local.grid) {
      local.grid = std::make_unique<InterestGrid>();
      for (const auto& m : local.members) local.grid->add_member(m.sub->conn_id());
    }
    if (ev.delta) {
      // State deltas: a member whose cell changes may lack the bases of the
      // streams it now receives (has_base, tick_batcher_delta.cc).
      const Cell* before = local.grid->cell_of_member(ev.exclude_conn);
      if (!before || !(*before == *ev.cell)) local.cell_changed[ev.exclude_conn] = local.gen + 1;
    }
    local.grid->moved(ev.exclude_conn, *ev.cell);
  }
  if (local.tick_ms == 0) {
    local.pending.push_back(std::move(ev));
    local.tick_no = 0;  // no ticks: a state carries only the time it is sent
    local.tick_ts_ms = wall_ms();
    return send_now(&*it);
  }
  const bool coalesces = !ev.coalesce_key.empty();
  if (coalesces) {
    auto [slot, inserted] = local.coalesced.try_emplace(ev.coalesce_key, local.pending.size());
    if (!inserted) {
      // Latest wins within a tick: the newer body takes the older one's place.
      local.pending[slot->second] = std::move(ev);
      return;
    }
  }
  local.pending.push_back(std::move(ev));
  if (coalesces) {
    // The tick is this state's coalescing window, and what the channel has
    // pending waits with it (a channel's events stay in order). A channel
    // whose tick has come but whose slice has not is not held again: what
    // arrives meanwhile leaves with that tick's batch (latest wins up to the
    // send), not a tick later.
    if (!local.held && !local.ticked) hold(&*it);
  } else if (!local.held && !local.ready) {
    // Batch only under load: a channel that sent within the last tick_ms is
    // busy and waits for the tick (one frame per tick, as a state would); a
    // quiet one goes out at the end of this loop iteration.
    if (steady_ns() - local.sent_ns < int64_t{local.tick_ms} * 1'000'000) {
      hold(&*it);
    } else {
      make_ready(&*it);
    }
  }
}

void TickBatcher::post_drain() {
  drain_posted_ = true;
  // In a read task: the drain runs at that task's end, after everything the
  // task's frames produced (runtime/loop_tail.h); otherwise posted behind what
  // the loop holds.
  if (runtime::TailScope::defer_on(
          loop_,
          [](void* self) {
            auto* b = static_cast<TickBatcher*>(self);
            b->drain_posted_ = false;
            b->drain();
          },
          this)) {
    return;
  }
  boost::asio::post(loop_, [this] {
    drain_posted_ = false;
    drain();
  });
}

void TickBatcher::make_ready(Entry* entry) {
  entry->second.ready = true;
  ready_.push_back(entry);
  // A slice in progress posts the next itself; one about to start takes it.
  if (drain_posted_ || flushing_ || in_before_drain_) return;
  post_drain();
}

void TickBatcher::hold(Entry* entry) {
  const uint32_t tick_ms = entry->second.tick_ms;
  entry->second.held = true;
  TickClass& tc = ticks_.try_emplace(tick_ms, loop_).first->second;
  tc.held.push_back(entry);
  if (!tc.armed) arm(tick_ms, tc);
}

void TickBatcher::arm(uint32_t tick_ms, TickClass& tc) {
  // Ticks fall on multiples of tick_ms of the steady clock, so every loop's
  // batches for a namespace leave at the same instants.
  using namespace std::chrono;
  const auto now = steady_clock::now();
  const int64_t now_ms = duration_cast<milliseconds>(now.time_since_epoch()).count();
  const int64_t next_ms = (now_ms / tick_ms + 1) * tick_ms;
  tc.armed = true;
  tc.timer.expires_at(steady_clock::time_point(milliseconds(next_ms)));
  tc.timer.async_wait([this, tick_ms](boost::system::error_code ec) {
    if (ec) return;
    on_tick(tick_ms);
  });
}

void TickBatcher::on_tick(uint32_t tick_ms) {
  TickClass& tc = ticks_.at(tick_ms);
  tc.armed = false;
  // The tick's number is the multiple of tick_ms of the steady clock it was
  // armed for, the same on every loop of this server; its time is the wall
  // clock's now.
  using namespace std::chrono;
  const uint64_t tick_no = static_cast<uint64_t>(
      duration_cast<milliseconds>(tc.timer.expiry().time_since_epoch()).count() / tick_ms);
  const int64_t tick_ts = wall_ms();
  for (Entry* entry : tc.held) {
    Local& local = entry->second;
    local.held = false;
    local.tick_no = tick_no;
    local.tick_ts_ms = tick_ts;
    local.ticked = true;
    if (!local.ready) {
      local.ready = true;
      ready_.push_back(entry);
    }
  }
  tc.held.clear();
  // The tick's batch goes out now: a drain posted earlier finds less to do.
  drain();
}

void TickBatcher::drain() {
  // The scratch members are one slice's; sending never re-enters the fan-out.
  PARLEY_CHECK(!flushing_ && !in_before_drain_);
  // A task of its own when posted (a tick, the next slice): what the hook's
  // batches cork is written by this slice's flush point, not at their end.
  runtime::TailScope slice;
  if (before_drain_) {
    in_before_drain_ = true;
    before_drain_();
    in_before_drain_ = false;
  }
  flushing_ = true;
  ++flush_count_;
  size_t assembled = 0;
  while (ready_head_ < ready_.size() && assembled < kSliceDeliveries) {
    Entry* entry = ready_[ready_head_++];
    Local& local = entry->second;
    local.ready = false;
    // A state came meanwhile to a channel listed without a tick (a quiet
    // channel's msg): it all goes at the tick.
    if (local.held) continue;
    local.ticked = false;
    assembled += encode_channel(local);
    if (local.members.empty()) channels_.erase(channels_.find(entry->first));
  }
  send_assemblies();
  flushing_ = false;
  if (ready_head_ == ready_.size()) {
    ready_.clear();
    ready_head_ = 0;
  } else if (!drain_posted_) {
    // Yield: what the loop queued meanwhile (acks, replies, store completions,
    // reads) runs before the next slice.
    drain_posted_ = true;
    boost::asio::post(loop_, [this] {
      drain_posted_ = false;
      drain();
    });
  }
}

void TickBatcher::send_now(Entry* entry) {
  PARLEY_CHECK(!flushing_);
  flushing_ = true;
  ++flush_count_;
  encode_channel(entry->second);
  send_assemblies();
  flushing_ = false;
}

void TickBatcher::send_assemblies() {
  // The flush point: corked frames (acks) first, so an ack never waits for
  // others' deliveries; a corked subscriber's frame of this slice carries
  // them (one write), the other corked writers go alone.
  for (Assembly& a : assemblies_) {
    if (!a.sub->corked()) continue;
    finish_frame(a);
    a.sub->send(std::move(a.frame));
    a.sent = true;
  }
  runtime::TailScope::flush_corked();
  for (Assembly& a : assemblies_) {
    if (a.sent) continue;
    finish_frame(a);
    a.sub->send(std::move(a.frame));
  }
  assemblies_.clear();
}

void TickBatcher::finish_frame(Assembly& a) {
  if (!a.msgpack) {
    a.frame.add_static(kClose, 1);
    return;
  }
  std::string header;
  protocol::append_msgpack_array_header(header, a.events);
  a.frame.set_prefix(header.data(), header.size());
  a.frame.peer_encoded = true;
}

TickBatcher::Assembly& TickBatcher::open_assembly(const SubscriberRef& sub) {
  sub->fanout_flush_ = flush_count_;
  sub->fanout_slot_ = static_cast<uint32_t>(assemblies_.size());
  Assembly& a = assemblies_.emplace_back(sub);
  a.msgpack = sub->encoding() == protocol::Encoding::kMsgpack;
  return a;
}

TickBatcher::Encoded TickBatcher::encoded_for(Local& local, const Subscriber& sub,
                                              const net::SharedBuf& json) {
  if (sub.encoding() != protocol::Encoding::kMsgpack) {
    return {&json, &spans_, false, metrics::WireForm::kJson, local.traffic};
  }
  if (!msgpack_) convert_spans(*json, spans_, msgpack_, msgpack_spans_);
  return {&msgpack_, &msgpack_spans_, true, metrics::WireForm::kMsgpack, local.traffic};
}

void TickBatcher::convert_spans(const std::string& json,
                                const std::vector<std::pair<size_t, size_t>>& spans,
                                net::SharedBuf& out, std::vector<std::pair<size_t, size_t>>& out_spans) {
  std::string buf;
  out_spans.clear();
  for (const auto& [begin, end] : spans) {
    const size_t at = buf.size();
    if (begin == end) {  // no such event in this view (an alt view's gaps)
      out_spans.emplace_back(at, at);
      continue;
    }
    if (!protocol::append_msgpack_from_json(buf, std::string_view(json.data() + begin, end - begin))) {
      // Never for events the hub encoded; the member is told rather than
      // sent bytes it cannot read.
      buf.resize(at);
      protocol::append_msgpack_from_json(
          buf, R"({"op":"error","code":"internal","msg":"an event could not be encoded"})");
    }
    out_spans.emplace_back(at, buf.size());
  }
  out = std::make_shared<const std::string>(std::move(buf));
}

void TickBatcher::add_run(Assembly& a, const Encoded& e, uint32_t i, uint32_t j) {
  const auto& spans = *e.spans;
  if (!e.msgpack) a.frame.add_static(a.events > 0 ? kComma : kOpen, 1);
  const size_t bytes = spans[j].second - spans[i].first;
  a.frame.add_shared(*e.buf, spans[i].first, bytes);
  a.events += j - i + 1;
  if (e.traffic) e.traffic->add(e.form, bytes + (e.msgpack ? 0 : 1), j - i + 1);
  a.frame.charge(e.traffic, e.form, bytes + (e.msgpack ? 0 : 1));
}

TickBatcher::Assembly* TickBatcher::assembly_of(Subscriber& sub) {
  return sub.fanout_flush_ == flush_count_ ? &assemblies_[sub.fanout_slot_] : nullptr;
}

size_t TickBatcher::encode_channel(Local& local) {
  const int64_t now = steady_ns();
  const size_t n = local.pending.size();
  ++local.gen;
  std::string buf;
  spans_.clear();
  size_t total = 0;
  stamp_ = state_stamp(local.tick_no, local.tick_ts_ms);
  const std::string& stamp = stamp_;
  bool any_delta = false;
  for (const auto& ev : local.pending) {
    total += ev.json->size() + stamp.size() + 1;
    any_delta |= ev.delta;
  }
  buf.reserve(total);
  // Per-receiver exclusions, sorted so that each member finds its own in O(log n).
  conn_excluded_.clear();
  user_excluded_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const auto& ev = local.pending[i];
    if (i) buf += ',';
    const size_t at = buf.size();
    append_event(buf, ev, stamp);
    spans_.emplace_back(at, buf.size());
    if (ev.exclude_conn) conn_excluded_.emplace_back(ev.exclude_conn, i);
    if (!ev.exclude_user.empty()) user_excluded_.emplace_back(ev.exclude_user, i);
    metrics_.observe(metrics::Stage::kFanout, now - ev.created_ns);
  }
  InterestGrid* grid = local.grid.get();
  if (grid) {
    grid->begin_batch();
    for (uint32_t i = 0; i < n; ++i) {
      const auto& cell = local.pending[i].cell;
      grid->add_event(i, cell ? &*cell : nullptr);
    }
    if (!grid->batch_positioned()) grid = nullptr;
  }
  std::sort(conn_excluded_.begin(), conn_excluded_.end());
  std::sort(user_excluded_.begin(), user_excluded_.end());
  auto shared = std::make_shared<const std::string>(std::move(buf));
  msgpack_.reset();  // made by the first MessagePack member, if any
  batch_streams_ = false;
  if (any_delta) prepare_streams(local);
  dprim_.reset();  // the delta views: made by the first delta member, if any
  mp_dprim_.reset();
  dsds_.reset();
  mp_dsds_.reset();

  // The events excluded for one key: a run of the sorted list (empty if none).
  auto excluded = [](const auto& list, const auto& key) {
    auto first = std::lower_bound(list.begin(), list.end(), key,
                                  [](const auto& e, const auto& k) { return e.first < k; });
    auto last = first;
    while (last != list.end() && last->first == key) ++last;
    return std::pair(first, last);
  };

  for (auto& m : local.members) {
    if (m.sub->gone()) continue;
    if (grid && grid->cell_of_member(m.sub->conn_id())) {
      const uint32_t from = std::min<uint32_t>(m.from_index, n);
      m.from_index = 0;
      metrics_.deliveries.fetch_add(append_from_grid(local, m, shared, from),
                                    std::memory_order_relaxed);
      continue;
    }
    const auto [conn_first, conn_last] = excluded(conn_excluded_, m.sub->conn_id());
    const auto [user_first, user_last] =
        excluded(user_excluded_, std::string_view(m.sub->user_id()));
    const bool has_exclusions = conn_first != conn_last || user_first != user_last;
    const uint32_t from = std::min<uint32_t>(m.from_index, n);
    m.from_index = 0;
    if (from >= n) continue;

    Subscriber& sub = *m.sub;
    if (delta_member(sub)) {
      kept_.clear();
      for (uint32_t i = from; i < n; ++i) kept_.push_back(i);
      if (has_exclusions) {
        skip_.assign(n, false);
        for (auto e = conn_first; e != conn_last; ++e) skip_[e->second] = true;
        for (auto e = user_first; e != user_last; ++e) skip_[e->second] = true;
        std::erase_if(kept_, [&](uint32_t i) { return skip_[i]; });
      }
      metrics_.deliveries.fetch_add(append_delta_member(local, m, kept_, shared),
                                    std::memory_order_relaxed);
      continue;
    }
    Assembly* a = assembly_of(sub);
    if (!a) a = &open_assembly(m.sub);
    const Encoded enc = encoded_for(local, sub, shared);

    if (!has_exclusions && from == 0) {
      add_run(*a, enc, 0, n - 1);
      metrics_.deliveries.fetch_add(n, std::memory_order_relaxed);
      continue;
    }
    skip_.assign(n, false);
    for (uint32_t i = 0; i < from; ++i) skip_[i] = true;
    for (auto e = conn_first; e != conn_last; ++e) skip_[e->second] = true;
    for (auto e = user_first; e != user_last; ++e) skip_[e->second] = true;
    // Runs of consecutive kept events are one slice each (their commas included).
    uint64_t delivered = 0;
    for (uint32_t i = 0; i < n;) {
      if (skip_[i]) { ++i; continue; }
      uint32_t j = i;
      while (j + 1 < n && !skip_[j + 1]) ++j;
      add_run(*a, enc, i, j);
      delivered += j - i + 1;
      i = j + 1;
    }
    if (a->events == 0) {  // nothing for it at all this tick: its fresh assembly is the last
      assemblies_.pop_back();
      sub.fanout_flush_ = 0;
    }
    metrics_.deliveries.fetch_add(delivered, std::memory_order_relaxed);
  }
  if (batch_streams_) commit_streams(local);
  local.pending.clear();
  local.coalesced.clear();
  local.sent_ns = now;
  return local.members.size();
}

void TickBatcher::append_event(std::string& buf, const ChannelEvent& ev, std::string_view stamp) {
  const std::string_view json = *ev.json;
  if (ev.coalesce_key.empty() || !json.starts_with(kStateFrameOpen)) {
    buf += json;
    return;
  }
  buf += stamp;
  buf += json.substr(kStateFrameOpen.size());
}

uint64_t TickBatcher::append_from_grid(Local& local, Member& m, const net::SharedBuf& shared,
                                       uint32_t from) {
  Subscriber& sub = *m.sub;
  local.grid->collect(*local.grid->cell_of_member(sub.conn_id()), picked_);
  // What the general path excludes: before its join, its own state, presence about itself.
  std::erase_if(picked_, [&](uint32_t i) {
    const ChannelEvent& ev = local.pending[i];
    return i < from || ev.exclude_conn == sub.conn_id() ||
           (!ev.exclude_user.empty() && ev.exclude_user == sub.user_id());
  });
  if (picked_.empty()) return 0;
  if (delta_member(sub)) return append_delta_member(local, m, picked_, shared);
  Assembly* a = assembly_of(sub);
  if (!a) a = &open_assembly(m.sub);
  const Encoded enc = encoded_for(local, sub, shared);
  // Runs of consecutive events are one slice each (their commas included).
  for (size_t k = 0; k < picked_.size();) {
    size_t j = k;
    while (j + 1 < picked_.size() && picked_[j + 1] == picked_[j] + 1) ++j;
    add_run(*a, enc, picked_[k], picked_[j]);
    k = j + 1;
  }
  return picked_.size();
}

}  // namespace parley::hub
