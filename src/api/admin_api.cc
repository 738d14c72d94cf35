#include "api/admin_api.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <cmath>

#include "api/admin_assets.h"
#include "api/http_api.h"
#include "api/moderation_api.h"
#include "common/clock.h"
#include "common/json_writer.h"
#include "protocol/version.h"
#include "session/gateway.h"

namespace parley::api {

namespace http = boost::beast::http;

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kModerationPath = "/admin/api/moderation";

// The page loads only its own files and talks only to its own origin; the
// script is a file (no inline script), so a strict policy costs nothing.
std::vector<std::pair<std::string, std::string>> page_headers() {
  return {{"Content-Security-Policy",
           "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
           "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"Referrer-Policy", "no-referrer"},
          {"Cache-Control", "no-store"}};
}

// A JSON number (fmt's shortest round-trip form); JSON has no NaN or infinity.
std::string fmt_double(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "0"; }

net::HttpResponse asset(std::string_view type, std::string_view body) {
  return {200, std::string(type), std::string(body), page_headers()};
}

using net::not_found;

void write_histogram(JsonWriter& w, std::string_view name, const metrics::Metrics::HistogramTotals& h) {
  w.key(name).begin_object().key("buckets").begin_array();
  for (uint64_t b : h.buckets) w.unum(b);
  w.end_array().field_unum("count", h.count).key("sum_s").raw(fmt_double(h.sum_s)).end_object();
}

}  // namespace

AdminApi::AdminApi(AdminOptions opts, TenantRegistry& tenants, hub::Hub& hub,
                   session::Gateway& gateway, hub::Stores stores, metrics::Metrics& metrics,
                   const std::atomic<bool>& draining)
    : opts_(std::move(opts)),
      tenants_(tenants),
      hub_(hub),
      gateway_(gateway),
      stores_(stores),
      metrics_(metrics),
      draining_(draining),
      started_ns_(steady_ns()),
      last_ranking_ns_(steady_ns()) {}

bool AdminApi::authorized(const net::HttpRequestHeader& req) const {
  const std::string_view auth = req[http::field::authorization];
  constexpr std::string_view kBearer = "Bearer ";
  if (!auth.starts_with(kBearer)) return false;
  const std::string_view given = auth.substr(kBearer.size());
  // Constant time in the key's bytes: the length is not a secret worth hiding.
  return given.size() == opts_.key.size() &&
         CRYPTO_memcmp(given.data(), opts_.key.data(), given.size()) == 0;
}

std::optional<net::HttpResponse> AdminApi::check_header(const net::HttpRequestHeader& req) {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const bool reload = path == "/admin/api/reload" && opts_.reload;
  const bool moderation = path == kModerationPath;
  const bool method_ok = moderation ? req.method() == http::verb::get || req.method() == http::verb::post
                                    : req.method() == (reload ? http::verb::post : http::verb::get);
  if (!method_ok) return net::error_response(405, ErrorCode::kBadRequest, "method not allowed");
  if ((path == "/admin/api/stats" || reload || moderation) && !authorized(req)) {
    metrics_.local().reject(ErrorCode::kUnauthorized);
    net::HttpResponse res = net::error_response(401, ErrorCode::kUnauthorized, "missing or wrong admin key");
    res.headers = {{"WWW-Authenticate", "Bearer"}, {"Cache-Control", "no-store"}};
    return res;
  }
  return std::nullopt;
}

void AdminApi::handle(const net::HttpRequest& req, unsigned loop,
                      std::function<void(net::HttpResponse)> respond) {
  if (auto refused = check_header(req)) return respond(std::move(*refused));
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/admin" || path == "/admin/") {
    return respond(asset("text/html; charset=utf-8", admin_assets::kIndexHtml));
  }
  if (path == "/admin/admin.js") return respond(asset("text/javascript; charset=utf-8", admin_assets::kAdminJs));
  if (path == "/admin/admin.css") return respond(asset("text/css; charset=utf-8", admin_assets::kAdminCss));
  if (path == "/admin/api/reload" && opts_.reload) {
    return opts_.reload([respond = std::move(respond)](int status, std::string body) {
      respond({status, std::string(kJson), std::move(body), {{"Cache-Control", "no-store"}}});
    });
  }
  if (path == kModerationPath) return moderate(req, loop, std::move(respond));
  if (path != "/admin/api/stats") return respond(not_found());
  // The busiest channels, then the connections sent the most: both counted
  // since the previous listing.
  hub_.busiest_channels(opts_.busiest, [this, respond = std::move(respond)](
                                           std::vector<hub::ChannelStat> busiest) mutable {
    gateway_.connection_traffic(opts_.busiest, [this, busiest = std::move(busiest), respond = std::move(respond)](
                                                   session::ConnectionTraffic traffic) {
      const int64_t now = steady_ns();
      const int64_t before = last_ranking_ns_.exchange(now);
      const double interval_s = static_cast<double>(now - before) * 1e-9;
      respond({200, std::string(kJson), stats_json(busiest, traffic, interval_s),
               {{"Cache-Control", "no-store"}}});
    });
  });
}

