#include "hooks/hook_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>

#include "common/clock.h"
#include "hooks/hook_codec.h"
#include "runtime/every_loop.h"

namespace parley::hooks {

namespace {
constexpr int64_t kWarnEveryMs = 10'000;
// What a client is told to wait before trying again (a full hook's hint is the
// pool's: HookPool::retry_hint).
constexpr int kUnavailableRetryMs = 1000;

// A hook's name in metrics and the log: tenant/namespace/kind, tenant/connect.
std::string hook_id(std::string_view tenant, std::string_view ns, session::HookKind kind) {
  std::string id(tenant);
  if (kind != session::HookKind::kConnect) {
    id += '/';
    id += ns.empty() ? std::string_view("default") : ns;
  }
  id += '/';
  id += hook_name(kind);
  return id;
}

std::string hook_id(const session::HookAsk& ask) {
  return hook_id(ask.tenant ? std::string_view(ask.tenant->id) : std::string_view(), ask.ns, ask.kind);
}
}  // namespace

HookService::HookService(runtime::LoopGroup& loops, const Tenants& tenants)
    : loops_(loops), per_loop_(loops.size()) {
  using session::HookKind;
  for (const auto& [id, t] : tenants) {
    if (!t.hook_connect.url.empty()) stats_of(hook_id(id, {}, HookKind::kConnect));
    auto add = [this, &id](std::string_view ns, const NamespaceConfig& n) {
      if (!n.hook_join.url.empty()) stats_of(hook_id(id, ns, HookKind::kJoin));
      if (!n.hook_pub.url.empty()) stats_of(hook_id(id, ns, HookKind::kPub));
    };
    add("default", t.default_namespace);
    for (const auto& [ns, n] : t.namespaces) add(ns, n);
  }
}

HookService::~HookService() = default;

HookStats& HookService::stats_of(const std::string& name) {
  std::lock_guard lock(mu_);
  auto& s = stats_[name];
  if (!s) s = std::make_unique<HookStats>();
  return *s;
}

void HookService::ask(unsigned loop, session::HookAsk ask,
                      std::function<void(session::HookVerdict)> done) {
  LoopPools& lp = per_loop_[loop];
  const std::string name = hook_id(ask);
  HookStats*& stats = lp.stats[name];
  if (!stats) stats = &stats_of(name);
  const HookConfig& cfg = *ask.hook;
  auto& pool = lp.pools[name];
  if (!pool || pool->url_text() != cfg.url) {
    auto target = parse_hook_url(cfg.url);
    if (!target) {
      // A URL the config's check let through but that names no host: a failure of the hook.
      return decide(*stats, ask, steady_ns(),
                    CallResult{CallResult::Kind::kFailed, 0, {}, target.error().msg}, done);
    }
    // A pool replaced by a reload finishes its calls in flight on its own.
    if (pool) pool->stop();
    pool = std::make_shared<HookPool>(loops_.loop(loop), cfg.url, std::move(*target), &stats->pool);
  }
  std::string body = encode_hook_request(ask, wall_ms());
  const std::string api_key = ask.tenant ? ask.tenant->api_key : std::string();
  const CallLimits limits{cfg.timeout_ms, cfg.max_inflight, cfg.queue};
  const int64_t asked_ns = steady_ns();
  stats->inflight.fetch_add(1, std::memory_order_relaxed);
  pool->call(std::move(body), api_key, limits,
             [this, stats, ask = std::move(ask), asked_ns, done = std::move(done)](CallResult r) {
               stats->inflight.fetch_sub(1, std::memory_order_relaxed);
               decide(*stats, ask, asked_ns, std::move(r), done);
             });
}

void HookService::decide(HookStats& stats, const session::HookAsk& ask, int64_t asked_ns,
                         CallResult r, const std::function<void(session::HookVerdict)>& done) {
  using Kind = CallResult::Kind;
  const HookConfig& cfg = *ask.hook;
  if (r.kind == Kind::kFull) {
    stats.backpressure.fetch_add(1, std::memory_order_relaxed);
    session::HookVerdict v;
    v.allow = false;
    v.error = Error{ErrorCode::kBackpressure, "too many hook requests in flight", r.retry_ms};
    return done(std::move(v));
  }
  stats.requests.fetch_add(1, std::memory_order_relaxed);
  std::string why;
  if (r.kind == Kind::kAnswered) {
    stats.answered.fetch_add(1, std::memory_order_relaxed);
    stats.latency_us.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, steady_ns() - asked_ns) / 1000),
                               std::memory_order_relaxed);
    if (r.status >= 200 && r.status <= 299) {
      const size_t max_body = ask.tenant ? ask.tenant->max_message_bytes : 64 * 1024;
      auto v = parse_hook_answer(r.body, ask.kind, max_body);
      if (v) {
        auto& counter = !v->allow ? stats.denied : v->body ? stats.modified : stats.allowed;
        counter.fetch_add(1, std::memory_order_relaxed);
        return done(std::move(*v));
      }
      why = "bad answer: " + v.error().msg;
    } else {
      why = "status " + std::to_string(r.status);
    }
    stats.failures.fetch_add(1, std::memory_order_relaxed);
  } else if (r.kind == Kind::kTimeout) {
    stats.timeouts.fetch_add(1, std::memory_order_relaxed);
    why = "no answer within " + std::to_string(cfg.timeout_ms) + " ms";
  } else {
    stats.failures.fetch_add(1, std::memory_order_relaxed);
    why = r.detail;
  }
  const int64_t now = wall_ms();
  int64_t last = stats.warned_ms.load(std::memory_order_relaxed);
  if (now - last >= kWarnEveryMs &&
      stats.warned_ms.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    spdlog::warn("hook {} ({}): {}; failing {}", hook_id(ask), cfg.url, why,
                 cfg.fail_open ? "open (allowed)" : "closed (refused)");
  }
  session::HookVerdict v;
  if (cfg.fail_open) {
    stats.failed_open.fetch_add(1, std::memory_order_relaxed);
    return done(std::move(v));
  }
  v.allow = false;
  v.error = Error{ErrorCode::kUnavailable,
                  r.kind == Kind::kTimeout ? "the app server did not answer in time"
                                           : "the app server could not decide",
                  kUnavailableRetryMs};
  done(std::move(v));
}

