// One outgoing frame as a gather list: owned bytes and/or slices of shared,
// immutable buffers (a tick batch encoded once for many receivers).
//
// The lists keep a few entries inline: a tick frame of one channel is "[",
// one or two slices and "]" of one buffer, so the fan-out builds it without
// touching the heap (it is built once per receiver per tick).
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "metrics/namespace_traffic.h"

namespace parley::net {

using SharedBuf = std::shared_ptr<const std::string>;

class OutFrame {
 public:
  OutFrame() = default;
  explicit OutFrame(std::string owned) : owned_(std::move(owned)) {}

  // Appends a slice of a shared buffer (kept alive by this frame).
  void add_shared(const SharedBuf& buf, size_t offset, size_t len) {
    if (len == 0) return;
    if (keep_.empty() || keep_.back() != buf) keep_.push_back(buf);
    parts_.emplace_back(buf->data() + offset, len);
    bytes_ += len;
  }
  // Appends bytes with static storage duration ("[", ",", "]").
  void add_static(const char* s, size_t len) {
    parts_.emplace_back(s, len);
    bytes_ += len;
  }
  // Bytes in front of a gathered frame's slices, kept in the frame (a
  // MessagePack batch's array header, known once the frame is assembled);
  // at most kMaxPrefix. Connection writes them after the transport's header.
  static constexpr size_t kMaxPrefix = 5;
  void set_prefix(const char* s, size_t len) {
    std::memcpy(prefix_, s, len);
    bytes_ += len - prefix_len_;
    prefix_len_ = static_cast<uint8_t>(len);
  }
  const uint8_t* prefix() const { return prefix_; }
  size_t prefix_len() const { return prefix_len_; }
  // Replaces an owned frame's bytes (its conversion to the peer's encoding).
  void set_owned(std::string owned) { owned_ = std::move(owned); }

  bool gathered() const { return !parts_.empty(); }
  const std::string& owned() const { return owned_; }
  // The slices of a gathered frame, in order (Connection turns them into iovecs).
  std::span<const boost::asio::const_buffer> parts() const {
    return {parts_.data(), parts_.size()};
  }
  size_t bytes() const { return gathered() ? bytes_ : owned_.size(); }

  // The transport's framing, written in front of the bytes when queued.
  static constexpr size_t kMaxHeader = 10;
  // Slices a frame usually has at most (kept inline); more are allowed.
  static constexpr size_t kMaxParts = 5;
  const uint8_t* header() const { return header_; }
  size_t header_len() const { return header_len_; }
  void set_header(const uint8_t* h, size_t len) {
    std::memcpy(header_, h, len);
    header_len_ = static_cast<uint8_t>(len);
  }
  // Header and bytes: what goes on the wire.
  size_t wire_bytes() const { return header_len_ + bytes(); }

  // Byte accounting by namespace: `bytes` of this frame's payload belong to
  // `to`'s namespace in `form` (a tick frame's runs of each channel). What no
  // charge covers (framing, brackets, a frame without charges) goes to the
  // first charge, else to the connection's own account (Connection::account).
  struct Charge {
    metrics::NamespaceTraffic* to;
    metrics::WireForm form;
    uint64_t bytes;
  };
  void charge(metrics::NamespaceTraffic* to, metrics::WireForm form, uint64_t n) {
    if (!to) return;
    if (!charges_.empty() && charges_.back().to == to && charges_.back().form == form) {
      charges_.back().bytes += n;
    } else {
      charges_.push_back({to, form, n});
    }
  }
  std::span<const Charge> charges() const { return {charges_.data(), charges_.size()}; }

  int64_t enqueued_ns = 0;  // for the write-stage histogram
  // The WebSocket opcode (text for protocol frames; ping, pong, close).
  uint8_t opcode = 1;
  // Already in the connection's encoding: the fan-out writes MessagePack
  // batches itself (hub/tick_batcher.cc); any other protocol frame is JSON and
  // converted by a MessagePack connection (Connection::to_peer_encoding).
  bool peer_encoded = false;
  // Counted against the connection's backfill allowance instead of its queue
  // cap (a `since` resume after a slow-consumer drop must not trip it again).
  bool backfill = false;

 private:
  std::string owned_;
  // "[", slice, ",", slice, "]": a member that skips one event of one channel.
  static constexpr size_t kInlineParts = kMaxParts;
  boost::container::small_vector<SharedBuf, 1> keep_;
  boost::container::small_vector<boost::asio::const_buffer, kInlineParts> parts_;
  boost::container::small_vector<Charge, 1> charges_;
  size_t bytes_ = 0;
  uint8_t header_[kMaxHeader] = {};
  uint8_t header_len_ = 0;
  uint8_t prefix_len_ = 0;
  uint8_t prefix_[kMaxPrefix] = {};
};

}  // namespace parley::net
