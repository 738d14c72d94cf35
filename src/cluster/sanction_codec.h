// How sanctions and kicks travel between nodes (cluster/sanctions.h): as a
// field and value of the store's sanctions hash, and as notes on the broker.
// Every part is length-prefixed ("<len>:<bytes>"), so no byte of a tenant,
// channel, user or reason can be taken for a separator.
//
// Pure functions; any thread. A decode of anything malformed is nullopt: what
// comes from the store or another node is never trusted.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cluster/sanctions.h"

namespace parley::cluster {

// The hash field naming (kind, tenant, ch, user): "m" or "b", then the parts.
std::string sanction_field(const Sanction& s);
// Field and value (until_ms in decimal) back into a Sanction.
std::optional<Sanction> parse_sanction(std::string_view field, std::string_view value);

// Notes: "s" or "k", the sending node's id, then the parts.
std::string sanction_note(std::string_view node, const Sanction& s);
std::string kick_note(std::string_view node, const Kick& k);
struct SanctionNote {
  std::string node;
  bool is_kick = false;
  Sanction sanction;  // !is_kick
  Kick kick;          // is_kick
};
std::optional<SanctionNote> parse_sanction_note(std::string_view note);

}  // namespace parley::cluster
