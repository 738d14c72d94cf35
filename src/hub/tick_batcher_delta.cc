// State deltas at the batcher (PROTOCOL.md "State deltas").
//
// Per tick, not per receiver: each stream's delta against the body its
// previous drain sent is written once per drain, into one shared view of the
// batch (`primary`: the `sd` where the stream has a base, else the full state
// with its sid), and a second view holds the full state with sid of each event
// that has a delta (`alt`), for the members that lack the base. A member that
// received every drain since the bases were sent takes `primary` whole, as one
// slice; others pick per event. Which members have a base is known without
// per-receiver state per stream: a member received a stream's previous body
// when it was a member then (Member::since_gen, first_from), its cell has not
// changed since (Local::cell_changed), and that body was unpositioned or sent
// from a cell next to the member's. Anything else gets the full body: never a
// delta against something the member may not have. bench/decisions/... and
// docs/architecture.md have the figures that chose this over per-receiver bases.
#include <algorithm>

#include <fmt/format.h>

#include "hub/tick_batcher.h"
#include "protocol/msgpack_encoder.h"

namespace parley::hub {

namespace {

// Streams a channel keeps per loop, beyond which new ones are sent whole
// without a sid: a sender inventing keys cannot grow the table without bound.
size_t stream_cap(size_t members) { return 8 * members + 1024; }

bool neighbours(const Cell& a, const Cell& b) {
  auto near = [](int64_t u, int64_t v) { return u - v >= -1 && u - v <= 1; };
  return near(a.x, b.x) && near(a.y, b.y) && near(a.z, b.z);
}

// A body with a top-level "$bin" key is sent whole: a delta holding only that
// field would be the object {"$bin":...}, which MessagePack members receive as
// bin (PROTOCOL.md "Binary encoding"), not as a field to set.
bool has_bin_key(std::string_view body, const protocol::BodyFields& f) {
  for (const auto& field : f.fields) {
    if (f.key(body, field) == "$bin") return true;
  }
  return false;
}

std::string_view body_of(const ChannelEvent& ev) {
  const std::string_view json = *ev.json;
  return json.substr(json.size() - 1 - ev.body_len, ev.body_len);
}

// A state's `pos` (its JSON array), or empty: it sits just before ,"body":
std::string_view pos_of(const ChannelEvent& ev) {
  const std::string_view json = *ev.json;
  const std::string_view head = json.substr(0, json.size() - 1 - ev.body_len - 8);
  const size_t at = head.rfind(R"(,"pos":[)");
  // A '"' inside a string is escaped, so ,"pos":[ is never inside one.
  return at == std::string_view::npos ? std::string_view() : head.substr(at + 7);
}

// The full state with its sid: {"op":"state","tick","ts","sid":S,<the rest>
void append_full_with_sid(std::string& out, const ChannelEvent& ev, std::string_view stamp,
                          uint32_t sid) {
  out += stamp;
  fmt::format_to(std::back_inserter(out), R"("sid":{},)", sid);
  out += std::string_view(*ev.json).substr(kStateFrameOpen.size());
}

constexpr char kComma[] = ",";
constexpr char kOpen[] = "[";
constexpr char kSdsClose[] = "]}";

// MessagePack array headers of 0..2 * kMaxSdsEntries elements, static: a
// member's `d` header is a slice of this table.
struct ArrayHeaders {
  static constexpr size_t kCount = 2 * 1024 + 1;
  uint8_t bytes[kCount][3];
  uint8_t len[kCount];
  ArrayHeaders() {
    for (size_t n = 0; n < kCount; ++n) {
      if (n < 16) {
        bytes[n][0] = static_cast<uint8_t>(0x90 | n);
        len[n] = 1;
      } else {
        bytes[n][0] = 0xdc;
        bytes[n][1] = static_cast<uint8_t>(n >> 8);
        bytes[n][2] = static_cast<uint8_t>(n & 0xff);
        len[n] = 3;
      }
    }
  }
};
const ArrayHeaders& array_headers() {
  static const ArrayHeaders table;
  return table;
}

}  // namespace

void TickBatcher::prepare_streams(Local& local) {
  const size_t n = local.pending.size();
  const uint64_t gen = local.gen;
  devents_.assign(n, DeltaEvent{});
  if (next_fields_.size() < n) next_fields_.resize(n);
  min_base_gen_ = UINT64_MAX;
  positioned_base_ = false;
  for (uint32_t i = 0; i < n; ++i) {
    const ChannelEvent& ev = local.pending[i];
    if (!ev.delta || ev.coalesce_key.empty() || !std::string_view(*ev.json).starts_with(kStateFrameOpen) ||
        ev.json->size() < ev.body_len + 9) {
      continue;
    }
    auto it = local.streams.find(ev.coalesce_key);
    if (!protocol::parse_body_fields(body_of(ev), next_fields_[i]) ||
        has_bin_key(body_of(ev), next_fields_[i])) {
      // Sent whole without a sid; the stream's next body is sent whole too.
      if (it != local.streams.end()) it->second.base_gen = 0;
      continue;
    }
    if (it == local.streams.end()) {
      if (local.streams.size() >= stream_cap(local.members.size())) continue;
      it = local.streams.emplace(ev.coalesce_key, StateStream{}).first;
      it->second.sid = next_sid_++;
    }
    StateStream& s = it->second;
    DeltaEvent& d = devents_[i];
    d.stream = &s;
    batch_streams_ = true;
    // A second event of one stream in a drain (a state that came after its
    // tick fired, before the drain ran) goes whole: its base is the first.
    if (s.seen_gen != gen && s.base_gen != 0) {
      d.base_gen = s.base_gen;
      d.base_index = s.base_index;
      d.base_cell = s.base_cell;
      min_base_gen_ = std::min(min_base_gen_, d.base_gen);
      positioned_base_ |= d.base_cell.has_value();
    }
    s.seen_gen = gen;
  }
}

void TickBatcher::commit_streams(Local& local) {
  for (uint32_t i = 0; i < devents_.size(); ++i) {
    StateStream* s = devents_[i].stream;
    if (!s) continue;
    const ChannelEvent& ev = local.pending[i];
    s->base = ev.json;
    s->body_len = ev.body_len;
    std::swap(s->fields, next_fields_[i]);  // the scratch keeps the old capacity
    s->base_gen = local.gen;
    s->base_index = i;
    s->base_cell = ev.cell;
  }
}

void TickBatcher::build_delta_buffers(Local& local, const net::SharedBuf& json) {
  const size_t n = local.pending.size();
  std::string prim, alt;
  dprim_spans_.clear();
  dalt_spans_.assign(n, {0, 0});
  std::string sd_open = R"({"op":"sd",)";
  sd_open.append(stamp_.substr(kStateFrameOpen.size()));  // "tick":N,"ts":T,
  for (uint32_t i = 0; i < n; ++i) {
    const ChannelEvent& ev = local.pending[i];
    const DeltaEvent& d = devents_[i];
    if (i) prim += ',';
    const size_t at = prim.size();
    if (!d.stream) {
      prim.append(*json, spans_[i].first, spans_[i].second - spans_[i].first);
    } else if (d.base_gen == 0) {
      append_full_with_sid(prim, ev, stamp_, d.stream->sid);
    } else {
      const StateStream& s = *d.stream;
      const std::string_view base = std::string_view(*s.base).substr(s.base->size() - 1 - s.body_len, s.body_len);
      prim += sd_open;
      fmt::format_to(std::back_inserter(prim), R"("sid":{},)", s.sid);
      if (const std::string_view pos = pos_of(ev); !pos.empty()) {
        prim += R"("pos":)";
        prim += pos;
        prim += ',';
      }
      protocol::append_state_delta(prim, base, s.fields, body_of(ev), next_fields_[i]);
      prim += '}';
      if (!alt.empty()) alt += ',';
      const size_t alt_at = alt.size();
      append_full_with_sid(alt, ev, stamp_, s.sid);
      dalt_spans_[i] = {alt_at, alt.size()};
    }
    dprim_spans_.emplace_back(at, prim.size());
  }
  dprim_ = std::make_shared<const std::string>(std::move(prim));
  dalt_ = std::make_shared<const std::string>(std::move(alt));
}

std::pair<TickBatcher::Encoded, TickBatcher::Encoded> TickBatcher::delta_encoded_for(
    Local& local, const Subscriber& sub, const net::SharedBuf& json) {
  if (!dprim_) build_delta_buffers(local, json);
  if (sub.encoding() != protocol::Encoding::kMsgpack) {
    return {{&dprim_, &dprim_spans_, false, metrics::WireForm::kJsonDelta, local.traffic},
            {&dalt_, &dalt_spans_, false, metrics::WireForm::kJsonDelta, local.traffic}};
  }
  if (!mp_dprim_) {
    convert_spans(*dprim_, dprim_spans_, mp_dprim_, mp_dprim_spans_);
    convert_spans(*dalt_, dalt_spans_, mp_dalt_, mp_dalt_spans_);
  }
  return {{&mp_dprim_, &mp_dprim_spans_, true, metrics::WireForm::kMsgpackDelta, local.traffic},
          {&mp_dalt_, &mp_dalt_spans_, true, metrics::WireForm::kMsgpackDelta, local.traffic}};
}

bool TickBatcher::has_base(const Local& local, const Member& m, uint32_t i) const {
  const DeltaEvent& d = devents_[i];
  if (m.since_gen > d.base_gen) return false;  // not a member then
  if (m.since_gen == d.base_gen && d.base_index < m.first_from) return false;  // pending when it joined
  if (!d.base_cell) return true;               // unpositioned: every member got it
  const uint64_t conn = m.sub->conn_id();
  if (auto it = local.cell_changed.find(conn); it != local.cell_changed.end() && it->second > d.base_gen) {
    return false;  // its cell then is not the one it has now
  }
  const Cell* cell = local.grid ? local.grid->cell_of_member(conn) : nullptr;
  return !cell || neighbours(*cell, *d.base_cell);  // no cell: it receives everything
}

void TickBatcher::build_sds_buffer(Local& local) {
  const size_t n = local.pending.size();
  std::string buf = R"({"op":"sds",)";
  buf.append(stamp_.substr(kStateFrameOpen.size()));  // "tick":N,"ts":T,
  buf += R"("d":[)";
  dsds_head_ = buf.size();
  dsds_spans_.assign(n, {0, 0});
  dsds_value_at_.assign(n, 0);
  bool first = true;
  for (uint32_t i = 0; i < n; ++i) {
    const DeltaEvent& d = devents_[i];
    if (!d.stream || d.base_gen == 0) continue;
    const ChannelEvent& ev = local.pending[i];
    const StateStream& s = *d.stream;
    const std::string_view base = std::string_view(*s.base).substr(s.base->size() - 1 - s.body_len, s.body_len);
    const std::string_view next = body_of(ev);
    if (!first) buf += ',';
    first = false;
    const size_t at = buf.size();
    fmt::format_to(std::back_inserter(buf), "{},", s.sid);
    dsds_value_at_[i] = static_cast<uint32_t>(buf.size());
    const std::string_view pos = pos_of(ev);
    const bool removed = protocol::has_removed_fields(base, s.fields, next, next_fields_[i]);
    if (pos.empty() && !removed) {
      protocol::append_changed_fields(buf, base, s.fields, next, next_fields_[i]);
    } else {
      buf += '[';
      buf += pos.empty() ? std::string_view("null") : pos;
      buf += ',';
      protocol::append_changed_fields(buf, base, s.fields, next, next_fields_[i]);
      if (removed) {
        buf += ',';
        protocol::append_removed_keys(buf, base, s.fields, next, next_fields_[i]);
      }
      buf += ']';
    }
    dsds_spans_[i] = {at, buf.size()};
  }
  dsds_ = std::make_shared<const std::string>(std::move(buf));
}

TickBatcher::SdsView TickBatcher::sds_for(Local& local, const Subscriber& sub) {
  if (!dsds_) build_sds_buffer(local);
  if (sub.encoding() != protocol::Encoding::kMsgpack) {
    return {&dsds_, &dsds_spans_, dsds_head_, false, metrics::WireForm::kJsonDelta, local.traffic};
  }
  if (!mp_dsds_) {
    const std::string& json = *dsds_;
    std::string buf;
    // The head as a map whose `d` is empty, less that empty array's one byte.
    std::string head(json, 0, dsds_head_);
    head += "]}";
    protocol::append_msgpack_from_json(buf, head);
    buf.pop_back();
    mp_dsds_head_ = buf.size();
    mp_dsds_spans_.assign(dsds_spans_.size(), {0, 0});
    for (size_t i = 0; i < dsds_spans_.size(); ++i) {
      const auto [begin, end] = dsds_spans_[i];
      if (begin == end) continue;
      const size_t at = buf.size();
      const size_t value_at = dsds_value_at_[i];
      // The sid (an integer), then the value: its delta body is a body ($bin).
      protocol::append_msgpack_from_json(buf, std::string_view(json).substr(begin, value_at - 1 - begin));
      if (!protocol::append_msgpack_from_json(buf, std::string_view(json).substr(value_at, end - value_at),
                                              true)) {
        buf.resize(at);  // never for text the batcher wrote; the entry's event goes whole
        continue;
      }
      mp_dsds_spans_[i] = {at, buf.size()};
    }
    mp_dsds_ = std::make_shared<const std::string>(std::move(buf));
  }
  return {&mp_dsds_, &mp_dsds_spans_, mp_dsds_head_, true, metrics::WireForm::kMsgpackDelta, local.traffic};
}

void TickBatcher::add_sds(Assembly& a, const SdsView& v, const std::vector<uint32_t>& events, size_t k,
                          size_t j) {
  const auto& spans = *v.spans;
  uint64_t bytes = v.head;
  if (!v.msgpack) {
    a.frame.add_static(a.events > 0 ? kComma : kOpen, 1);
    bytes += 1;
  }
  a.frame.add_shared(*v.buf, 0, v.head);
  if (v.msgpack) {
    const ArrayHeaders& h = array_headers();
    const size_t n = 2 * (j - k + 1);
    a.frame.add_static(reinterpret_cast<const char*>(h.bytes[n]), h.len[n]);
    bytes += h.len[n];
  }
  // Entries of consecutive events are adjacent in the buffer: one slice a run.
  for (size_t r = k; r <= j;) {
    size_t e = r;
    while (e + 1 <= j && events[e + 1] == events[e] + 1) ++e;
    if (!v.msgpack && r != k) {
      a.frame.add_static(kComma, 1);
      bytes += 1;
    }
    const size_t at = spans[events[r]].first;
    const size_t len = spans[events[e]].second - at;
    a.frame.add_shared(*v.buf, at, len);
    bytes += len;
    r = e + 1;
  }
  if (!v.msgpack) {
    a.frame.add_static(kSdsClose, 2);
    bytes += 2;
  }
  a.events += 1;
  if (v.traffic) v.traffic->add(v.form, bytes, j - k + 1);
  a.frame.charge(v.traffic, v.form, bytes);
}

uint64_t TickBatcher::append_delta_member(Local& local, Member& m, const std::vector<uint32_t>& events,
                                          const net::SharedBuf& json) {
  if (events.empty()) return 0;
  Subscriber& sub = *m.sub;
  Assembly* a = assembly_of(sub);
  if (!a) a = &open_assembly(m.sub);
  const auto [prim, alt] = delta_encoded_for(local, sub, json);
  const bool all_primary = settled(m);
  auto use_alt = [&](uint32_t i) {
    return !all_primary && devents_[i].base_gen != 0 && !has_base(local, m, i);
  };
  if (sub.state_delta_batch()) {
    // Each event from the view it can use: 0 primary (no delta: plain, or
    // whole with its sid), 1 alt (whole: it lacks the base), 2 an entry of an
    // `sds` (consecutive entries of its list share one, whatever lies between
    // them in the batch).
    const SdsView sds = sds_for(local, sub);
    kinds_.resize(events.size());
    for (size_t k = 0; k < events.size(); ++k) {
      const uint32_t i = events[k];
      kinds_[k] = devents_[i].base_gen == 0 ? 0 : use_alt(i) ? 1 : (*sds.spans)[i].second != 0 ? 2 : 1;
    }
    for (size_t k = 0; k < events.size();) {
      const uint8_t kind = kinds_[k];
      size_t j = k;
      if (kind == 2) {
        while (j + 1 < events.size() && kinds_[j + 1] == 2 && j + 1 - k < kMaxSdsEntries) ++j;
        add_sds(*a, sds, events, k, j);
      } else {
        while (j + 1 < events.size() && events[j + 1] == events[j] + 1 && kinds_[j + 1] == kind) ++j;
        add_run(*a, kind == 1 ? alt : prim, events[k], events[j]);
      }
      k = j + 1;
    }
    return events.size();
  }
  // Runs of consecutive events from one view are one slice each.
  for (size_t k = 0; k < events.size();) {
    const bool from_alt = use_alt(events[k]);
    size_t j = k;
    while (j + 1 < events.size() && events[j + 1] == events[j] + 1 && use_alt(events[j + 1]) == from_alt) ++j;
    add_run(*a, from_alt ? alt : prim, events[k], events[j]);
    k = j + 1;
  }
  return events.size();
}

}  // namespace parley::hub
