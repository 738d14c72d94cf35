// Reading Parley server frames in MessagePack (PROTOCOL.md "Binary encoding:
// MessagePack") natively: msgpack-c unpacks the frame into objects in a zone
// this reader keeps (str and bin reference the frame's bytes, nothing is
// copied), and the fields the bench checks are read into the same Event the
// JSON FrameReader gives, bodies as objects (Event::mp_body) for the delta
// audit. Replaces converting each frame to JSON text and parsing that, which
// cost the generator more than the server spent sending it.
//
// Thread: one per worker (the zone is reused frame after frame).
#pragma once

#include <cstddef>

#include <msgpack.hpp>

#include "server_frame.h"

namespace bench {

class MsgpackFrameReader {
 public:
  // Calls sink(const Event&) for each message of the frame (a map, or an array
  // of maps: a tick batch). False when the frame is not exactly one such value.
  template <class Sink>
  bool read(const char* data, size_t len, Sink&& sink);

 private:
  // The frame's root object, or null when it is not one MessagePack value.
  const msgpack::object* unpack(const char* data, size_t len);
  // Reads one map into ev; its `msgs` (a history page) go to `page`, an
  // sds's `d` (PROTOCOL.md "Batched state deltas") to `entries`.
  bool read_map(const msgpack::object& m, Event& ev, const msgpack::object*& page,
                const msgpack::object*& entries);
  // One entry of `d` (its sid and value) as the `sd` it stands for.
  static bool read_sds_entry(const msgpack::object& sid, const msgpack::object& value, Event& e);

  template <class Sink>
  bool read_object(const msgpack::object& m, Sink& sink, bool in_history);

  msgpack::zone zone_;
  msgpack::object root_;
};

template <class Sink>
bool MsgpackFrameReader::read(const char* data, size_t len, Sink&& sink) {
  const msgpack::object* root = unpack(data, len);
  if (!root) return false;
  if (root->type == msgpack::type::ARRAY) {
    for (uint32_t i = 0; i < root->via.array.size; ++i)
      if (!read_object(root->via.array.ptr[i], sink, false)) return false;
    return true;
  }
  return read_object(*root, sink, false);
}

template <class Sink>
bool MsgpackFrameReader::read_object(const msgpack::object& m, Sink& sink, bool in_history) {
  Event ev;
  const msgpack::object* page = nullptr;
  const msgpack::object* entries = nullptr;
  if (!read_map(m, ev, page, entries)) return false;
  if (entries) {
    const uint32_t n = entries->via.array.size;
    if (n == 0 || n % 2 != 0) return false;
    for (uint32_t i = 0; i < n; i += 2) {
      Event e;
      if (!read_sds_entry(entries->via.array.ptr[i], entries->via.array.ptr[i + 1], e)) return false;
      sink(e);
    }
  }
  if (page) {
    for (uint32_t i = 0; i < page->via.array.size; ++i)
      if (!read_object(page->via.array.ptr[i], sink, true)) return false;
  }
  if (in_history && ev.op == Op::kMsg) ev.op = Op::kHistoryMsg;
  sink(ev);
  return true;
}

}  // namespace bench
