#include "cluster/sanction_codec.h"

#include <charconv>

namespace parley::cluster {

namespace {

// Longest part accepted back: ids are far shorter, a reason at most 256 bytes.
constexpr size_t kMaxPart = 4096;

void put_part(std::string& out, std::string_view part) {
  out += std::to_string(part.size());
  out += ':';
  out += part;
}

bool take_part(std::string_view& s, std::string& out) {
  size_t len = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), len);
  if (ec != std::errc() || p == s.data() || p == s.data() + s.size() || *p != ':') return false;
  const size_t at = static_cast<size_t>(p - s.data()) + 1;
  if (len > kMaxPart || len > s.size() - at) return false;
  out.assign(s.substr(at, len));
  s.remove_prefix(at + len);
  return true;
}

std::optional<int64_t> parse_ms(std::string_view v) {
  int64_t ms = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty() || ms < 0) return std::nullopt;
  return ms;
}

void put_target(std::string& out, const Sanction& s) {
  out += s.kind == SanctionKind::kMute ? 'm' : 'b';
  put_part(out, s.tenant);
  put_part(out, s.ch);
  put_part(out, s.user);
}

bool take_target(std::string_view& s, Sanction& out) {
  if (s.empty() || (s[0] != 'm' && s[0] != 'b')) return false;
  out.kind = s[0] == 'm' ? SanctionKind::kMute : SanctionKind::kBan;
  s.remove_prefix(1);
  return take_part(s, out.tenant) && take_part(s, out.ch) && take_part(s, out.user) &&
         !out.tenant.empty() && !out.user.empty();
}

}  // namespace

std::string sanction_field(const Sanction& s) {
  std::string out;
  put_target(out, s);
  return out;
}

std::optional<Sanction> parse_sanction(std::string_view field, std::string_view value) {
  Sanction s;
  if (!take_target(field, s) || !field.empty()) return std::nullopt;
  auto ms = parse_ms(value);
  if (!ms) return std::nullopt;
  s.until_ms = *ms;
  return s;
}

std::string sanction_note(std::string_view node, const Sanction& s) {
  std::string out = "s";
  put_part(out, node);
  put_target(out, s);
  put_part(out, std::to_string(s.until_ms));
  return out;
}

std::string kick_note(std::string_view node, const Kick& k) {
  std::string out = "k";
  put_part(out, node);
  put_part(out, k.tenant);
  put_part(out, k.ch);
  put_part(out, k.user);
  put_part(out, k.reason);
  return out;
}

std::optional<SanctionNote> parse_sanction_note(std::string_view note) {
  if (note.empty() || (note[0] != 's' && note[0] != 'k')) return std::nullopt;
  SanctionNote n;
  n.is_kick = note[0] == 'k';
  note.remove_prefix(1);
  if (!take_part(note, n.node) || n.node.empty()) return std::nullopt;
  if (n.is_kick) {
    Kick& k = n.kick;
    if (!take_part(note, k.tenant) || !take_part(note, k.ch) || !take_part(note, k.user) ||
        !take_part(note, k.reason) || !note.empty() || k.tenant.empty() || k.ch.empty() ||
        k.user.empty()) {
      return std::nullopt;
    }
    return n;
  }
  std::string until;
  if (!take_target(note, n.sanction) || !take_part(note, until) || !note.empty()) return std::nullopt;
  auto ms = parse_ms(until);
  if (!ms) return std::nullopt;
  n.sanction.until_ms = *ms;
  return n;
}

}  // namespace parley::cluster
