#include "server/config.h"

#include "common/host_port.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Debian's libtomlplusplus is a compiled library built with exceptions, and it
// exports only that ABI (toml::v3::ex::parse); TOML_EXCEPTIONS=0 would not
// link. So toml::parse throws, and parse_config catches at its boundary. Node
// accessors used below (as_*, iteration) never throw.
#include <toml++/toml.h>

namespace parley::server {
namespace {


Error bad(std::string msg) { return Error{ErrorCode::kBadRequest, std::move(msg)}; }

std::string join(std::string_view path, std::string_view key) {
  std::string out(path);
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

Status unknown_key(const std::string& path) { return bad("unknown key " + path); }

// `prefix` before each line of `text`.
std::string prefix_lines(const std::string& prefix, std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out += prefix;
    out += text.substr(0, nl);
    if (nl == std::string_view::npos) break;
    out += '\n';
    text = text.substr(nl + 1);
  }
  return out;
}

// Every problem of a file: a check reports them all, not the first (Error::msg
// holds one per line, see config.h), section by section and within one in the
// order the TOML library keeps keys (by name).
class Problems {
 public:
  void add(const Status& s) {
    if (!s) msgs_.push_back(s.error().msg);
  }
  bool empty() const { return msgs_.empty(); }
  size_t size() const { return msgs_.size(); }
  Error error(const std::string& path = {}) const {
    std::string all;
    for (const auto& m : msgs_) all += (all.empty() ? "" : "\n") + m;
    return bad(path.empty() ? all : prefix_lines(path + ": ", all));
  }

