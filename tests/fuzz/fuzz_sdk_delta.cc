// libFuzzer target for the C++ SDK's state delta applier
// (sdk/cpp/src/state_streams.h, PROTOCOL.md "State deltas"): what a hostile
// server's `state` and `sd` frames reach. The input is cut at newlines into
// JSON frames, and is also read whole as MessagePack (a frame or a batch);
// each `state` with a sid and each `sd` goes to one StateStreams, as the
// client's dispatch does. Built with JSON_NOEXCEPTION, so an exception
// nlohmann would throw (a type error the applier failed to check) aborts.
//
// Beyond sanitizer reports it aborts when an `sd` is applied although its
// stream has no object base (as an independent shadow of the streams knows
// it), when the applied body is not PROTOCOL.md's rule (every key of the
// delta's body with its value; every base key neither set nor unset kept as
// it was; every unset key not set gone; nothing else), when it is applied
// while the delta's body is not an object or `unset` not strings, or when the
// table grows past kMaxStreams.
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "state_streams.h"

using parley::Json;
using parley::detail::StateStreams;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool sid_of(const Json& f, int64_t& sid) {
  if (!f.is_object()) return false;
  auto it = f.find("sid");
  if (it == f.end() || !it->is_number_integer()) return false;
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
  sid = it->get<int64_t>();
  return true;
}

bool is_op(const Json& f, const char* op) {
  if (!f.is_object()) return false;
  auto it = f.find("op");
  return it != f.end() && it->is_string() && it->get_ref<const std::string&>() == op;
}

// The streams as the rule says they are (no LRU: a stream the table evicted
// may be unknown there and known here, never the other way round).
struct Shadow {
  std::map<int64_t, Json> base;           // sid -> object base; absent: none
  std::map<int64_t, std::string> channel;  // sid -> its channel ("" when not a string)

  void full(const Json& f) {
    int64_t sid = 0;
    if (!sid_of(f, sid) || sid <= 0) return;
    auto b = f.find("body");
    if (b != f.end() && b->is_object()) {
      base[sid] = *b;
      auto ch = f.find("ch");
      channel[sid] = ch != f.end() && ch->is_string() ? ch->get<std::string>() : std::string();
    } else {
      base.erase(sid);
    }
  }

  void forget(const std::string& ch) {
    for (auto it = base.begin(); it != base.end();) {
      it = channel[it->first] == ch ? base.erase(it) : std::next(it);
    }
  }

  void sd(StateStreams& s, const Json& f) {
    StateStreams::Taken t = s.take(f);
    int64_t sid = 0;
    const bool known = sid_of(f, sid) && base.count(sid);
    if (t.kind != StateStreams::Taken::applied) {
      if (known && t.kind == StateStreams::Taken::malformed) base.erase(sid);
      return;
    }
    check(known);
    const Json& old = base[sid];
    auto b = f.find("body");
    check(b != f.end() && b->is_object());
    const Json* unset = nullptr;
    if (auto u = f.find("unset"); u != f.end()) {
      check(u->is_array());
      for (const Json& k : *u) check(k.is_string());
      unset = &*u;
    }
    const Json& got = t.state.body;
    check(got.is_object());
    auto unset_has = [&](const std::string& k) {
      if (!unset) return false;
      for (const Json& x : *unset) {
        if (x.get_ref<const std::string&>() == k) return true;
      }
      return false;
    };
    for (auto it = b->begin(); it != b->end(); ++it) {
      auto g = got.find(it.key());
      check(g != got.end() && *g == it.value());
    }
    for (auto it = old.begin(); it != old.end(); ++it) {
      if (b->contains(it.key())) continue;
      auto g = got.find(it.key());
      if (unset_has(it.key())) check(g == got.end());
      else check(g != got.end() && *g == it.value());
    }
    for (auto it = got.begin(); it != got.end(); ++it) check(b->contains(it.key()) || old.contains(it.key()));
    base[sid] = got;
  }
};

void feed(StateStreams& s, Shadow& shadow, const Json& f) {
  if (is_op(f, "state")) {
    s.full(f);
    shadow.full(f);
  } else if (is_op(f, "sd")) {
    shadow.sd(s, f);
  } else if (is_op(f, "leave")) {
    // A frame the fuzzer invents: the client's forget() of a channel.
    auto ch = f.find("ch");
    if (ch != f.end() && ch->is_string()) {
      s.forget(ch->get_ref<const std::string&>());
      shadow.forget(ch->get_ref<const std::string&>());
    }
  }
  check(s.size() <= StateStreams::kMaxStreams);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  {
    StateStreams s;
    Shadow shadow;
    size_t at = 0;
    while (at <= in.size()) {
      size_t nl = in.find('\n', at);
      if (nl == std::string_view::npos) nl = in.size();
      Json f = Json::parse(in.substr(at, nl - at), nullptr, false);
      if (!f.is_discarded()) {
        if (f.is_array()) {
          for (const Json& e : f) feed(s, shadow, e);
        } else {
          feed(s, shadow, f);
        }
      }
      at = nl + 1;
    }
  }
  {
    StateStreams s;
    Shadow shadow;
    Json f = Json::from_msgpack(data, data + size, true, false);
    if (!f.is_discarded()) {
      if (f.is_array()) {
        for (const Json& e : f) feed(s, shadow, e);
      } else {
        feed(s, shadow, f);
      }
    }
  }
  return 0;
}
