#include "support/raw_ws.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <random>

#include "support/client.h"

namespace parley::testing {

namespace {

uint32_t random_mask_key() {
  static std::mt19937 rng{std::random_device{}()};
  return rng();
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string encode_frame(const FrameSpec& spec) {
  std::string out;
  out += static_cast<char>((spec.fin ? 0x80 : 0) | (spec.rsv & 0x70) | (spec.opcode & 0x0f));
  const uint64_t n = spec.payload.size();
  const uint8_t mask_bit = spec.masked ? 0x80 : 0;
  if (n < 126) {
    out += static_cast<char>(mask_bit | n);
  } else if (n <= 0xffff) {
    out += static_cast<char>(mask_bit | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n);
  } else {
    out += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>(n >> shift);
  }
  if (!spec.masked) return out + spec.payload;
  const uint32_t key = random_mask_key();
  const char k[4] = {char(key >> 24), char(key >> 16), char(key >> 8), char(key)};
  out.append(k, 4);
  const size_t start = out.size();
  out += spec.payload;
  for (size_t i = 0; i < n; ++i) out[start + i] ^= k[i % 4];
  return out;
}

std::string close_payload(uint16_t code, const std::string& reason) {
  std::string p;
  p += static_cast<char>(code >> 8);
  p += static_cast<char>(code & 0xff);
  return p + reason;
}

int ServerFrame::close_code() const {
  if (payload.size() < 2) return 1005;
  return (uint8_t(payload[0]) << 8) | uint8_t(payload[1]);
}

std::string ServerFrame::close_reason() const {
  return payload.size() > 2 ? payload.substr(2) : "";
}

std::optional<std::string> HttpHead::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

std::string RawWs::upgrade_request(const std::string& path, const std::string& extra_headers,
                                   const std::string& key) {
  std::string r = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n";
  if (!key.empty()) r += "Sec-WebSocket-Key: " + key + "\r\n";
  return r + extra_headers + "\r\n";
}

std::unique_ptr<RawWs> RawWs::connect(uint16_t port) {
  std::unique_ptr<RawWs> ws(new RawWs());
  ws->fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(ws->fd_, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::connect(ws->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  EXPECT_EQ(rc, 0) << "connect to port " << port << ": " << strerror(errno);
  int one = 1;
  setsockopt(ws->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return ws;
}

std::unique_ptr<RawWs> RawWs::open(uint16_t port, const std::string& extra_headers) {
  auto ws = connect(port);
  auto head = ws->http(upgrade_request("/v1/ws", extra_headers));
  EXPECT_TRUE(head.has_value()) << "no answer to the upgrade";
  if (head) {
    EXPECT_EQ(head->status, 101) << head->body;
  }
  return ws;
}

RawWs::~RawWs() {
  if (fd_ >= 0) ::close(fd_);
}

void RawWs::send_bytes(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the server has gone; the test sees it on read
    off += static_cast<size_t>(n);
  }
}

void RawWs::send_bytes_one_at_a_time(const std::string& bytes) {
  for (char c : bytes) send_bytes(std::string(1, c));
}

void RawWs::shutdown_send() { ::shutdown(fd_, SHUT_WR); }

bool RawWs::fill(std::chrono::steady_clock::time_point deadline) {
  if (eof_) return false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;  // EOF or reset
      return false;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }
}

std::optional<HttpHead> RawWs::http(const std::string& request, std::chrono::milliseconds timeout) {
  send_bytes(request);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t end;
  while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) return std::nullopt;
  }
  HttpHead head;
  const std::string text = in_.substr(0, end);
  in_.erase(0, end + 4);
  size_t pos = text.find("\r\n");
  const std::string status_line = text.substr(0, pos);
  if (sscanf(status_line.c_str(), "HTTP/%*d.%*d %d", &head.status) != 1) return std::nullopt;
  while (pos != std::string::npos && pos < text.size()) {
    const size_t next = text.find("\r\n", pos + 2);
    const std::string line = text.substr(pos + 2, next == std::string::npos ? std::string::npos
                                                                            : next - pos - 2);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      head.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    }
    pos = next;
  }
  if (auto cl = head.header("content-length")) {
    const size_t n = std::stoul(*cl);
    while (in_.size() < n) {
      if (!fill(deadline)) break;
    }
    head.body = in_.substr(0, std::min(n, in_.size()));
    in_.erase(0, head.body.size());
  }
  return head;
}

std::optional<ServerFrame> RawWs::take_frame() {
  if (in_.size() < 2) return std::nullopt;
  const auto b = [this](size_t i) { return static_cast<uint8_t>(in_[i]); };
  ServerFrame f;
  f.fin = (b(0) & 0x80) != 0;
  f.rsv = b(0) & 0x70;
  f.opcode = b(0) & 0x0f;
  f.masked = (b(1) & 0x80) != 0;
  uint64_t len = b(1) & 0x7f;
  size_t pos = 2;
  if (len == 126) {
    if (in_.size() < 4) return std::nullopt;
    len = (uint64_t(b(2)) << 8) | b(3);
    f.length_bytes = 2;
    pos = 4;
  } else if (len == 127) {
    if (in_.size() < 10) return std::nullopt;
    len = 0;
    for (size_t i = 2; i < 10; ++i) len = (len << 8) | b(i);
    f.length_bytes = 8;
    pos = 10;
  }
  char key[4] = {};
  if (f.masked) {
    if (in_.size() < pos + 4) return std::nullopt;
    std::copy_n(in_.data() + pos, 4, key);
    pos += 4;
  }
  if (in_.size() < pos + len) return std::nullopt;
  f.payload = in_.substr(pos, len);
  if (f.masked) {
    for (size_t i = 0; i < f.payload.size(); ++i) f.payload[i] ^= key[i % 4];
  }
  in_.erase(0, pos + len);
  if (f.opcode == ws_op::kClose) last_close_ = f;
  return f;
}

std::optional<ServerFrame> RawWs::read_frame(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto f = take_frame()) return f;
    if (!fill(deadline)) return std::nullopt;
  }
}

