// A WebSocket client made by hand over a plain TCP socket, for RFC 6455
// conformance tests: it writes the HTTP upgrade itself, builds every frame
// byte by byte (so a test can set reserved bits, bad opcodes, wrong lengths or
// no mask) and parses the server's frames without validating them, so a test
// can assert what the server actually sent.
//
// Single-threaded: one test thread drives it; reads wait with poll() and a
// timeout, never with sleeps.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace parley::testing {

using namespace std::chrono_literals;

namespace ws_op {
inline constexpr uint8_t kContinuation = 0x0;
inline constexpr uint8_t kText = 0x1;
inline constexpr uint8_t kBinary = 0x2;
inline constexpr uint8_t kClose = 0x8;
inline constexpr uint8_t kPing = 0x9;
inline constexpr uint8_t kPong = 0xA;
}  // namespace ws_op

// The RSV bits of the first header byte.
inline constexpr uint8_t kRsv1 = 0x40;
inline constexpr uint8_t kRsv2 = 0x20;
inline constexpr uint8_t kRsv3 = 0x10;

// How a frame is put on the wire. Defaults make a valid final masked frame.
struct FrameSpec {
  uint8_t opcode = ws_op::kText;
  std::string payload;
  bool fin = true;
  uint8_t rsv = 0;       // any of kRsv1 | kRsv2 | kRsv3
  bool masked = true;    // RFC 6455 5.3: a client MUST mask every frame
};

// Encodes one frame with the minimal length encoding (7, 16 or 64 bits).
std::string encode_frame(const FrameSpec& spec);
// A close payload: 2-byte code, then the reason.
std::string close_payload(uint16_t code, const std::string& reason = "");

// A frame as the server sent it.
struct ServerFrame {
  bool fin = false;
  uint8_t rsv = 0;
  uint8_t opcode = 0;
  bool masked = false;
  int length_bytes = 0;  // 0 (7-bit length), 2 or 8: how the length was encoded
  std::string payload;

  // For close frames: the status code, or 1005 when the payload has none.
  int close_code() const;
  std::string close_reason() const;
};

// A parsed HTTP response to the upgrade request.
struct HttpHead {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // when Content-Length says so

  std::optional<std::string> header(const std::string& lower_name) const;
};

class RawWs {
 public:
  // The RFC 6455 section 1.3 example key, whose accept value is known.
  static constexpr const char* kSampleKey = "dGhlIHNhbXBsZSBub25jZQ==";
  static constexpr const char* kSampleAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

  // A valid upgrade request for `path`; `extra_headers` are "Name: value\r\n" lines.
  static std::string upgrade_request(const std::string& path = "/v1/ws",
                                     const std::string& extra_headers = "",
                                     const std::string& key = kSampleKey);

  // A TCP connection to 127.0.0.1:port, nothing sent yet. Asserts on failure.
  static std::unique_ptr<RawWs> connect(uint16_t port);
  // connect + a valid upgrade; asserts (gtest) that the answer is 101.
  static std::unique_ptr<RawWs> open(uint16_t port, const std::string& extra_headers = "");
  ~RawWs();

  // Sends a raw HTTP request and reads the response head (and its body when
  // it has a Content-Length). nullopt when the server closed or timed out.
  std::optional<HttpHead> http(const std::string& request, std::chrono::milliseconds timeout = 5s);

  void send_bytes(const std::string& bytes);
  // Each byte in its own write() (with TCP_NODELAY: its own segment, mostly).
  void send_bytes_one_at_a_time(const std::string& bytes);
  void send_frame(const FrameSpec& spec) { send_bytes(encode_frame(spec)); }
  void send_text(const std::string& text) { send_frame({ws_op::kText, text}); }
  // Half-closes the sending side (TCP FIN).
  void shutdown_send();

  // The next server frame; nullopt on timeout, EOF or reset (see eof()).
  std::optional<ServerFrame> read_frame(std::chrono::milliseconds timeout = 5s);
  // The payload of the next text frame; pings are answered, pongs skipped.
  // nullopt on timeout, close or EOF.
  std::optional<std::string> next_text(std::chrono::milliseconds timeout = 5s);
  // True when nothing arrives within `quiet` (the server stays silent).
  bool silent_for(std::chrono::milliseconds quiet);
  // Waits for the server to close TCP (EOF or reset) and drops what arrives.
  bool wait_eof(std::chrono::milliseconds timeout = 5s);
  bool eof() const { return eof_; }

  // hello with the token; returns the reply's payload ("" on none).
  std::string hello(const std::string& token, int rid = 1);

  // The closing handshake as RFC 6455 7.1 has it for the server's side:
  // reads up to the server's close frame (other frames are dropped), checks
  // its code, answers it with a close, and checks that the server then
  // closes TCP. Use as EXPECT_TRUE(ws->expect_close(1002)).
  ::testing::AssertionResult expect_close(int code, std::chrono::milliseconds timeout = 5s) {
    return expect_close_with_one_of({code}, timeout);
  }
  // The same where RFC 6455 leaves the server a choice of codes.
  ::testing::AssertionResult expect_close_with_one_of(std::vector<int> codes,
                                                      std::chrono::milliseconds timeout = 5s);
  // The last close frame expect_close() or read_frame() saw.
  const std::optional<ServerFrame>& last_close() const { return last_close_; }

 private:
  RawWs() = default;
  // Appends what arrives to in_ within the deadline; false on timeout/EOF.
  bool fill(std::chrono::steady_clock::time_point deadline);
  std::optional<ServerFrame> take_frame();

  int fd_ = -1;
  std::string in_;
  bool eof_ = false;
  std::optional<ServerFrame> last_close_;
};

}  // namespace parley::testing
