// The live admin page of one node: GET /admin (HTML, CSS and JS embedded from
// src/api/admin) and GET /admin/api/stats (JSON), served only when
// server.admin_key is set; otherwise every /admin path is 404 like any unknown
// one. The page is static and holds no secret: the operator types the key into
// it and the page sends it as "Authorization: Bearer <key>" on each poll, never
// in a URL. Without the key, /admin/api/stats answers 401.
//
// POST /admin/api/reload (same key; `parley reload` calls it) re-reads the
// config file through AdminOptions::reload, off the loops, and answers what
// changed (200) or why nothing did (400, {"code","msg"}).
//
// GET /admin/api/moderation lists the mutes and bans in force (?tenant= for
// one tenant) and POST /admin/api/moderation carries out a mute, ban or kick
// named in its body (PROTOCOL.md "Moderation: mute, kick, ban"), same key.
//
// check_header and handle run on the HTTP session's loop; the stats answer is
// sent from the loop of the last hub shard to report its busiest channels.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/hub.h"
#include "metrics/metrics.h"
#include "net/http_session.h"
#include "session/connection_traffic.h"
#include "tenant/tenant_registry.h"

namespace parley::session {
class Gateway;
}

namespace parley::api {

struct AdminOptions {
  std::string key;         // server.admin_key, not empty
  std::string store_kind;  // server.store
  unsigned threads = 0;
  size_t busiest = 10;     // channels listed, and connections (the most sent)
  // Runs a config reload off the loops; `done` (status, JSON body) may run on
  // any thread. Empty: /admin/api/reload is 404.
  std::function<void(std::function<void(int status, std::string body)> done)> reload;
};

class AdminApi {
 public:
  AdminApi(AdminOptions opts, TenantRegistry& tenants, hub::Hub& hub, session::Gateway& gateway,
           hub::Stores stores, metrics::Metrics& metrics, const std::atomic<bool>& draining);

  static bool is_admin_path(std::string_view path) {
    return path == "/admin" || path.starts_with("/admin/");
  }
  // The answer for a request refused on its header alone (wrong method, not
  // found, no key), or nullopt to go on to handle().
  std::optional<net::HttpResponse> check_header(const net::HttpRequestHeader& req);
  // `loop`: the HTTP session's, where answers are sent from.
  void handle(const net::HttpRequest& req, unsigned loop, std::function<void(net::HttpResponse)> respond);

 private:
  bool authorized(const net::HttpRequestHeader& req) const;
  // GET and POST /admin/api/moderation (PROTOCOL.md "Moderation").
  void moderate(const net::HttpRequest& req, unsigned loop, std::function<void(net::HttpResponse)> respond);
  std::string stats_json(const std::vector<hub::ChannelStat>& busiest,
                         const session::ConnectionTraffic& traffic, double interval_s) const;

  AdminOptions opts_;
  TenantRegistry& tenants_;
  hub::Hub& hub_;
  session::Gateway& gateway_;
  hub::Stores stores_;
  metrics::Metrics& metrics_;
  const std::atomic<bool>& draining_;
  const int64_t started_ns_;
  // When the busiest channels were last ranked: their counts are since then.
  std::atomic<int64_t> last_ranking_ns_;
};

}  // namespace parley::api
