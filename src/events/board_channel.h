// The channel a leaderboard pushes to (PROTOCOL.md "Event streams and
// leaderboards"): lb:NAME for a board without rounds, lb:NAME:ROUND for one
// round of a board with rounds. Joining it is how a connection watches a board,
// so the session asks here whether a channel it joins is one.
//
// Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tenant/tenant_config.h"

namespace parley::events {

struct BoardChannel {
  std::string board;
  std::string round;  // empty: the board has no rounds
};

// The channel of `board` (and its round; empty: none).
std::string board_channel(std::string_view board, std::string_view round);

// The board (and round) channel `ch` names, when it names one of `tenant`'s
// configured boards: a board with rounds needs a round, one without takes none.
// Board names may hold ':' (config.cc): the name splits at the first ':' after
// "lb:" that gives a configured board, else it is a board without rounds.
std::optional<BoardChannel> parse_board_channel(std::string_view ch, const TenantConfig& tenant);

}  // namespace parley::events
