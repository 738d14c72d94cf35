// The character rules of PROTOCOL.md's identifiers: user ids (a token's `sub`,
// the `user` of POST /v1/send) and client-chosen ids (`pub` id, `state` key,
// an event's id). Pure functions over text that is already valid UTF-8.
//
// PROTOCOL.md says "1-64 chars"; Parley counts Unicode code points and refuses
// control characters (Unicode category Cc: U+0000-U+001F, U+007F-U+009F).
// Those ids end up in store keys, logs and other clients' frames, where a NUL
// or a newline is at best confusing and at worst a separator someone else
// relies on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parley::protocol {

inline constexpr size_t kMaxIdChars = 64;

// The user id the HTTP API (and a game server saying hello with an api_key)
// acts as: `"from":"server"` in PROTOCOL.md. No token may claim it, or a
// player would share the API's dedupe space and pass for the game server.
inline constexpr std::string_view kServerUser = "server";

// Code points of valid UTF-8 text (the bytes that do not continue one).
size_t code_points(std::string_view utf8);
// True when `utf8` holds a control character (category Cc).
bool has_control_chars(std::string_view utf8);
// The one identifier rule: 1-kMaxIdChars code points and no control character.
// Every identifier is checked with id_fault (the decoder's ids, a token's sub).
enum class IdFault { kNone, kLength, kControlChars };
IdFault id_fault(std::string_view utf8);
inline bool is_valid_id(std::string_view utf8) { return id_fault(utf8) == IdFault::kNone; }
// What is wrong, to follow the field's name: "must be a string of 1-64 chars",
// "must not contain control characters".
const std::string& id_fault_text(IdFault f);

}  // namespace parley::protocol
