#include "upstream/forwarder.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <future>

#include "common/clock.h"
#include "protocol/decoder.h"
#include "upstream/event_json.h"

namespace parley::upstream {

Forwarder::Forwarder(runtime::LoopGroup& loops, hub::Hub& hub, metrics::Metrics& metrics,
                     PipeOptions opts)
    : loops_(loops), hub_(hub), metrics_(metrics), opts_(opts), per_loop_(loops.size()) {}

Forwarder::~Forwarder() = default;

Result<std::unique_ptr<Forwarder>> Forwarder::create(runtime::LoopGroup& loops, hub::Hub& hub,
                                                     metrics::Metrics& metrics,
                                                     const Tenants& tenants, PipeOptions opts,
                                                     ApiKeyOf api_key_of) {
  std::unique_ptr<Forwarder> f(new Forwarder(loops, hub, metrics, opts));
  auto add = [&f, &api_key_of](const TenantConfig& t, const std::string& name,
                  const NamespaceConfig& ns) -> Status {
    if (ns.upstream.empty()) return Status::ok();
    auto url = parse_upstream_url(ns.upstream);
    if (!url) {
      return Error{ErrorCode::kBadRequest, fmt::format("tenants.{}.namespaces.{}.upstream: {}",
                                                       t.id, name, url.error().msg)};
    }
    auto u = std::make_unique<NamespaceUpstream>();
    u->tenant = t.id;
    u->ns_name = name;
    u->url = std::move(*url);
    u->api_key = t.api_key;
    u->limit = ns.upstream_queue;
    u->tick_ms = ns.tick_ms;
    if (api_key_of) u->api_key_now = [api_key_of, id = t.id] { return api_key_of(id); };
    f->namespaces_.emplace(t.id + '\x1f' + name, std::move(u));
    return Status::ok();
  };
  for (const auto& [id, t] : tenants) {
    for (const auto& [name, ns] : t.namespaces) {
      if (Status s = add(t, name, ns); !s) return s.error();
    }
    if (Status s = add(t, "default", t.default_namespace); !s) return s.error();
  }
  return f;
}

Status Forwarder::validate(const Tenants& tenants) {
  for (const auto& [id, t] : tenants) {
    auto check = [&t](const std::string& name, const NamespaceConfig& ns) -> Status {
      if (ns.upstream.empty()) return Status::ok();
      auto url = parse_upstream_url(ns.upstream);
      if (url) return Status::ok();
      return Error{ErrorCode::kBadRequest, fmt::format("tenants.{}.namespaces.{}.upstream: {}",
                                                       t.id, name, url.error().msg)};
    };
    for (const auto& [name, ns] : t.namespaces) {
      if (Status s = check(name, ns); !s) return s;
    }
    if (Status s = check("default", t.default_namespace); !s) return s;
  }
  return Status::ok();
}

NamespaceUpstream* Forwarder::target_of(const hub::UpstreamEvent& ev) const {
  if (!ev.tenant || !ev.ns) return nullptr;
  std::string key = ev.tenant->id;
  key += '\x1f';
  if (ev.ns == &ev.tenant->default_namespace) {
    key += "default";
  } else {
    key += protocol::channel_namespace(ev.ch);
  }
  auto it = namespaces_.find(key);
  return it == namespaces_.end() ? nullptr : it->second.get();
}

void Forwarder::forward(hub::UpstreamEvent ev) {
  NamespaceUpstream* target = target_of(ev);
  if (!target) return;
  const unsigned loop = hub_.shard_of(ev.tenant->id, ev.ch);
  if (runtime::LoopGroup::current() == static_cast<int>(loop)) {
    return enqueue(loop, target, std::move(ev));
  }
  loops_.run_on(loop, [this, loop, target, ev = std::move(ev)]() mutable {
    enqueue(loop, target, std::move(ev));
  });
}

void Forwarder::enqueue(unsigned loop, NamespaceUpstream* target, hub::UpstreamEvent ev) {
  LoopPipes& lp = per_loop_[loop];
  if (lp.stopped) return;
  auto& pipe = lp.pipes[target];
  if (!pipe) {
    // Batch ids: unique per pipe and across restarts of the node.
    const uint64_t base = (static_cast<uint64_t>(wall_ms()) << 20) ^ (uint64_t{loop} << 56) ^
                          (reinterpret_cast<uintptr_t>(target) & 0xfffff);
    pipe = std::make_shared<UpstreamPipe>(loops_.loop(loop), *target,
                                          metrics_.slot(loop).upstream_request, opts_, base);
  }
  std::string json;
  json.reserve(160 + ev.body.size());
  append_event_json(json, ev);
  pipe->push(std::move(json));
}

int64_t Forwarder::queued() const {
  int64_t n = 0;
  for (const auto& [ns, u] : namespaces_) n += u->queued.load(std::memory_order_relaxed);
  return n;
}

void Forwarder::stop() {
  std::promise<void> done;
  auto remaining = std::make_shared<std::atomic<unsigned>>(loops_.size());
  for (unsigned i = 0; i < loops_.size(); ++i) {
    loops_.run_on(i, [this, i, remaining, &done] {
      LoopPipes& lp = per_loop_[i];
      lp.stopped = true;
      for (auto& [ns, pipe] : lp.pipes) pipe->stop();
      lp.pipes.clear();
      if (remaining->fetch_sub(1) == 1) done.set_value();
    });
  }
  done.get_future().wait_for(std::chrono::seconds(5));
}

void Forwarder::register_metrics(metrics::Metrics& metrics) const {
  using metrics::Scraped;
  using Samples = std::vector<metrics::Metrics::Sample>;
  auto source = [this](auto field) {
    return [this, field](Samples& out) {
      for (const auto& [ns, u] : namespaces_) {
        out.push_back({u->tenant + "/" + u->ns_name,
                       static_cast<int64_t>(((*u).*field).load(std::memory_order_relaxed))});
      }
      std::sort(out.begin(), out.end(),
                [](const auto& a, const auto& b) { return a.label_value < b.label_value; });
    };
  };
  metrics.set_source(Scraped::upstream_sent, source(&NamespaceUpstream::sent));
  metrics.set_source(Scraped::upstream_failed, source(&NamespaceUpstream::failed));
  metrics.set_source(Scraped::upstream_retries, source(&NamespaceUpstream::retried));
  metrics.set_source(Scraped::upstream_queued, source(&NamespaceUpstream::queued));
  metrics.set_source(Scraped::upstream_dropped, source(&NamespaceUpstream::dropped));
}

}  // namespace parley::upstream
