#include "ws_codec.h"

#include <openssl/sha.h>

#include <cstring>
#include <fmt/format.h>

#include "token.h"

namespace bench::ws {

std::string handshake_request(std::string_view host, std::string_view path,
                              std::string_view key, std::string_view protocol) {
  return fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n{}\r\n",
      path, host, key,
      protocol.empty() ? std::string() : fmt::format("Sec-WebSocket-Protocol: {}\r\n", protocol));
}

std::string accept_for(std::string_view key) {
  std::string s(key);
  s += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.data()), s.size(), digest);
  return base64(std::string_view(reinterpret_cast<char*>(digest), sizeof digest));
}

namespace {
bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}
}  // namespace

std::string check_handshake_response(std::string_view head, std::string_view key) {
  size_t eol = head.find("\r\n");
  std::string_view status = head.substr(0, eol);
  if (status.size() < 12 || status.substr(9, 3) != "101")
    return fmt::format("upgrade refused: {}", status);
  std::string want = accept_for(key);
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t next = head.find("\r\n", pos);
    if (next == std::string_view::npos) break;
    std::string_view line = head.substr(pos, next - pos);
    if (iequals_prefix(line, "sec-websocket-accept:")) {
      if (trim(line.substr(21)) == want) return {};
      return "bad Sec-WebSocket-Accept";
    }
    pos = next + 2;
  }
  return "no Sec-WebSocket-Accept";
}

std::string selected_protocol(std::string_view head) {
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    pos += 2;
    const size_t next = head.find("\r\n", pos);
    if (next == std::string_view::npos) break;
    std::string_view line = head.substr(pos, next - pos);
    if (iequals_prefix(line, "sec-websocket-protocol:")) return std::string(trim(line.substr(23)));
    pos = next;
  }
  return {};
}

void apply_mask(char* data, size_t len, uint32_t mask) {
  unsigned char m[4];
  std::memcpy(m, &mask, 4);
  size_t i = 0;
  uint64_t m8;
  unsigned char mm[8] = {m[0], m[1], m[2], m[3], m[0], m[1], m[2], m[3]};
  std::memcpy(&m8, mm, 8);
  for (; i + 8 <= len; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    v ^= m8;
    std::memcpy(data + i, &v, 8);
  }
  for (; i < len; ++i) data[i] ^= static_cast<char>(m[i & 3]);
}

void append_frame(std::string& out, Opcode op, std::string_view payload, uint32_t mask) {
  char head[14];
  size_t n = 0;
  head[n++] = static_cast<char>(0x80 | op);
  uint64_t len = payload.size();
  if (len < 126) {
    head[n++] = static_cast<char>(0x80 | len);
  } else if (len < 65536) {
    head[n++] = static_cast<char>(0x80 | 126);
    head[n++] = static_cast<char>(len >> 8);
    head[n++] = static_cast<char>(len);
  } else {
    head[n++] = static_cast<char>(0x80 | 127);
    for (int i = 7; i >= 0; --i) head[n++] = static_cast<char>(len >> (8 * i));
  }
  std::memcpy(head + n, &mask, 4);
  n += 4;
  out.append(head, n);
  size_t start = out.size();
  out.append(payload);
  apply_mask(out.data() + start, payload.size(), mask);
}

bool parse_header(const char* data, size_t len, FrameHeader& h) {
  if (len < 2) return false;
  auto b0 = static_cast<uint8_t>(data[0]), b1 = static_cast<uint8_t>(data[1]);
  h.fin = b0 & 0x80;
  h.op = static_cast<Opcode>(b0 & 0x0f);
  h.masked = b1 & 0x80;
  uint64_t plen = b1 & 0x7f;
  size_t n = 2;
  if (plen == 126) {
    if (len < 4) return false;
    plen = (uint64_t(uint8_t(data[2])) << 8) | uint8_t(data[3]);
    n = 4;
  } else if (plen == 127) {
    if (len < 10) return false;
    plen = 0;
    for (int i = 0; i < 8; ++i) plen = (plen << 8) | uint8_t(data[2 + i]);
    n = 10;
  }
  if (h.masked) {
    if (len < n + 4) return false;
    std::memcpy(&h.mask, data + n, 4);
    n += 4;
  }
  h.payload_len = plen;
  h.header_len = n;
  return true;
}

}  // namespace bench::ws
