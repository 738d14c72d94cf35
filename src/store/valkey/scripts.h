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
//   KEYS: seq, history, dedupe, dedupe_by_time, wal (partition_map.h ChannelKeys)
//   ARGV: proposed seq (0: the script assigns), ts_ms, from, id, body,
//         history keep, history slack, dedupe window ms, channel, wal max length,
//         feed channel (empty: publish nothing)
//   reply: {seq, dup}; dup = 1 only when assigning and (from, id) is within its
//   window (seq is then the original's). Errors: "STALE <last>" (proposed seq not
//   above the stored last), "GAP <last>" (proposed seq above last + 1).
const Script& append_script();

// recover: the channel's last seq and its dedupe entries with ts_ms >= cutoff.
//   KEYS: seq, dedupe, dedupe_by_time   ARGV: cutoff ms
//   reply: {last, key1, "seq:ts", key2, "seq:ts", ...}
const Script& recover_script();

// The dedupe key as the scripts store it: "<len(from)>:<from><id>" (collision-free).
std::string dedupe_field(const std::string& from, const std::string& id);
// Splits a field back; false if it is not one.
bool split_dedupe_field(const std::string& field, std::string& from, std::string& id);

}  // namespace parley::store::valkey
