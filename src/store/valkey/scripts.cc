#include "store/valkey/scripts.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace parley::store::valkey {
namespace {

std::string sha1_hex(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), md, &n, EVP_sha1(), nullptr);
  std::string out;
  char buf[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

Script make(std::string source) {
  Script s{std::move(source), {}};
  s.sha1 = sha1_hex(s.source);
  return s;
}

// Seqs stay below 2^53, so Lua's doubles hold them exactly; '%d' formats them
// without an exponent.
constexpr const char* kAppend = R"lua(
local proposed = tonumber(ARGV[1])
local ts = tonumber(ARGV[2])
local from, id = ARGV[3], ARGV[4]
local window = tonumber(ARGV[8])
local field = false
if id ~= '' then field = string.len(from) .. ':' .. from .. id end
-- The channel's epoch key exists from its first append on: in a slot being
-- migrated a declared key that exists nowhere makes the importing node answer
-- TRYAGAIN to every call (and the old one ASK).
local stored_epoch = redis.call('GET', KEYS[6])
local epoch = tonumber(stored_epoch or '1')
if field and proposed == 0 then
  local v = redis.call('HGET', KEYS[3], field)
  if v then
    local s, t = string.match(v, '^(%d+):(-?%d+)$')
    if s and tonumber(t) >= ts - window then
      -- With WAIT behind this call, a write: WAIT then covers the master's offset
      -- now, the original's (written by another connection) included.
      if ARGV[13] == '1' then redis.call('PEXPIRE', KEYS[3], window * 2 + 60000) end
      return {tonumber(s), 1, epoch}
    end
  end
end
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local seen = tonumber(ARGV[12]) or 0
if proposed == 0 and seen > last then
  -- This master lacks commits a node saw (asynchronous replication: the replica
  -- promoted had not received them). Their seqs may have been acknowledged and
  -- delivered: none is given again, and the channel's epoch goes up.
  last = seen + 65536  -- kLossJump (scripts.h)
  epoch = epoch + 1
  redis.call('SET', KEYS[6], string.format('%d', epoch))
  stored_epoch = epoch
  redis.call('SET', KEYS[1], string.format('%d', last))
end
if proposed ~= 0 then
  if proposed <= last then return redis.error_reply('STALE ' .. string.format('%d', last)) end
  if proposed ~= last + 1 then return redis.error_reply('GAP ' .. string.format('%d', last)) end
end
if not stored_epoch then redis.call('SET', KEYS[6], string.format('%d', epoch)) end
local seq = redis.call('INCR', KEYS[1])
local sid = string.format('%d', seq)
-- A moderation event (ARGV[14] 'e' or 'd') names its target (ARGV[15]) in
-- fields of its own, and rewrites the target's current version (ARGV[16]) in
-- the channel's amendment zset (KEYS[7]): one member '<seq>:<version>' per
-- changed message, scored by its seq. A delete is final: an edit that comes
-- after it (another node's, checked before the delete was written) changes nothing.
-- A message takes the direct calls (no tables built: every pub runs this).
local kind = ARGV[14] or ''
local entry
if kind == '' then
  if epoch > 1 then
    redis.call('XADD', KEYS[2], sid .. '-0', 'f', from, 'i', id, 't', ARGV[2], 'b', ARGV[5], 'e', string.format('%d', epoch))
  else
    redis.call('XADD', KEYS[2], sid .. '-0', 'f', from, 'i', id, 't', ARGV[2], 'b', ARGV[5])
  end
else
  entry = {'f', from, 'i', id, 't', ARGV[2], 'b', ARGV[5], 'k', kind, 'g', ARGV[15]}
  local history_entry = {unpack(entry)}
  if epoch > 1 then
    history_entry[#history_entry + 1] = 'e'
    history_entry[#history_entry + 1] = string.format('%d', epoch)
  end
  redis.call('XADD', KEYS[2], sid .. '-0', unpack(history_entry))
end
local keep = tonumber(ARGV[6])
if redis.call('XLEN', KEYS[2]) > keep + tonumber(ARGV[7]) then
  redis.call('XTRIM', KEYS[2], 'MAXLEN', keep)
end
if kind ~= '' then
  local target = tonumber(ARGV[15])
  local cur = redis.call('ZRANGEBYSCORE', KEYS[7], target, target)
  if not (cur[1] and string.match(cur[1], '^%d+:d')) then
    redis.call('ZREMRANGEBYSCORE', KEYS[7], target, target)
    redis.call('ZADD', KEYS[7], target, ARGV[15] .. ':' .. ARGV[16])
  end
  -- The versions of messages trimmed from the history go with them.
  local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
  if first[1] then
    redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', '(' .. string.match(first[1][1], '^(%d+)'))
  end
end
if kind == '' then
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[10], '*',
             'c', ARGV[9], 's', sid, 'f', from, 'i', id, 't', ARGV[2], 'b', ARGV[5])
else
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[10], '*', 'c', ARGV[9], 's', sid, unpack(entry))
end
if ARGV[11] ~= '' then
  -- Several nodes write this channel: every node watching the partition hears
  -- of the commit (sharded pub/sub on {t.pk}:f:<master epoch>, the partition's
  -- tag: the same slot). An argument, not a key: no key of that name ever
  -- exists, and a missing declared key makes an importing node answer TRYAGAIN
  -- under ASK. The name carries the epoch of the master the caller believed it
  -- was talking to, so what a hung master runs once it resumes (before it
  -- steps down) goes to a channel nobody listens to any more.
  -- After a loss the epoch rides in front ('e<epoch>:'), as format_commit writes it.
  local head = ''
  if epoch > 1 then head = 'e' .. string.format('%d', epoch) .. ':' end
  if kind ~= '' then head = head .. 'k' .. kind .. ARGV[15] .. ':' end
  redis.call('SPUBLISH', ARGV[11], head .. 'm' .. sid .. ':' .. ARGV[2] .. ':' .. string.len(ARGV[9]) .. ':' ..
             ARGV[9] .. string.len(from) .. ':' .. from .. string.len(id) .. ':' .. id .. ARGV[5])
end
if field then
  redis.call('HSET', KEYS[3], field, sid .. ':' .. ARGV[2])
  redis.call('ZADD', KEYS[4], ts, field)
  redis.call('PEXPIRE', KEYS[3], window * 2 + 60000)
  redis.call('PEXPIRE', KEYS[4], window * 2 + 60000)
end
-- Expire the oldest dedupe entries, a bounded number per call. Last, so that no
-- key this call deletes is written again by it: in a slot being migrated, a
-- write to a key the node no longer has fails the script half-way (Redis does
-- not undo the writes before it), which would leave a seq without its dedupe entry.
local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. string.format('%d', ts - window), 'LIMIT', 0, 64)
if #old > 0 then
  redis.call('ZREM', KEYS[4], unpack(old))
  redis.call('HDEL', KEYS[3], unpack(old))
end
return {seq, 0, epoch}
)lua";

// A page of a channel's history with the current versions of its changed
// messages: the stream's entries (XRANGE from ARGV[2] up, or XREVRANGE from it
// down when ARGV[1] is '1', ARGV[3] of them) and the members of the amendment
// zset ARGV[4] whose seqs lie within them. The zset is named in ARGV, not
// KEYS: most channels have none, and in a slot being migrated a declared key
// that exists nowhere makes the nodes answer ASK and TRYAGAIN to a read that
// the stream alone would have passed (the zset moves with the stream: same tag).
constexpr const char* kRead = R"lua(
local e
if ARGV[1] == '1' then
  e = redis.call('XREVRANGE', KEYS[1], ARGV[2], '-', 'COUNT', ARGV[3])
else
  e = redis.call('XRANGE', KEYS[1], ARGV[2], '+', 'COUNT', ARGV[3])
end
local a = {}
if #e > 0 then
  local lo = tonumber(string.match(e[1][1], '^(%d+)'))
  local hi = tonumber(string.match(e[#e][1], '^(%d+)'))
  if lo > hi then lo, hi = hi, lo end
  a = redis.call('ZRANGEBYSCORE', ARGV[4], lo, hi)
end
return {e, a}
)lua";

constexpr const char* kRecover = R"lua(
local out = {redis.call('GET', KEYS[1]) or '0', redis.call('GET', KEYS[4]) or '1'}
local keys = redis.call('ZRANGEBYSCORE', KEYS[3], ARGV[1], '+inf')
for i = 1, #keys, 512 do
  local chunk = {}
  for j = i, math.min(i + 511, #keys) do chunk[#chunk + 1] = keys[j] end
  local vals = redis.call('HMGET', KEYS[2], unpack(chunk))
  for j = 1, #chunk do
    if vals[j] then
      out[#out + 1] = chunk[j]
      out[#out + 1] = vals[j]
    end
  end
end
return out
)lua";

constexpr const char* kCheckLoss = R"lua(
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local epoch = tonumber(redis.call('GET', KEYS[2]) or '1')
local seen = tonumber(ARGV[1]) or 0
if seen > last then
  last = seen + 65536  -- kLossJump (scripts.h)
  epoch = epoch + 1
  redis.call('SET', KEYS[1], string.format('%d', last))
  redis.call('SET', KEYS[2], string.format('%d', epoch))
end
return {last, epoch}
)lua";

}  // namespace

const Script& append_script() {
  static const Script s = make(kAppend);
  return s;
}

const Script& read_script() {
  static const Script s = make(kRead);
  return s;
}

const Script& recover_script() {
  static const Script s = make(kRecover);
  return s;
}

const Script& check_loss_script() {
  static const Script s = make(kCheckLoss);
  return s;
}

std::string dedupe_field(const std::string& from, const std::string& id) {
  return std::to_string(from.size()) + ":" + from + id;
}

bool split_dedupe_field(const std::string& field, std::string& from, std::string& id) {
  const size_t colon = field.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 10) return false;
  size_t len = 0;
  for (size_t i = 0; i < colon; ++i) {
    if (field[i] < '0' || field[i] > '9') return false;
    len = len * 10 + static_cast<size_t>(field[i] - '0');
  }
  if (colon + 1 + len > field.size()) return false;
  from = field.substr(colon + 1, len);
  id = field.substr(colon + 1 + len);
  return true;
}

}  // namespace parley::store::valkey
