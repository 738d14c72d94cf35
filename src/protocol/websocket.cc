#include "protocol/websocket.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace parley::protocol::ws {

std::string_view select_subprotocol(std::string_view offered) {
  while (!offered.empty()) {
    const size_t comma = offered.find(',');
    std::string_view token = offered.substr(0, comma);
    offered = comma == std::string_view::npos ? std::string_view() : offered.substr(comma + 1);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (token == kSubprotocolMsgpack) return kSubprotocolMsgpack;
    if (token == kSubprotocolJson) return kSubprotocolJson;
  }
  return {};
}

HeaderStatus parse_header(const uint8_t* data, size_t len, FrameHeader& h) {
  if (len < 2) return HeaderStatus::kNeedMore;
  h.fin = (data[0] & 0x80) != 0;
  h.rsv = (data[0] >> 4) & 0x7;
  h.opcode = data[0] & 0x0F;
  h.masked = (data[1] & 0x80) != 0;
  const uint8_t len7 = data[1] & 0x7F;
  size_t pos = 2;
  if (len7 == 126) {
    if (len < pos + 2) return HeaderStatus::kNeedMore;
    h.payload_len = (uint64_t{data[2]} << 8) | data[3];
    pos += 2;
  } else if (len7 == 127) {
    if (len < pos + 8) return HeaderStatus::kNeedMore;
    h.payload_len = 0;
    for (int i = 0; i < 8; ++i) h.payload_len = (h.payload_len << 8) | data[pos + i];
    pos += 8;
    if (h.payload_len >> 63) return HeaderStatus::kInvalid;
  } else {
    h.payload_len = len7;
  }
  if (h.masked) {
    if (len < pos + 4) return HeaderStatus::kNeedMore;
    std::memcpy(h.mask, data + pos, 4);
    pos += 4;
  }
  h.header_len = pos;
  return HeaderStatus::kOk;
}

int check_client_header(const FrameHeader& h, uint64_t max_message) {
  if (h.rsv != 0) return 1002;  // no extension is negotiated
  const bool control = (h.opcode & 0x8) != 0;
  if (control) {
    if (h.opcode != kClose && h.opcode != kPing && h.opcode != kPong) return 1002;
    if (!h.fin || h.payload_len > kMaxControlPayload) return 1002;
  } else if (h.opcode != kCont && h.opcode != kText && h.opcode != kBinary) {
    return 1002;
  }
  if (!h.masked) return 1002;  // 5.1: a server closes on an unmasked client frame
  if (!control && h.payload_len > max_message) return 1009;
  return 0;
}

void unmask(uint8_t* data, size_t len, const uint8_t mask[4], size_t offset) {
  // Eight bytes at a time with the mask rotated to the payload position: the
  // hot loop of every client frame.
  uint8_t m[8];
  for (int i = 0; i < 8; ++i) m[i] = mask[(offset + i) & 3];
  uint64_t m64;
  std::memcpy(&m64, m, 8);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    v ^= m64;
    std::memcpy(data + i, &v, 8);
  }
  for (; i < len; ++i) data[i] ^= m[i & 7];
}

size_t encode_server_header(uint8_t opcode, uint64_t payload_len, uint8_t* out) {
  out[0] = static_cast<uint8_t>(0x80 | opcode);
  if (payload_len < 126) {
    out[1] = static_cast<uint8_t>(payload_len);
    return 2;
  }
  if (payload_len <= 0xFFFF) {
    out[1] = 126;
    out[2] = static_cast<uint8_t>(payload_len >> 8);
    out[3] = static_cast<uint8_t>(payload_len);
    return 4;
  }
  out[1] = 127;
  for (int i = 0; i < 8; ++i) out[2 + i] = static_cast<uint8_t>(payload_len >> (56 - 8 * i));
  return 10;
}

std::string close_payload(int code, std::string_view reason) {
  std::string p;
  p.push_back(static_cast<char>((code >> 8) & 0xFF));
  p.push_back(static_cast<char>(code & 0xFF));
  if (reason.size() > kMaxControlPayload - 2) {
    // Never cut inside a UTF-8 sequence: the peer checks the reason too.
    size_t cut = kMaxControlPayload - 2;
    while (cut > 0 && (static_cast<uint8_t>(reason[cut]) & 0xC0) == 0x80) --cut;
    reason = reason.substr(0, cut);
  }
  p.append(reason);
  return p;
}

namespace {
// 7.4.1 and the IANA registry: what an endpoint may put in a close frame.
bool sendable_close_code(int code) {
  if (code >= 3000 && code <= 4999) return true;
  switch (code) {
    case 1000: case 1001: case 1002: case 1003: case 1007: case 1008:
    case 1009: case 1010: case 1011:
      return true;
    default:
      return false;
  }
}
}  // namespace

int check_close_payload(std::string_view payload, int& code) {
  if (payload.empty()) {
    code = 1005;
    return 0;
  }
  if (payload.size() == 1) return 1002;
  code = (static_cast<uint8_t>(payload[0]) << 8) | static_cast<uint8_t>(payload[1]);
  if (!sendable_close_code(code)) return 1002;
  Utf8Checker utf8;
  if (!utf8.feed(payload.substr(2)) || !utf8.complete()) return 1007;
  return 0;
}