std::optional<std::string> RawWs::next_text(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto f = read_frame(left);
    if (!f) return std::nullopt;
    if (f->opcode == ws_op::kText) return f->payload;
    if (f->opcode == ws_op::kPing) send_frame({ws_op::kPong, f->payload});
    if (f->opcode == ws_op::kClose) return std::nullopt;
  }
}

bool RawWs::silent_for(std::chrono::milliseconds quiet) {
  if (!in_.empty()) return false;
  const auto deadline = std::chrono::steady_clock::now() + quiet;
  return !fill(deadline) && !eof_;
}

bool RawWs::wait_eof(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!eof_) {
    in_.clear();
    if (!fill(deadline) && !eof_) return false;
  }
  return true;
}

std::string RawWs::hello(const std::string& token, int rid) {
  send_text(hello_frame(token, rid));
  return next_text().value_or("");
}

::testing::AssertionResult RawWs::expect_close_with_one_of(std::vector<int> codes,
                                                          std::chrono::milliseconds timeout) {
  std::string expected;
  for (int c : codes) expected += (expected.empty() ? "" : " or ") + std::to_string(c);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string skipped;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto f = left.count() > 0 ? read_frame(left) : std::nullopt;
    if (!f) {
      return ::testing::AssertionFailure()
             << (eof_ ? "TCP closed" : "timed out") << " without a close frame (expected "
             << expected << ")" << (skipped.empty() ? "" : "; got before: " + skipped);
    }
    if (f->opcode != ws_op::kClose) {
      skipped += "[op " + std::to_string(f->opcode) + "] " + f->payload.substr(0, 200) + " ";
      continue;
    }
    if (f->masked) return ::testing::AssertionFailure() << "the server masked its close frame";
    if (std::find(codes.begin(), codes.end(), f->close_code()) == codes.end()) {
      return ::testing::AssertionFailure()
             << "close code " << f->close_code() << " (reason \"" << f->close_reason()
             << "\"), expected " << expected;
    }
    // RFC 6455 5.5.1: answer the close; 7.1.1: the server then closes TCP first.
    send_frame({ws_op::kClose, close_payload(static_cast<uint16_t>(f->close_code()))});
    if (!wait_eof(timeout)) {
      return ::testing::AssertionFailure()
             << "close " << f->close_code() << " received, but the server did not close TCP";
    }
    return ::testing::AssertionSuccess();
  }
}

}  // namespace parley::testing
