// The client side of RFC 6455, as pure functions over byte buffers.
//
// Why not Beast's websocket::stream: it delivers one message per async_read, so a
// tick batch of N frames costs N completions, and each connection owns a growing
// buffer. The bench reads whatever the socket holds into one per-worker buffer and
// walks every complete frame in place (see connection.cc), which this small codec
// makes possible. It also keeps Beast's compile time out of the bench.
// Not implemented because no peer negotiates them: extensions (permessage-deflate).
// Subprotocols: only Parley's parley.v1.msgpack (--encoding msgpack).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bench::ws {

enum Opcode : uint8_t { kCont = 0, kText = 1, kBinary = 2, kClose = 8, kPing = 9, kPong = 10 };

// "GET <path> HTTP/1.1" upgrade request; key is the base64 Sec-WebSocket-Key;
// `protocol`, when not empty, is offered in Sec-WebSocket-Protocol.
std::string handshake_request(std::string_view host, std::string_view path,
                              std::string_view key, std::string_view protocol = {});
// The Sec-WebSocket-Protocol the server selected in a response head, or "".
std::string selected_protocol(std::string_view head);
// The Sec-WebSocket-Accept value a server must answer to `key`.
std::string accept_for(std::string_view key);

// Checks a complete response head (up to and including the blank line): status 101
// and the right accept value. Returns an empty string when fine, else the reason.
std::string check_handshake_response(std::string_view head, std::string_view key);

// Appends one masked client frame (FIN set) carrying payload.
void append_frame(std::string& out, Opcode op, std::string_view payload, uint32_t mask);

struct FrameHeader {
  bool fin = false;
  Opcode op = kText;
  bool masked = false;
  uint32_t mask = 0;
  uint64_t payload_len = 0;
  size_t header_len = 0;  // bytes before the payload
};

// Decodes a header at data[0..len). Returns false when more bytes are needed.
bool parse_header(const char* data, size_t len, FrameHeader& h);

// XORs a payload with a mask in place (server frames are unmasked; this is for
// robustness and for the test server).
void apply_mask(char* data, size_t len, uint32_t mask);

}  // namespace bench::ws
