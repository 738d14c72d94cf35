#include "server_frame.h"

#include <charconv>

namespace bench {

Op op_from(std::string_view s) {
  // Most frequent first: this runs once per received message.
  if (s == "msg") return Op::kMsg;
  if (s == "state") return Op::kState;
  if (s == "sd") return Op::kSd;
  if (s == "ack") return Op::kAck;
  if (s == "error") return Op::kError;
  if (s == "presence") return Op::kPresence;
  if (s == "joined") return Op::kJoined;
  if (s == "left") return Op::kLeft;
  if (s == "welcome") return Op::kWelcome;
  if (s == "pong") return Op::kPong;
  if (s == "history") return Op::kHistory;
  if (s == "bye") return Op::kBye;
  if (s == "direct") return Op::kDirect;
  return Op::kOther;
}

int64_t body_t(std::string_view body) {
  const size_t at = body.find(R"("t":)");
  if (at == std::string_view::npos) return 0;
  int64_t t = 0;
  std::from_chars(body.data() + at + 4, body.data() + body.size(), t);
  return t;
}

bool parse_id(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  out = v;
  return true;
}

}  // namespace bench