bool Utf8Checker::feed(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto* end = p + bytes.size();
  while (p < end) {
    const uint8_t b = *p++;
    if (need_ > 0) {
      if (b < lo_ || b > hi_) return false;
      --need_;
      lo_ = 0x80;
      hi_ = 0xBF;
      continue;
    }
    if (b < 0x80) continue;
    if (b >= 0xC2 && b <= 0xDF) {
      need_ = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need_ = 2;
      if (b == 0xE0) lo_ = 0xA0;  // overlong
      if (b == 0xED) hi_ = 0x9F;  // UTF-16 surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      need_ = 3;
      if (b == 0xF0) lo_ = 0x90;  // overlong
      if (b == 0xF4) hi_ = 0x8F;  // above U+10FFFF
    } else {
      return false;
    }
  }
  return true;
}

namespace {
// A fragmented message's buffer above this is released once delivered.
constexpr size_t kKeepMessageBytes = 16 * 1024;

void release_if_large(std::string& s, size_t keep) {
  if (s.empty() && s.capacity() > keep) std::string().swap(s);
}
}  // namespace

void FrameReader::feed(uint8_t* data, size_t len, Sink& sink) {
  if (done()) return;
  if (partial_.empty()) {
    const size_t used = consume(data, len, sink);
    if (!done() && used < len) partial_.assign(reinterpret_cast<char*>(data) + used, len - used);
    return;
  }
  partial_.append(reinterpret_cast<char*>(data), len);
  const size_t used = consume(reinterpret_cast<uint8_t*>(partial_.data()), partial_.size(), sink);
  partial_.erase(0, used);
  release_if_large(partial_, 0);
}

size_t FrameReader::consume(uint8_t* data, size_t len, Sink& sink) {
  size_t pos = 0;
  while (pos < len && !done()) {
    FrameHeader h;
    const auto status = parse_header(data + pos, len - pos, h);
    if (status == HeaderStatus::kNeedMore) break;
    if (status == HeaderStatus::kInvalid) {
      fail(1002, "invalid frame length", sink);
      break;
    }
    if (int code = check_client_header(h, max_message_)) {
      fail(code, code == 1009 ? "message too big" : "protocol error", sink);
      break;
    }
    if (h.opcode == kCont && in_message_ && message_.size() + h.payload_len > max_message_) {
      fail(1009, "message too big", sink);
      break;
    }
    if (len - pos - h.header_len < h.payload_len) break;  // the payload is still coming
    uint8_t* payload = data + pos + h.header_len;
    unmask(payload, h.payload_len, h.mask);
    pos += h.header_len + h.payload_len;
    on_frame(h, std::string_view(reinterpret_cast<char*>(payload), h.payload_len), sink);
  }
  return pos;
}

void FrameReader::on_frame(const FrameHeader& h, std::string_view payload, Sink& sink) {
  switch (h.opcode) {
    case kText:
    case kBinary: {
      if (in_message_) return fail(1002, "new message inside a fragmented one", sink);
      const bool text = h.opcode == kText;
      if (h.fin) {
        if (text && !simdjson::validate_utf8(payload.data(), payload.size())) {
          return fail(1007, "invalid UTF-8", sink);
        }
        return sink.on_message(payload, !text);
      }
      in_message_ = true;
      message_opcode_ = h.opcode;
      message_.assign(payload);
      utf8_.reset();
      if (text && !utf8_.feed(payload)) fail(1007, "invalid UTF-8", sink);
      return;
    }
    case kCont: {
      if (!in_message_) return fail(1002, "continuation without a message", sink);
      const bool text = message_opcode_ == kText;
      message_.append(payload);
      if (text && !utf8_.feed(payload)) return fail(1007, "invalid UTF-8", sink);
      if (!h.fin) return;
      if (text && !utf8_.complete()) return fail(1007, "invalid UTF-8", sink);
      in_message_ = false;
      sink.on_message(message_, !text);
      message_.clear();
      release_if_large(message_, kKeepMessageBytes);
      return;
    }
    case kPing:
      return sink.on_ping(payload);
    case kPong:
      return;
    case kClose: {
      int code = 0;
      if (int err = check_close_payload(payload, code)) {
        return fail(err, "invalid close frame", sink);
      }
      closed_ = true;
      return sink.on_close(code);
    }
    default:
      return fail(1002, "reserved opcode", sink);  // check_client_header refused these already
  }
}

void FrameReader::fail(int code, const char* why, Sink& sink) {
  failed_ = true;
  sink.on_fail(code, why);
}

std::string accept_key(std::string_view key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string input(key);
  input.append(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  unsigned int digest_len = 0;
  EVP_Digest(input.data(), input.size(), digest, &digest_len, EVP_sha1(), nullptr);
  unsigned char out[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
  const int n = EVP_EncodeBlock(out, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(n));
}

bool valid_client_key(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  return std::all_of(key.begin(), key.begin() + 22, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '/';
  });
}

}  // namespace parley::protocol::ws
