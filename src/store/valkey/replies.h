// Turning the valkey store's RESP replies into the Store's results. A reply that
// does not have the expected shape is an error value, never an assertion: it
// comes from outside the process.
//
// Pure functions; any thread.
#pragma once

#include <vector>

#include "store/store.h"
#include "store/valkey/resp_connection.h"

namespace parley::store::valkey {

// The append script's {seq, dup}, or its STALE / GAP errors, or a node error.
AppendOutcome parse_append(const Result<Reply>& r);
// The recover script's {last, field, "seq:ts", ...}.
Result<ChannelRecovery> parse_recover(const Result<Reply>& r);
// XRANGE / XREVRANGE entries of a history stream; `reverse` puts newest-first
// replies back in oldest-first order.
Result<std::vector<StoredMessage>> parse_entries(const Result<Reply>& r, bool reverse);

// An error reply's text ("MOVED 3999 127.0.0.1:6381"), or "" for another reply.
std::string error_text(const redisReply* r);

}  // namespace parley::store::valkey
