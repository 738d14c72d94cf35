// Encodes server frames of PROTOCOL.md. Pure functions appending to a string.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "protocol/client_op.h"

namespace parley::protocol {

// What a log entry is (PROTOCOL.md "Moderation: delete and edit"); the same
// numbers as store::EntryKind.
enum class EntryKind : uint8_t { kMsg = 0, kEdit = 1, kDelete = 2 };

// A sequenced log entry as stored and delivered: a message, or a moderation
// event naming the message it changes.
struct MsgView {
  std::string_view ch;
  uint64_t seq = 0;
  std::string_view from;
  std::string_view id;
  int64_t ts_ms = 0;
  std::string_view body;  // valid JSON text
  EntryKind kind = EntryKind::kMsg;
  uint64_t target = 0;     // edit / delete: the message's seq
  int64_t edited_ms = 0;   // msg: its latest edit (0: never edited)
  bool deleted = false;    // msg: a tombstone (no body)
};

// {"op":"msg","ch","seq","from","id","ts","body"}; a message's current version
// adds "edited":<ts>, or is a tombstone {"op":"msg",...,"ts","deleted":true};
// an edit is {"op":"edit","ch","seq","target","from","ts","body"}, a delete
// {"op":"delete","ch","seq","target","from","ts"}.
void encode_msg(std::string& out, const MsgView& m);
// A list of msg objects, comma-joined: what a batch array, a `history` reply and
// GET /v1/history hold. Appends m after a comma when `list` is not empty.
void append_msg(std::string& list, const MsgView& m);
// [<list>]: a frame of messages (a tick batch, a join's backfill).
void encode_batch(std::string& out, std::string_view msgs_json);
// {"msgs":[<list>]}: the body of GET /v1/history.
void encode_history_body(std::string& out, std::string_view msgs_json);
// {"op":"state","ch","from","key","pos"?,"body"}: pos as the sender gave it
// (its numbers in shortest round-trip form).
void encode_state(std::string& out, std::string_view ch, std::string_view from,
                  std::string_view key, std::string_view body, const Position* pos = nullptr);
// {"op":"presence","ch","join":[...],"leave":[...]} (empty lists omitted)
void encode_presence(std::string& out, std::string_view ch,
                     std::span<const std::string> join, std::span<const std::string> leave);
// {"op":"direct","from":"server","body"}
void encode_direct(std::string& out, std::string_view body);

// Replies. `rid` is ClientOp::rid (JSON text or empty: then no rid field).
// `msgpack`: the connection speaks MessagePack from here on ("enc":"msgpack").
// `state_delta`: the capability was granted ("caps":["state_delta"]);
// `state_delta_batch` too ("caps":["state_delta","state_delta_batch"]).
void encode_welcome(std::string& out, std::string_view rid, std::string_view conn,
                    std::string_view user, std::string_view tenant, int heartbeat_ms,
                    bool msgpack = false, bool state_delta = false, bool state_delta_batch = false);
// `epoch` is written only when above 1 (docs/protocol-notes.md: an addition).
void encode_joined(std::string& out, std::string_view rid, std::string_view ch, uint64_t seq,
                   bool recovered, const std::span<const std::string>* members,
                   uint32_t epoch = 1);
void encode_left(std::string& out, std::string_view rid, std::string_view ch);
// {"op":"kicked","ch","reason"}: a moderator removed the connection from `ch`
// (PROTOCOL.md "Moderation: mute, kick, ban").
void encode_kicked(std::string& out, std::string_view ch, std::string_view reason);
// {"op":"left","rid","topic","group"?}: a `leave` of a topic's tail or group.
void encode_left_topic(std::string& out, std::string_view rid, std::string_view topic,
                       std::string_view group);
void encode_ack(std::string& out, std::string_view rid, std::string_view ch, std::string_view id,
                uint64_t seq, bool dup);
// {"op":"edited"|"deleted","rid","ch","target","seq"}: a moderation op's reply
// (`edit`: edited), seq the event's own.
void encode_moderated(std::string& out, std::string_view rid, bool edit, std::string_view ch,
                      uint64_t target, uint64_t seq);
// {"op":"history","rid","ch","msgs":[...]}: `msgs_json` is the comma-joined encoded msgs.
void encode_history(std::string& out, std::string_view rid, std::string_view ch,
                    std::string_view msgs_json);
// {"op":"pong","rid","ts"}: ts, the server's time in ms since the epoch when it
// answered (PROTOCOL.md "Time for games": a client's clock offset and round trip).
void encode_pong(std::string& out, std::string_view rid, int64_t ts_ms);
// {"op":"error","rid"?,"code","msg","retry_ms"?}
void encode_error(std::string& out, std::string_view rid, const Error& e);
// {"op":"error","rid"?,"code":"out_of_range","msg","p","earliest","latest"}
void encode_out_of_range(std::string& out, std::string_view rid, std::string_view msg,
                         const OffsetRange& range);
// Event streams (PROTOCOL.md "Event streams and leaderboards").
// {"op":"emitted","rid","topic","offs":[[p,off],...],"dup":[bool,...]}
void encode_emitted(std::string& out, std::string_view rid, std::string_view topic,
                    std::span<const std::pair<uint32_t, uint64_t>> offs,
                    const std::vector<bool>& dup);
// {"op":"tailing","rid","topic","parts":[{"p","next"}...]}
void encode_tailing(std::string& out, std::string_view rid, std::string_view topic,
                    std::span<const std::pair<uint32_t, uint64_t>> parts);
// {"op":"assigned","rid"?,"topic","group","gen","parts":[{"p","next"}...]}
void encode_assigned(std::string& out, std::string_view rid, std::string_view topic,
                     std::string_view group, uint64_t gen,
                     std::span<const std::pair<uint32_t, uint64_t>> parts);
// {"op":"revoked","topic","group","gen","parts":[p...]}
void encode_revoked(std::string& out, std::string_view topic, std::string_view group,
                    uint64_t gen, std::span<const uint32_t> parts);
// A leaderboard entry: member, score, rank.
struct RankView {
  std::string_view m;
  double s = 0;
  uint64_t r = 0;
};
// A finite score as a JSON number (shortest round-trip form: 930, 12.5).
void append_score(std::string& out, double s);
// {"m","s","r"}
void append_rank_entry(std::string& out, const RankView& e);
// [{"m","s","r"},...]
void append_rank_list(std::string& out, std::span<const RankView> entries);
// {"op":"ranks","rid","board","round"?,"entries":[{"m","s","r"}...]}
void encode_ranks(std::string& out, std::string_view rid, std::string_view board,
                  std::string_view round, bool has_round, std::span<const RankView> entries);
// {"op":"committed","rid"}
void encode_committed(std::string& out, std::string_view rid);
// {"op":"bye","code","reconnect_ms"?}
void encode_bye(std::string& out, std::string_view code, int reconnect_ms);

}  // namespace parley::protocol
