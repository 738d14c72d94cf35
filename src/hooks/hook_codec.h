// The JSON of a hook's request and the parsing of its answer (PROTOCOL.md
// "Hooks"). Pure functions, no I/O: the answer comes from outside, so every
// malformed one is an error value, never an assertion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "session/hook_gate.h"

namespace parley::hooks {

// "connect", "join" or "pub".
std::string_view hook_name(session::HookKind kind);

// The request body: {"hook","tenant","ns"?,"ch"?,"user","conn","ts","since"?,"id"?,"body"?}.
std::string encode_hook_request(const session::HookAsk& ask, int64_t ts_ms);

// What the app server decided, from a 2xx answer's body. An error (its msg
// says what was wrong, for the server's log and metrics) when the body is not
// a JSON object with a boolean `allow`, a field has the wrong type, a deny's
// `code` is not one a client may be given, its `msg` is over kMaxDenyMsgBytes,
// or a modified body is over `max_body_bytes` (minified) or given to a hook
// other than pub.
inline constexpr size_t kMaxDenyMsgBytes = 256;
Result<session::HookVerdict> parse_hook_answer(std::string_view text, session::HookKind kind,
                                               size_t max_body_bytes);

}  // namespace parley::hooks
