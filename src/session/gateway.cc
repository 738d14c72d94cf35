#include "session/gateway.h"

#include <algorithm>

#include "common/clock.h"
#include "session/client_session.h"
#include "protocol/encoder.h"
#include "runtime/every_loop.h"

namespace parley::session {

namespace {
// Sweeps run often enough to keep heartbeat and hello deadlines within a
// quarter of their period, and never more often than every 25 ms.
std::chrono::milliseconds sweep_period(const GatewayOptions& o) {
  const uint32_t shortest = std::min(o.heartbeat_ms, o.hello_timeout_ms);
  return std::chrono::milliseconds(std::clamp<uint32_t>(shortest / 4, 25, 500));
}

std::string user_key(const ClientSession& s) {
  std::string k = s.tenant()->id;
  k += '\x1f';
  k += s.user_id();
  return k;
}
}  // namespace

Gateway::Gateway(runtime::LoopGroup& loops, TenantRegistry& tenants, hub::Hub& hub,
                 hub::Stores stores, metrics::Metrics& metrics, GatewayOptions opts)
    : loops_(loops), tenants_(tenants), hub_(hub), stores_(stores), metrics_(metrics), opts_(opts) {
  for (unsigned i = 0; i < loops.size(); ++i) {
    per_loop_.push_back(std::make_unique<LoopSessions>(loops.loop(i)));
  }
}

Gateway::~Gateway() = default;

bool Gateway::take_slot() {
  if (admitted_.fetch_add(1, std::memory_order_relaxed) < opts_.max_connections) return true;
  admitted_.fetch_sub(1, std::memory_order_relaxed);
  metrics_.local().inc(metrics_.local().connections_refused);
  return false;
}

void Gateway::adopt(std::shared_ptr<net::Connection> conn) {
  // Drain closed the gate after accept: dropping the connection closes it.
  if (!sessions_.try_enter()) return;
  const unsigned loop = conn->loop();
  const uint64_t id = next_conn_id_.fetch_add(1, std::memory_order_relaxed);
  auto session = std::make_shared<ClientSession>(*this, conn, id,
                                                 wall_ms() + opts_.hello_timeout_ms);
  per_loop_[loop]->by_conn.emplace(id, session);
  metrics_.local().inc(metrics_.local().connections_opened);
  conn->start(session);
}

void Gateway::on_authenticated(ClientSession& s) {
  authenticated_.fetch_add(1, std::memory_order_relaxed);
  per_loop_[s.loop()]->by_user.emplace(user_key(s), s.conn_id());
}

void Gateway::on_session_closed(ClientSession& s) {
  LoopSessions& ls = *per_loop_[s.loop()];
  if (s.tenant()) {
    auto range = ls.by_user.equal_range(user_key(s));
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == s.conn_id()) {
        ls.by_user.erase(it);
        break;
      }
    }
  }
  if (ls.by_conn.erase(s.conn_id())) {
    if (s.tenant()) {
      // The slot on_hello took (ClientSession::on_hello).
      authenticated_.fetch_sub(1, std::memory_order_relaxed);
      release_slot();
    }
    sessions_.leave();
  }
}

void Gateway::start() {
  for (unsigned i = 0; i < loops_.size(); ++i) {
    loops_.run_on(i, [this, i] {
      arm_sweep(i);
    });
  }
}

void Gateway::arm_sweep(unsigned loop) {
  auto& ls = *per_loop_[loop];
  ls.sweep.expires_after(sweep_period(opts_));
  ls.sweep.async_wait([this, loop](boost::system::error_code ec) {
    if (ec) return;
    run_sweep(loop);
    arm_sweep(loop);
  });
}

void Gateway::run_sweep(unsigned loop) {
  auto& ls = *per_loop_[loop];
  const int64_t now = wall_ms();
  // Heartbeats are spread over their period: each sweep pings one slot of the
  // sessions, so each still hears from us once per heartbeat_ms, but 10,000
  // connections never take 10,000 pings (and send back 10,000 pongs) in one
  // burst; that burst held a loop for ~50 ms (parley-bench ramp at 10,000
  // connections: one second of ack p99 132 ms among seconds of 8 ms).
  const uint64_t slots = std::max<uint64_t>(
      1, opts_.heartbeat_ms / static_cast<uint64_t>(sweep_period(opts_).count()));
  const uint64_t slot = ls.sweeps++ % slots;
  // Copy: closing a session erases it from the table.
  std::vector<std::shared_ptr<ClientSession>> due;
  for (auto& [id, s] : ls.by_conn) {
    if (!s->authenticated()) {
      if (now >= s->hello_deadline_ms()) due.push_back(s);
      continue;
    }
    if (id % slots != slot) continue;
    if (s->connection().unanswered_pings() >= 2) {
      due.push_back(s);
    } else {
      s->connection().heartbeat();
    }
  }
  for (auto& s : due) {
    if (!s->authenticated()) {
      std::string out;
      protocol::encode_error(out, "", Error{ErrorCode::kUnauthorized, "no hello within the deadline"});
      s->close_with(std::move(out), kCloseUnauthorized, "hello timeout");
    } else {
      s->connection().close(1001, "heartbeat timeout");
    }
  }
}

