// The server-side Lua scripts of the valkey store. Each connection loads them
// (SCRIPT LOAD) before its first command, then calls them by SHA1 (EVALSHA), so a
// call sends only its arguments.
//
// Pure data; any thread.
#pragma once

#include <string>

namespace parley::store::valkey {

struct Script {
  std::string source;
  std::string sha1;  // lowercase hex, as EVALSHA takes it
};

// append: dedupe + seq + history XADD + WAL XADD + dedupe record, atomically.
//   KEYS: seq, history, dedupe, dedupe_by_time, wal, epoch (partition_map.h ChannelKeys)
//   ARGV: proposed seq (0: the script assigns), ts_ms, from, id, body,
//         history keep, history slack, dedupe window ms, channel, wal max length,
//         feed channel (empty: publish nothing), seen (the highest seq the caller
//         knows committed; 0: none), "1" when the caller WAITs behind it
//   reply: {seq, dup, epoch}; dup = 1 only when assigning and (from, id) is within its
//   window (seq is then the original's). Errors: "STALE <last>" (proposed seq not
//   above the stored last), "GAP <last>" (proposed seq above last + 1).
//   Loss: when assigning and `seen` is above the counter (this master lacks
//   commits someone saw: a replica promoted before it had them), the counter
//   jumps to seen + kLossJump and the epoch goes up (check_loss below).
//   Moderation (PROTOCOL.md "Moderation: delete and edit"): ARGV 14-16 are the
//   event's kind ("e" edit, "d" delete; empty: a message), its target seq and
//   the target's new version ("e<edited_ms>:<body>" or "d"); then KEYS has a
//   seventh, the channel's amendment zset (partition_map.h ChannelKeys::amends).
const Script& append_script();

// read: a page of history and the current versions of its changed messages.
//   KEYS: history   ARGV: "1" reverse (XREVRANGE) else "", start id, count, amends
//   reply: {entries as XRANGE answers them, {"<seq>:<version>", ...}}
const Script& read_script();

// recover: the channel's last seq and epoch, and its dedupe entries with ts_ms >= cutoff.
//   KEYS: seq, dedupe, dedupe_by_time, epoch   ARGV: cutoff ms
//   reply: {last, epoch, key1, "seq:ts", key2, "seq:ts", ...}
const Script& recover_script();

// check_loss: the append script's loss check alone, for a channel a node
// follows when its partition moved to another master (quiet channels, and
// nodes that only read them, find a loss too).
//   KEYS: seq, epoch   ARGV: seen   reply: {last, epoch}
const Script& check_loss_script();

// How far a channel's seq jumps past the highest seq seen when a loss is found:
// more than any replication lag leaves unreplicated on one channel, so that no
// seq that may have been acknowledged is given again.
constexpr uint64_t kLossJump = 65536;

// The dedupe key as the scripts store it: "<len(from)>:<from><id>" (collision-free).
std::string dedupe_field(const std::string& from, const std::string& id);
// Splits a field back; false if it is not one.
bool split_dedupe_field(const std::string& field, std::string& from, std::string& id);

}  // namespace parley::store::valkey
