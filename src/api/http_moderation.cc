// POST /v1/edit and POST /v1/delete (PROTOCOL.md "Moderation: delete and
// edit"): the game server edits or deletes any message of its tenant, as
// "server", whatever the namespace's edit window. Same threads as http_api.cc.
#include "api/http_api.h"

#include "common/clock.h"
#include "common/json_writer.h"
#include "protocol/decoder.h"
#include "protocol/identifier.h"

namespace parley::api {

void HttpApi::moderate(const TenantRuntime& t, std::string_view path, const net::HttpRequest& req,
                       unsigned loop, Respond respond) {
  const int64_t arrived = steady_ns();
  const bool edit = path == "/v1/edit";
  protocol::DecodeLimits limits;
  limits.max_message_bytes = t.config().max_message_bytes;
  auto parsed = protocol::decode_api_post(
      req.body(), edit ? protocol::ApiPostKind::kEdit : protocol::ApiPostKind::kDelete, limits);
  auto* rt = const_cast<TenantRuntime*>(&t);
  if (auto* e = std::get_if<Error>(&parsed)) {
    metrics_.local().reject(e->code);
    return respond(net::error_response(*e));
  }
  auto& f = std::get<protocol::ApiPost>(parsed);
  // An edit or delete is a log entry: it counts against the tenant's publish rate.
  if (int wait = rt->publish_bucket.take(arrived)) {
    metrics_.local().reject(ErrorCode::kRateLimited);
    rt->reject(ErrorCode::kRateLimited);
    return respond(net::error_response(Error{ErrorCode::kRateLimited, "publish rate exceeded", wait}));
  }
  hub::ModerateRequest m;
  m.tenant = &t.config();
  m.ch = std::move(f.ch);
  m.edit = edit;
  m.target = f.target;
  m.body = std::move(f.body);
  m.from = std::string(protocol::kServerUser);
  m.conn = 0;
  m.arrived_ns = arrived;
  m.reply_loop = loop;
  m.done = [respond = std::move(respond), rt, this, target = f.target](store::AppendOutcome out) {
    if (!out) {
      metrics_.local().reject(out.error().code);
      rt->reject(out.error().code);
      return respond(net::error_response(out.error()));
    }
    std::string body;
    JsonWriter(body).begin_object().field_unum("seq", out->seq).field_unum("target", target).end_object();
    respond({200, "application/json", std::move(body)});
  };
  hub_.moderate(std::move(m));
}

}  // namespace parley::api
