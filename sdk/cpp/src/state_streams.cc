#include "state_streams.h"

#include "fields.h"

namespace parley::detail {

bool apply_state_delta(const Json& base, const Json& set, const Json* unset, Json& out, std::string& why) {
  if (!base.is_object()) return why = "the base is not an object", false;
  if (!set.is_object()) return why = "the delta body is not an object", false;
  if (unset && !unset->is_array()) return why = "unset is not an array of strings", false;
  if (unset) {
    for (const Json& k : *unset) {
      if (!k.is_string()) return why = "unset is not an array of strings", false;
    }
  }
  Json result = base;
  if (unset) {
    for (const Json& k : *unset) result.erase(k.get_ref<const std::string&>());
  }
  for (auto it = set.begin(); it != set.end(); ++it) result[it.key()] = it.value();
  out = std::move(result);
  return true;
}

void StateStreams::clear() {
  streams_.clear();
  lru_.clear();
}

void StateStreams::forget(const std::string& ch) {
  for (auto& [sid, s] : streams_) {
    if (s.ch == ch) {
      s.has_base = false;
      s.base = nullptr;
    }
  }
}

void StateStreams::touch(Stream& s) { lru_.splice(lru_.end(), lru_, s.lru); }

void StateStreams::full(const Json& frame) {
  int64_t sid = 0;
  if (!get_int(frame, "sid", sid) || sid <= 0) return;
  const Json* body = field(frame, "body");
  auto it = streams_.find(sid);
  if (it != streams_.end()) {
    lru_.erase(it->second.lru);
    streams_.erase(it);
  }
  if (!body || !body->is_object()) return;  // nothing a delta could apply to
  Stream s{str_or(frame, "ch"), str_or(frame, "from"), str_or(frame, "key"), *body, true, {}};
  s.lru = lru_.insert(lru_.end(), sid);
  streams_.emplace(sid, std::move(s));
  if (streams_.size() > kMaxStreams) {
    streams_.erase(lru_.front());
    lru_.pop_front();
  }
}

StateStreams::Taken StateStreams::take(const Json& sd) {
  Taken t;
  int64_t sid = 0;
  auto it = get_int(sd, "sid", sid) ? streams_.find(sid) : streams_.end();
  if (it == streams_.end()) {
    t.why = "an sd frame for a stream this connection does not know";
    return t;
  }
  Stream& s = it->second;
  t.ch = s.ch;
  if (!s.has_base) {
    t.kind = Taken::stale;
    t.why = "an sd frame for stream " + std::to_string(sid) + " of " + s.ch + " before its full body";
    return t;
  }
  static const Json kNull;
  const Json* body = field(sd, "body");
  Json applied;
  if (!apply_state_delta(s.base, body ? *body : kNull, field(sd, "unset"), applied, t.why)) {
    s.has_base = false;  // no longer to be trusted; the re-join's full body replaces it
    s.base = nullptr;
    t.kind = Taken::malformed;
    t.why = "a malformed sd frame for stream " + std::to_string(sid) + ": " + t.why;
    return t;
  }
  touch(s);
  s.base = applied;
  t.kind = Taken::applied;
  const Json* pos = field(sd, "pos");
  t.state = State{s.ch, s.from, s.key, std::move(applied), pos ? *pos : Json()};
  t.state.tick = int_or(sd, "tick", -1);
  t.state.ts = int_or(sd, "ts", -1);
  t.state.sid = sid;
  return t;
}

}  // namespace parley::detail
