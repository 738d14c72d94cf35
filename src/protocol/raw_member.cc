#include "protocol/raw_member.h"

namespace parley::protocol {

namespace {

// A cursor over validated JSON. Every step is bounds-checked anyway: the input
// is hostile, and a validator bug must not become an out-of-bounds read.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  size_t pos() const { return i_; }
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  bool eat(char c) {
    if (!at(c)) return false;
    ++i_;
    return true;
  }

  void skip_ws() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }

  bool skip_string() {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
      } else {
        ++i_;
        if (c == '"') return true;
      }
    }
    return false;
  }

  // Iterative so that nesting depth costs no stack.
  bool skip_value() {
    if (at('"')) return skip_string();
    if (at('{') || at('[')) {
      size_t depth = 0;
      while (i_ < s_.size()) {
        const char c = s_[i_];
        if (c == '"') {
          if (!skip_string()) return false;
          continue;
        }
        ++i_;
        if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) return true;
        }
      }
      return false;
    }
    const size_t start = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        break;
      }
      ++i_;
    }
    return i_ > start;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<std::string_view> raw_member_value(std::string_view json, size_t index) {
  Scanner sc(json);
  sc.skip_ws();
  if (!sc.eat('{')) return std::nullopt;
  for (size_t member = 0;; ++member) {
    sc.skip_ws();
    if (!sc.skip_string()) return std::nullopt;
    sc.skip_ws();
    if (!sc.eat(':')) return std::nullopt;
    sc.skip_ws();
    const size_t start = sc.pos();
    if (!sc.skip_value()) return std::nullopt;
    if (member == index) return json.substr(start, sc.pos() - start);
    sc.skip_ws();
    if (!sc.eat(',')) return std::nullopt;
  }
}

bool raw_array_elements(std::string_view json, std::vector<std::string_view>& out) {
  out.clear();
  Scanner sc(json);
  sc.skip_ws();
  if (!sc.eat('[')) return false;
  sc.skip_ws();
  if (sc.eat(']')) return true;
  for (;;) {
    sc.skip_ws();
    const size_t start = sc.pos();
    if (!sc.skip_value()) return false;
    out.push_back(json.substr(start, sc.pos() - start));
    sc.skip_ws();
    if (sc.eat(']')) return true;
    if (!sc.eat(',')) return false;
  }
}

}  // namespace parley::protocol
