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
  const size_t colon = rest.find(':');
  BoardChannel out;
  out.board = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) out.round = std::string(rest.substr(colon + 1));
  auto it = tenant.leaderboards.find(out.board);
  if (it == tenant.leaderboards.end()) return std::nullopt;
  if (it->second.round.empty() != out.round.empty()) return std::nullopt;
  return out;
}

}  // namespace parley::events
