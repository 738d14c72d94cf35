#include "persist/wal_entry.h"

#include <hiredis/hiredis.h>

#include <charconv>

namespace parley::persist {

namespace {

Error bad_reply(const std::string& what) { return Error{ErrorCode::kInternal, "valkey: " + what}; }

bool is_text(const redisReply* r) {
  return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

template <typename T>
bool number(const std::string& s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// One [id, [field, value, ...]] pair (fields nil: the entry was deleted).
std::optional<WalEntry> parse_entry(const redisReply* e, const std::string& tenant) {
  if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !is_text(e->element[0])) return std::nullopt;
  WalEntry out;
  out.id.assign(e->element[0]->str, e->element[0]->len);
  const redisReply* f = e->element[1];
  if (!f || f->type == REDIS_REPLY_NIL) {
    out.deleted = true;
    return out;
  }
  if (f->type != REDIS_REPLY_ARRAY || f->elements % 2 != 0) return out;
  ArchiveRow row;
  row.tenant = tenant;
  bool c = false, s = false, t = false, b = false;
  for (size_t i = 0; i + 1 < f->elements; i += 2) {
    if (!is_text(f->element[i]) || !is_text(f->element[i + 1])) return out;
    const std::string k(f->element[i]->str, f->element[i]->len);
    std::string v(f->element[i + 1]->str, f->element[i + 1]->len);
    if (k == "c") {
      row.channel = std::move(v);
      c = true;
    } else if (k == "s") {
      s = number(v, row.seq) && row.seq > 0 && row.seq < (uint64_t{1} << 62);
    } else if (k == "f") {
      row.sender = std::move(v);
    } else if (k == "i") {
      row.msg_id = std::move(v);
    } else if (k == "t") {
      t = number(v, row.ts_ms);
    } else if (k == "b") {
      row.body = std::move(v);
      b = true;
    }
  }
  if (!c || !s || !t || !b || row.channel.empty()) return out;
  for (const std::string* x : {&row.tenant, &row.channel, &row.sender, &row.msg_id, &row.body}) {
    if (!storable_text(*x)) return out;
  }
  out.row = std::move(row);
  return out;
}

Result<std::vector<WalEntry>> parse_entries(const redisReply* list, const std::string& tenant) {
  std::vector<WalEntry> out;
  if (!list || list->type != REDIS_REPLY_ARRAY) return bad_reply("entries are not an array");
  out.reserve(list->elements);
  for (size_t i = 0; i < list->elements; ++i) {
    auto e = parse_entry(list->element[i], tenant);
    if (!e) return bad_reply("an entry is not [id, fields]");
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace

Result<std::vector<WalEntry>> parse_read(const redisReply* r, const std::string& tenant) {
  if (!r) return bad_reply("no reply");
  if (r->type == REDIS_REPLY_NIL) return std::vector<WalEntry>{};
  if (r->type == REDIS_REPLY_ERROR) return bad_reply(std::string(r->str, r->len));
  // [[stream, entries]] (RESP2; one stream asked).
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 1) return bad_reply("XREADGROUP: unexpected shape");
  const redisReply* s = r->element[0];
  if (!s || s->type != REDIS_REPLY_ARRAY || s->elements != 2) return bad_reply("XREADGROUP: unexpected stream");
  return parse_entries(s->element[1], tenant);
}

Result<Claimed> parse_claim(const redisReply* r, const std::string& tenant) {
  if (!r) return bad_reply("no reply");
  if (r->type == REDIS_REPLY_ERROR) return bad_reply(std::string(r->str, r->len));
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || !is_text(r->element[0])) {
    return bad_reply("XAUTOCLAIM: unexpected shape");
  }
  Claimed out;
  out.cursor.assign(r->element[0]->str, r->element[0]->len);
  auto entries = parse_entries(r->element[1], tenant);
  if (!entries) return entries.error();
  out.entries = std::move(*entries);
  return out;
}

bool storable_text(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates, and code points past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace parley::persist