 private:
  std::vector<std::string> msgs_;
};

// ---- typed readers: each checks one value and names its key on failure ----

Status read_string(const toml::node& n, const std::string& path, std::string& out) {
  const auto* v = n.as_string();
  if (!v) return bad(path + " must be a string");
  out = v->get();
  return Status::ok();
}

Status read_nonempty(const toml::node& n, const std::string& path, std::string& out) {
  if (Status s = read_string(n, path, out); !s) return s;
  if (out.empty()) return bad(path + " must not be empty");
  return Status::ok();
}

Status read_bool(const toml::node& n, const std::string& path, bool& out) {
  const auto* v = n.as_boolean();
  if (!v) return bad(path + " must be true or false");
  out = v->get();
  return Status::ok();
}

template <typename T>
Status read_uint(const toml::node& n, const std::string& path, uint64_t lo, uint64_t hi, T& out) {
  static_assert(std::is_unsigned_v<T>);
  const auto* v = n.as_integer();
  int64_t x = v ? v->get() : -1;
  if (!v || x < 0 || uint64_t(x) < lo || uint64_t(x) > hi ||
      uint64_t(x) > std::numeric_limits<T>::max()) {
    return bad(path + " must be an integer between " + std::to_string(lo) + " and " +
               std::to_string(hi));
  }
  out = static_cast<T>(x);
  return Status::ok();
}

// aoi_cell: 0 (no grid) or an integer or float within [kMinAoiCell, kMaxAoiCell].
Status read_aoi_cell(const toml::node& n, const std::string& path, double& out) {
  constexpr double lo = kMinAoiCell, hi = kMaxAoiCell;
  double x = -1;
  if (const auto* i = n.as_integer()) x = static_cast<double>(i->get());
  if (const auto* f = n.as_floating_point()) x = f->get();
  if (!(x == 0 || (x >= lo && x <= hi))) {
    return bad(path + " must be 0 or a number between 0.001 and 1e12");
  }
  out = x;
  return Status::ok();
}

Status read_one_of(const toml::node& n, const std::string& path,
                   std::initializer_list<std::string_view> choices, std::string& out) {
  std::string v;
  if (Status s = read_string(n, path, v); !s) return s;
  for (auto c : choices) {
    if (v == c) {
      out = std::move(v);
      return Status::ok();
    }
  }
  std::string list;
  for (auto c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  return bad(path + " must be one of " + list);
}

Status read_string_array(const toml::node& n, const std::string& path,
                         std::vector<std::string>& out) {
  const auto* arr = n.as_array();
  if (!arr) return bad(path + " must be an array of strings");
  out.clear();
  for (const auto& el : *arr) {
    const auto* s = el.as_string();
    if (!s || s->get().empty()) return bad(path + " must be an array of non-empty strings");
    out.push_back(s->get());
  }
  return Status::ok();
}

const toml::table* as_table(const toml::node& n, const std::string& path, Status& err) {
  const auto* t = n.as_table();
  if (!t) err = bad(path + " must be a table");
  return t;
}

// ---- value shapes ----

// PROTOCOL.md's channel charset: tenant ids and namespaces end up in channel
// keys, store keys and metrics labels, so they get the same restrictions.
bool is_name(std::string_view s, bool allow_colon) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '@' || c == '-' || (allow_colon && c == ':');
    if (!ok) return false;
  }
  return true;
}

// Port 0 asks the OS for one (tests).
Status read_address(const toml::node& n, const std::string& path, bool optional,
                    std::string& out) {
  if (Status s = read_string(n, path, out); !s) return s;
  if (optional && out.empty()) return Status::ok();
  auto hp = parse_host_port(out);
  if (!hp) return bad(path + " must be host:port: " + hp.error().msg);
  return Status::ok();
}

// ---- sections ----

void read_server(const toml::table& t, ServerConfig& c, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join("server", key);
    Status s;
    if (key == "listen") {
      s = read_address(v, path, false, c.listen);
    } else if (key == "tcp_listen") {
      s = read_address(v, path, true, c.tcp_listen);
    } else if (key == "unix_listen") {
      s = read_string(v, path, c.unix_listen);
      // sockaddr_un.sun_path holds 108 bytes with the terminating NUL.
      if (s && c.unix_listen.size() > 107) s = bad(path + " must be at most 107 bytes");
    } else if (key == "store") {
      s = read_one_of(v, path, {"embedded", "memory", "valkey"}, c.store);
    } else if (key == "data_dir") {
      s = read_nonempty(v, path, c.data_dir);
    } else if (key == "fsync") {
      s = read_one_of(v, path, {"never", "always"}, c.fsync);
    } else if (key == "topic_log") {
      s = read_one_of(v, path, {"rocksdb", "segment"}, c.topic_log);
    } else if (key == "accept_data_loss") {
      s = read_bool(v, path, c.accept_data_loss);
    } else if (key == "store_verify_bytes") {
      s = read_uint(v, path, 0, uint64_t{1} << 50, c.store_verify_bytes);
    } else if (key == "threads") {
      s = read_uint(v, path, 0, 1024, c.threads);
    } else if (key == "heartbeat_ms") {
      s = read_uint(v, path, 100, 3'600'000, c.heartbeat_ms);
    } else if (key == "hello_timeout_ms") {
      s = read_uint(v, path, 100, 600'000, c.hello_timeout_ms);
    } else if (key == "loop_slice_us") {
      s = read_uint(v, path, 0, 100'000, c.loop_slice_us);
    } else if (key == "append_queue_limit") {
      s = read_uint(v, path, 1, 10'000'000, c.append_queue_limit);
    } else if (key == "max_connections") {
      s = read_uint(v, path, 1, 10'000'000, c.max_connections);
    } else if (key == "preauth_frame_bytes") {
      s = read_uint(v, path, 1024, 1u << 20, c.preauth_frame_bytes);
    } else if (key == "preauth_memory_bytes") {
      s = read_uint(v, path, 64 * 1024, 64ull << 30, c.preauth_memory_bytes);
    } else if (key == "preauth_max_connections") {
      s = read_uint(v, path, 1, 1'000'000, c.preauth_max_connections);
    } else if (key == "preauth_max_per_address") {
      s = read_uint(v, path, 1, 1'000'000, c.preauth_max_per_address);
    } else if (key == "http_idle_timeout_ms") {
      s = read_uint(v, path, 100, 600'000, c.http_idle_timeout_ms);
    } else if (key == "tls_cert") {
      s = read_nonempty(v, path, c.tls_cert);
    } else if (key == "tls_key") {
      s = read_nonempty(v, path, c.tls_key);
    } else if (key == "tcp_tls") {
      s = read_bool(v, path, c.tcp_tls);
    } else if (key == "listen_tls") {
      s = read_bool(v, path, c.listen_tls);
    } else if (key == "ephemeral_memory_bytes") {
      s = read_uint(v, path, 0, uint64_t{1} << 50, c.ephemeral_memory_bytes);
    } else if (key == "channel_idle_s") {
      s = read_uint(v, path, 1, 86'400, c.channel_idle_s);
    } else if (key == "log_level") {
      s = read_one_of(v, path, {"trace", "debug", "info", "warn", "error", "critical", "off"},
                      c.log_level);
    } else if (key == "admin_key") {
      s = read_string(v, path, c.admin_key);
      if (s && !c.admin_key.empty() && c.admin_key.size() < 16) {
        s = bad(path + " must be at least 16 bytes");
      }
    } else if (key == "log_format") {
      s = read_one_of(v, path, {"text", "json"}, c.log_format);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
  if (c.tcp_tls && (c.tls_cert.empty() || c.tls_key.empty())) {
    problems.add(bad("server.tcp_tls needs server.tls_cert and server.tls_key"));
  }
  if (c.listen_tls && (c.tls_cert.empty() || c.tls_key.empty())) {
    problems.add(bad("server.listen_tls needs server.tls_cert and server.tls_key"));
  }
}

void read_valkey(const toml::table& t, ValkeyConfig& c, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join("valkey", key);
    Status s;
    if (key == "nodes") {
      s = read_string_array(v, path, c.nodes);
      if (s && c.nodes.empty()) s = bad(path + " must list at least one host:port");
      for (size_t i = 0; s && i < c.nodes.size(); ++i) {
        if (auto hp = parse_host_port(c.nodes[i]); !hp || hp->port == 0) {
          s = bad(path + " must be host:port entries: " + c.nodes[i]);
        }
      }
    } else if (key == "cluster") {
      s = read_bool(v, path, c.cluster);
    } else if (key == "partitions") {
      s = read_uint(v, path, 1, 16384, c.partitions);
    } else if (key == "pool_size") {
      s = read_uint(v, path, 1, 64, c.pool_size);
    } else if (key == "command_timeout_ms") {
      s = read_uint(v, path, 50, 600'000, c.command_timeout_ms);
    } else if (key == "wal_max_len") {
      s = read_uint(v, path, 1000, uint64_t{1} << 40, c.wal_max_len);
    } else if (key == "wal_hard_cap") {
      s = read_uint(v, path, 1000, uint64_t{1} << 40, c.wal_hard_cap);
    } else if (key == "fanout_gap_ms") {
      s = read_uint(v, path, 1, 60'000, c.fanout_gap_ms);
    } else if (key == "fanout_max_held") {
      s = read_uint(v, path, 16, 1'000'000, c.fanout_max_held);
    } else if (key == "fanout_fill_page") {
      s = read_uint(v, path, 16, 10'000, c.fanout_fill_page);
    } else if (key == "presence_ttl_ms") {
      // Below 1 s a refresh (a third of it) would race the store's round trip;
      // above 60 s an entry would outlive its hash key (a minute after its last write).
      s = read_uint(v, path, 1000, 60'000, c.presence_ttl_ms);
    } else if (key == "topology_refresh_ms") {
      s = read_uint(v, path, 100, 600'000, c.topology_refresh_ms);
    } else if (key == "wait_replicas") {
      s = read_uint(v, path, 0, 16, c.wait_replicas);
    } else if (key == "wait_timeout_ms") {
      s = read_uint(v, path, 10, 60'000, c.wait_timeout_ms);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
}

void read_postgres(const toml::table& t, PostgresConfig& c, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join("postgres", key);
    Status s;
    if (key == "url") {
      s = read_nonempty(v, path, c.url);
    } else if (key == "readers") {
      s = read_uint(v, path, 1, 64, c.readers);
    } else if (key == "timeout_ms") {
      s = read_uint(v, path, 100, 600'000, c.timeout_ms);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
}

void read_dynamodb(const toml::table& t, DynamoConfig& c, Problems& problems) {
  c.enabled = true;
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join("dynamodb", key);
    Status s;
    if (key == "table") {
      s = read_nonempty(v, path, c.table);
    } else if (key == "region") {
      s = read_string(v, path, c.region);
    } else if (key == "endpoint") {
      s = read_string(v, path, c.endpoint);
      if (s && !c.endpoint.empty() && c.endpoint.rfind("https://", 0) != 0 && c.endpoint.rfind("http://", 0) != 0) {
        s = bad(path + " must start with https:// (or http:// for a local test server)");
      }
    } else if (key == "access_key_id") {
      s = read_string(v, path, c.access_key_id);
    } else if (key == "secret_access_key") {
      s = read_string(v, path, c.secret_access_key);
    } else if (key == "session_token") {
      s = read_string(v, path, c.session_token);
    } else if (key == "ca_file") {
      s = read_string(v, path, c.ca_file);
    } else if (key == "timeout_ms") {
      s = read_uint(v, path, 100, 600'000, c.timeout_ms);
    } else if (key == "spread") {
      s = read_uint(v, path, 1, 100, c.spread);
    } else if (key == "create_table") {
      s = read_bool(v, path, c.create_table);
    } else if (key == "readers") {
      s = read_uint(v, path, 1, 64, c.readers);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
  if (c.access_key_id.empty() != c.secret_access_key.empty()) {
    problems.add(bad("dynamodb.access_key_id and dynamodb.secret_access_key go together"));
  }
}

void read_persist(const toml::table& t, PersistConfig& c, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join("persist", key);
    Status s;
    if (key == "listen") {
      s = read_address(v, path, false, c.listen);
    } else if (key == "group") {
      s = read_nonempty(v, path, c.group);
    } else if (key == "consumer") {
      // Empty is the default: <hostname>-<pid> (persist_command.cc).
      s = read_string(v, path, c.consumer);
    } else if (key == "batch") {
      s = read_uint(v, path, 1, 10'000, c.batch);
    } else if (key == "threads") {
      s = read_uint(v, path, 1, 64, c.threads);
    } else if (key == "poll_ms") {
      s = read_uint(v, path, 1, 10'000, c.poll_ms);
    } else if (key == "claim_idle_ms") {
      s = read_uint(v, path, 100, 86'400'000, c.claim_idle_ms);
    } else if (key == "trim_interval_ms") {
      s = read_uint(v, path, 10, 600'000, c.trim_interval_ms);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
}

// One key of a hook (PROTOCOL.md "Hooks"): `hook_<kind>` or its
// `hook_<kind>_timeout_ms`, `_fail`, `_max_inflight`, `_queue` (the callers
// name each key, so that docs_test.py sees them).
void read_hook_key(std::string_view key, const toml::node& v, const std::string& path,
                   std::string_view kind, HookConfig& hook, Status& s) {
  const std::string_view rest = key.substr(std::string_view("hook_").size() + kind.size());
  if (rest.empty()) {
    s = read_string(v, path, hook.url);
    if (s && !hook.url.empty() && !hook.url.starts_with("http://") && !hook.url.starts_with("unix:/")) {
      s = bad(path + " must be an http:// URL or unix:/path/of/a/socket");
    }
  } else if (rest == "_timeout_ms") {
    s = read_uint(v, path, 1, 60'000, hook.timeout_ms);
  } else if (rest == "_fail") {
    std::string mode;
    s = read_string(v, path, mode);
    if (s && mode != "open" && mode != "closed") s = bad(path + " must be \"open\" or \"closed\"");
    if (s) hook.fail_open = mode == "open";
  } else if (rest == "_max_inflight") {
    s = read_uint(v, path, 1, 100'000, hook.max_inflight);
  } else if (rest == "_queue") {
    s = read_uint(v, path, 0, 1'000'000, hook.queue);
  }
}

void read_namespace(const toml::table& t, const std::string& ns_path, NamespaceConfig& ns, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join(ns_path, key);
    Status s;
    if (key == "durable") {
      s = read_bool(v, path, ns.durable);
    } else if (key == "history") {
      s = read_uint(v, path, 0, 1'000'000, ns.history);
    } else if (key == "tick_ms") {
      s = read_uint(v, path, 0, 10'000, ns.tick_ms);
    } else if (key == "presence") {
      s = read_bool(v, path, ns.presence);
    } else if (key == "aoi_cell") {
      s = read_aoi_cell(v, path, ns.aoi_cell);
    } else if (key == "state_delta") {
      s = read_bool(v, path, ns.state_delta);
    } else if (key == "dedupe_window_s") {
      s = read_uint(v, path, 0, 86'400, ns.dedupe_window_s);
    } else if (key == "history_ttl_s") {
      s = read_uint(v, path, 0, 31'536'000, ns.history_ttl_s);
    } else if (key == "edit_window_s") {
      s = read_uint(v, path, 0, 31'536'000, ns.edit_window_s);
    } else if (key == "upstream") {
      s = read_string(v, path, ns.upstream);
      // Strict now so a later, wider forwarder never changes what a file means.
      if (s && !ns.upstream.empty() && !ns.upstream.starts_with("http://")) {
        s = bad(path + " must be an http:// URL");
      }
    } else if (key == "forward") {
      std::vector<std::string> events;
      s = read_string_array(v, path, events);
      uint8_t mask = 0;
      for (size_t i = 0; s && i < events.size(); ++i) {
        const auto& e = events[i];
        if (e == "join") {
          mask |= kForwardJoin;
        } else if (e == "leave") {
          mask |= kForwardLeave;
        } else if (e == "msg") {
          mask |= kForwardMsg;
        } else if (e == "state") {
          mask |= kForwardState;
        } else if (e == "up") {
          mask |= kForwardUp;
        } else if (e == "edit") {
          mask |= kForwardEdit;
        } else if (e == "delete") {
          mask |= kForwardDelete;
        } else {
          s = bad(path + " entries must be join, leave, msg, state, up, edit or delete");
        }
      }
      if (s) ns.forward = mask;
    } else if (key == "upstream_queue") {
      s = read_uint(v, path, 1, 10'000'000, ns.upstream_queue);
    } else if (key == "channel_pub_rate") {
      s = read_uint(v, path, 0, 1'000'000, ns.channel_pub_rate);
    } else if (key == "hook_join" ||
               key == "hook_join_timeout_ms" ||
               key == "hook_join_fail" ||
               key == "hook_join_max_inflight" ||
               key == "hook_join_queue") {
      read_hook_key(key, v, path, "join", ns.hook_join, s);
    } else if (key == "hook_pub" ||
               key == "hook_pub_timeout_ms" ||
               key == "hook_pub_fail" ||
               key == "hook_pub_max_inflight" ||
               key == "hook_pub_queue") {
      read_hook_key(key, v, path, "pub", ns.hook_pub, s);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
}

void read_namespaces(const toml::table& t, const std::string& path, TenantConfig& tenant, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view name = k.str();
    std::string ns_path = join(path, name);
    if (!is_name(name, /*allow_colon=*/false)) {
      problems.add(bad(ns_path + ": namespace names are 1-128 chars of [A-Za-z0-9_.@-]"));
      continue;
    }
    Status err;
    const toml::table* nt = as_table(v, ns_path, err);
    if (!nt) {
      problems.add(err);
      continue;
    }
    // Channels without ':' are in "default", which is also where unlisted
    // namespaces fall back to: one struct serves both.
    NamespaceConfig& ns = name == "default" ? tenant.default_namespace
                                            : tenant.namespaces[std::string(name)];
    read_namespace(*nt, ns_path, ns, problems);
  }
}

void read_topic(const toml::table& t, const std::string& tp, TopicConfig& topic, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join(tp, key);
    Status s;
    if (key == "partitions") {
      s = read_uint(v, path, 1, 1024, topic.partitions);
    } else if (key == "retention") {
      s = read_uint(v, path, 0, 1'000'000'000, topic.retention);
    } else if (key == "retention_s") {
      s = read_uint(v, path, 0, 10ull * 365 * 86'400, topic.retention_s);
    } else if (key == "tick_ms") {
      s = read_uint(v, path, 0, 10'000, topic.tick_ms);
    } else if (key == "dedupe_window_s") {
      s = read_uint(v, path, 0, 86'400, topic.dedupe_window_s);
    } else if (key == "snapshot_s") {
      s = read_uint(v, path, 0, 86'400, topic.snapshot_s);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
}

void read_leaderboard(const toml::table& t, const std::string& bp, LeaderboardConfig& lb, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string path = join(bp, key);
    Status s;
    if (key == "topic") {
      s = read_nonempty(v, path, lb.topic);
    } else if (key == "type") {
      s = read_nonempty(v, path, lb.type);
    } else if (key == "member") {
      s = read_nonempty(v, path, lb.member);
    } else if (key == "score") {
      s = read_nonempty(v, path, lb.score);
    } else if (key == "agg") {
      s = read_one_of(v, path, {"sum", "max", "min", "last"}, lb.agg);
    } else if (key == "round") {
      s = read_nonempty(v, path, lb.round);
    } else if (key == "order") {
      s = read_one_of(v, path, {"desc", "asc"}, lb.order);
    } else if (key == "top") {
      s = read_uint(v, path, 1, 1000, lb.top);
    } else if (key == "interval_ms") {
      s = read_uint(v, path, 10, 600'000, lb.interval_ms);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
  for (auto [name, value] : {std::pair<std::string_view, const std::string*>{"topic", &lb.topic},
                             {"type", &lb.type}, {"member", &lb.member}, {"score", &lb.score}}) {
    if (value->empty()) problems.add(bad(join(bp, name) + " is required"));
  }
}

// [tenants.X.topics.NAME] and [tenants.X.leaderboards.NAME]: names follow the
// channel-name rules (PROTOCOL.md); a board's name ends up in `lb:NAME[:ROUND]`.
template <typename T, typename ReadOne>
void read_named_tables(const toml::table& t, const std::string& path,
                         std::map<std::string, T, std::less<>>& out, ReadOne read_one, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view name = k.str();
    std::string np = join(path, name);
    if (!is_name(name, /*allow_colon=*/true)) {
      problems.add(bad(np + ": names are 1-128 chars of [A-Za-z0-9_.:@-]"));
      continue;
    }
    Status err;
    const toml::table* nt = as_table(v, np, err);
    if (!nt) {
      problems.add(err);
      continue;
    }
    read_one(*nt, np, out[std::string(name)], problems);
  }
}

void read_tenant(const toml::table& t, const std::string& path, TenantConfig& tenant, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view key = k.str();
    std::string kp = join(path, key);
    Status s;
    if (key == "secret") {
      s = read_string(v, kp, tenant.secret);
      // HMAC-SHA256 keys shorter than this are guessable offline from one token.
      if (s && tenant.secret.size() < 16) s = bad(kp + " must be at least 16 bytes");
    } else if (key == "api_key") {
      s = read_nonempty(v, kp, tenant.api_key);
    } else if (key == "rotation_overlap_s") {
      s = read_uint(v, kp, 0, 30 * 86'400, tenant.rotation_overlap_s);
    } else if (key == "max_connections") {
      s = read_uint(v, kp, 1, 10'000'000, tenant.max_connections);
    } else if (key == "publish_per_sec") {
      s = read_uint(v, kp, 0, 1'000'000'000, tenant.publish_per_sec);
    } else if (key == "publish_per_conn_sec") {
      s = read_uint(v, kp, 0, 1'000'000'000, tenant.publish_per_conn_sec);
    } else if (key == "max_message_bytes") {
      s = read_uint(v, kp, 64, 16u << 20, tenant.max_message_bytes);
    } else if (key == "max_channels_per_conn") {
      s = read_uint(v, kp, 1, 100'000, tenant.max_channels_per_conn);
    } else if (key == "max_queue_bytes") {
      s = read_uint(v, kp, 1024, 64ull << 30, tenant.max_queue_bytes);
    } else if (key == "events_per_sec") {
      s = read_uint(v, kp, 0, 1'000'000'000, tenant.events_per_sec);
    } else if (key == "max_sanctions") {
      s = read_uint(v, kp, 1, 10'000'000, tenant.max_sanctions);
    } else if (key == "allowed_origins") {
      s = read_string_array(v, kp, tenant.allowed_origins);
    } else if (key == "hook_connect" ||
               key == "hook_connect_timeout_ms" ||
               key == "hook_connect_fail" ||
               key == "hook_connect_max_inflight" ||
               key == "hook_connect_queue") {
      read_hook_key(key, v, kp, "connect", tenant.hook_connect, s);
    } else if (key == "topics") {
      const toml::table* tt = as_table(v, kp, s);
      if (tt) read_named_tables(*tt, kp, tenant.topics, read_topic, problems);
    } else if (key == "leaderboards") {
      const toml::table* lt = as_table(v, kp, s);
      if (lt) read_named_tables(*lt, kp, tenant.leaderboards, read_leaderboard, problems);
    } else if (key == "namespaces") {
      const toml::table* nt = as_table(v, kp, s);
      if (nt) read_namespaces(*nt, kp, tenant, problems);
    } else {
      s = unknown_key(kp);
    }
    problems.add(s);
  }
  // A key given but refused is reported once, not again as missing.
  if (!t.contains("secret")) problems.add(bad(join(path, "secret") + " is required"));
  for (const auto& [name, lb] : tenant.leaderboards) {
    if (!tenant.topic(lb.topic)) {
      problems.add(bad(join(join(join(path, "leaderboards"), name), "topic") + ": no topic \"" +
                       lb.topic + "\" in " + join(path, "topics")));
    }
  }
  if (!t.contains("api_key")) problems.add(bad(join(path, "api_key") + " is required"));
  // A queue smaller than one message would close every member on a big message.
  if (tenant.max_queue_bytes < tenant.max_message_bytes) {
    problems.add(bad(join(path, "max_queue_bytes") + " must be at least max_message_bytes (" +
                       std::to_string(tenant.max_message_bytes) + ")"));
  }
}

void read_tenants(const toml::table& t, ServerConfig& c, Problems& problems) {
  for (auto&& [k, v] : t) {
    std::string_view id = k.str();
    std::string path = join("tenants", id);
    if (!is_name(id, /*allow_colon=*/true)) {
      problems.add(bad(path + ": tenant ids are 1-128 chars of [A-Za-z0-9_.:@-]"));
      continue;
    }
    Status err;
    const toml::table* tt = as_table(v, path, err);
    if (!tt) {
      problems.add(err);
      continue;
    }
    TenantConfig tenant;
    tenant.id = std::string(id);
    read_tenant(*tt, path, tenant, problems);
    // The api key names its tenant, and a shared secret would let one tenant
    // mint tokens claiming the other: both must be unique.
    for (const auto& [other_id, other] : c.tenants) {
      if (other.api_key == tenant.api_key) {
        problems.add(bad(path + ".api_key is the same as tenants." + other_id + ".api_key"));
      }
      if (other.secret == tenant.secret) {
        problems.add(bad(path + ".secret is the same as tenants." + other_id + ".secret"));
      }
    }
    c.tenants.emplace(tenant.id, std::move(tenant));
  }
}

void read_document(const toml::table& doc, ServerConfig& c, Problems& problems) {
  bool tenants_refused = false;  // [tenants] had problems (reported): no "no tenants" too
  for (auto&& [k, v] : doc) {
    std::string_view key = k.str();
    std::string path(key);
    Status s;
    const toml::table* t = nullptr;
    if (key == "server") {
      if ((t = as_table(v, path, s))) read_server(*t, c, problems);
    } else if (key == "tenants") {
      const size_t before = problems.size();
      if ((t = as_table(v, path, s))) read_tenants(*t, c, problems);
      tenants_refused = !s || problems.size() > before;
    } else if (key == "valkey") {
      if ((t = as_table(v, path, s))) read_valkey(*t, c.valkey, problems);
    } else if (key == "postgres") {
      if ((t = as_table(v, path, s))) read_postgres(*t, c.postgres, problems);
    } else if (key == "dynamodb") {
      if ((t = as_table(v, path, s))) read_dynamodb(*t, c.dynamodb, problems);
    } else if (key == "persist") {
      if ((t = as_table(v, path, s))) read_persist(*t, c.persist, problems);
    } else {
      s = unknown_key(path);
    }
    problems.add(s);
  }
  if (c.tenants.empty() && !tenants_refused) {
    problems.add(bad("no tenants configured: add a [tenants.<id>] table"));
  }
  for (const auto& [id, t] : c.tenants) {
    if (!c.admin_key.empty() && t.api_key == c.admin_key) {
      problems.add(bad("server.admin_key is the same as tenants." + id + ".api_key"));
    }
  }
}

}  // namespace

Result<ServerConfig> parse_config(std::string_view toml_text) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    return bad("TOML syntax error at line " + std::to_string(at.line) + ", column " +
               std::to_string(at.column) + ": " + std::string(e.description()));
  }
  ServerConfig c;
  Problems problems;
  read_document(doc, c, problems);
  if (!problems.empty()) return problems.error();
  return c;
}

namespace {
Result<std::string> read_file(const std::string& path) {
  // stdio rather than iostreams: its failures come with an errno to report.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return bad("cannot read config file " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[16384];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  int read_errno = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (read_errno) return bad("cannot read config file " + path + ": " + std::strerror(read_errno));
  return text;
}
}  // namespace

Result<ServerConfig> load_config_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto r = parse_config(*text);
  if (!r) return bad(prefix_lines(path + ": ", r.error().msg));
  return r;
}

Result<ServerConfig> load_server_section(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  toml::table doc;
  try {
    doc = toml::parse(*text);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    return bad(path + ": TOML syntax error at line " + std::to_string(at.line) + ", column " +
               std::to_string(at.column) + ": " + std::string(e.description()));
  }
  ServerConfig c;
  if (const toml::node* n = doc.get("server")) {
    Status s;
    const toml::table* t = as_table(*n, "server", s);
    if (!t) return bad(path + ": " + s.error().msg);
    Problems problems;
    read_server(*t, c, problems);
    if (!problems.empty()) return problems.error(path);
  }
  return c;
}

ServerConfig demo_config() {
  ServerConfig c;
  c.listen = "127.0.0.1:7700";
  c.store = "embedded";
  c.data_dir = "./data";
  TenantConfig demo;
  demo.id = "demo";
  demo.secret = "demo-secret-change-me-0123456789";
  demo.api_key = "demo-api-key";
  NamespaceConfig world;
  world.durable = false;
  world.tick_ms = 20;
  world.presence = true;
  demo.namespaces.emplace("world", world);
  c.tenants.emplace(demo.id, std::move(demo));
  return c;
}

}  // namespace parley::server
