#include "tenant/tenant_registry.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <limits>

namespace parley {

namespace {
constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

bool same_bytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}
}  // namespace

TenantRegistry::TenantRegistry(const Tenants& tenants) {
  for (const auto& [id, cfg] : tenants) {
    auto snap = std::make_unique<TenantSnapshot>();
    snap->config = cfg;
    all_.emplace(id, std::make_unique<TenantRuntime>(snap.get()));
    snapshots_.push_back(std::move(snap));
  }
  dir_owner_ = build_directory();
  dir_.store(dir_owner_.get(), std::memory_order_release);
}

TenantRegistry::~TenantRegistry() = default;

std::shared_ptr<const TenantRegistry::Directory> TenantRegistry::build_directory() const {
  auto d = std::make_shared<Directory>();
  for (const auto& [id, rt] : all_) {
    if (rt->removed()) continue;
    d->by_id.emplace(id, rt.get());
    const TenantSnapshot& s = rt->snapshot();
    d->api_keys.push_back({s.config.api_key, rt.get(), kForever});
    if (!s.previous_api_key.empty()) {
      d->api_keys.push_back({s.previous_api_key, rt.get(), s.previous_api_key_until_ms});
    }
    if (s.config.allowed_origins.empty()) d->any_origin = true;
    d->origins.insert(d->origins.end(), s.config.allowed_origins.begin(),
                      s.config.allowed_origins.end());
  }
  return d;
}

TenantRuntime* TenantRegistry::find(std::string_view id) const {
  const Directory* d = dir();
  auto it = d->by_id.find(id);
  return it == d->by_id.end() ? nullptr : it->second;
}

TenantRuntime* TenantRegistry::find_by_api_key(std::string_view key, int64_t now_ms) const {
  // Compared in constant time against every key, so that response timing
  // does not reveal how much of a guessed key matched.
  TenantRuntime* found = nullptr;
  for (const auto& k : dir()->api_keys) {
    if (same_bytes(k.key, key) && now_ms < k.until_ms) found = k.tenant;
  }
  return found;
}

bool TenantRegistry::origin_allowed(std::string_view origin) const {
  const Directory* d = dir();
  return d->any_origin || std::find(d->origins.begin(), d->origins.end(), origin) != d->origins.end();
}

Status TenantRegistry::check(const Tenants& next, int64_t now_ms) const {
  for (const auto& [id, rt] : dir()->by_id) {
    const TenantSnapshot& s = rt->snapshot();
    for (const auto& [next_id, cfg] : next) {
      if (next_id == id) continue;
      if (!s.previous_secret.empty() && now_ms < s.previous_secret_until_ms &&
          s.previous_secret == cfg.secret) {
        return Error{ErrorCode::kBadRequest, "tenants." + next_id +
                                                 ".secret is tenants." + id +
                                                 "'s previous secret, still accepted"};
      }
      if (!s.previous_api_key.empty() && now_ms < s.previous_api_key_until_ms &&
          s.previous_api_key == cfg.api_key) {
        return Error{ErrorCode::kBadRequest, "tenants." + next_id +
                                                 ".api_key is tenants." + id +
                                                 "'s previous api_key, still accepted"};
      }
    }
  }
  return Status::ok();
}

TenantChanges TenantRegistry::apply(const Tenants& next, int64_t now_ms) {
  TenantChanges out;
  for (const auto& [id, cfg] : next) {
    auto it = all_.find(id);
    if (it == all_.end() || it->second->removed()) {
      // New, or added back: no rotation carries over from a removed tenant.
      auto snap = std::make_unique<TenantSnapshot>();
      snap->config = cfg;
      if (it == all_.end()) {
        all_.emplace(id, std::make_unique<TenantRuntime>(snap.get()));
      } else {
        it->second->snapshot_.store(snap.get(), std::memory_order_release);
        it->second->publish_bucket.set_rate(cfg.publish_per_sec);
        it->second->events_bucket.set_rate(cfg.events_per_sec);
        it->second->removed_.store(false, std::memory_order_release);
      }
      snapshots_.push_back(std::move(snap));
      out.added.push_back(id);
      continue;
    }
    TenantRuntime& rt = *it->second;
    const TenantSnapshot& old = rt.snapshot();
    if (old.config == cfg) continue;  // a rotation in progress keeps its deadline
    auto snap = std::make_unique<TenantSnapshot>();
    snap->config = cfg;
    const int64_t until = now_ms + int64_t{cfg.rotation_overlap_s} * 1000;
    if (old.config.secret != cfg.secret) {
      if (cfg.rotation_overlap_s > 0) {
        snap->previous_secret = old.config.secret;
        snap->previous_secret_until_ms = until;
      }
    } else if (now_ms < old.previous_secret_until_ms) {
      snap->previous_secret = old.previous_secret;
      snap->previous_secret_until_ms = old.previous_secret_until_ms;
    }
    if (old.config.api_key != cfg.api_key) {
      if (cfg.rotation_overlap_s > 0) {
        snap->previous_api_key = old.config.api_key;
        snap->previous_api_key_until_ms = until;
      }
    } else if (now_ms < old.previous_api_key_until_ms) {
      snap->previous_api_key = old.previous_api_key;
      snap->previous_api_key_until_ms = old.previous_api_key_until_ms;
    }
    rt.snapshot_.store(snap.get(), std::memory_order_release);
    if (old.config.publish_per_sec != cfg.publish_per_sec) rt.publish_bucket.set_rate(cfg.publish_per_sec);
    if (old.config.events_per_sec != cfg.events_per_sec) rt.events_bucket.set_rate(cfg.events_per_sec);
    snapshots_.push_back(std::move(snap));
    out.changed.push_back(id);
  }
  for (const auto& [id, rt] : all_) {
    if (rt->removed() || next.contains(id)) continue;
    rt->removed_.store(true, std::memory_order_release);
    out.removed.push_back(id);
    out.removed_runtimes.push_back(rt.get());
  }
  auto fresh = build_directory();
  dir_.store(fresh.get(), std::memory_order_release);
  out.retired = std::move(dir_owner_);
  dir_owner_ = std::move(fresh);
  return out;
}

}  // namespace parley
