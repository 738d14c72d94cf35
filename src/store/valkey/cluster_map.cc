#include "store/valkey/cluster_map.h"

#include <hiredis/hiredis.h>

#include <charconv>

namespace parley::store::valkey {
namespace {
Error bad(const std::string& what) {
  return Error{ErrorCode::kUnavailable, "valkey cluster: " + what, 1000};
}
}  // namespace

Result<std::vector<SlotRange>> parse_cluster_slots(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY) return bad("CLUSTER SLOTS did not answer an array");
  std::vector<SlotRange> out;
  std::vector<bool> covered(16384, false);
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->type != REDIS_REPLY_INTEGER ||
        e->element[1]->type != REDIS_REPLY_INTEGER || e->element[2]->type != REDIS_REPLY_ARRAY ||
        e->element[2]->elements < 2 || e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
        e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
      return bad("unexpected CLUSTER SLOTS entry");
    }
    const long long first = e->element[0]->integer, last = e->element[1]->integer;
    const long long port = e->element[2]->element[1]->integer;
    if (first < 0 || last > 16383 || first > last || port <= 0 || port > 65535) {
      return bad("CLUSTER SLOTS entry out of range");
    }
    const std::string ip(e->element[2]->element[0]->str, e->element[2]->element[0]->len);
    auto hp = parse_host_port((ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" +
                              std::to_string(port));
    if (!hp) return bad("CLUSTER SLOTS names a node that is not ip:port: " + ip);
    out.push_back(SlotRange{static_cast<uint16_t>(first), static_cast<uint16_t>(last), *hp});
    for (long long s = first; s <= last; ++s) covered[static_cast<size_t>(s)] = true;
  }
  for (bool c : covered) {
    if (!c) return bad("some slots are not served (cluster_state not ok?)");
  }
  return out;
}

Result<std::vector<SlotRange>> discover(const std::vector<HostPort>& seeds, int timeout_ms) {
  std::string last_error = "no seed node";
  for (const auto& seed : seeds) {
    const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext* c = redisConnectWithTimeout(seed.ip.c_str(), seed.port, tv);
    if (!c || c->err) {
      last_error = seed.ip + ":" + std::to_string(seed.port) + ": " + (c ? c->errstr : "out of memory");
      if (c) redisFree(c);
      continue;
    }
    redisSetTimeout(c, tv);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "CLUSTER SLOTS"));
    if (reply) {
      auto slots = reply->type == REDIS_REPLY_ERROR
                       ? Result<std::vector<SlotRange>>(bad(std::string(reply->str, reply->len)))
                       : parse_cluster_slots(reply);
      freeReplyObject(reply);
      redisFree(c);
      if (slots) return slots;
      last_error = slots.error().msg;
      continue;
    }
    last_error = seed.ip + ":" + std::to_string(seed.port) + ": " + c->errstr;
    redisFree(c);
  }
  return bad(last_error);
}

std::optional<Redirect> parse_redirect(const std::string& error) {
  Redirect r;
  std::string_view rest;
  if (error.rfind("MOVED ", 0) == 0) {
    rest = std::string_view(error).substr(6);
  } else if (error.rfind("ASK ", 0) == 0) {
    r.ask = true;
    rest = std::string_view(error).substr(4);
  } else {
    return std::nullopt;
  }
  const size_t sp = rest.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  unsigned slot = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + sp, slot);
  if (ec != std::errc() || p != rest.data() + sp || slot > 16383) return std::nullopt;
  r.slot = static_cast<uint16_t>(slot);
  std::string addr(rest.substr(sp + 1));
  // An IPv6 node comes as "::1:6381": bracket the host part for parse_host_port.
  const size_t colon = addr.rfind(':');
  if (colon != std::string::npos && addr.find(':') != colon) {
    addr = "[" + addr.substr(0, colon) + "]" + addr.substr(colon);
  }
  auto hp = parse_host_port(addr);
  if (!hp) return std::nullopt;
  r.to = *hp;
  return r;
}

}  // namespace parley::store::valkey
