// Where a session asks the game's app server before it accepts a connect, a
// join or a pub (PROTOCOL.md "Hooks"). Declared here, below the code that
// asks; implemented by hooks::HookService, which the server wires in. Nothing
// below src/hooks/ knows about HTTP.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"
#include "tenant/tenant_config.h"

namespace parley::session {

enum class HookKind : uint8_t { kConnect, kJoin, kPub };

// What a hook request carries: what the upstream events carry.
struct HookAsk {
  HookKind kind = HookKind::kJoin;
  const TenantConfig* tenant = nullptr;
  const HookConfig* hook = nullptr;  // the tenant's or the channel's namespace's; url set
  std::string ns;                    // the channel's namespace ("" for connect)
  std::string ch;                    // join, pub
  std::string user;
  uint64_t conn = 0;
  std::optional<uint64_t> since;     // join
  std::string id;                    // pub
  std::string body;                  // pub: minified JSON as the client sent it
};

// The decision, after the hook's fail policy: allowed (with, for a pub, the
// body to store instead when `body` is set) or refused with `error` for the
// client (the app server's code and message, or unavailable / backpressure).
struct HookVerdict {
  bool allow = true;
  std::optional<std::string> body;
  Error error;
};

class HookGate {
 public:
  virtual ~HookGate() = default;
  // On the caller's loop `loop`; never blocks. `done` runs exactly once, on
  // that loop, never inside ask().
  virtual void ask(unsigned loop, HookAsk ask, std::function<void(HookVerdict)> done) = 0;
};

}  // namespace parley::session
