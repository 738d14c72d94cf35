// The HTTP API of PROTOCOL.md (publish, send, history, presence) plus
// /metrics and /healthz, served on the WebSocket listener.
// handle() runs on the HTTP session's loop; answers may come from other loops.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "api/admin_api.h"
#include "metrics/metrics.h"
#include "session/gateway.h"
#include "tenant/tenant_registry.h"
#include "hub/hub.h"
#include "net/http_session.h"

namespace parley::api {

class HttpApi final : public net::HttpHandler {
 public:
  HttpApi(TenantRegistry& tenants, hub::Hub& hub, session::Gateway& gateway,
          hub::Stores stores, metrics::Metrics& metrics);

  // Routes and authenticates from the header alone: a body is read only for
  // a known path with an accepted API key, at most 4 x the tenant's
  // max_message_bytes.
  std::optional<net::HttpResponse> check_header(const net::HttpRequestHeader& req,
                                                size_t& body_limit) override;
  void handle(const net::HttpRequest& req, unsigned loop,
              std::function<void(net::HttpResponse)> respond) override;

  // /healthz answers 503 once draining starts.
  void set_draining() { draining_.store(true); }
  // Serves /admin (api/admin_api.h) when server.admin_key is set. Before start.
  void enable_admin(AdminOptions opts);

 private:
  using Respond = std::function<void(net::HttpResponse)>;
  // The tenant whose API key the Authorization header carries, or nullptr.
  const TenantRuntime* tenant_of(const net::HttpRequestHeader& req) const;
  void publish(const TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
               Respond respond);
  void send(const TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
            Respond respond);
  // Batched bodies (protocol-notes.md): a JSON array of single bodies, one
  // answer slot each, in order.
  void publish_batch(const TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
                     Respond respond);
  void send_batch(const TenantRuntime& t, const net::HttpRequest& req, unsigned loop,
                  Respond respond);
  void history(const TenantRuntime& t, std::string_view query, unsigned loop,
               Respond respond);
  void presence(const TenantRuntime& t, std::string_view query, unsigned loop,
                Respond respond);
  // POST /v1/events/<topic> and GET /v1/leaderboards/<board> (PROTOCOL.md
  // "Event streams and leaderboards"), through the gateway's event service.
  void emit(const TenantRuntime& t, std::string_view topic, const net::HttpRequest& req,
            unsigned loop, Respond respond);
  void board(const TenantRuntime& t, std::string_view name, std::string_view query,
             unsigned loop, Respond respond);
  // POST /v1/edit and /v1/delete (PROTOCOL.md "Moderation: delete and edit";
  // http_moderation.cc): the game server changes any message.
  static bool is_moderation_path(std::string_view path) {
    return path == "/v1/edit" || path == "/v1/delete";
  }
  void moderate(const TenantRuntime& t, std::string_view path, const net::HttpRequest& req,
                unsigned loop, Respond respond);

  // PROTOCOL.md "Moderation: mute, kick, ban": POST /v1/mute, /v1/ban, /v1/kick,
  // GET /v1/moderation.
  void sanction(const TenantRuntime& t, std::string_view path, const net::HttpRequest& req,
                std::string_view query, unsigned loop, Respond respond);

  TenantRegistry& tenants_;
  hub::Hub& hub_;
  session::Gateway& gateway_;
  hub::Stores stores_;
  metrics::Metrics& metrics_;
  std::atomic<bool> draining_{false};
  std::unique_ptr<AdminApi> admin_;  // null: /admin is 404
};

// Percent-decoded value of `name` in a query string; nullopt when absent.
std::optional<std::string> query_param(std::string_view query, std::string_view name);

}  // namespace parley::api
