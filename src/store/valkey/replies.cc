#include "store/valkey/replies.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>

#include "store/store_policy.h"
#include "store/valkey/scripts.h"

namespace parley::store::valkey {
namespace {

Error unexpected(const std::string& what) {
  return Error{ErrorCode::kUnavailable, "store: unexpected reply from valkey (" + what + ")", 1000};
}

std::string_view text(const redisReply* r) {
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) return {};
  return std::string_view(r->str, r->len);
}

template <typename T>
bool parse_int(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A node's error reply as the Store reports it: retryable, except a stale seq.
Error node_error(std::string_view e) {
  if (e.rfind("STALE", 0) == 0) return Error{ErrorCode::kInternal, std::string(kStaleSeqMessage)};
  if (e.rfind("GAP", 0) == 0) {
    return Error{ErrorCode::kUnavailable, "store: append would leave a seq gap; reload the channel", 1000};
  }
  return Error{ErrorCode::kUnavailable, "store: valkey: " + std::string(e.substr(0, 200)), 1000};
}

}  // namespace

std::string error_text(const redisReply* r) {
  return r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string();
}

AppendOutcome parse_append(const Result<Reply>& r) {
  if (!r) return AppendOutcome{r.error()};
  const redisReply* x = r.value().get();
  if (x->type == REDIS_REPLY_ERROR) return AppendOutcome{node_error(error_text(x))};
  if (x->type != REDIS_REPLY_ARRAY || x->elements != 3 || x->element[0]->type != REDIS_REPLY_INTEGER ||
      x->element[1]->type != REDIS_REPLY_INTEGER || x->element[2]->type != REDIS_REPLY_INTEGER ||
      x->element[0]->integer <= 0 || x->element[2]->integer < 1 || x->element[2]->integer > UINT32_MAX) {
    return AppendOutcome{unexpected("append")};
  }
  return Appended{static_cast<uint64_t>(x->element[0]->integer), x->element[1]->integer != 0,
                  static_cast<uint32_t>(x->element[2]->integer)};
}

Result<ChannelRecovery> parse_recover(const Result<Reply>& r) {
  if (!r) return r.error();
  const redisReply* x = r.value().get();
  if (x->type == REDIS_REPLY_ERROR) return node_error(error_text(x));
  if (x->type != REDIS_REPLY_ARRAY || x->elements < 2 || x->elements % 2 != 0) return unexpected("recover");
  ChannelRecovery out;
  if (!parse_int(text(x->element[0]), out.last_seq)) return unexpected("recover: last seq");
  if (!parse_int(text(x->element[1]), out.epoch) || out.epoch < 1) return unexpected("recover: epoch");
  for (size_t i = 2; i + 1 < x->elements; i += 2) {
    DedupeEntry e;
    const std::string field(text(x->element[i]));
    const std::string_view v = text(x->element[i + 1]);
    const size_t colon = v.find(':');
    if (!split_dedupe_field(field, e.from, e.id) || colon == std::string_view::npos ||
        !parse_int(v.substr(0, colon), e.seq) || !parse_int(v.substr(colon + 1), e.ts_ms)) {
      return unexpected("recover: dedupe entry");
    }
    out.dedupe.push_back(std::move(e));
  }
  return out;
}

namespace {

Result<std::vector<StoredMessage>> entries_of(const redisReply* x, bool reverse) {
  if (x->type == REDIS_REPLY_ERROR) return node_error(error_text(x));
  if (x->type != REDIS_REPLY_ARRAY) return unexpected("history");
  std::vector<StoredMessage> out;
  out.reserve(x->elements);
  for (size_t i = 0; i < x->elements; ++i) {
    const redisReply* e = x->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[1]->type != REDIS_REPLY_ARRAY) {
      return unexpected("history entry");
    }
    StoredMessage m;
    const std::string_view id = text(e->element[0]);
    if (!parse_int(id.substr(0, id.find('-')), m.seq)) return unexpected("history id");
    const redisReply* f = e->element[1];
    bool have_ts = false;
    for (size_t j = 0; j + 1 < f->elements; j += 2) {
      const std::string_view name = text(f->element[j]);
      const std::string_view val = text(f->element[j + 1]);
      if (name == "f") {
        m.from = val;
      } else if (name == "i") {
        m.id = val;
      } else if (name == "b") {
        m.body = val;
      } else if (name == "t") {
        have_ts = parse_int(val, m.ts_ms);
      } else if (name == "e" && !parse_int(val, m.epoch)) {
        return unexpected("history entry epoch");
      } else if (name == "k") {
        if (val != "e" && val != "d") return unexpected("history entry kind");
        m.kind = val == "e" ? EntryKind::kEdit : EntryKind::kDelete;
      } else if (name == "g" && (!parse_int(val, m.target) || m.target == 0)) {
        return unexpected("history entry target");
      }
    }
    if (!have_ts) return unexpected("history entry without ts");
    if ((m.kind == EntryKind::kMsg) != (m.target == 0)) return unexpected("history entry target");
    out.push_back(std::move(m));
  }
  if (reverse) std::reverse(out.begin(), out.end());
  return out;
}

// Applies one amendment member "<seq>:e<edited_ms>:<body>" or "<seq>:d" to the
// message of that seq in `msgs` (oldest first); false when malformed.
bool apply_amendment(std::string_view a, std::vector<StoredMessage>& msgs) {
  const size_t colon = a.find(':');
  uint64_t seq = 0;
  if (colon == std::string_view::npos || !parse_int(a.substr(0, colon), seq)) return false;
  std::string_view v = a.substr(colon + 1);
  auto m = std::lower_bound(msgs.begin(), msgs.end(), seq,
                            [](const StoredMessage& x, uint64_t s) { return x.seq < s; });
  if (v == "d") {
    if (m != msgs.end() && m->seq == seq && m->kind == EntryKind::kMsg) {
      m->deleted = true;
      m->body = "null";
    }
    return true;
  }
  const size_t end = v.find(':');
  int64_t edited = 0;
  if (v.empty() || v[0] != 'e' || end == std::string_view::npos || !parse_int(v.substr(1, end - 1), edited) ||
      end + 1 >= v.size()) {
    return false;
  }
  if (m != msgs.end() && m->seq == seq && m->kind == EntryKind::kMsg) {
    m->edited_ms = edited;
    m->body.assign(v.substr(end + 1));
  }
  return true;
}

}  // namespace

