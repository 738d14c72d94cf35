// Encoding stored messages for the wire within a byte budget: `history` replies
// (WebSocket and GET /v1/history) and join backfill. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"
#include "store/store.h"
#include "tenant/tenant_config.h"

namespace parley::hub {

// A single `history` reply holds at most this many bytes of messages (PROTOCOL.md:
// `limit` is an upper bound, so a reply trimmed to its budget stays valid).
inline constexpr uint64_t kHistoryReplyMaxBytes = 1 << 20;

inline uint64_t history_reply_budget(const TenantConfig& t) {
  return std::max<uint64_t>(1, std::min<uint64_t>(kHistoryReplyMaxBytes, t.max_queue_bytes));
}

// Messages per store read of a join's backfill: the most one page holds in memory
// and the longest a reader thread is busy for one join at a time.
inline constexpr uint32_t kBackfillPage = 256;

// How a stored entry of channel `ch` is encoded (a message in its current
// version, or a moderation event): the view of it encode_msg takes.
inline protocol::MsgView entry_view(std::string_view ch, const store::StoredMessage& m) {
  static_assert(static_cast<int>(protocol::EntryKind::kEdit) == static_cast<int>(store::EntryKind::kEdit) &&
                static_cast<int>(protocol::EntryKind::kDelete) == static_cast<int>(store::EntryKind::kDelete));
  return {ch, m.seq, m.from, m.id, m.ts_ms, m.body, static_cast<protocol::EntryKind>(m.kind),
          m.target, m.edited_ms, m.deleted};
}

struct EncodedPage {
  std::string msgs_json;  // comma-joined msg objects, oldest first
  size_t count = 0;
};

// `msgs` (oldest first) with seq <= cut, as msg objects of channel `ch`, within
// max_bytes of text (one message always, so a pager can move on): the oldest that
// fit when `keep_oldest` (a reader paging forward with `after`), else the newest (a
// reader paging backward with `before`).
EncodedPage encode_page(std::string_view ch, const std::vector<store::StoredMessage>& msgs,
                        uint64_t cut, uint64_t max_bytes, bool keep_oldest);

}  // namespace parley::hub
