// Decodes one client frame (a JSON object) into a ClientOp. Pure, no I/O;
// every input is hostile: the fuzz target in tests/fuzz drives this.
#pragma once

#include <string>
#include <string_view>
#include <variant>

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

// Thread-safe: each thread uses its own parser internally.
// Frames over max_message_bytes but within 4x are parsed so the error carries
// the rid (too_large); larger frames must be rejected by the transport first.
std::variant<ClientOp, DecodeFailure> decode_client_op(std::string_view frame,
                                                       const DecodeLimits& limits);

// True when `name` is a valid channel name: 1-128 chars of [A-Za-z0-9_.:@-].
bool is_valid_channel(std::string_view name);
// The namespace of a channel: the part before the first ':', or "default".
std::string_view channel_namespace(std::string_view name);

}  // namespace parley::protocol
