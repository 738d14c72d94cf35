// Where the events a namespace forwards to its app server go (PROTOCOL.md
// "Upstream forwarding"). Declared here, below the sessions and the hub's
// shards that produce events; implemented by upstream::Forwarder, which the
// server wires in. Nothing below src/upstream/ knows about HTTP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tenant/tenant_config.h"

namespace parley::hub {

enum class UpstreamEventType : uint8_t { kJoin, kLeave, kMsg, kState, kUp, kEdit, kDelete };

struct UpstreamEvent {
  UpstreamEventType type = UpstreamEventType::kJoin;
  const TenantConfig* tenant = nullptr;
  const NamespaceConfig* ns = nullptr;  // the channel's namespace, for its upstream
  std::string ch;
  std::string user;
  uint64_t conn = 0;   // the connection id; on the wire as connection_name(conn)
  int64_t ts_ms = 0;   // wall clock, ms since the epoch
  uint64_t seq = 0;    // msg, edit, delete: the entry's own seq
  std::string id;      // msg
  std::string key;     // state
  std::string body;    // msg, state, up, edit: minified JSON as the client sent it
  uint64_t target = 0; // edit, delete: the seq of the message changed
};

// A connection's public name: the `conn` of welcome and of upstream events.
inline std::string connection_name(uint64_t conn) { return fmt::format("c{:x}", conn); }
// The id back from such a name; nullopt when `name` is not one.
inline std::optional<uint64_t> parse_connection_name(std::string_view name) {
  if (name.size() < 2 || name.size() > 17 || name[0] != 'c') return std::nullopt;
  uint64_t v = 0;
  for (char c : name.substr(1)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  if (v == 0) return std::nullopt;
  return v;
}

// Any loop. Never blocks and never fails visibly: what cannot be queued is
// dropped and counted by the implementation. Events of one channel are
// forwarded in the order they reach forward() on the loop of the channel's
// hub shard (the implementation posts them there).
class UpstreamSink {
 public:
  virtual ~UpstreamSink() = default;
  virtual void forward(UpstreamEvent ev) = 0;
};

}  // namespace parley::hub
