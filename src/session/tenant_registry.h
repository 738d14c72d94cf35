// The configured tenants plus their live, shared counters and rate limits.
// Built at start-up, read-only afterwards (the atomics are the only mutation).
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/error_code.h"
#include "tenant/tenant_config.h"
#include "auth/token_bucket.h"

namespace parley::session {

struct TenantRuntime {
  explicit TenantRuntime(const TenantConfig& c)
      : config(c), publish_bucket(c.publish_per_sec), events_bucket(c.events_per_sec) {}
  const TenantConfig& config;
  std::atomic<uint32_t> connections{0};
  auth::SharedTokenBucket publish_bucket;  // tenant-wide pub + POST /v1/publish
  auth::SharedTokenBucket events_bucket;   // tenant-wide events of emit (events_per_sec)
  std::atomic<uint64_t> messages{0};       // acknowledged, not duplicates
  // Error replies to this tenant's clients and API calls, by code (admin page).
  std::array<std::atomic<uint64_t>, kErrorCodeCount> rejections{};
  void reject(ErrorCode c) { rejections[static_cast<int>(c)].fetch_add(1, std::memory_order_relaxed); }

  // Takes a connection slot; false at max_connections.
  bool try_connect() {
    if (connections.fetch_add(1, std::memory_order_relaxed) < config.max_connections) return true;
    connections.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  void disconnect() { connections.fetch_sub(1, std::memory_order_relaxed); }
};

class TenantRegistry {
 public:
  explicit TenantRegistry(const std::map<std::string, TenantConfig, std::less<>>& tenants);
  TenantRuntime* find(std::string_view id) const;
  TenantRuntime* find_by_api_key(std::string_view key) const;
  template <typename Fn>
  void for_each(Fn fn) const {
    for (const auto& [id, t] : by_id_) fn(*t);
  }

 private:
  std::map<std::string, std::unique_ptr<TenantRuntime>, std::less<>> by_id_;
  std::map<std::string, TenantRuntime*, std::less<>> by_api_key_;
};

}  // namespace parley::session
