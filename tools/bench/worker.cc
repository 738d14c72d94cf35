#include "worker.h"

#include <time.h>

#include <algorithm>
#include <cmath>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>

#include "token.h"

namespace bench {

namespace asio = boost::asio;
using asio::ip::tcp;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

uint32_t channel_count(const Options& o) {
  return uint32_t((o.conns + o.channel_size - 1) / o.channel_size);
}

Assignment assign(const Options& o, int proc, int worker) {
  Assignment a;
  uint32_t n = channel_count(o);
  for (uint32_t g = 0; g < n; ++g) {
    if (int(g % uint32_t(o.procs)) != proc) continue;
    if (int((g / uint32_t(o.procs)) % uint32_t(o.threads)) != worker) continue;
    a.channels.push_back(g);
    uint64_t first = uint64_t(g) * o.channel_size;
    a.conns += std::min<uint64_t>(o.channel_size, uint64_t(o.conns) - first);
  }
  return a;
}

Worker::Worker(const Options& o, int index, Assignment a, double total_conns)
    : o_(o), index_(index), assignment_(std::move(a)),
      share_(total_conns > 0 ? double(assignment_.conns) / total_conns : 0),
      rbuf_(256 * 1024 + simdjson::SIMDJSON_PADDING), tick_(io_),
      state_hz_(o.state_hz),
      rng_(0x9e3779b97f4a7c15ull * uint64_t(index + 1 + o.proc_index * 64)) {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(o_.host, ec);
  if (ec) {
    tcp::resolver resolver(io_);
    auto results = resolver.resolve(o_.host, std::to_string(o_.port));
    endpoint_ = *results.begin();
  } else {
    endpoint_ = tcp::endpoint(addr, uint16_t(o_.port));
  }
  host_header_ = fmt::format("{}:{}", o_.host, o_.port);
  padding_.assign(size_t(std::max(0, o_.body_bytes)), 'x');
  local_of_global_.assign(channel_count(o_), -1);
  // Connections are interleaved across channels so that round-robin pacing spreads
  // pubs over channels instead of draining one channel's members in turn.
  std::vector<std::vector<std::unique_ptr<Connection>>> per_channel;
  for (uint32_t g : assignment_.channels) {
    uint32_t local = uint32_t(channels_.size());
    local_of_global_[g] = int32_t(local);
    ChannelState ch;
    ch.name = fmt::format("{}:{}.{}", o_.ns, o_.run_id, g);
    channels_.push_back(std::move(ch));
    per_channel.emplace_back();
    uint64_t first = uint64_t(g) * o_.channel_size;
    uint64_t last = std::min<uint64_t>(first + o_.channel_size, uint64_t(o_.conns));
    for (uint64_t gid = first; gid < last; ++gid) {
      per_channel.back().push_back(std::make_unique<Connection>(
          *this, uint32_t(gid), std::vector<uint32_t>{local}));
      channels_[local].members.push_back(per_channel.back().back().get());
    }
  }
  for (size_t k = 0; k < size_t(o_.channel_size); ++k)
    for (auto& members : per_channel)
      if (k < members.size()) conns_.push_back(std::move(members[k]));
}

Worker::~Worker() {
  if (thread_.joinable()) {
    io_.stop();
    thread_.join();
  }
}

uint32_t Worker::random() {
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return uint32_t(rng_ >> 32);
}

int64_t Worker::local_channel(std::string_view name) const {
  // Names are "<ns>:<run_id>.<global index>"; only the index is parsed, and a name
  // of another run is foreign.
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return -1;
  uint64_t g = 0;
  for (size_t i = dot + 1; i < name.size(); ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return -1;
    g = g * 10 + uint64_t(c - '0');
  }
  if (g >= local_of_global_.size()) return -1;
  int32_t local = local_of_global_[g];
  if (local < 0 || channels_[size_t(local)].name.size() != name.size()) return -1;
  return local;
}

bool Worker::source_address(uint32_t gid, asio::ip::address& out) const {
  if (o_.src_addrs <= 0 || !endpoint_.address().is_loopback() || !endpoint_.address().is_v4())
    return false;
  uint32_t i = gid % uint32_t(o_.src_addrs);
  out = asio::ip::make_address_v4((127u << 24) | ((1 + i / 250) << 8) | (1 + i % 250));
  return true;
}

std::string Worker::token_for(uint32_t gid) const {
  int64_t exp = int64_t(time(nullptr)) + int64_t(o_.duration_s) + 3600;
  return mint_token(o_.secret, o_.tenant, fmt::format("u{}", gid), exp);
}

void Worker::schedule_retry(Connection* c, uint64_t rid, int64_t due_ns) {
  timers_.push_back({due_ns, c, rid});
  std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
}

void Worker::schedule_reconnect(Connection* c, int64_t due_ns) { schedule_retry(c, 0, due_ns); }

void Worker::start(int64_t t0_ns) {
  asio::post(io_, [this, t0_ns] {
    t0_ = t0_ns;
    next_timeout_check_ = t0_ns + 1'000'000'000;
    on_tick();
  });
  thread_ = std::thread([this] {
    auto guard = asio::make_work_guard(io_);
    io_.run();
  });
}

void Worker::set_rate(double total_rate) {
  asio::post(io_, [this, total_rate] { pub_rate_ = total_rate * share_; });
}

void Worker::set_state_hz(double hz) {
  asio::post(io_, [this, hz] { state_hz_ = hz; });
}

void Worker::set_publishing(bool on) {
  asio::post(io_, [this, on] {
    publishing_ = on;
    int64_t now = now_ns();
    next_pub_ = next_state_ = next_churn_ = next_up_ = now;
  });
}

std::pair<Counters, Latencies> Worker::sample() {
  return call([this] {
    std::pair<Counters, Latencies> out{c_, interval_};
    interval_.reset();
    return out;
  });
}

void Worker::on_tick() {
  if (shutting_down_) return;
  int64_t now = now_ns();
  open_connections(now);
  if (publishing_) {
    pace(now, pub_rate_, next_pub_, pub_cursor_,
         [](Connection& c, int64_t t) { return c.publish(0, t); }, true);
    if (state_hz_ > 0)
      pace(now, state_hz_ * double(conns_.size()), next_state_, state_cursor_,
           [](Connection& c, int64_t) { return c.send_state(); }, false);
    if (o_.up_hz > 0)
      pace(now, o_.up_hz * double(conns_.size()), next_up_, up_cursor_,
           [](Connection& c, int64_t) { return c.send_up(); }, false);
    if (o_.churn_per_s > 0 && !conns_.empty()) {
      size_t cursor = random() % conns_.size();
      pace(now, o_.churn_per_s * share_, next_churn_, cursor,
           [](Connection& c, int64_t) { return c.churn(); }, false);
    }
  }
  if (o_.ping_s > 0 && opened_ == conns_.size()) {
    if (next_ping_ == 0) next_ping_ = now;
    pace(now, double(conns_.size()) / o_.ping_s, next_ping_, ping_cursor_,
         [](Connection& c, int64_t) {
           c.send_ping();
           return true;
         }, false);
  }
  run_timers(now);
  if (now >= next_timeout_check_) {
    check_timeouts(now);
    next_timeout_check_ = now + 1'000'000'000;
  }
  tick_.expires_after(std::chrono::milliseconds(1));
  tick_.async_wait([this](boost::system::error_code ec) {
    if (!ec) on_tick();
  });
}

void Worker::open_connections(int64_t now) {
  size_t n = conns_.size();
  if (opened_ >= n) return;
  size_t target = n;
  if (o_.ramp_s > 0) {
    double frac = double(now - t0_) / (o_.ramp_s * 1e9);
    target = std::min(n, size_t(frac * double(n)) + 1);
  }
  while (opened_ < target) conns_[opened_++]->connect();
}

void Worker::pace(int64_t now, double rate, int64_t& next, size_t& cursor,
                  const std::function<bool(Connection&, int64_t)>& send, bool record_lag) {
  if (rate <= 0 || conns_.empty()) return;
  const double interval = 1e9 / rate;
  if (next == 0) next = now;
  // Fell more than a second behind: the generator could not keep up. Skip ahead
  // rather than burst, and count what was skipped so the run is marked.
  if (now - next > 1'000'000'000) {
    auto skipped = uint64_t(double(now - next - 1'000'000'000) / interval);
    if (record_lag) c_.sched_skipped += skipped;
    next += int64_t(double(skipped) * interval);
  }
  double acc = double(next);
  while (int64_t(acc) <= now) {
    size_t tries = std::min<size_t>(conns_.size(), 64);
    for (size_t t = 0; t < tries; ++t) {
      Connection& c = *conns_[cursor++ % conns_.size()];
      if (send(c, now)) break;
    }
    if (record_lag) record_latency(&Latencies::send_lag, now - int64_t(acc));
    acc += interval;
  }
  next = int64_t(acc);
}

void Worker::run_timers(int64_t now) {
  while (!timers_.empty() && timers_.front().due_ns <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
    Timed t = timers_.back();
    timers_.pop_back();
    if (t.rid) {
      t.conn->retry(t.rid);
    } else if (t.conn->closed()) {
      t.conn->connect();
    }
  }
}

void Worker::check_timeouts(int64_t now) {
  auto limit = int64_t(o_.connect_timeout_s * 1e9);
  for (auto& c : conns_)
    if (c->connecting() && now - c->state_since_ns() > limit) c->on_timeout();
}

bool Worker::drained() {
  return call([this] {
    for (auto& c : conns_) {
      if (c->closed()) continue;
      if (!c->ready() || c->inflight() > 0) return false;
      for (auto& m : c->memberships())
        if (m.st == Membership::St::kJoined && m.last_seq < channels_[m.chan].final_seq())
          return false;
    }
    return true;
  });
}

void Worker::start_history_audit() {
  call([this] {
    for (uint32_t i = 0; i < channels_.size(); ++i) {
      ChannelState& ch = channels_[i];
      ch.hist_done = true;
      uint64_t final = ch.final_seq();
      if (!ch.base_set || final <= ch.base) continue;
      ch.hist_start = std::max<uint64_t>(ch.base, final > uint64_t(o_.history_len)
                                                      ? final - uint64_t(o_.history_len)
                                                      : 0);
      ch.hist_after = ch.hist_start;
      ch.hist_conn = nullptr;
      for (Connection* m : ch.members)
        if (m->ready()) {
          ch.hist_conn = m;
          break;
        }
      if (!ch.hist_conn) continue;  // counted as missing when the audit closes
      ch.hist_done = false;
      ch.hist_page_count = ch.hist_page_max = 0;
      ch.hist_conn->send_history(i, ch.hist_after, 1000);
    }
    return 0;
  });
}

void Worker::on_history_msg(const Event& ev) {
  int64_t local = local_channel(ev.ch);
  if (local < 0) return;
  ChannelState& ch = channels_[size_t(local)];
  ++ch.hist_page_count;
  ch.hist_page_max = std::max(ch.hist_page_max, ev.seq);
  if (ev.seq <= ch.hist_start) return;
  uint64_t want = ch.acked_id(ev.seq);
  if (want == 0) return;  // stored but its ack never reached us: nothing to compare
  if (ev.id_ok && ev.id == want) {
    ++ch.hist_checked;
  } else {
    ++ch.hist_mismatch;
    ch.reused.insert(ev.seq);
  }
}

void Worker::on_history_page(const Event& ev) {
  int64_t local = local_channel(ev.ch);
  if (local < 0) return;
  ChannelState& ch = channels_[size_t(local)];
  if (ch.hist_done) return;
  if (ch.hist_page_count >= 1000 && ch.hist_page_max < ch.final_seq() && ch.hist_conn) {
    ch.hist_after = ch.hist_page_max;
    ch.hist_page_count = ch.hist_page_max = 0;
    ch.hist_conn->send_history(uint32_t(local), ch.hist_after, 1000);
    return;
  }
  ch.hist_done = true;
}

bool Worker::history_done() {
  return call([this] {
    for (auto& ch : channels_)
      if (!ch.hist_done) return false;
    return true;
  });
}

AuditResult Worker::audit() {
  AuditResult r;
  for (auto& c : conns_) {
    for (auto& m : c->memberships()) {
      if (m.st != Membership::St::kJoined || !m.stayed || c->closed()) continue;
      const ChannelState& ch = channels_[m.chan];
      uint64_t final = ch.final_seq();
      ++r.members_checked;
      c_.lost += m.missing.size();
      if (final > m.last_seq) c_.lost += final - m.last_seq;
      if (final > m.join_seq) r.expected_deliveries += final - m.join_seq;
    }
    c_.unacked_at_end += c->inflight();
  }
  for (auto& ch : channels_) {
    ++r.channels_checked;
    uint64_t acked_in_range = 0;
    for (size_t i = 0; i < ch.acked.size(); ++i) {
      if (!ch.acked[i]) continue;
      ++r.acked_msgs;
      // Every acked message was delivered to someone with the same id.
      uint64_t seq = ch.base + 1 + i;
      uint64_t seen = ch.seen_id(seq);
      if (seen && seen != ch.acked[i]) {
        ++c_.mismatches;
        ch.reused.insert(seq);
      }
      if (seq > ch.hist_start) ++acked_in_range;
    }
    c_.lost += ch.reused.size();
    if (o_.history_check) {
      c_.history_checked += ch.hist_checked;
      c_.history_mismatch += ch.hist_mismatch;
      if (acked_in_range > ch.hist_checked + ch.hist_mismatch)
        c_.history_missing += acked_in_range - ch.hist_checked - ch.hist_mismatch;
    }
  }
  r.lost = c_.lost;
  r.duplicates = c_.duplicates;
  r.reorders = c_.reorders;
  r.mismatches = c_.mismatches + c_.history_mismatch;
  return r;
}

WorkerFinal Worker::finish() {
  WorkerFinal f = call([this] {
    WorkerFinal out;
    out.audit = audit();
    shutting_down_ = true;
    tick_.cancel();
    for (auto& c : conns_) c->close();
    out.counters = c_;
    out.latencies = total_;
    return out;
  });
  io_.stop();
  if (thread_.joinable()) thread_.join();
  return f;
}

}  // namespace bench