void Gateway::drain(std::function<void()> done) {
  draining_.store(true);
  runtime::run_on_every_loop(
      loops_,
      [this](unsigned loop) {
        auto& ls = *per_loop_[loop];
        ls.sweep.cancel();
        std::vector<std::shared_ptr<ClientSession>> all;
        for (auto& [id, s] : ls.by_conn) all.push_back(s);
        for (auto& s : all) {
          std::string bye;
          protocol::encode_bye(bye, "draining", opts_.drain_reconnect_ms);
          // Behind what is queued: acks already produced still reach the client.
          s->connection().send(net::OutFrame(std::move(bye)));
          s->connection().close(1001, "draining");
        }
      },
      std::move(done));
}

void Gateway::close_tenant(const TenantRuntime* tenant, std::function<void(size_t)> done) {
  auto closed = std::make_shared<std::atomic<size_t>>(0);
  runtime::run_on_every_loop(
      loops_,
      [this, tenant, closed](unsigned loop) {
        auto& ls = *per_loop_[loop];
        std::vector<std::shared_ptr<ClientSession>> theirs;
        for (auto& [id, s] : ls.by_conn) {
          if (s->tenant() == tenant && !s->gone()) theirs.push_back(s);
        }
        for (auto& s : theirs) {
          std::string bye;
          protocol::encode_bye(bye, "tenant_removed", 0);
          // Behind what is queued, like a drain: acks already produced arrive.
          s->connection().send(net::OutFrame(std::move(bye)));
          s->connection().close(kCloseUnauthorized, "tenant removed");
        }
        closed->fetch_add(theirs.size());
      },
      [closed, done = std::move(done)] { done(closed->load()); });
}

void Gateway::abort_remaining(std::function<void()> done) {
  runtime::run_on_every_loop(
      loops_,
      [this](unsigned loop) {
        auto& ls = *per_loop_[loop];
        std::vector<std::shared_ptr<ClientSession>> all;
        for (auto& [id, s] : ls.by_conn) all.push_back(s);
        for (auto& s : all) s->connection().abort();
      },
      std::move(done));
}

void Gateway::kick(std::string tenant, std::string user, std::string ch, std::string reason,
                   unsigned reply_loop, std::function<void(size_t)> done) {
  struct Tally {
    std::string key, ch, reason;
    std::atomic<size_t> kicked{0};
  };
  auto tally = std::make_shared<Tally>();
  tally->key = tenant + '\x1f' + user;
  tally->ch = std::move(ch);
  tally->reason = std::move(reason);
  runtime::run_on_every_loop(
      loops_,
      [this, tally](unsigned loop) {
        auto& ls = *per_loop_[loop];
        // Copy: a kicked session may close, and closing edits the table.
        std::vector<std::shared_ptr<ClientSession>> theirs;
        auto range = ls.by_user.equal_range(tally->key);
        for (auto it = range.first; it != range.second; ++it) {
          if (auto s = ls.by_conn.find(it->second); s != ls.by_conn.end()) theirs.push_back(s->second);
        }
        size_t n = 0;
        for (auto& s : theirs) n += s->kick(tally->ch, tally->reason) ? 1 : 0;
        if (n) metrics_.local().inc(metrics_.local().kicks, n);
        tally->kicked.fetch_add(n);
      },
      [this, tally, reply_loop, done = std::move(done)]() mutable {
        loops_.run_on(reply_loop, [tally, done = std::move(done)] { done(tally->kicked.load()); });
      });
}

void Gateway::send_direct(const TenantRuntime* tenant, std::string user, std::string body,
                          unsigned reply_loop, std::function<void(size_t)> done) {
  deliver_direct(tenant, DirectTo{std::move(user), 0}, std::move(body), reply_loop, std::move(done));
}

void Gateway::send_direct_to_conn(const TenantRuntime* tenant, uint64_t conn, std::string body,
                                  unsigned reply_loop, std::function<void(size_t)> done) {
  deliver_direct(tenant, DirectTo{{}, conn}, std::move(body), reply_loop, std::move(done));
}

void Gateway::deliver_direct(const TenantRuntime* tenant, DirectTo to, std::string body,
                             unsigned reply_loop, std::function<void(size_t)> done) {
  std::string frame;
  protocol::encode_direct(frame, body);
  auto shared = std::make_shared<const std::string>(std::move(frame));
  std::string key = tenant->id + '\x1f' + to.user;
  struct Tally {
    std::atomic<unsigned> remaining;
    std::atomic<size_t> delivered{0};
    std::function<void(size_t)> done;
  };
  auto tally = std::make_shared<Tally>();
  tally->remaining = loops_.size();
  tally->done = std::move(done);
  // A connection id does not say which loop holds it: every loop looks.
  for (unsigned i = 0; i < loops_.size(); ++i) {
    loops_.run_on(i, [this, i, key, conn = to.conn, tenant, shared, tally, reply_loop] {
      auto& ls = *per_loop_[i];
      size_t n = 0;
      auto deliver = [&](uint64_t id) {
        auto s = ls.by_conn.find(id);
        if (s == ls.by_conn.end() || s->second->gone() || s->second->tenant() != tenant) return;
        net::OutFrame f;
        f.add_shared(shared, 0, shared->size());
        s->second->send(std::move(f));
        ++n;
      };
      if (conn != 0) {
        deliver(conn);
      } else {
        auto range = ls.by_user.equal_range(key);
        for (auto it = range.first; it != range.second; ++it) deliver(it->second);
      }
      tally->delivered.fetch_add(n);
      if (tally->remaining.fetch_sub(1) == 1) {
        loops_.run_on(reply_loop, [tally] { tally->done(tally->delivered.load()); });
      }
    });
  }
}

}  // namespace parley::session
