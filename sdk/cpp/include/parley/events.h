// What the client delivers to the application: plain values, built from the
// server's frames (PROTOCOL.md "Server frames") after their fields were checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parley/json.h"

namespace parley {

/// The server's `welcome`.
struct Welcome {
  std::string conn;
  std::string user;
  std::string tenant;
  int64_t heartbeat_ms = 0;
  /// The encoding frames travel in on this connection: "json" or "msgpack"
  /// (ClientOptions::codec; "json" when a TCP server did not take `enc`).
  std::string enc;
  /// The capabilities the server granted (the welcome's `caps`; empty from an older server).
  std::vector<std::string> caps;
  /// This connection gets state deltas (`caps` holds "state_delta"; ClientOptions::state_deltas).
  bool state_deltas = false;
};

/// The server clock estimate from pongs' `ts` (PROTOCOL.md "Time for games").
struct ClockEstimate {
  bool valid = false;   ///< false before the first pong with `ts` on this connection
  int64_t offset = 0;   ///< server time = local wall-clock ms + offset; wrong by at most rtt / 2
  int64_t rtt = 0;      ///< round trip of the sample (the smallest of the last 8), ms
};

/// A connection ended.
struct Disconnect {
  int code = 0;  ///< WebSocket close code; 1006 when none; 4000 a client-side abandon
  std::string reason;
  bool was_open = false;         ///< it had been welcomed
  bool will_reconnect = false;   ///< false: the client is closed for good
  int64_t delay_ms = 0;          ///< when will_reconnect: the delay chosen
};

/// A `bye` frame (a drain, a slow consumer, a removed tenant).
struct Bye {
  std::string code;
  int64_t reconnect_ms = -1;  ///< -1: the frame had none
};

/// A retryable error the SDK is handling by itself (after retry_ms).
struct Retry {
  std::string op;  ///< pub, join, state, up, history, ...
  std::string ch;
  std::string id;  ///< a publish's client id, else empty
  std::string code;
  int64_t retry_ms = -1;
};

/// What an entry of a channel's log is (PROTOCOL.md "Moderation: delete and edit").
enum class EntryKind {
  msg,       ///< a message
  edit,      ///< an edit of message `target`: `body` is its new body
  deletion,  ///< a delete of message `target` (no body)
};

/// An entry of a channel's log, delivered once, in seq order: a `msg`, or an
/// `edit` / `delete` of an earlier message, which takes a seq of its own.
struct Message {
  std::string ch;
  int64_t seq = 0;
  std::string from;
  std::string id;  ///< a msg's client id; empty for an edit / delete
  int64_t ts = 0;
  Json body;
  EntryKind kind = EntryKind::msg;
  int64_t target = 0;    ///< edit / delete: the seq of the message changed
  /// A msg from history or a join's backfill in its current version: the ts
  /// of its latest edit, -1 when never edited (a live msg is always the original).
  int64_t edited = -1;
  bool deleted = false;  ///< a msg from history / backfill that was deleted: a tombstone without body
};

/// An `edit` or `delete` written (the `edited` / `deleted` reply).
struct Moderated {
  std::string ch;
  int64_t seq = 0;     ///< the seq the edit or delete itself took
  int64_t target = 0;  ///< the message changed
};

/// The server removed this connection from a channel (a `kicked` frame).
struct Kicked {
  std::string ch;
  std::string reason;  ///< "" when none was given
};

/// A `state` of another member.
struct State {
  std::string ch;
  std::string from;
  std::string key;
  Json body;
  Json pos;  ///< the sender's position when it sent one (interest areas), else null
  /// The full body above also when it arrived as a delta (`sd`, ClientOptions::state_deltas).
  int64_t tick = -1;  ///< the server's tick number at sending; -1 when the frame had none
  int64_t ts = -1;    ///< the server's time at that tick (ms since the epoch); -1 when none
  int64_t sid = 0;    ///< the stream id on a connection with state deltas, else 0
};

struct Presence {
  std::string ch;
  std::vector<std::string> join;
  std::vector<std::string> leave;
};

/// A (re)join answered.
struct Joined {
  std::string ch;
  int64_t seq = 0;
  bool recovered = false;
  int64_t epoch = 1;
  std::vector<std::string> members;
};

/// Seqs from..to (inclusive) could not be recovered; delivery goes on after `to`.
struct Gap {
  std::string ch;
  int64_t from = 0;
  int64_t to = 0;
};

/// The channel's log started over (its seqs are below what was delivered).
struct Reset {
  std::string ch;
  int64_t last_seq = 0;  ///< the last seq delivered before
  int64_t seq = 0;       ///< the channel's latest seq now
};

/// A publish acknowledged as written.
struct Ack {
  std::string id;
  int64_t seq = 0;
  bool dup = false;
};

/// A `direct` from the app server.
struct Direct {
  std::string from;
  Json body;
};

}  // namespace parley
