// Turning the valkey store's RESP replies into the Store's results. A reply that
// does not have the expected shape is an error value, never an assertion: it
// comes from outside the process.
//
// Pure functions; any thread.
#pragma once

#include <optional>
#include <vector>

#include "store/store.h"
#include "store/valkey/resp_connection.h"

namespace parley::store::valkey {

// The append script's {seq, dup, epoch}, or its STALE / GAP errors, or a node error.
AppendOutcome parse_append(const Result<Reply>& r);
// The recover script's {last, epoch, field, "seq:ts", ...}.
Result<ChannelRecovery> parse_recover(const Result<Reply>& r);
// XRANGE / XREVRANGE entries of a history stream; `reverse` puts newest-first
// replies back in oldest-first order.
Result<std::vector<StoredMessage>> parse_entries(const Result<Reply>& r, bool reverse);
// The read script's {entries, amendments}: the entries with each changed
// message in its current version (scripts.h read_script).
Result<std::vector<StoredMessage>> parse_page(const Result<Reply>& r, bool reverse);
// A message's current version as the append script stores it in the
// amendment zset: "e<edited_ms>:<body>" or "d".
std::string amendment_value(const StoredMessage& current);

// A push on a partition's feed channel ("{<tenant>.p<k>}:f"): a committed
// message the append script published ('m', or 'e<epoch>:m' once a loss raised
// the channel's epoch: msg.epoch; a moderation event has 'k<e|d><target>:'
// right before its 'm'), or a note a node published ('n').
// nullopt for anything else (it came from outside: never trusted).
struct FeedItem {
  ChannelId id;
  bool is_note = false;
  StoredMessage msg;   // !is_note
  std::string note;    // is_note
};
std::optional<FeedItem> parse_feed(const std::string& feed_channel, const std::string& payload);
// The payload of a committed message of `channel` (parse_feed's 'm').
std::string format_commit(const std::string& channel, const StoredMessage& m);
// The payload of a note about `channel`.
std::string format_note(const std::string& channel, const std::string& note);

// An error reply's text ("MOVED 3999 127.0.0.1:6381"), or "" for another reply.
std::string error_text(const redisReply* r);

}  // namespace parley::store::valkey