// The moderation panel: GET lists every tenant's sanctions (or ?tenant='s), POST
// carries out one action (api/moderation_api.h), the tenant named in the body.
void AdminApi::moderate(const net::HttpRequest& req, unsigned loop,
                        std::function<void(net::HttpResponse)> respond) {
  session::Moderation* m = gateway_.moderation();
  if (!m) return respond(not_found());
  const std::string_view target = req.target();
  const auto q = target.find('?');
  if (req.method() == http::verb::get) {
    const std::string tenant =
        q == std::string_view::npos ? std::string() : query_param(target.substr(q + 1), "tenant").value_or("");
    return respond({200, std::string(kJson), sanctions_json(m->list(tenant, wall_ms()), "", true),
                    {{"Cache-Control", "no-store"}}});
  }
  auto parsed = parse_moderation(req.body(), std::nullopt);
  if (auto* e = std::get_if<Error>(&parsed)) {
    metrics_.local().reject(e->code);
    return respond(net::error_response(*e));
  }
  auto& op = std::get<ModerationOp>(parsed);
  const auto* tenant = tenants_.find(op.tenant);
  if (!tenant) return respond(net::error_response(Error{ErrorCode::kNotFound, "unknown tenant"}));
  const uint32_t cap = tenant->config().max_sanctions;
  run_moderation(*m, std::move(op), cap, loop, std::move(respond));
}

