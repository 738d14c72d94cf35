// State deltas on the bench's side (PROTOCOL.md "State deltas"), written from
// the page: one connection's streams (sid -> the base body, as fields) and the
// rule that rebuilds a body from an `sd`. The audit then checks each rebuilt
// body as a full one would be checked: the fields the bench's senders write
// are all there, and `y` is its sender's (gid % 1000, from "u<gid>"), so a
// delta applied to the wrong base shows as an error, not as a plausible body.
//
// Bodies come in either encoding and are kept as fields whose values are the
// bytes the wire carried (minified JSON text, or the value's MessagePack): a
// field is unchanged when those bytes are, as the page compares. No DOM: a
// JSON body is split at its top-level commas, a MessagePack one read from
// msgpack-c's object of the frame.
//
// The ideal (issue 25, world-big): with `ideal` on, each delivery also counts
// the bytes of what changed for the viewer since the body it last got of that
// stream: the fields whose value changed (all of them at the stream's first
// delivery), removed keys, and `pos` when it moved, each as a key and its
// value in the delivery's encoding (JSON `"k":v`, MessagePack str + value),
// without frame, braces or separators. Without deltas the streams are named
// by sender and key; with them by sid, whose base is that last body.
//
// Thread: one per Connection, on its worker's thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <msgpack/object_fwd.hpp>

namespace bench {

struct BodyField {
  std::string key, value;  // value: the wire's bytes of it
  int64_t num = 0;         // the value when it is an integer
  bool is_int = false;
};

class DeltaStreams {
 public:
  // A `state` with a sid: its body becomes the stream's base. False when the
  // body is not an object (a server never gives such a state a sid).
  // `ideal_out`, when given, gets this delivery's ideal bytes.
  bool full(uint64_t sid, std::string_view from, std::string_view body, uint64_t* ideal_out = nullptr,
            std::string_view pos = {});
  bool full(uint64_t sid, std::string_view from, const msgpack::object& body,
            uint64_t* ideal_out = nullptr, const msgpack::object* pos = nullptr);
  // An `sd`: the base minus `unset` (a JSON array of keys, or empty), plus the
  // fields of `set` (a JSON object). On success `t_out` is the rebuilt body's
  // `t` (the sender's send time) or 0. False when the sid has no base, the
  // frame is malformed, or the rebuilt body fails the bench's body check.
  bool apply(uint64_t sid, std::string_view set, std::string_view unset, int64_t& t_out,
             uint64_t* ideal_out = nullptr, std::string_view pos = {});
  bool apply(uint64_t sid, const msgpack::object& set, const msgpack::object* unset, int64_t& t_out,
             uint64_t* ideal_out = nullptr, const msgpack::object* pos = nullptr);
  // A full `state` without a sid (a client without deltas): only the ideal,
  // against the last body of (from, key) this connection got.
  uint64_t observe(std::string_view from, std::string_view key, std::string_view body,
                   std::string_view pos);
  uint64_t observe(std::string_view from, std::string_view key, const msgpack::object& body,
                   const msgpack::object* pos);
  // A new connection: its sids start again.
  void clear() {
    streams_.clear();
    named_.clear();
  }
  size_t size() const { return streams_.size(); }

  // The bench's own check of a body it rebuilt: t, x and y present and y the
  // sender's. Bodies of other shapes (not a bench sender's) pass.
  static bool plausible(std::string_view from, const std::vector<BodyField>& fields);

  struct Stream {
    std::string from;
    std::vector<BodyField> fields;
    std::string pos;  // the wire's bytes of the last `pos`, or empty
  };

 private:
  std::unordered_map<uint64_t, Stream> streams_;
  std::unordered_map<std::string, Stream> named_;  // "from\0key", for observe
};

}  // namespace bench
