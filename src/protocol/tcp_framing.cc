#include "protocol/tcp_framing.h"

#include <cassert>
#include <cstring>

namespace parley::protocol {

namespace {

// After a large frame, an idle reader gives back memory above this: thousands
// of connections each keeping a 256 KiB high-water buffer would add up.
constexpr size_t kRetainBytes = 16 * 1024;

uint32_t decode_length_prefix(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

}  // namespace

void encode_length_prefix(uint32_t len, char out[4]) {
  out[0] = static_cast<char>(len >> 24);
  out[1] = static_cast<char>(len >> 16);
  out[2] = static_cast<char>(len >> 8);
  out[3] = static_cast<char>(len);
}

void append_length_prefixed(std::string& out, std::string_view payload) {
  assert(payload.size() <= UINT32_MAX);
  char prefix[kLengthPrefixBytes];
  encode_length_prefix(static_cast<uint32_t>(payload.size()), prefix);
  out.append(prefix, sizeof prefix);
  out.append(payload);
}

void LengthPrefixedReader::append(std::string_view bytes) {
  if (bytes.empty()) return;
  const auto room = prepare(bytes.size());
  std::memcpy(room.data(), bytes.data(), bytes.size());
  commit(bytes.size());
}

std::span<char> LengthPrefixedReader::prepare(size_t min_bytes) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
    if (buf_.size() > kRetainBytes && min_bytes <= kRetainBytes) {
      buf_.resize(kRetainBytes);
      buf_.shrink_to_fit();
    }
  } else if (begin_ > 0 && buf_.size() - end_ < min_bytes) {
    // Moving the unconsumed tail (at most one partial frame) is cheaper than
    // growing the buffer for every frame that straddles a read.
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ < min_bytes) buf_.resize(end_ + min_bytes);
  return {buf_.data() + end_, buf_.size() - end_};
}

void LengthPrefixedReader::commit(size_t n) {
  assert(n <= buf_.size() - end_);
  end_ += n;
}

LengthPrefixedReader::Next LengthPrefixedReader::next() {
  if (failed_) return {Status::kOversized, {}, failed_length_};
  if (end_ - begin_ < kLengthPrefixBytes) return {};
  const uint32_t len = decode_length_prefix(buf_.data() + begin_);
  if (len > max_frame_bytes_) {
    failed_ = true;
    failed_length_ = len;
    return {Status::kOversized, {}, len};
  }
  if (end_ - begin_ - kLengthPrefixBytes < len) return {};
  const std::string_view frame(buf_.data() + begin_ + kLengthPrefixBytes, len);
  begin_ += kLengthPrefixBytes + len;
  return {Status::kFrame, frame, len};
}

}  // namespace parley::protocol
