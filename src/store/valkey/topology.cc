#include "store/valkey/topology.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace parley::store::valkey {

Topology::Topology(std::vector<HostPort> seeds, Options opts, Hooks hooks)
    : opts_(opts), hooks_(std::move(hooks)), known_(std::move(seeds)) {}

Topology::~Topology() { stop(); }

std::vector<HostPort> Topology::ask_order() {
  std::vector<HostPort> known;
  {
    std::lock_guard lock(mu_);
    known = known_;
  }
  // Nodes that answer first: a hung node costs ask_timeout_ms, a dead one nothing.
  std::vector<HostPort> order, last;
  for (auto& n : known) (hooks_.silent && hooks_.silent(n) ? last : order).push_back(std::move(n));
  for (auto& n : last) order.push_back(std::move(n));
  return order;
}

Result<ClusterView> Topology::discover_once() {
  auto view = discover_view(ask_order(), opts_.ask_timeout_ms, opts_.views);
  runs_.fetch_add(1, std::memory_order_relaxed);
  if (!view) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return view;
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& n : view->nodes) {
      bool seen = false;
      for (const auto& k : known_) seen = seen || (k.ip == n.ip && k.port == n.port);
      if (!seen) known_.push_back(n);
    }
  }
  return view;
}

void Topology::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { run(); });
}

void Topology::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Topology::request() {
  {
    std::lock_guard lock(mu_);
    if (wanted_) return;
    wanted_ = true;
  }
  cv_.notify_all();
}

void Topology::run() {
  using clock = std::chrono::steady_clock;
  auto last = clock::now();
  std::unique_lock lock(mu_);
  while (!stop_) {
    const bool fast = [&] {
      lock.unlock();
      const bool d = hooks_.degraded && hooks_.degraded();
      lock.lock();
      return d;
    }();
    const auto period = std::chrono::milliseconds(fast ? opts_.down_refresh_ms : opts_.idle_refresh_ms);
    cv_.wait_until(lock, last + period, [this] { return stop_ || wanted_; });
    if (stop_) break;
    // Rate limit: a burst of failed connections asks once.
    const auto earliest = last + std::chrono::milliseconds(opts_.min_interval_ms);
    if (clock::now() < earliest) {
      cv_.wait_until(lock, earliest, [this] { return stop_; });
      if (stop_) break;
    }
    wanted_ = false;
    lock.unlock();
    auto view = discover_once();
    if (view) {
      if (hooks_.apply) hooks_.apply(*view);
    } else {
      spdlog::debug("valkey cluster: rediscovery failed: {}", view.error().msg);
    }
    last = clock::now();
    lock.lock();
  }
}

}  // namespace parley::store::valkey
