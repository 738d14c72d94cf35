// The configured tenants plus their live, shared counters and rate limits, and
// how a config reload replaces them while every loop keeps reading.
//
// Threads: lookups (find, find_by_api_key, origin_allowed, for_each) and a
// TenantRuntime's accessors run on any loop without a lock: each is one acquire
// load of an immutable object. apply() runs on one thread at a time (the
// server's reload), never on a loop.
//
// Lifetimes: a TenantRuntime lives as long as the registry, also after its
// tenant is removed (sessions, requests in flight and metrics hold it; a tenant
// added back under the same id gets it again, counters and all). A
// TenantSnapshot is kept as long as the registry too: loaded channels, queued
// upstream events and requests in flight point into the one they started with,
// so a snapshot is never freed under them (a reload that changes N tenants costs
// N snapshots, a few KB each). A Directory (the id and key index) is read only
// within one task, so a replaced one is freed once every loop has passed a task
// boundary: apply() hands it back for the caller to retire that way.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/token_bucket.h"
#include "common/error_code.h"
#include "common/status.h"
#include "tenant/tenant_config.h"

namespace parley {

// A tenant as one reload (or the start) published it.
struct TenantSnapshot {
  TenantConfig config;
  // What a rotation replaced (config.rotation_overlap_s), still accepted until
  // the wall-clock time; empty: none.
  std::string previous_secret;
  int64_t previous_secret_until_ms = 0;
  std::string previous_api_key;
  int64_t previous_api_key_until_ms = 0;
};

struct TenantRuntime {
  explicit TenantRuntime(const TenantSnapshot* s)
      : id(s->config.id),
        publish_bucket(s->config.publish_per_sec),
        events_bucket(s->config.events_per_sec),
        snapshot_(s) {}
  const std::string id;

  // The current settings. Read them once per operation and use that reference
  // throughout it (a reload may publish new ones at any time).
  const TenantSnapshot& snapshot() const { return *snapshot_.load(std::memory_order_acquire); }
  const TenantConfig& config() const { return snapshot().config; }
  // Removed by a reload: no new connection or API call gets it; its sessions
  // are being closed.
  bool removed() const { return removed_.load(std::memory_order_acquire); }

  std::atomic<uint32_t> connections{0};
  auth::SharedTokenBucket publish_bucket;  // tenant-wide pub + POST /v1/publish
  auth::SharedTokenBucket events_bucket;   // tenant-wide events of emit (events_per_sec)
  std::atomic<uint64_t> messages{0};       // acknowledged, not duplicates
  // Error replies to this tenant's clients and API calls, by code (admin page).
  std::array<std::atomic<uint64_t>, kErrorCodeCount> rejections{};
  void reject(ErrorCode c) { rejections[static_cast<int>(c)].fetch_add(1, std::memory_order_relaxed); }

  // Takes a connection slot; false at max_connections.
  bool try_connect() {
    if (connections.fetch_add(1, std::memory_order_relaxed) < config().max_connections) return true;
    connections.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  void disconnect() { connections.fetch_sub(1, std::memory_order_relaxed); }

 private:
  friend class TenantRegistry;
  std::atomic<const TenantSnapshot*> snapshot_;
  std::atomic<bool> removed_{false};
};

// What a reload changed, by tenant id.
struct TenantChanges {
  std::vector<std::string> added, removed, changed;
  std::vector<TenantRuntime*> removed_runtimes;  // their sessions are to be closed
  // The replaced index: free it once every loop has run a task posted after
  // apply() returned (a lookup never spans tasks).
  std::shared_ptr<const void> retired;
};

class TenantRegistry {
 public:
  using Tenants = std::map<std::string, TenantConfig, std::less<>>;
  explicit TenantRegistry(const Tenants& tenants);
  ~TenantRegistry();

  // A tenant that is configured now, or nullptr.
  TenantRuntime* find(std::string_view id) const;
  // The tenant whose current api_key this is, or whose previous one within its
  // rotation overlap at wall time now_ms; nullptr otherwise. Constant time in
  // the keys' bytes.
  TenantRuntime* find_by_api_key(std::string_view key, int64_t now_ms) const;
  // The WebSocket handshake's filter: true when some tenant accepts `origin`
  // (one without allowed_origins accepts any); hello checks the tenant's own list.
  bool origin_allowed(std::string_view origin) const;
  // Every tenant configured now.
  template <typename Fn>
  void for_each(Fn fn) const {
    for (const auto& [id, t] : dir()->by_id) fn(*t);
  }

  // Before apply(): a key of `next` that another tenant still accepts (a
  // previous secret or api_key within its overlap) would let one tenant pass
  // for the other. The error names the key.
  Status check(const Tenants& next, int64_t now_ms) const;
  // Publishes `next` as the configured tenants at wall time now_ms: new
  // snapshots for tenants that changed (rotations remembered per their
  // rotation_overlap_s), rate limits updated, removed ones marked. One thread at
  // a time, not a loop.
  TenantChanges apply(const Tenants& next, int64_t now_ms);

 private:
  // The configured tenants, indexed: immutable once published.
  struct Directory {
    std::map<std::string, TenantRuntime*, std::less<>> by_id;
    struct Key {
      std::string key;
      TenantRuntime* tenant = nullptr;
      int64_t until_ms = 0;  // accepted before this wall time
    };
    std::vector<Key> api_keys;
    bool any_origin = false;
    std::vector<std::string> origins;
  };
  const Directory* dir() const { return dir_.load(std::memory_order_acquire); }
  std::shared_ptr<const Directory> build_directory() const;

  // Every runtime and snapshot ever made (see the header comment).
  std::map<std::string, std::unique_ptr<TenantRuntime>, std::less<>> all_;
  std::vector<std::unique_ptr<TenantSnapshot>> snapshots_;
  std::shared_ptr<const Directory> dir_owner_;
  std::atomic<const Directory*> dir_{nullptr};
};

}  // namespace parley
