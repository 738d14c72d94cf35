// Decodes one MessagePack client frame (PROTOCOL.md "Binary encoding:
// MessagePack") into the ClientOp decode_client_op gives for the same frame in
// JSON. Pure, no I/O; every input is hostile (tests/fuzz drives it).
//
// How: msgpack-c's parser (a visitor, so nothing is allocated per declared
// element) converts the frame to the JSON text it stands for, by the mapping of
// PROTOCOL.md, and decode_converted_client_op (decoder.h) applies the one set of
// validation rules, judging sizes by the MessagePack bytes that arrived. Bodies
// come out as JSON text, as every body is stored and forwarded: a `bin` inside a
// body becomes {"$bin":"<base64>"}.
//
// Where the mapping is stricter than "not JSON": a frame is one map and nothing
// after it; map keys are str; str is valid UTF-8; floats are finite; `ext` is
// refused everywhere and `bin` outside a body (the frame's `body`, an event's
// `body`); values nest at most kMaxMsgpackDepth deep, a scalar counting as a
// level (the JSON decoder's bound: simdjson's default, counted its way), and
// containers declare no more elements than the frame has bytes. Each is bad_request with a message naming the rule, never echoing data.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "protocol/decoder.h"

namespace parley::protocol {

inline constexpr size_t kMaxMsgpackDepth = 1024;

// Thread-safe. Frames over 4 x max_message_bytes get too_large unread, as in JSON.
std::variant<ClientOp, DecodeFailure> decode_client_op_msgpack(std::string_view frame,
                                                               const DecodeLimits& limits);

// Converts the MessagePack frame to the JSON text it stands for, appended to
// `json`. Returns the bad_request text when the frame breaks the mapping.
std::optional<std::string> msgpack_frame_to_json(std::string_view frame, std::string& json);

// Converts one MessagePack body value (bin allowed anywhere in it) to minified
// JSON text appended to `json`, or returns the bad_request text.
std::optional<std::string> msgpack_body_to_json(std::string_view value, std::string& json);

}  // namespace parley::protocol