Result<std::vector<StoredMessage>> parse_entries(const Result<Reply>& r, bool reverse) {
  if (!r) return r.error();
  return entries_of(r.value().get(), reverse);
}

Result<std::vector<StoredMessage>> parse_page(const Result<Reply>& r, bool reverse) {
  if (!r) return r.error();
  const redisReply* x = r.value().get();
  if (x->type == REDIS_REPLY_ERROR) return node_error(error_text(x));
  if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 || x->element[1]->type != REDIS_REPLY_ARRAY) {
    return unexpected("history page");
  }
  auto out = entries_of(x->element[0], reverse);
  if (!out) return out;
  const redisReply* a = x->element[1];
  for (size_t i = 0; i < a->elements; ++i) {
    if (!apply_amendment(text(a->element[i]), *out)) return unexpected("history amendment");
  }
  return out;
}

std::string amendment_value(const StoredMessage& current) {
  if (current.deleted) return "d";
  return "e" + std::to_string(current.edited_ms) + ":" + current.body;
}

namespace {
// Reads "<digits><sep>" at `pos`; false when absent or over 2^53.
bool read_num(std::string_view s, size_t& pos, char sep, uint64_t& out) {
  out = 0;
  size_t start = pos;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    if (pos - start >= 16) return false;
    out = out * 10 + static_cast<uint64_t>(s[pos] - '0');
    ++pos;
  }
  if (pos == start || pos >= s.size() || s[pos] != sep) return false;
  ++pos;
  return true;
}
// Reads "<len>:<bytes>" at `pos`.
bool read_field(std::string_view s, size_t& pos, std::string& out) {
  uint64_t len = 0;
  if (!read_num(s, pos, ':', len) || len > s.size() - pos) return false;
  out.assign(s.substr(pos, len));
  pos += len;
  return true;
}
}  // namespace

