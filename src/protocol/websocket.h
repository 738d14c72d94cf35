// The server side of RFC 6455 as pure functions over bytes: frame headers,
// masking, close payloads, incremental UTF-8 checks, the handshake's accept key.
//
// Why not Beast's websocket::stream for the connections: it costs ~4 KiB per
// idle connection (a 2.5 KiB stream state with its own 1.5 KiB read-ahead, plus
// the message buffer each pending async_read prepares), it completes one message
// per read, and each write is a chain of composed operations. Parley reads
// whatever the socket holds into one per-loop buffer, walks every complete frame
// in place, and writes queued frames with one gathered send (net/ws_connection.cc).
// Beast still parses the HTTP upgrade request and writes the HTTP answers.
//
// Not implemented because PROTOCOL.md does not negotiate them: extensions
// (permessage-deflate). Subprotocols name the encoding (PROTOCOL.md "Binary
// encoding: MessagePack").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace parley::protocol::ws {

enum Opcode : uint8_t { kCont = 0, kText = 1, kBinary = 2, kClose = 8, kPing = 9, kPong = 10 };

// The longest header of a server frame (2 + 8 bytes: unmasked, 64-bit length).
inline constexpr size_t kMaxServerHeader = 10;
// Control frames carry at most this many payload bytes (RFC 6455 5.5).
inline constexpr size_t kMaxControlPayload = 125;

// The subprotocols of PROTOCOL.md: JSON in text frames, MessagePack in binary ones.
inline constexpr std::string_view kSubprotocolJson = "parley.v1.json";
inline constexpr std::string_view kSubprotocolMsgpack = "parley.v1.msgpack";

// The first subprotocol of one Sec-WebSocket-Protocol header value (a
// comma-separated list in the client's order of preference, RFC 6455 4.1)
// that Parley speaks, or "" when it names none (the answer then carries no
// Sec-WebSocket-Protocol, and the connection speaks JSON).
std::string_view select_subprotocol(std::string_view offered);

struct FrameHeader {
  bool fin = false;
  uint8_t rsv = 0;  // the three reserved bits, 0 unless an extension says otherwise
  uint8_t opcode = 0;
  bool masked = false;
  uint8_t mask[4] = {};
  uint64_t payload_len = 0;
  size_t header_len = 0;  // bytes before the payload
};

enum class HeaderStatus { kNeedMore, kOk, kInvalid };

// Decodes the header at data[0..len). kInvalid is a 64-bit length with its top
// bit set (5.2); every other rule is the caller's (check_client_header).
HeaderStatus parse_header(const uint8_t* data, size_t len, FrameHeader& h);

// The RFC 6455 close code a client frame's header earns, or 0 when it is
// acceptable: reserved bits or opcodes, an unmasked frame, a fragmented or
// long control frame (1002); a data frame longer than max_message (1009).
int check_client_header(const FrameHeader& h, uint64_t max_message);

// XORs payload bytes in place; `offset` is the payload position of data[0].
void unmask(uint8_t* data, size_t len, const uint8_t mask[4], size_t offset = 0);

// Writes the header of an unmasked final server frame; returns its length.
size_t encode_server_header(uint8_t opcode, uint64_t payload_len, uint8_t* out);

// A close frame's payload: the code (big-endian) and reason, cut to fit 125 bytes.
std::string close_payload(int code, std::string_view reason);

// Checks a received close payload (5.5.1, 7.4). Returns 0 when valid and sets
// `code` (1005 when the payload is empty), else the close code to fail with:
// 1002 for a 1-byte payload or a code that may not be sent, 1007 for a reason
// that is not UTF-8.
int check_close_payload(std::string_view payload, int& code);

// Validates UTF-8 across the fragments of one text message, failing as soon as
// a byte sequence cannot be completed to valid UTF-8 (Autobahn 6.x "fail fast").
class Utf8Checker {
 public:
  // Returns false as soon as the bytes seen so far cannot be valid UTF-8.
  bool feed(std::string_view bytes);
  // True when the message may end here (no code point left incomplete).
  bool complete() const { return need_ == 0; }
  void reset() { *this = Utf8Checker(); }

 private:
  int need_ = 0;       // continuation bytes still expected
  uint8_t lo_ = 0x80;  // bounds of the next continuation byte (overlongs, surrogates)
  uint8_t hi_ = 0xBF;
};

// The read side of a server's WebSocket connection, without the socket: fed
// the bytes each read returns, it walks every complete frame in place and
// tells its Sink what the connection must do. net::WsConnection runs one per
// connection; the fuzz target runs the same code. Only the start of a frame
// cut by a read is copied (partial_), and a fragmented message (message_).
class FrameReader {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    // A complete message (text is valid UTF-8), at most max_message bytes.
    virtual void on_message(std::string_view payload, bool binary) = 0;
    virtual void on_ping(std::string_view payload) = 0;
    // A valid close frame (1005 when it had no payload); nothing more is read.
    virtual void on_close(int code) = 0;
    // A protocol error to fail the connection with (1002, 1007, 1009);
    // nothing more is read.
    virtual void on_fail(int code, const char* why) = 0;
  };

  explicit FrameReader(uint64_t max_message) : max_message_(max_message) {}

  // Handles data[0..len), unmasking payloads in place.
  void feed(uint8_t* data, size_t len, Sink& sink);
  // The message limit from the next frame header on (a connection's limit
  // rises once it has authenticated).
  void set_max_message(uint64_t max_message) { max_message_ = max_message; }
  // Reads no further (as after a failure) and frees what it holds.
  void abandon() {
    failed_ = true;
    std::string().swap(partial_);
    std::string().swap(message_);
  }
  // Bytes held between feeds: a frame cut by a read and a fragmented message.
  size_t held_bytes() const { return partial_.capacity() + message_.capacity(); }
  // After the peer's close or a failure every later byte is ignored.
  bool done() const { return failed_ || closed_; }
  bool failed() const { return failed_; }
  // Bytes kept for the next read (the start of a frame), and the message
  // being assembled: for tests.
  const std::string& partial() const { return partial_; }
  bool in_message() const { return in_message_; }
  const std::string& message() const { return message_; }

 private:
  // Handles the complete frames of data[0..len); returns the bytes consumed.
  size_t consume(uint8_t* data, size_t len, Sink& sink);
  void on_frame(const FrameHeader& h, std::string_view payload, Sink& sink);
  void fail(int code, const char* why, Sink& sink);

  uint64_t max_message_;
  std::string partial_;
  std::string message_;
  Utf8Checker utf8_;
  uint8_t message_opcode_ = 0;
  bool in_message_ = false;
  bool failed_ = false;
  bool closed_ = false;
};

// Sec-WebSocket-Accept for a Sec-WebSocket-Key (4.2.2: base64 of the SHA-1 of
// the key and the RFC's GUID).
std::string accept_key(std::string_view key);

// RFC 6455 4.2.1: the key is the base64 of 16 bytes, i.e. 22 characters and "==".
bool valid_client_key(std::string_view key);

}  // namespace parley::protocol::ws