void HookService::register_metrics(metrics::Metrics& metrics) {
  using metrics::Scraped;
  using Samples = std::vector<metrics::Metrics::Sample>;
  auto source = [this](auto field) {
    return [this, field](Samples& out) {
      std::lock_guard lock(mu_);
      for (const auto& [name, s] : stats_) {
        out.push_back({name, static_cast<int64_t>(((*s).*field).load(std::memory_order_relaxed))});
      }
    };
  };
  metrics.set_source(Scraped::hook_requests, source(&HookStats::requests));
  metrics.set_source(Scraped::hook_allowed, source(&HookStats::allowed));
  metrics.set_source(Scraped::hook_modified, source(&HookStats::modified));
  metrics.set_source(Scraped::hook_denied, source(&HookStats::denied));
  metrics.set_source(Scraped::hook_timeouts, source(&HookStats::timeouts));
  metrics.set_source(Scraped::hook_failures, source(&HookStats::failures));
  metrics.set_source(Scraped::hook_failed_open, source(&HookStats::failed_open));
  metrics.set_source(Scraped::hook_backpressure, source(&HookStats::backpressure));
  metrics.set_source(Scraped::hook_answered, source(&HookStats::answered));
  metrics.set_source(Scraped::hook_latency_us, source(&HookStats::latency_us));
  metrics.set_source(Scraped::hook_inflight, source(&HookStats::inflight));
  auto pool_source = [this](auto field) {
    return [this, field](Samples& out) {
      std::lock_guard lock(mu_);
      for (const auto& [name, s] : stats_) {
        out.push_back({name, static_cast<int64_t>((s->pool.*field).load(std::memory_order_relaxed))});
      }
    };
  };
  metrics.set_source(Scraped::hook_connects, pool_source(&PoolStats::connects));
  metrics.set_source(Scraped::hook_connects_throttled, pool_source(&PoolStats::connects_throttled));
  metrics.set_source(Scraped::hook_late_answers, pool_source(&PoolStats::late_answers));
  metrics.set_source(Scraped::hook_late_closed, pool_source(&PoolStats::late_closed));
  metrics.set_source(Scraped::hook_connections, pool_source(&PoolStats::connections));
}

void HookService::stop() {
  auto stopped = std::make_shared<std::promise<void>>();
  auto future = stopped->get_future();
  runtime::run_on_every_loop(
      loops_,
      [this](unsigned i) {
        for (auto& [name, pool] : per_loop_[i].pools) pool->stop();
        per_loop_[i].pools.clear();
      },
      [stopped] { stopped->set_value(); });
  future.wait_for(std::chrono::seconds(5));
}

}  // namespace parley::hooks