std::optional<FeedItem> parse_feed(const std::string& feed_channel, const std::string& payload) {
  // The tenant is in the tag: "{<tenant>.p<k>}:f".
  const size_t close = feed_channel.find('}');
  if (feed_channel.empty() || feed_channel[0] != '{' || close == std::string::npos) return std::nullopt;
  const size_t dot = feed_channel.rfind(".p", close);
  if (dot == std::string::npos || dot < 1) return std::nullopt;
  FeedItem item;
  item.id.tenant = feed_channel.substr(1, dot - 1);
  std::string_view s = payload;
  size_t pos = 1;
  if (s.empty()) return std::nullopt;
  if (s[0] == 'n') {
    if (!read_field(s, pos, item.id.channel)) return std::nullopt;
    item.is_note = true;
    item.note.assign(s.substr(pos));
    return item;
  }
  // After a loss the channel's epoch rides in front: "e<epoch>:m...".
  uint64_t epoch = 0;
  if (s[0] == 'e') {
    if (!read_num(s, pos, ':', epoch) || epoch < 2 || epoch > UINT32_MAX || pos >= s.size()) return std::nullopt;
    if (s[pos] != 'm' && s[pos] != 'k') return std::nullopt;
    ++pos;
  } else if (s[0] != 'm' && s[0] != 'k') {
    return std::nullopt;
  }
  // A moderation event: "k<e|d><target>:" before the 'm'.
  if (s[pos - 1] == 'k') {
    if (pos >= s.size() || (s[pos] != 'e' && s[pos] != 'd')) return std::nullopt;
    item.msg.kind = s[pos] == 'e' ? EntryKind::kEdit : EntryKind::kDelete;
    ++pos;
    if (!read_num(s, pos, ':', item.msg.target) || item.msg.target == 0 || pos >= s.size() ||
        s[pos] != 'm') {
      return std::nullopt;
    }
    ++pos;
  }
  item.msg.epoch = static_cast<uint32_t>(epoch);
  uint64_t seq = 0, ts = 0;
  if (!read_num(s, pos, ':', seq) || seq == 0 || !read_num(s, pos, ':', ts)) return std::nullopt;
  if (!read_field(s, pos, item.id.channel) || item.id.channel.empty() ||
      !read_field(s, pos, item.msg.from) || !read_field(s, pos, item.msg.id)) {
    return std::nullopt;
  }
  item.msg.seq = seq;
  item.msg.ts_ms = static_cast<int64_t>(ts);
  item.msg.body.assign(s.substr(pos));
  if (item.msg.body.empty()) return std::nullopt;
  return item;
}

std::string format_commit(const std::string& channel, const StoredMessage& m) {
  std::string out = m.epoch > 1 ? "e" + std::to_string(m.epoch) + ":" : std::string();
  if (m.kind != EntryKind::kMsg) {
    out += (m.kind == EntryKind::kEdit ? "ke" : "kd") + std::to_string(m.target) + ":";
  }
  out += "m" + std::to_string(m.seq) + ":" + std::to_string(m.ts_ms) + ":";
  for (const std::string* f : {&channel, &m.from, &m.id}) out.append(std::to_string(f->size())).append(":").append(*f);
  return out.append(m.body);
}

std::string format_note(const std::string& channel, const std::string& note) {
  return "n" + std::to_string(channel.size()) + ":" + channel + note;
}

}  // namespace parley::store::valkey
