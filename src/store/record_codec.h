// Byte layout of the embedded store's records (pure functions, no I/O).
//
// Keys sort bytewise, so the layout decides what a range scan sees:
//   message: 'm' tenant \0 channel \0 be64(seq)   -> a channel's messages are one
//            contiguous run ordered by seq, and nothing of another channel (or of the
//            same channel name in another tenant) can fall inside it.
//   dedupe:  'e' tenant \0 channel \0 be64(seq) DedupeKey -> a channel's dedupe entries
//            are one contiguous run ordered by seq, like its messages, so each new one
//            is inserted at the run's end next to the previous one (the memtable's
//            insert hint, embedded_store.cc); DedupeKey (store/dedupe_key.h) is
//            varint(len(from)) from id, so neither field's bytes can shift into the
//            other. Recovery reads the whole run into the hub's table, so the order
//            of the run costs no lookup.
//   id-ordered dedupe: 'k' tenant \0 channel \0 DedupeKey, written from issue 11 until
//            the seq-ordered layout: ordered by (sender, id), each insert searched the
//            memtable's skiplist from its head. Still read (and expired by the
//            compaction filter and by recovery); never written any more.
//   legacy dedupe: 'd' tenant \0 channel \0 from \0 id, written before issue 11. It let
//            ("a", "b\0c") and ("a\0b", "c") share a record. Still read (split at the
//            first \0, right for every sender without a \0) and expired by the
//            compaction filter and by recovery; never written any more.
//   gap:     'g' tenant \0 channel \0 be64(first seq) -> le64(last seq): a run of seqs
//            inside the channel's stored range that holds no message, written in the
//            batch of the message that jumped over it (after a power loss with
//            fsync = never, or a start that accepted data loss, a channel continues
//            above the store's seq ceiling). Retention counts messages, not seq
//            distance: the committer subtracts the gaps (group_committer.h), and a
//            trim deletes the gaps below what it keeps. Earlier builds ignore them.
// Tenant and channel names never contain \0 (validated upstream; asserted).
//
// Values are little-endian fixed-width integers and varint-length-prefixed strings.
// A message value starts with a format byte so the layout can evolve.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "store/dedupe_key.h"
#include "store/store.h"

namespace parley::store {

inline constexpr char kMessageTag = 'm';
inline constexpr char kDedupeTag = 'e';
inline constexpr char kIdDedupeTag = 'k';
inline constexpr char kLegacyDedupeTag = 'd';
// Every dedupe layout, oldest first (recovery reads them in this order).
inline constexpr char kDedupeTags[] = {kLegacyDedupeTag, kIdDedupeTag, kDedupeTag};
inline bool is_dedupe_tag(char tag) {
  return tag == kDedupeTag || tag == kIdDedupeTag || tag == kLegacyDedupeTag;
}
inline constexpr char kGapTag = 'g';
// One key, rewritten by the store's write probe when it recovers from a failed write.
inline constexpr char kProbeTag = 'x';

// 'tag' tenant \0 channel \0: every key of one kind for one channel starts with it.
std::string channel_prefix(char tag, const ChannelKey& key);
// The same, written over `out` (which keeps its capacity).
void assign_channel_prefix(std::string& out, char tag, const ChannelKey& key);
// The smallest string above every key that starts with `prefix` (its last byte,
// always \0 here, becomes \1).
std::string prefix_upper_bound(std::string_view prefix);

// Appends be64(seq) to a channel's message prefix.
void append_seq(std::string& key, uint64_t seq);
// The seq of a message key of `prefix_len` prefix bytes; false when malformed.
bool parse_message_seq(std::string_view key, size_t prefix_len, uint64_t& seq);

// The dedupe record key of message `seq` of `channel`, sent as `key`.
std::string dedupe_record_key(const ChannelKey& channel, uint64_t seq, const DedupeKey& key);
// The same for (from, id), written over `out` (which keeps its capacity).
void assign_dedupe_record_key(std::string& out, const ChannelKey& channel, uint64_t seq,
                              std::string_view from, std::string_view id);
// Splits the part of a dedupe record key after the channel prefix into (from, id);
// `tag` says which layout (one of kDedupeTags). False when malformed.
bool parse_dedupe_suffix(char tag, std::string_view suffix, std::string& from, std::string& id);

// Message value: format byte, ts, from, id, body. seq lives in the key.
void encode_message_value(const StoredMessage& msg, std::string& out);
bool decode_message_value(std::string_view value, StoredMessage& msg);

// Gap value: the last seq of the run (the first is in the key).
void encode_gap_value(uint64_t last_seq, std::string& out);
bool decode_gap_value(std::string_view value, uint64_t& last_seq);

struct DedupeValue {
  uint64_t seq = 0;
  int64_t ts_ms = 0;
  int64_t expiry_ms = 0;  // ts + the channel's dedupe window; read by the compaction filter
};
void encode_dedupe_value(const DedupeValue& v, std::string& out);
bool decode_dedupe_value(std::string_view value, DedupeValue& v);

}  // namespace parley::store
