// State deltas (PROTOCOL.md "State deltas"), the client's rule: per stream id
// (`sid`, one connection's) the channel, sender and key of its last full frame
// and the base body; an `sd` frame is the base minus `unset`, plus the delta's
// top-level fields, and reaches the application as the `state` it stands for.
// Nothing is invented: an `sd` with an unknown stream, a dropped base or a
// malformed body is refused (`take` says which) and the client re-joins the
// channel, which makes the server send full bodies again.
//
// Thread: owned by one ClientCore, on its poll() thread. Pure (no I/O), so the
// fuzz target (tests/fuzz/fuzz_sdk_delta.cc) drives it directly.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

#include "parley/events.h"
#include "parley/json.h"

namespace parley::detail {

/// PROTOCOL.md's rule: `base` without the keys of `unset` (null: none), then
/// every field of `set`. False, with `why` set and `out` untouched, when base
/// or set is not an object or unset is not an array of strings.
bool apply_state_delta(const Json& base, const Json& set, const Json* unset, Json& out, std::string& why);

class StateStreams {
 public:
  /// Streams kept per connection; past it the least recently used is forgotten.
  static constexpr std::size_t kMaxStreams = 65536;

  std::size_t size() const { return streams_.size(); }
  /// A new connection: the old one's sids mean nothing.
  void clear();
  /// The channel was left or is re-joined: its bases are dropped, the sids
  /// kept, so an `sd` sent before the server saw the leave is known as stale.
  void forget(const std::string& ch);
  /// A full `state` frame carrying a sid (read before its body is moved out).
  void full(const Json& frame);

  struct Taken {
    enum Kind { applied, stale, unknown, malformed } kind = unknown;
    State state;     ///< applied: what the application gets
    std::string ch;  ///< the stream's channel (all but unknown)
    std::string why;
  };
  /// An `sd` frame.
  Taken take(const Json& sd);

 private:
  struct Stream {
    std::string ch, from, key;
    Json base;
    bool has_base = false;
    std::list<int64_t>::iterator lru;
  };
  void touch(Stream& s);
  std::unordered_map<int64_t, Stream> streams_;
  std::list<int64_t> lru_;  // least recently used first
};

}  // namespace parley::detail
