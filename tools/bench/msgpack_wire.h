// MessagePack on the bench's wire (PROTOCOL.md "Binary encoding: MessagePack"),
// written from the page: the bench builds client frames as JSON text and packs
// them before sending; a server frame is unpacked into the JSON text it stands
// for and read by the same FrameReader, so one reader (and one audit) serves
// both encodings. The conversion costs the generator CPU that a client decoding
// MessagePack natively would not pay; the server's figures do not include it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bench::mpk {

// Appends the MessagePack form of a JSON value. False when `json` is not JSON.
bool pack_json(std::string_view json, std::string& out);

// Appends the JSON text of one MessagePack value (a map or an array of maps):
// bin becomes {"$bin":"<base64>"}, as a JSON member would receive it. False
// when `data` is not exactly one MessagePack value.
bool unpack_to_json(const char* data, size_t len, std::string& out);

}  // namespace bench::mpk
