// libFuzzer target for parley-bench's reading of state deltas (tools/bench:
// server_frame.h, msgpack_frame.h, delta_audit.h), the part written for
// PROTOCOL.md "Batched state deltas" included: what a hostile or broken
// server's frames reach in the load generator's audit. The input is cut at
// newlines into JSON frames and is also read whole as one MessagePack frame;
// every event goes to one DeltaStreams as Connection::on_state feeds it (a
// `state` with a sid is a base, an `sd` or an sds entry is applied).
//
// Beyond sanitizer reports it aborts when a reader hands on an sd without a
// positive sid or without a body, or an sds entry of a frame it then calls
// well formed although `d` was not pairs of a positive sid and a body (JSON:
// checked by reading the frame again with a plain parser, below).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "delta_audit.h"
#include "msgpack_frame.h"
#include "server_frame.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// The shape PROTOCOL.md gives `d`, read with simdjson's DOM (not the bench's
// On Demand reader): true when every sds of the frame is well formed.
bool sds_well_formed(simdjson::dom::element frame) {
  auto one = [](simdjson::dom::object o) {
    simdjson::dom::array d;
    if (o["d"].get_array().get(d)) return true;  // no `d` array: not an sds entry list
    size_t i = 0;
    for (simdjson::dom::element e : d) {
      if (i++ % 2 == 0) {
        uint64_t sid;
        if (e.get_uint64().get(sid) || sid == 0) return false;
        continue;
      }
      if (e.is_object()) continue;
      simdjson::dom::array a;
      if (e.get_array().get(a) || a.size() < 2 || a.size() > 3) return false;
      simdjson::dom::element pos, body;
      if (a.at(0).get(pos) || a.at(1).get(body)) return false;
      if (!pos.is_null() && !pos.is_array()) return false;
      if (!body.is_object()) return false;
      if (a.size() == 3) {
        simdjson::dom::element unset;
        if (a.at(2).get(unset) || !unset.is_array()) return false;
      }
    }
    return i > 0 && i % 2 == 0;
  };
  if (frame.is_array()) {
    for (auto item : frame.get_array()) {
      simdjson::dom::object o;
      if (!item.get_object().get(o) && !one(o)) return false;
    }
    return true;
  }
  simdjson::dom::object o;
  return frame.get_object().get(o) || one(o);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  bench::DeltaStreams json_streams, mp_streams;
  bench::FrameReader reader;
  simdjson::dom::parser dom;
  size_t at = 0;
  while (at <= in.size()) {
    size_t nl = in.find('\n', at);
    if (nl == std::string_view::npos) nl = in.size();
    std::string frame(in.substr(at, nl - at));
    const size_t len = frame.size();
    frame.resize(len + simdjson::SIMDJSON_PADDING);
    bool saw_sd = false;
    const bool ok = reader.read(frame.data(), len, frame.size(), [&](const bench::Event& ev) {
      int64_t t = 0;
      uint64_t ideal = 0;
      if (ev.op == bench::Op::kSd) {
        saw_sd = true;
        json_streams.apply(ev.sid, ev.body, ev.unset, t, &ideal, ev.pos);
      } else if (ev.op == bench::Op::kState && ev.sid) {
        json_streams.full(ev.sid, ev.from, ev.body, &ideal, ev.pos);
      }
    });
    if (ok && saw_sd) {
      simdjson::dom::element root;
      if (!dom.parse(frame.data(), len, false).get(root)) check(sds_well_formed(root));
    }
    at = nl + 1;
  }
  bench::MsgpackFrameReader mp;
  mp.read(in.data(), in.size(), [&](const bench::Event& ev) {
    int64_t t = 0;
    uint64_t ideal = 0;
    if (ev.op == bench::Op::kSd) {
      check(ev.sid > 0 && ev.mp_body != nullptr);
      mp_streams.apply(ev.sid, *ev.mp_body, ev.mp_unset, t, &ideal, ev.mp_pos);
    } else if (ev.op == bench::Op::kState && ev.sid && ev.mp_body) {
      mp_streams.full(ev.sid, ev.from, *ev.mp_body, &ideal, ev.mp_pos);
    }
  });
  return 0;
}
