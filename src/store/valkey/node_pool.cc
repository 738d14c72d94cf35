#include "store/valkey/node_pool.h"

#include <chrono>
#include <future>

namespace parley::store::valkey {

NodePool::NodePool(runtime::LoopGroup& loops, HostPort addr, size_t size, unsigned first_loop,
                   const ConnectionOptions& opts)
    : loops_(loops), addr_(std::move(addr)) {
  name_ = (addr_.v6 ? "[" + addr_.ip + "]" : addr_.ip) + ":" + std::to_string(addr_.port);
  if (size == 0) size = 1;
  for (size_t i = 0; i < size; ++i) {
    const unsigned loop = static_cast<unsigned>((first_loop + i) % loops_.size());
    slots_.push_back(Slot{loop, std::make_shared<RespConnection>(loops_.loop(loop), addr_, opts)});
  }
}

void NodePool::run(size_t hash, std::function<void(RespConnection&)> fn) {
  const Slot& s = slots_[hash % slots_.size()];
  loops_.run_on(s.loop, [conn = s.conn, fn = std::move(fn)] { fn(*conn); });
}

void NodePool::close(int timeout_ms) {
  std::vector<std::future<void>> done;
  for (auto& s : slots_) {
    auto p = std::make_shared<std::promise<void>>();
    done.push_back(p->get_future());
    loops_.run_on(s.loop, [conn = s.conn, p] {
      conn->close();
      p->set_value();
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (auto& f : done) f.wait_until(deadline);
}

size_t NodePool::queued() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s.conn->queued();
  return n;
}

size_t NodePool::in_flight() const {
  size_t n = 0;
  for (const auto& s : slots_) n += s.conn->in_flight();
  return n;
}

bool NodePool::down() const {
  for (const auto& s : slots_) {
    if (s.conn->down()) return true;
  }
  return false;
}

}  // namespace parley::store::valkey

namespace parley::store::valkey {

bool NodePool::up() const {
  for (const auto& s : slots_) {
    if (s.conn->up()) return true;
  }
  return false;
}

void NodePool::probe() {
  run(0, [](RespConnection& c) { c.send(format_command({"PING"}), nullptr); });
}

}  // namespace parley::store::valkey
