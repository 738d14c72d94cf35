#include "hub/loop_fanout.h"

#include <algorithm>
#include <chrono>

#include "common/check.h"
#include "common/clock.h"
#include "runtime/loop_group.h"

namespace parley::hub {

namespace {
constexpr char kOpen[] = "[";
constexpr char kComma[] = ",";
constexpr char kClose[] = "]";
}  // namespace

LoopFanout::LoopFanout(unsigned index, boost::asio::io_context& loop, admin::ThreadMetrics& metrics)
    : index_(index), loop_(loop), metrics_(metrics) {}

void LoopFanout::add_member(const std::string& channel_key, uint32_t tick_ms, SubscriberRef sub) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  Local& local = channels_[channel_key];
  local.tick_ms = tick_ms;
  for (auto& m : local.members) {
    if (m.sub->conn_id() == sub->conn_id()) return;
  }
  local.members.push_back({std::move(sub), static_cast<uint32_t>(local.pending.size())});
}

void LoopFanout::remove_member(const std::string& channel_key, uint64_t conn_id) {
  auto it = channels_.find(channel_key);
  if (it == channels_.end()) return;
  auto& members = it->second.members;
  std::erase_if(members, [&](const Member& m) { return m.sub->conn_id() == conn_id; });
  if (members.empty() && !it->second.dirty) channels_.erase(it);
}

void LoopFanout::deliver(const std::string& channel_key, ChannelEvent ev) {
  PARLEY_CHECK(runtime::LoopGroup::current() == static_cast<int>(index_));
  auto it = channels_.find(channel_key);
  if (it == channels_.end() || it->second.members.empty()) return;
  Local& local = it->second;
  if (!ev.coalesce_key.empty()) {
    auto [slot, inserted] = local.coalesced.try_emplace(ev.coalesce_key, local.pending.size());
    if (!inserted) {
      // Latest wins within a tick: the newer body takes the older one's place.
      local.pending[slot->second] = std::move(ev);
      return;
    }
  }
  local.pending.push_back(std::move(ev));
  if (!local.dirty) {
    local.dirty = true;
    schedule(local.tick_ms, channel_key);
  }
}

void LoopFanout::schedule(uint32_t tick_ms, const std::string& key) {
  auto it = ticks_.try_emplace(tick_ms, loop_).first;
  TickClass& tc = it->second;
  tc.dirty.push_back(key);
  if (tick_ms == 0) {
    flush(0);
    return;
  }
  if (!tc.armed) arm(tick_ms, tc);
}

void LoopFanout::arm(uint32_t tick_ms, TickClass& tc) {
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
    ticks_.at(tick_ms).armed = false;
    flush(tick_ms);
  });
}

void LoopFanout::flush(uint32_t tick_ms) {
  TickClass& tc = ticks_.at(tick_ms);
  std::vector<std::string> keys;
  keys.swap(tc.dirty);
  std::unordered_map<Subscriber*, Assembly> frames;
  for (const auto& key : keys) {
    auto it = channels_.find(key);
    if (it == channels_.end()) continue;
    Local& local = it->second;
    encode_channel(local, frames);
    if (local.members.empty()) channels_.erase(it);
  }
  for (auto& [ptr, a] : frames) {
    a.frame.add_static(kClose, 1);
    a.sub->send(std::move(a.frame));
  }
}

void LoopFanout::encode_channel(Local& local, std::unordered_map<Subscriber*, Assembly>& out) {
  const int64_t now = steady_ns();
  const size_t n = local.pending.size();
  std::string buf;
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each event
  spans.reserve(n);
  size_t total = 0;
  for (const auto& ev : local.pending) total += ev.json->size() + 1;
  buf.reserve(total);
  // Per-receiver exclusions, indexed so that each member costs O(its own).
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_conn;
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_user;
  for (uint32_t i = 0; i < n; ++i) {
    const auto& ev = local.pending[i];
    if (i) buf += ',';
    spans.emplace_back(buf.size(), buf.size() + ev.json->size());
    buf += *ev.json;
    if (ev.exclude_conn) by_conn[ev.exclude_conn].push_back(i);
    if (!ev.exclude_user.empty()) by_user[ev.exclude_user].push_back(i);
    metrics_.observe(admin::Stage::kFanout, now - ev.created_ns);
  }
  auto shared = std::make_shared<const std::string>(std::move(buf));

  std::vector<bool> skip;
  for (auto& m : local.members) {
    if (m.sub->gone()) continue;
    const auto* conn_ex = by_conn.empty() ? nullptr : [&]() -> const std::vector<uint32_t>* {
      auto f = by_conn.find(m.sub->conn_id());
      return f == by_conn.end() ? nullptr : &f->second;
    }();
    const auto* user_ex = by_user.empty() ? nullptr : [&]() -> const std::vector<uint32_t>* {
      auto f = by_user.find(m.sub->user_id());
      return f == by_user.end() ? nullptr : &f->second;
    }();
    const uint32_t from = std::min<uint32_t>(m.from_index, n);
    m.from_index = 0;
    if (from >= n) continue;

    auto [slot, fresh] = out.try_emplace(m.sub.get());
    Assembly& a = slot->second;
    const bool first_in_frame = fresh;
    if (fresh) a.sub = m.sub;

    if (!conn_ex && !user_ex && from == 0) {
      a.frame.add_static(first_in_frame ? kOpen : kComma, 1);
      a.frame.add_shared(shared, 0, shared->size());
      metrics_.deliveries.fetch_add(n, std::memory_order_relaxed);
      continue;
    }
    skip.assign(n, false);
    for (uint32_t i = 0; i < from; ++i) skip[i] = true;
    if (conn_ex) for (auto i : *conn_ex) skip[i] = true;
    if (user_ex) for (auto i : *user_ex) skip[i] = true;
    // Runs of consecutive kept events are one slice each (their commas included).
    bool wrote = !first_in_frame;
    uint64_t delivered = 0;
    for (uint32_t i = 0; i < n;) {
      if (skip[i]) { ++i; continue; }
      uint32_t j = i;
      while (j + 1 < n && !skip[j + 1]) ++j;
      a.frame.add_static(wrote ? kComma : kOpen, 1);
      wrote = true;
      a.frame.add_shared(shared, spans[i].first, spans[j].second - spans[i].first);
      delivered += j - i + 1;
      i = j + 1;
    }
    if (!wrote) out.erase(slot);  // nothing for it at all this tick
    metrics_.deliveries.fetch_add(delivered, std::memory_order_relaxed);
  }
  local.pending.clear();
  local.coalesced.clear();
  local.dirty = false;
}

}  // namespace parley::hub
