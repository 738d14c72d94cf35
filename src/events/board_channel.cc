#include "events/board_channel.h"

namespace parley::events {

namespace {
constexpr std::string_view kPrefix = "lb:";
}  // namespace

std::string board_channel(std::string_view board, std::string_view round) {
  std::string ch(kPrefix);
  ch += board;
  if (!round.empty()) {
    ch += ':';
    ch += round;
  }
  return ch;
}

std::optional<BoardChannel> parse_board_channel(std::string_view ch, const TenantConfig& tenant) {
  if (!ch.starts_with(kPrefix)) return std::nullopt;
  const std::string_view rest = ch.substr(kPrefix.size());
  // A configured board named `board`, with a round exactly when it has rounds.
  auto fits = [&tenant](std::string_view board, std::string_view round) {
    auto it = tenant.leaderboards.find(board);
    return it != tenant.leaderboards.end() && it->second.round.empty() == round.empty();
  };
  // Board names may hold ':' too: the first split that names a board wins, so
  // a channel read at the first ':' reads as it always did.
  for (size_t colon = rest.find(':'); colon != std::string_view::npos;
       colon = rest.find(':', colon + 1)) {
    const std::string_view board = rest.substr(0, colon), round = rest.substr(colon + 1);
    if (fits(board, round)) return BoardChannel{std::string(board), std::string(round)};
  }
  if (fits(rest, {})) return BoardChannel{std::string(rest), std::string()};
  return std::nullopt;
}

}  // namespace parley::events
