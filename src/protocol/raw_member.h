// Finds the raw text of one member value of a top-level JSON object.
//
// simdjson's DOM validates a frame but cannot say where a value sits in it, and
// re-serialising from the DOM would rewrite the client's numbers and string
// escapes (1.50 -> 1.5). A body must reach subscribers and the upstream as the
// client wrote it, minus whitespace, so the decoder locates its original bytes
// with this scanner and minifies those. Internal to parley_protocol.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace parley::protocol {

// The raw text of the value of the `index`-th member (0-based, document order,
// as simdjson's DOM iterates) of the object `json`. `json` must already be
// validated JSON; nullopt when it is not an object or has too few members,
// never a read outside `json`.
std::optional<std::string_view> raw_member_value(std::string_view json, size_t index);

// The raw text of every element of the array `json`, in order, in one pass
// (an emit holds up to 1000 events), under the same rules as raw_member_value.
// False when `json` is not an array.
bool raw_array_elements(std::string_view json, std::vector<std::string_view>& out);

}  // namespace parley::protocol
