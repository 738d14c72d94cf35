// Decodes one client frame (a JSON object) into a ClientOp. Pure, no I/O;
// every input is hostile: the fuzz target in tests/fuzz drives this.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "protocol/client_op.h"

namespace parley::protocol {

struct DecodeLimits {
  size_t max_message_bytes = 64 * 1024;  // body and frame limit (too_large)
};

// A decode failure: the error to answer with, and the rid when one could be read.
struct DecodeFailure {
  Error error;
  std::string rid;  // as in ClientOp::rid
};

// PROTOCOL.md: a frame over 4x max_message_bytes closes the connection (1009)
// without an answer. Transports check this before reading such a frame whole
// (LengthPrefixedReader takes it as its cap); the decoder never sees one.
inline constexpr size_t kHardFrameLimitFactor = 4;
inline size_t hard_frame_limit(const DecodeLimits& limits) {
  return limits.max_message_bytes * kHardFrameLimitFactor;
}

// Thread-safe: each thread uses its own parser internally.
// Frames over max_message_bytes but within 4x are parsed so the error carries
// the rid (too_large); larger frames must be rejected by the transport first
// (if one slips through, it gets too_large without rid and is never parsed).
//
// Choices where PROTOCOL.md is silent:
// - A known field given twice is bad_request: which copy wins is otherwise
//   up to each reader, and ambiguity in hostile input is a smuggling vector.
// - Lengths of `id`, `key` and a string `rid` (1-64 / 0-64 chars) count
//   Unicode code points, not bytes.
// - Fields an op does not use are ignored, as unknown fields are.
// - Numbers must fit simdjson's range (int64, uint64 or a finite double),
//   anywhere in the frame, body included: others make the frame "not JSON".
// - `body` keeps the client's exact text minus insignificant whitespace.
// Error messages name the offending field but never echo token or body text.
std::variant<ClientOp, DecodeFailure> decode_client_op(std::string_view frame,
                                                       const DecodeLimits& limits);

// The sizes of a frame that arrived in another encoding (MessagePack,
// msgpack_decoder.h) and was converted to JSON text: PROTOCOL.md judges a
// frame and its bodies by the bytes that arrived, not by their JSON text.
struct ArrivedSizes {
  static constexpr size_t kUnknown = static_cast<size_t>(-1);
  size_t frame = 0;
  size_t body = kUnknown;             // the frame's `body`
  std::vector<size_t> event_bodies;   // each `events[i].body`, in order
};
// decode_client_op's rules over `json`, the converted frame, with the size
// verdicts taken from `arrived` (kUnknown: the JSON text's own size).
std::variant<ClientOp, DecodeFailure> decode_converted_client_op(std::string_view json,
                                                                 const DecodeLimits& limits,
                                                                 const ArrivedSizes& arrived);

// The JSON body of an HTTP API request that carries a message, validated by
// the rules a client frame follows (one validation for both paths): known
// fields given twice are bad_request, `id` and `user` are 1-64 chars without
// control characters, `body` is kept as written (minified), and a request
// over max_message_bytes, or a body over it, is too_large.
enum class ApiPostKind {
  kPublish,  // POST /v1/publish: ch, body, optional id ("" when absent: not deduplicated)
  kSend,     // POST /v1/send: user or conn (exactly one), body
  kEdit,     // POST /v1/edit: ch, target, body
  kDelete,   // POST /v1/delete: ch, target
};
struct ApiPost {
  std::string ch;
  uint64_t target = 0;  // edit / delete
  std::string id;
  std::string user;
  std::string conn;  // a connection's id as welcome gave it ("c1f")
  std::string body;
};
std::variant<ApiPost, Error> decode_api_post(std::string_view json, ApiPostKind kind,
                                             const DecodeLimits& limits);

// A batched body (protocol-notes.md "HTTP API"): a JSON array of 1-kMaxApiBatch
// request objects, each decoded exactly as decode_api_post decodes a single body
// (each within max_message_bytes). One invalid element fails the whole batch, and
// the error names it ("[3]: missing body"); the array as a whole is bounded by the
// HTTP body limit (4 x max_message_bytes).
inline constexpr size_t kMaxApiBatch = 1000;
std::variant<std::vector<ApiPost>, Error> decode_api_post_batch(std::string_view json,
                                                                ApiPostKind kind,
                                                                const DecodeLimits& limits);
// True when an API body is a batch: its first non-whitespace byte is '['.
bool is_api_batch(std::string_view json);

// True when `name` is a valid channel name: 1-128 chars of [A-Za-z0-9_.:@-].
bool is_valid_channel(std::string_view name);
// The namespace of a channel: the part before the first ':', or "default".
std::string_view channel_namespace(std::string_view name);

}  // namespace parley::protocol
