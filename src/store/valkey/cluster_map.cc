#include "store/valkey/cluster_map.h"

#include <hiredis/hiredis.h>

#include <charconv>
#include <map>

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

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t next = s.find(sep, at);
    const size_t end = next == std::string_view::npos ? s.size() : next;
    if (end > at) out.push_back(s.substr(at, end - at));
    if (next == std::string_view::npos) break;
    at = next + 1;
  }
  return out;
}

template <typename T>
bool number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "127.0.0.1:7000@17000[,hostname]", "[::1]:7000@17000", ":0@0" (not known yet).
std::optional<HostPort> node_address(std::string_view field, const HostPort& asked, bool myself) {
  field = field.substr(0, field.find_first_of("@,"));
  const size_t colon = field.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string host(field.substr(0, colon));
  if (host.empty()) {
    if (!myself) return std::nullopt;
    return asked;
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  auto hp = parse_host_port(host + std::string(field.substr(colon)));
  if (!hp) return std::nullopt;
  return *hp;
}

}  // namespace

Result<std::vector<ClusterNode>> parse_cluster_nodes(std::string_view text, const HostPort& asked) {
  std::vector<ClusterNode> out;
  for (std::string_view line : split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto f = split(line, ' ');
    // <id> <addr> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
    if (f.size() < 8) return bad("unexpected CLUSTER NODES line");
    ClusterNode n;
    const auto flags = split(f[2], ',');
    bool myself = false, noaddr = false, handshake = false;
    for (auto fl : flags) {
      if (fl == "master") n.master = true;
      if (fl == "fail") n.failed = true;
      if (fl == "myself") myself = true;
      if (fl == "noaddr") noaddr = true;
      if (fl == "handshake") handshake = true;
    }
    if (noaddr || handshake) continue;
    auto addr = node_address(f[1], asked, myself);
    if (!addr) continue;
    n.addr = *addr;
    if (!number(f[6], n.config_epoch)) return bad("CLUSTER NODES: bad config epoch");
    for (size_t i = 8; i < f.size(); ++i) {
      const std::string_view r = f[i];
      if (r.front() == '[') continue;  // a slot being migrated or imported
      const size_t dash = r.find('-');
      unsigned first = 0, last = 0;
      if (!number(r.substr(0, dash), first)) return bad("CLUSTER NODES: bad slot");
      last = first;
      if (dash != std::string_view::npos && !number(r.substr(dash + 1), last)) {
        return bad("CLUSTER NODES: bad slot range");
      }
      if (first > last || last > 16383) return bad("CLUSTER NODES: slot out of range");
      n.slots.emplace_back(static_cast<uint16_t>(first), static_cast<uint16_t>(last));
    }
    out.push_back(std::move(n));
  }
  if (out.empty()) return bad("CLUSTER NODES named no node");
  return out;
}

Result<ClusterView> merge_views(const std::vector<std::vector<ClusterNode>>& views) {
  struct Best {
    const HostPort* addr = nullptr;
    uint64_t epoch = 0;
  };
  std::vector<Best> best(16384);
  ClusterView view;
  view.answered = views.size();
  auto known = [&view](const HostPort& hp) {
    for (const auto& n : view.nodes) {
      if (n.ip == hp.ip && n.port == hp.port) return;
    }
    view.nodes.push_back(hp);
  };
  for (const auto& v : views) {
    for (const auto& n : v) {
      known(n.addr);
      if (!n.master) continue;
      for (auto [first, last] : n.slots) {
        for (uint32_t s = first; s <= last; ++s) {
          if (!best[s].addr || n.config_epoch > best[s].epoch) best[s] = Best{&n.addr, n.config_epoch};
        }
      }
    }
  }
  for (uint32_t s = 0; s < 16384;) {
    if (!best[s].addr) {
      ++s;
      continue;
    }
    uint32_t e = s;
    const HostPort* a = best[s].addr;
    while (e + 1 < 16384 && best[e + 1].addr && best[e + 1].addr->ip == a->ip &&
           best[e + 1].addr->port == a->port && best[e + 1].epoch == best[s].epoch) {
      ++e;
    }
    view.ranges.push_back(SlotRange{static_cast<uint16_t>(s), static_cast<uint16_t>(e), *a, best[s].epoch});
    s = e + 1;
  }
  if (view.ranges.empty()) return bad("no node serves any slot");
  return view;
}

Result<ClusterView> discover_view(const std::vector<HostPort>& ask, int timeout_ms, size_t want) {
  std::vector<std::vector<ClusterNode>> views;
  std::string last_error = "no node to ask";
  for (const auto& node : ask) {
    if (views.size() >= want) break;
    const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext* c = redisConnectWithTimeout(node.ip.c_str(), node.port, tv);
    if (!c || c->err) {
      last_error = node.ip + ":" + std::to_string(node.port) + ": " + (c ? c->errstr : "out of memory");
      if (c) redisFree(c);
      continue;
    }
    redisSetTimeout(c, tv);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "CLUSTER NODES"));
    if (!reply) {
      last_error = node.ip + ":" + std::to_string(node.port) + ": " + c->errstr;
    } else if (reply->type != REDIS_REPLY_STRING) {
      last_error = node.ip + ":" + std::to_string(node.port) + ": CLUSTER NODES did not answer a string";
    } else {
      auto v = parse_cluster_nodes(std::string_view(reply->str, reply->len), node);
      if (v) {
        views.push_back(std::move(*v));
      } else {
        last_error = v.error().msg;
      }
    }
    if (reply) freeReplyObject(reply);
    redisFree(c);
  }
  if (views.empty()) return bad(last_error);
  return merge_views(views);
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
