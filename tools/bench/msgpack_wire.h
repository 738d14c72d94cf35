// MessagePack on the bench's wire (PROTOCOL.md "Binary encoding: MessagePack"),
// written from the page: the bench builds client frames as JSON text and packs
// them before sending (a client sends a few frames a second; it reads many:
// server frames are read natively, msgpack_frame.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bench::mpk {

// Appends the MessagePack form of a JSON value. False when `json` is not JSON.
bool pack_json(std::string_view json, std::string& out);

}  // namespace bench::mpk
