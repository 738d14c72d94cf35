// parley::Channel: the application's view of one channel, a handle owned by
// its Client (valid as long as the client; copies refer to the same channel).
// It delivers one gap-free, ordered stream of `msg` per channel across
// reconnects: a rejoin asks for what was missed (`since`), messages already
// delivered are dropped, a hole is filled from history before anything newer,
// and what history no longer has is reported once as a gap. Edits and deletes
// are entries of that stream (on_edit / on_delete), with seqs of their own.
//
// Thread: the client's poll() thread, like the Client.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parley/error.h"
#include "parley/events.h"
#include "parley/json.h"

namespace parley {

namespace detail {
class ChannelCore;
}

struct HistoryQuery {
  std::optional<int64_t> after;   ///< exactly one of after / before
  std::optional<int64_t> before;
  std::optional<int64_t> limit;   ///< default 50, at most 1000 (server)
};

class Channel {
 public:
  const std::string& name() const;
  /// True while the server has this connection as a member.
  bool joined() const;
  /// The seq of the last message delivered; -1 before the first join.
  int64_t last_seq() const;
  /// User ids present (namespaces with presence), as of the latest events.
  std::vector<std::string> members() const;

  /// Joins, and keeps rejoining after drops until leave(). `done` gets the
  /// first `joined` (or why joining failed for good). `since` resumes from a
  /// seq the application kept itself (>= 0); without it the first join starts
  /// at the latest message. Connects the client if it is idle.
  void join(std::function<void(const Result<Joined>&)> done = nullptr,
            std::optional<int64_t> since = std::nullopt);
  /// Leaves: no more rejoins; queued publishes fail with `left`.
  void leave();

  /// Publishes `body`; `done` gets the ack once the server wrote it. Queued
  /// until joined; resent with the same id after a drop and after
  /// rate_limited / backpressure / unavailable. `id`: the client message id
  /// (1-64 chars), generated when empty. Returns the id.
  std::string publish(Json body, std::function<void(const Result<Ack>&)> done = nullptr,
                      std::string id = {});
  /// Streams ephemeral state under `key`: latest body per key, at most every
  /// state_min_interval_ms, resent after a rejoin.
  void set_state(const std::string& key, Json body);
  /// Stops streaming `key` (not resent after a rejoin).
  void clear_state(const std::string& key);
  /// Sends `body` to the namespace's app server; held while not joined (at
  /// most 10,000: the oldest is dropped with a `queue_full` error).
  void up(Json body);
  /// Edits message `target` (its seq) to `body`; `done` gets the edit's own
  /// seq once written. The author within the namespace's edit_window_s, a
  /// moderator (token claim "mod") or the game server may; else `forbidden`,
  /// `not_found` for no such message (or a deleted one). Joining is not needed.
  /// Resent after a drop and after rate_limited / backpressure / unavailable
  /// (no dedupe: a resend writes a second edit with the same effect).
  void edit(int64_t target, Json body, std::function<void(const Result<Moderated>&)> done = nullptr);
  /// Deletes message `target`, as edit(); a delete is final.
  void delete_message(int64_t target, std::function<void(const Result<Moderated>&)> done = nullptr);
  /// Reads stored entries, oldest first: msgs in their current version
  /// (`edited`, or `deleted` tombstones) and the edit / delete entries.
  void history(const HistoryQuery& query, std::function<void(const Result<std::vector<Message>>&)> done);

  // Events; one handler each.
  void on_msg(std::function<void(const Message&)> fn);
  void on_state(std::function<void(const State&)> fn);
  void on_presence(std::function<void(const Presence&)> fn);
  void on_joined(std::function<void(const Joined&)> fn);
  void on_gap(std::function<void(const Gap&)> fn);
  void on_reset(std::function<void(const Reset&)> fn);
  /// Edit and delete entries, in seq order with on_msg (MessageLog applies them).
  void on_edit(std::function<void(const Message&)> fn);
  void on_delete(std::function<void(const Message&)> fn);
  /// Removed by the server (a moderator's kick, a ban): no rejoin; what
  /// waited on the channel failed with `kicked`. join() again to try anyway.
  void on_kicked(std::function<void(const Kicked&)> fn);
  /// Errors of state / up, a refused rejoin, a full queue.
  void on_error(std::function<void(const Error&)> fn);

 private:
  friend class Client;
  explicit Channel(detail::ChannelCore* core) : core_(core) {}
  detail::ChannelCore* core_;
};

}  // namespace parley
