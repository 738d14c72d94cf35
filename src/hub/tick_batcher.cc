#include "hub/tick_batcher.h"

#include <algorithm>
#include <chrono>

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
}  // namespace

TickBatcher::TickBatcher(unsigned index, boost::asio::io_context& loop, metrics::ThreadMetrics& metrics)
    : index_(index), loop_(loop), metrics_(metrics) {}

void TickBatcher::add_member(const std::string& channel_key, uint32_t tick_ms, SubscriberRef sub) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  Local& local = channels_[channel_key];
  local.tick_ms = tick_ms;
  for (auto& m : local.members) {
    if (m.sub->conn_id() == sub->conn_id()) return;
  }
  if (local.grid) local.grid->add_member(sub->conn_id());
  local.members.push_back({std::move(sub), static_cast<uint32_t>(local.pending.size())});
}

void TickBatcher::remove_member(const std::string& channel_key, uint64_t conn_id) {
  auto it = channels_.find(channel_key);
  if (it == channels_.end()) return;
  auto& members = it->second.members;
  std::erase_if(members, [&](const Member& m) { return m.sub->conn_id() == conn_id; });
  if (it->second.grid) it->second.grid->remove_member(conn_id);
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
    local.grid->moved(ev.exclude_conn, *ev.cell);
  }
  if (local.tick_ms == 0) {
    local.pending.push_back(std::move(ev));
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
    // pending waits with it (a channel's events stay in order).
    if (!local.held) hold(&*it);
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

void TickBatcher::cork(SubscriberRef sub) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  if (sub->corked_) return;
  sub->corked_ = true;
  corked_.push_back(std::move(sub));
  if (drain_posted_ || flushing_ || in_before_drain_) return;  // that drain writes it
  post_drain();
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
  for (Entry* entry : tc.held) {
    Local& local = entry->second;
    local.held = false;
    local.coalesced.clear();  // the next tick is a new coalescing window
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
    if (local.held) continue;  // a state came meanwhile: it all goes at the tick
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
  // Corked frames (acks) first: an ack never waits for others' deliveries,
  // and leaves in one write with its subscriber's frame of this slice.
  for (SubscriberRef& sub : corked_) {
    sub->corked_ = false;
    if (Assembly* a = assembly_of(*sub)) {
      finish_frame(*a);
      a->sub->send(std::move(a->frame));
      a->sent = true;
    } else {
      sub->flush_corked();
    }
  }
  corked_.clear();
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
  if (sub.encoding() != protocol::Encoding::kMsgpack) return {&json, &spans_, false};
  if (!msgpack_) {
    std::string buf;
    msgpack_spans_.clear();
    for (const auto& ev : local.pending) {
      const size_t at = buf.size();
      if (!protocol::append_msgpack_from_json(buf, *ev.json)) {
        // Never for events the hub encoded; the member is told rather than
        // sent bytes it cannot read.
        buf.resize(at);
        protocol::append_msgpack_from_json(
            buf, R"({"op":"error","code":"internal","msg":"an event could not be encoded"})");
      }
      msgpack_spans_.emplace_back(at, buf.size());
    }
    msgpack_ = std::make_shared<const std::string>(std::move(buf));
  }
  return {&msgpack_, &msgpack_spans_, true};
}

void TickBatcher::add_run(Assembly& a, const Encoded& e, uint32_t i, uint32_t j) {
  const auto& spans = *e.spans;
  if (!e.msgpack) a.frame.add_static(a.events > 0 ? kComma : kOpen, 1);
  a.frame.add_shared(*e.buf, spans[i].first, spans[j].second - spans[i].first);
  a.events += j - i + 1;
}

TickBatcher::Assembly* TickBatcher::assembly_of(Subscriber& sub) {
  return sub.fanout_flush_ == flush_count_ ? &assemblies_[sub.fanout_slot_] : nullptr;
}

size_t TickBatcher::encode_channel(Local& local) {
  const int64_t now = steady_ns();
  const size_t n = local.pending.size();
  std::string buf;
  spans_.clear();
  size_t total = 0;
  for (const auto& ev : local.pending) total += ev.json->size() + 1;
  buf.reserve(total);
  // Per-receiver exclusions, sorted so that each member finds its own in O(log n).
  conn_excluded_.clear();
  user_excluded_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const auto& ev = local.pending[i];
    if (i) buf += ',';
    spans_.emplace_back(buf.size(), buf.size() + ev.json->size());
    buf += *ev.json;
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
  local.pending.clear();
  local.coalesced.clear();
  local.sent_ns = now;
  return local.members.size();
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
