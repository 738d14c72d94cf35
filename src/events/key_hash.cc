#include "events/key_hash.h"

namespace parley::events {

namespace {
constexpr std::string_view kSpecRecord = R"({"key_hash":"fnv1a_64"})";
constexpr std::string_view kLegacyRecord = R"({"key_hash":"fnv1a_64/parley-0"})";
}  // namespace

std::string_view key_hash_record(KeyHash h) {
  return h == KeyHash::kSpec ? kSpecRecord : kLegacyRecord;
}

std::optional<KeyHash> parse_key_hash_record(std::string_view body) {
  if (body == kSpecRecord) return KeyHash::kSpec;
  if (body == kLegacyRecord) return KeyHash::kLegacy;
  return std::nullopt;
}

}  // namespace parley::events
