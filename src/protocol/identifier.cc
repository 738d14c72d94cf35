#include "protocol/identifier.h"

namespace parley::protocol {

size_t code_points(std::string_view utf8) {
  size_t n = 0;
  for (char c : utf8) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool has_control_chars(std::string_view utf8) {
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto b = static_cast<unsigned char>(utf8[i]);
    if (b < 0x20 || b == 0x7F) return true;
    // C1 controls U+0080-U+009F are encoded C2 80 .. C2 9F.
    if (b == 0xC2 && i + 1 < utf8.size() && static_cast<unsigned char>(utf8[i + 1]) <= 0x9F) {
      return true;
    }
  }
  return false;
}

IdFault id_fault(std::string_view utf8) {
  if (utf8.empty() || code_points(utf8) > kMaxIdChars) return IdFault::kLength;
  if (has_control_chars(utf8)) return IdFault::kControlChars;
  return IdFault::kNone;
}

const std::string& id_fault_text(IdFault f) {
  static const std::string kLength = "must be a string of 1-" + std::to_string(kMaxIdChars) + " chars";
  static const std::string kControl = "must not contain control characters";
  static const std::string kNone;
  return f == IdFault::kLength ? kLength : f == IdFault::kControlChars ? kControl : kNone;
}

}  // namespace parley::protocol
