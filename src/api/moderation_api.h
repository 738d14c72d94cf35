// The moderation paths (PROTOCOL.md "Moderation: mute, kick, ban"), for the
// HTTP API (POST /v1/mute, /v1/ban, /v1/kick, GET /v1/moderation; the
// tenant's api_key names the tenant) and the admin page (/admin/api/moderation;
// the body or query names it). Bodies are validated as client frames are:
// anything malformed is bad_request, and nothing changes.
//
// Runs on the HTTP session's loop; answers come on it too.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include "common/status.h"
#include "net/http_session.h"
#include "session/moderation.h"

namespace parley::api {

enum class ModerationAction : uint8_t { kMute, kBan, kKick };

struct ModerationOp {
  ModerationAction action = ModerationAction::kMute;
  std::string tenant;  // the admin's body only; the API's is its key's
  std::string user;
  std::string ch;      // empty: every channel of the tenant (a mute only)
  int64_t for_ms = 0;  // mute and ban; 0: lift
  std::string reason;
};

// The body of POST /v1/<action> (`action` set), or of the admin's POST, which
// names the action ("action") and the tenant ("tenant") in it.
std::variant<ModerationOp, Error> parse_moderation(std::string_view body,
                                                   std::optional<ModerationAction> action);

// Carries `op` out and answers {"until"} (mute), {"until","kicked"} (ban) or
// {"kicked"} (kick), or the error, through `respond` on `loop`. `max_sanctions`:
// the tenant's cap on mutes and bans in force (quota_exceeded past it).
void run_moderation(session::Moderation& m, ModerationOp op, uint32_t max_sanctions, unsigned loop,
                    std::function<void(net::HttpResponse)> respond);

// {"mutes":[...],"bans":[...]}: each {"user","ch"?,"until"} (and "tenant"
// when `with_tenant`), only those of `user` when it is not empty.
std::string sanctions_json(const std::vector<cluster::Sanction>& all, std::string_view user,
                           bool with_tenant);

}  // namespace parley::api
