// The HTTP API of PROTOCOL.md (publish, send, history, presence) plus
// /metrics and /healthz, served on the WebSocket listener.
// handle() runs on the HTTP session's loop; answers may come from other loops.
#pragma once

#include <atomic>
#include <functional>

#include "admin/metrics.h"
#include "gateway/gateway.h"
#include "gateway/tenant_registry.h"
#include "hub/hub.h"
#include "net/http_session.h"

namespace parley::admin {

class HttpApi final : public net::HttpHandler {
 public:
  HttpApi(gateway::TenantRegistry& tenants, hub::Hub& hub, gateway::Gateway& gateway,
          hub::Stores stores, Metrics& metrics);

  void handle(const net::HttpRequest& req, unsigned loop,
              std::function<void(net::HttpResponse)> respond) override;

  // /healthz answers 503 once draining starts.
  void set_draining() { draining_.store(true); }

 private:
  using Respond = std::function<void(net::HttpResponse)>;
  void publish(const gateway::TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
               Respond respond);
  void send(const gateway::TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
            Respond respond);
  void history(const gateway::TenantRuntime& t, std::string_view query, Respond respond);
  void presence(const gateway::TenantRuntime& t, std::string_view query, unsigned loop,
                Respond respond);

  gateway::TenantRegistry& tenants_;
  hub::Hub& hub_;
  gateway::Gateway& gateway_;
  hub::Stores stores_;
  Metrics& metrics_;
  std::atomic<bool> draining_{false};
};

// Percent-decoded value of `name` in a query string; nullopt when absent.
std::optional<std::string> query_param(std::string_view query, std::string_view name);

}  // namespace parley::admin
