// Server frames in MessagePack (PROTOCOL.md "Binary encoding: MessagePack").
// Pure functions appending to a string.
//
// A frame is encoded by converting the JSON text encoder.h wrote for it, so
// the two encodings cannot disagree on ops, fields or values (one encoder of
// frame shapes, not two): objects become maps, arrays arrays, a number without
// fraction or exponent an integer, any other number a float 64, and inside a
// body (the value of a `body` key: msg, state, direct, history entries, events)
// an object whose only key is `$bin`, holding base64, becomes bin. The converter
// is the fan-out's, run once per tick for a batch, not once per member.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace parley::protocol {

// Appends the MessagePack form of a JSON server frame or array of frames
// (or of any JSON value: a body is converted with `$bin` objects as bin when
// `is_body`). False, with `out` left as it was, when `json` is not JSON
// (never for text encoder.h or the decoder produced).
bool append_msgpack_from_json(std::string& out, std::string_view json, bool is_body = false);

// The header of a MessagePack array of n elements (1, 3 or 5 bytes): a batch
// is this followed by its n encoded frames.
void append_msgpack_array_header(std::string& out, uint32_t n);

}  // namespace parley::protocol
