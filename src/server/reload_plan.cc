#include "server/reload_plan.h"

namespace parley::server {
namespace {

// A [server] key: `live` ones apply at once, the others keep their running value.
template <typename T>
void server_key(const char* name, const T& running, T& next, std::vector<std::string>& restart) {
  if (running == next) return;
  restart.push_back(std::string("server.") + name);
  next = running;
}

// A namespace's upstream target is fixed at start (upstream::Forwarder builds
// one per namespace that has one): its URL and queue bound stay as running.
void keep_upstream(const std::string& path, const NamespaceConfig* running, NamespaceConfig& next,
                   std::vector<std::string>& restart) {
  const std::string upstream = running ? running->upstream : std::string();
  const uint32_t queue = running ? running->upstream_queue : NamespaceConfig{}.upstream_queue;
  if (next.upstream != upstream) {
    restart.push_back(path + ".upstream");
    next.upstream = upstream;
  }
  if (!next.upstream.empty() && next.upstream_queue != queue) {
    restart.push_back(path + ".upstream_queue");
    next.upstream_queue = queue;
  }
  if (next.upstream.empty()) next.upstream_queue = queue;
}

}  // namespace

ReloadPlan plan_reload(const ServerConfig& running, ServerConfig file) {
  ReloadPlan plan;
  auto& r = plan.restart_required;
  ServerConfig& n = file;
  // Listeners, the store and everything sized at start. log_level is live.
  server_key("listen", running.listen, n.listen, r);
  server_key("tcp_listen", running.tcp_listen, n.tcp_listen, r);
  server_key("unix_listen", running.unix_listen, n.unix_listen, r);
  server_key("store", running.store, n.store, r);
  server_key("data_dir", running.data_dir, n.data_dir, r);
  server_key("fsync", running.fsync, n.fsync, r);
  server_key("accept_data_loss", running.accept_data_loss, n.accept_data_loss, r);
  server_key("threads", running.threads, n.threads, r);
  server_key("heartbeat_ms", running.heartbeat_ms, n.heartbeat_ms, r);
  server_key("hello_timeout_ms", running.hello_timeout_ms, n.hello_timeout_ms, r);
  server_key("loop_slice_us", running.loop_slice_us, n.loop_slice_us, r);
  server_key("append_queue_limit", running.append_queue_limit, n.append_queue_limit, r);
  server_key("max_connections", running.max_connections, n.max_connections, r);
  server_key("preauth_frame_bytes", running.preauth_frame_bytes, n.preauth_frame_bytes, r);
  server_key("preauth_memory_bytes", running.preauth_memory_bytes, n.preauth_memory_bytes, r);
  server_key("store_verify_bytes", running.store_verify_bytes, n.store_verify_bytes, r);
  server_key("preauth_max_connections", running.preauth_max_connections, n.preauth_max_connections, r);
  server_key("preauth_max_per_address", running.preauth_max_per_address, n.preauth_max_per_address, r);
  server_key("http_idle_timeout_ms", running.http_idle_timeout_ms, n.http_idle_timeout_ms, r);
  server_key("tls_cert", running.tls_cert, n.tls_cert, r);
  server_key("tls_key", running.tls_key, n.tls_key, r);
  server_key("tcp_tls", running.tcp_tls, n.tcp_tls, r);
  server_key("listen_tls", running.listen_tls, n.listen_tls, r);
  server_key("ephemeral_memory_bytes", running.ephemeral_memory_bytes, n.ephemeral_memory_bytes, r);
  server_key("channel_idle_s", running.channel_idle_s, n.channel_idle_s, r);
  server_key("admin_key", running.admin_key, n.admin_key, r);
  server_key("log_format", running.log_format, n.log_format, r);

  for (auto& [id, t] : n.tenants) {
    auto was = running.tenants.find(id);
    const TenantConfig* old = was == running.tenants.end() ? nullptr : &was->second;
    const std::string path = "tenants." + id + ".namespaces.";
    for (auto& [name, ns] : t.namespaces) {
      const NamespaceConfig* before = nullptr;
      if (old) {
        auto it = old->namespaces.find(name);
        if (it != old->namespaces.end()) before = &it->second;
      }
      keep_upstream(path + name, before, ns, r);
    }
    keep_upstream(path + "default", old ? &old->default_namespace : nullptr, t.default_namespace, r);
    // A topic's partitions map keys to logs: a loaded topic keeps its count.
    for (auto& [name, topic] : t.topics) {
      const TopicConfig* before = old ? old->topic(name) : nullptr;
      if (before && before->partitions != topic.partitions) {
        r.push_back("tenants." + id + ".topics." + name + ".partitions");
        topic.partitions = before->partitions;
      }
    }
  }
  plan.next = std::move(n);
  return plan;
}

}  // namespace parley::server
