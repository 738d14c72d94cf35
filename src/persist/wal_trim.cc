#include "persist/wal_trim.h"

#include <hiredis/hiredis.h>

namespace parley::persist {

namespace {
// Ids compare as (ms, n) pairs of integers below 2^53 (Lua doubles hold them).
constexpr const char* kTrim = R"lua(
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[1])
if not ok then return {0, 0, 0, 0, 0} end
local function parse(id)
  local a, b = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(a), tonumber(b)
end
local function less(x, y)
  local xa, xb = parse(x)
  local ya, yb = parse(y)
  return xa < ya or (xa == ya and xb < yb)
end
local floor, pending, undelivered, oldest, lost = false, 0, 0, false, 0
for _, g in ipairs(groups) do
  local f = {}
  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
  local low
  if f['pending'] > 0 then
    low = redis.call('XPENDING', KEYS[1], f['name'])[2]
  else
    low = f['last-delivered-id']
  end
  if not floor or less(low, floor) then floor = low end
  if f['name'] == ARGV[1] then
    pending = f['pending']
    if f['lag'] then undelivered = f['lag'] else undelivered = -1 end
    if f['pending'] > 0 then
      oldest = low
    else
      local nx = redis.call('XRANGE', KEYS[1], '(' .. f['last-delivered-id'], '+', 'COUNT', 1)
      if #nx > 0 then oldest = nx[1][1] end
    end
    local info = redis.call('XINFO', 'STREAM', KEYS[1])
    for i = 1, #info, 2 do
      if info[i] == 'max-deleted-entry-id' and info[i + 1] ~= '0-0' and
         less(f['last-delivered-id'], info[i + 1]) then lost = 1 end
    end
  end
end
local trimmed = 0
if floor and floor ~= '0-0' then trimmed = redis.call('XTRIM', KEYS[1], 'MINID', floor) end
local age = 0
if oldest then
  local t = redis.call('TIME')
  age = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - parse(oldest)
  if age < 0 then age = 0 end
end
return {pending, undelivered, age, trimmed, lost}
)lua";
}  // namespace

const std::string& wal_trim_script() {
  static const std::string s = kTrim;
  return s;
}

Result<WalLag> parse_wal_lag(const redisReply* r) {
  if (!r) return Error{ErrorCode::kInternal, "valkey: no reply"};
  if (r->type == REDIS_REPLY_ERROR) return Error{ErrorCode::kInternal, "valkey: " + std::string(r->str, r->len)};
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 5) {
    return Error{ErrorCode::kInternal, "valkey: trim script: unexpected reply"};
  }
  for (size_t i = 0; i < 5; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER) {
      return Error{ErrorCode::kInternal, "valkey: trim script: not an integer"};
    }
  }
  WalLag l;
  l.pending = r->element[0]->integer;
  l.undelivered = r->element[1]->integer;
  l.oldest_ms = r->element[2]->integer;
  l.trimmed = r->element[3]->integer;
  l.lost = r->element[4]->integer != 0;
  return l;
}

}  // namespace parley::persist