std::string AdminApi::stats_json(const std::vector<hub::ChannelStat>& busiest,
                                 const session::ConnectionTraffic& traffic, double interval_s) const {
  using metrics::Scraped;
  using metrics::ThreadMetrics;
  const auto one = [this](Scraped id) -> int64_t {
    auto s = metrics_.sample(id);
    return s.empty() ? 0 : s.front().value;
  };
  const auto sum = [this](Scraped id) -> int64_t {
    int64_t n = 0;
    for (const auto& s : metrics_.sample(id)) n += s.value;
    return n;
  };
  std::string out;
  out.reserve(8192);
  JsonWriter w(out);
  w.begin_object();

  w.key("node").begin_object()
      .field("version", protocol::server_version())
      .field_num("uptime_s", (steady_ns() - started_ns_) / 1'000'000'000)
      .field_unum("threads", opts_.threads)
      .field_num("sockets", one(Scraped::sockets))
      .field_num("http_connections", one(Scraped::http_connections))
      .field_num("channels", one(Scraped::channels))
      .field_bool("draining", draining_.load(std::memory_order_relaxed))
      .end_object();

  w.key("totals").begin_object()
      .field_unum("frames_in", metrics_.total(&ThreadMetrics::frames_in))
      .field_unum("frames_out", metrics_.total(&ThreadMetrics::frames_out))
      .field_unum("bytes_out", metrics_.total(&ThreadMetrics::bytes_out))
      .field_unum("deliveries", metrics_.total(&ThreadMetrics::deliveries))
      .field_unum("slow_consumer_disconnects", metrics_.total(&ThreadMetrics::slow_consumers))
      .field_unum("connections_opened", metrics_.total(&ThreadMetrics::connections_opened))
      .field_unum("connections_refused", metrics_.total(&ThreadMetrics::connections_refused))
      .end_object();

  // Fan-out bytes by namespace and encoding, and the bytes written to sockets
  // (wire_bytes: framing included, replies under tenant/-) (metrics/namespace_traffic.h).
  w.key("traffic").begin_array();
  for (const auto& r : metrics_.traffic().rows()) {
    w.begin_object()
        .field("namespace", r.ns)
        .field("encoding", metrics::wire_form_name(r.form))
        .field_unum("bytes", r.bytes)
        .field_unum("deliveries", r.deliveries)
        .field_unum("wire_bytes", r.wire)
        .end_object();
  }
  w.end_array();

  w.key("rejections").begin_object();
  for (int c = 0; c < kErrorCodeCount; ++c) {
    const auto code = static_cast<ErrorCode>(c);
    w.field_unum(wire_name(code), metrics_.rejections(code));
  }
  w.end_object();

  w.key("tenants").begin_array();
  tenants_.for_each([&w](const TenantRuntime& t) {
    w.begin_object()
        .field("id", t.id)
        .field_unum("connections", t.connections.load(std::memory_order_relaxed))
        .field_unum("max_connections", t.config().max_connections)
        .field_unum("messages", t.messages.load(std::memory_order_relaxed));
    w.key("rejections").begin_object();
    for (int c = 0; c < kErrorCodeCount; ++c) {
      w.field_unum(wire_name(static_cast<ErrorCode>(c)), t.rejections[c].load(std::memory_order_relaxed));
    }
    w.end_object().end_object();
  });
  w.end_array();

  w.key("channels").begin_object().key("interval_s").raw(fmt_double(interval_s));
  w.key("busiest").begin_array();
  for (const auto& c : busiest) {
    w.begin_object()
        .field("tenant", c.tenant)
        .field("ch", c.ch)
        .field_unum("published", c.published)
        .field_unum("last_seq", c.last_seq)
        .field_unum("members", c.members)
        .end_object();
  }
  w.end_array().end_object();

  // Per connection here, never in /metrics (connection_traffic.h). Rates are
  // over the interval since the previous listing, as the channels' are.
  const auto per_s = [interval_s](uint64_t n) {
    return fmt_double(interval_s > 0 ? static_cast<double>(n) / interval_s : 0);
  };
  w.key("connections").begin_object().key("interval_s").raw(fmt_double(interval_s));
  w.key("by_encoding").begin_array();
  for (size_t f = 0; f < metrics::kWireForms; ++f) {
    const auto& t = traffic.by_form[f];
    w.begin_object()
        .field("encoding", metrics::wire_form_name(static_cast<metrics::WireForm>(f)))
        .field_unum("connections", t.connections)
        .field_unum("bytes_out", t.bytes_out)
        .key("bytes_out_per_s").raw(per_s(t.recent))
        .end_object();
  }
  w.end_array().key("top").begin_array();
  for (const auto& c : traffic.top) {
    w.begin_object()
        .field_unum("conn", c.conn)
        .field("tenant", c.tenant)
        .field("user", c.user)
        .field("encoding", metrics::wire_form_name(c.form))
        .field_unum("bytes_out", c.bytes_out)
        .key("bytes_out_per_s").raw(per_s(c.recent))
        .end_object();
  }
  w.end_array().end_object();

  w.key("latency").begin_object().key("bounds").begin_array();
  for (double b : metrics::Histogram::kBounds) w.raw(fmt_double(b));
  w.end_array();
  write_histogram(w, "ack", metrics_.histogram(metrics::Stage::kAck));
  w.key("stages").begin_object();
  static constexpr std::pair<metrics::Stage, std::string_view> kStages[] = {
      {metrics::Stage::kDecode, "decode"}, {metrics::Stage::kQueueWait, "queue_wait"},
      {metrics::Stage::kAppend, "append"}, {metrics::Stage::kFanout, "fanout"},
      {metrics::Stage::kWrite, "write"}};
  for (const auto& [stage, name] : kStages) write_histogram(w, name, metrics_.histogram(stage));
  w.end_object().end_object();

  w.key("queues").begin_object()
      .field_num("append_in_flight", one(Scraped::append_queue_depth))
      .field_num("store_pending", one(Scraped::store_pending))
      .field_num("session_queue_bytes", metrics_.total(&ThreadMetrics::queued_bytes))
      .field_num("preauth_bytes", one(Scraped::preauth_bytes))
      .field_num("upstream_queued", sum(Scraped::upstream_queued))
      .field_num("upstream_dropped", sum(Scraped::upstream_dropped))
      .end_object();

  w.key("store").begin_object().field("kind", opts_.store_kind);
  if (stores_.durable) {
    // health().detail may name paths: it is for the server log, not this page.
    const store::StoreHealth h = stores_.durable->health();
    w.field_unum("pending", stores_.durable->pending())
        .field_bool("writable", h.writable)
        .field("reason", h.reason)
        .field_num("refusing_since_ms", h.writable ? 0 : h.since_ms)
        .field_unum("epoch", h.epoch)
        .field_bool("loss_accepted", h.loss_accepted)
        .field_unum("unreadable_reads", h.unreadable_reads);
  }
  w.end_object();

  w.end_object();
  return out;
}

}  // namespace parley::api
