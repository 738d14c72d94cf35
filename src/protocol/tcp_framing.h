// Framing of the raw TCP and Unix socket transports (PROTOCOL.md): each frame
// is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. Pure byte
// handling, no I/O: the session reads from its socket into the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace parley::protocol {

inline constexpr size_t kLengthPrefixBytes = 4;

void encode_length_prefix(uint32_t len, char out[4]);
// Appends the prefix and `payload`; payload.size() must fit in 32 bits.
void append_length_prefixed(std::string& out, std::string_view payload);

// Cuts a byte stream into frames. Owned by one session (one strand); not
// thread-safe.
//
// The cap is the hard limit, hard_frame_limit() of decoder.h (4 x
// max_message_bytes): frames up to it are yielded whole and the decoder answers
// those over max_message_bytes with too_large (and their rid). A prefix above
// the cap is fatal: next() reports kOversized with the declared length, the
// session closes the connection, and the reader stays failed, because the rest
// of the stream cannot be trusted to be aligned on frames.
class LengthPrefixedReader {
 public:
  explicit LengthPrefixedReader(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  enum class Status { kFrame, kNeedMore, kOversized };
  struct Next {
    Status status = Status::kNeedMore;
    // kFrame: the payload, valid until the next append/prepare.
    std::string_view frame;
    // kFrame and kOversized: the length the prefix announced.
    uint32_t declared_length = 0;
  };

  // Copies received bytes in.
  void append(std::string_view bytes);
  // Zero-copy receive: a writable region of at least `min_bytes` at the end of
  // the buffer; read into it, then commit() how much was written.
  std::span<char> prepare(size_t min_bytes);
  void commit(size_t n);

  // The next complete frame, if any. Call until kNeedMore after each receive:
  // unconsumed frames stay buffered.
  Next next();

  size_t buffered_bytes() const { return end_ - begin_; }
  // Memory held (the buffer's capacity).
  size_t held_bytes() const { return buf_.capacity(); }
  // The cap for the next prefixes (a connection's limit rises once it has
  // authenticated).
  void set_max_frame_bytes(size_t max_frame_bytes) { max_frame_bytes_ = max_frame_bytes; }
  // Frees the buffer; the reader stays failed (nothing more is framed).
  void abandon() {
    failed_ = true;
    std::string().swap(buf_);
    begin_ = end_ = 0;
  }
  bool failed() const { return failed_; }

 private:
  size_t max_frame_bytes_;
  std::string buf_;
  size_t begin_ = 0;  // first unconsumed byte
  size_t end_ = 0;    // end of received bytes; [end_, buf_.size()) is spare room
  bool failed_ = false;
  uint32_t failed_length_ = 0;
};

}  // namespace parley::protocol
