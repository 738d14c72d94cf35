// State deltas on the bench's side (PROTOCOL.md "State deltas"), written from
// the page: one connection's streams (sid -> the base body, as fields) and the
// rule that rebuilds a body from an `sd`. The audit then checks each rebuilt
// body as a full one would be checked: the fields the bench's senders write
// are all there, and `y` is its sender's (gid % 1000, from "u<gid>"), so a
// delta applied to the wrong base shows as an error, not as a plausible body.
//
// Thread: one per Connection, on its worker's thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace bench {

class DeltaStreams {
 public:
  // A `state` with a sid: its body becomes the stream's base. False when the
  // body is not an object (a server never gives such a state a sid).
  bool full(uint64_t sid, std::string_view from, std::string_view body);
  // An `sd`: the base minus `unset` (a JSON array of keys, or empty), plus the
  // fields of `set` (a JSON object). On success `t_out` is the rebuilt body's
  // `t` (the sender's send time) or 0. False when the sid has no base, the
  // frame is malformed, or the rebuilt body fails the bench's body check.
  bool apply(uint64_t sid, std::string_view set, std::string_view unset, int64_t& t_out);
  // A new connection: its sids start again.
  void clear() { streams_.clear(); }
  size_t size() const { return streams_.size(); }

  // The bench's own check of a body it rebuilt: t, x and y present and y the
  // sender's. Bodies of other shapes (not a bench sender's) pass.
  static bool plausible(std::string_view from, const std::vector<std::pair<std::string, std::string>>& fields);

 private:
  struct Stream {
    std::string from;
    std::vector<std::pair<std::string, std::string>> fields;  // key, minified value
  };
  std::unordered_map<uint64_t, Stream> streams_;
};

}  // namespace bench
