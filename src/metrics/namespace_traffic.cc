#include "metrics/namespace_traffic.h"

#include <charconv>

namespace parley::metrics {

std::string_view wire_form_name(WireForm f) {
  switch (f) {
    case WireForm::kJson: return "json";
    case WireForm::kMsgpack: return "msgpack";
    case WireForm::kJsonDelta: return "json+delta";
    case WireForm::kMsgpackDelta: return "msgpack+delta";
  }
  return "json";
}

NamespaceTraffic* TrafficTable::of(std::string_view tenant, std::string_view ns) {
  std::string name;
  name.reserve(tenant.size() + 1 + ns.size());
  name.append(tenant).append("/").append(ns);
  std::lock_guard lock(mu_);
  auto it = by_ns_.find(name);
  if (it == by_ns_.end()) it = by_ns_.emplace(std::move(name), std::make_unique<NamespaceTraffic>()).first;
  return it->second.get();
}

NamespaceTraffic* TrafficTable::of_channel_key(std::string_view key) {
  size_t len = 0;
  const auto colon = key.find(':');
  if (colon == std::string_view::npos ||
      std::from_chars(key.data(), key.data() + colon, len).ec != std::errc() ||
      key.size() < colon + 1 + len) {
    return of("?", "?");  // not a hub key: counted apart rather than lost
  }
  const std::string_view tenant = key.substr(colon + 1, len);
  const std::string_view channel = key.substr(colon + 1 + len);
  // PROTOCOL.md "Channels": the part before the first ':', else "default".
  const auto ns_end = channel.find(':');
  return of(tenant, ns_end == std::string_view::npos ? "default" : channel.substr(0, ns_end));
}

std::vector<TrafficTable::Row> TrafficTable::rows() const {
  std::vector<Row> out;
  std::lock_guard lock(mu_);
  for (const auto& [ns, t] : by_ns_) {
    for (size_t f = 0; f < kWireForms; ++f) {
      const uint64_t d = t->deliveries[f].load(std::memory_order_relaxed);
      const uint64_t b = t->bytes[f].load(std::memory_order_relaxed);
      const uint64_t w = t->wire[f].load(std::memory_order_relaxed);
      if (d == 0 && b == 0 && w == 0) continue;
      out.push_back({ns, static_cast<WireForm>(f), b, d, w});
    }
  }
  return out;
}

}  // namespace parley::metrics
