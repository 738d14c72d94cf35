// The upstream forwarder (PROTOCOL.md "Upstream forwarding"): the
// hub::UpstreamSink the server wires into the hub and the sessions.
//
// forward() may be called on any loop; it moves the event to the loop of the
// channel's hub shard, whose UpstreamPipe for the namespace queues it (so one
// channel's events are always queued, batched and retried by one pipe, in the
// order they arrived there). Pipes are created on first use, on their loop.
#pragma once

#include <chrono>
#include <functional>
#include <string_view>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "hub/hub.h"
#include "hub/upstream_sink.h"
#include "metrics/metrics.h"
#include "runtime/loop_group.h"
#include "tenant/tenant_config.h"
#include "upstream/namespace_upstream.h"
#include "upstream/upstream_pipe.h"

namespace parley::upstream {

class Forwarder final : public hub::UpstreamSink {
 public:
  using Tenants = std::map<std::string, TenantConfig, std::less<>>;

  // The api_key a tenant has now (its id given; any loop), or "" for the one
  // it had at start-up.
  using ApiKeyOf = std::function<std::string(std::string_view tenant)>;

  // Every namespace with an `upstream` (listed, or a tenant's default) gets a
  // target; an unusable URL is an error naming the namespace. Targets are
  // found by (tenant id, namespace name), so events carrying the settings of a
  // later config reload reach the same target.
  static Result<std::unique_ptr<Forwarder>> create(runtime::LoopGroup& loops, hub::Hub& hub,
                                                   metrics::Metrics& metrics,
                                                   const Tenants& tenants, PipeOptions opts = {},
                                                   ApiKeyOf api_key_of = {});
  // The same check of every `upstream` URL, before anything is built.
  static Status validate(const Tenants& tenants);
  ~Forwarder() override;

  // True when some namespace forwards somewhere.
  bool active() const { return !namespaces_.empty(); }

  void forward(hub::UpstreamEvent ev) override;

  // Sources of the parley_upstream_* rows of metrics/metric_list.h (start-up).
  void register_metrics(metrics::Metrics& metrics) const;
  // Events queued in every pipe (waiting or in a request). Any thread.
  int64_t queued() const;
  // Off-loop (the server's stopping thread): stops every pipe on its loop,
  // abandoning what is queued, and returns once all have stopped.
  void stop();

 private:
  Forwarder(runtime::LoopGroup& loops, hub::Hub& hub, metrics::Metrics& metrics, PipeOptions opts);
  void enqueue(unsigned loop, NamespaceUpstream* target, hub::UpstreamEvent ev);

  runtime::LoopGroup& loops_;
  hub::Hub& hub_;
  metrics::Metrics& metrics_;
  PipeOptions opts_;
  // The target of an event: tenant id, '\x1f', the namespace's name in the
  // config ("default" for an unlisted one); nullptr when it has none.
  NamespaceUpstream* target_of(const hub::UpstreamEvent& ev) const;

  // Immutable after create(); keyed as target_of() says.
  std::map<std::string, std::unique_ptr<NamespaceUpstream>, std::less<>> namespaces_;
  struct LoopPipes {
    std::unordered_map<const NamespaceUpstream*, std::shared_ptr<UpstreamPipe>> pipes;
    bool stopped = false;
  };
  std::vector<LoopPipes> per_loop_;  // element i: touched on loop i only
};

}  // namespace parley::upstream
