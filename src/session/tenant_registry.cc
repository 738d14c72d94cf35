#include "session/tenant_registry.h"

#include <openssl/crypto.h>

namespace parley::session {

TenantRegistry::TenantRegistry(
    const std::map<std::string, TenantConfig, std::less<>>& tenants) {
  for (const auto& [id, cfg] : tenants) {
    auto rt = std::make_unique<TenantRuntime>(cfg);
    by_api_key_[cfg.api_key] = rt.get();
    by_id_[id] = std::move(rt);
  }
}

TenantRuntime* TenantRegistry::find(std::string_view id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.get();
}

TenantRuntime* TenantRegistry::find_by_api_key(std::string_view key) const {
  // Compared in constant time against every key, so that response timing
  // does not reveal how much of a guessed key matched.
  TenantRuntime* found = nullptr;
  for (const auto& [k, t] : by_api_key_) {
    if (k.size() == key.size() && CRYPTO_memcmp(k.data(), key.data(), k.size()) == 0) found = t;
  }
  return found;
}

}  // namespace parley::session
