#include "events/topic_channel.h"

namespace parley::events {

namespace {
constexpr char kSep = '\x1f';
constexpr size_t kMaxPartitionDigits = 6;

std::string with_suffix(std::string_view topic, std::string_view suffix) {
  std::string ch(topic);
  ch += kSep;
  ch += suffix;
  return ch;
}
}  // namespace

std::string partition_channel(std::string_view topic, uint32_t p) {
  return with_suffix(topic, std::to_string(p));
}
std::string key_hash_channel(std::string_view topic) { return with_suffix(topic, "h"); }
std::string snapshot_channel(std::string_view topic) { return with_suffix(topic, "s"); }
std::string group_log_channel(std::string_view topic, std::string_view group) {
  std::string ch = with_suffix(topic, "g");
  ch += kSep;
  ch += group;
  return ch;
}

std::optional<std::string_view> topic_of_channel(std::string_view channel) {
  const size_t sep = channel.find(kSep);
  if (sep == std::string_view::npos) return std::nullopt;
  return channel.substr(0, sep);
}

std::optional<PartitionChannel> parse_partition_channel(std::string_view channel) {
  const size_t sep = channel.find(kSep);
  if (sep == std::string_view::npos || sep + 1 >= channel.size()) return std::nullopt;
  const std::string_view digits = channel.substr(sep + 1);
  if (digits.size() > kMaxPartitionDigits) return std::nullopt;  // a group's log, or not ours
  uint32_t p = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;  // the key hash, snapshots, a group's log
    p = p * 10 + static_cast<uint32_t>(c - '0');
  }
  return PartitionChannel{channel.substr(0, sep), p};
}

}  // namespace parley::events
