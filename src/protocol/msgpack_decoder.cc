#include "protocol/msgpack_decoder.h"

#include <msgpack.hpp>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/json_writer.h"
#include "protocol/base64.h"

namespace parley::protocol {

namespace {

// What a value is to the envelope: bin is allowed only inside a body, and a
// body is the frame's `body` or an `events[i].body`.
enum class Role : uint8_t { kOther, kTop, kEvents, kEvent, kBody };

template <typename T>
void append_float(std::string& out, T v) {
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
  // The mapping: a float is a JSON number with a fraction or an exponent.
  if (std::find_if(buf, r.ptr, [](char c) { return c == '.' || c == 'e'; }) == r.ptr) out += ".0";
}

void append_integer(std::string& out, auto v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

struct Level {
  Role role;
  bool map;
  bool first = true;
  bool in_key = false;
  std::string_view key;  // a map's current key (points into the frame)
};

// msgpack-c visitor writing the JSON text of what it visits. One per frame.
class ToJson {
 public:
  // `starts`, when given, receives where each body's value begins (as
  // ArrivedSizes offsets: `body`, then one entry per `events` element).
  ToJson(std::string& out, std::string_view data, Role top, std::vector<Level>& stack,
         ArrivedSizes* starts);

  const char* error() const { return error_; }

  bool visit_nil() { return scalar() && (out_ += "null", true); }
  bool visit_boolean(bool v) { return scalar() && (out_ += v ? "true" : "false", true); }
  bool visit_positive_integer(uint64_t v) { return scalar() && (append_integer(out_, v), true); }
  bool visit_negative_integer(int64_t v) { return scalar() && (append_integer(out_, v), true); }
  bool visit_float32(float v) { return real(v); }
  bool visit_float64(double v) { return real(v); }
  bool visit_str(const char* v, uint32_t size);
  bool visit_bin(const char* v, uint32_t size);
  bool visit_ext(const char*, uint32_t) { return fail("ext values are not allowed"); }
  bool start_array(uint32_t n);
  bool start_array_item();
  bool end_array_item() { return true; }
  bool end_array();
  bool start_map(uint32_t n);
  bool start_map_key();
  bool end_map_key();
  bool start_map_value();
  bool end_map_value() { return true; }
  bool end_map();
  void parse_error(size_t, size_t) {}
  void insufficient_bytes(size_t, size_t) {}
  bool referenced() const { return false; }
  void set_referenced(bool) {}

 private:
  bool fail(const char* why) {
    if (!error_) error_ = why;
    return false;
  }
  // Every value but a str: refused where a map key is expected.
  bool scalar() {
    if (!stack_.empty() && in_key()) return fail("map keys must be strings");
    if (stack_.size() >= kMaxMsgpackDepth) return fail("values nest too deep");
    if (stack_.empty() && next_ == Role::kTop) return fail("frame is not a MessagePack map");
    return true;
  }
  template <typename T>
  bool real(T v) {
    if (!scalar()) return false;
    if (!std::isfinite(v)) return fail("floats must be finite");
    append_float(out_, v);
    return true;
  }
  bool container(uint32_t n);
  bool in_key() const;

  std::string& out_;
  const char* const base_;
  const size_t frame_bytes_;
  ArrivedSizes* const starts_;
  std::vector<Level>& stack_;
  Role next_;  // the role of the value about to start
  const char* error_ = nullptr;
};

ToJson::ToJson(std::string& out, std::string_view data, Role top, std::vector<Level>& stack,
               ArrivedSizes* starts)
    : out_(out), base_(data.data()), frame_bytes_(data.size()), starts_(starts), stack_(stack),
      next_(top) {
  stack_.clear();
}

bool ToJson::in_key() const { return stack_.back().map && stack_.back().in_key; }

bool ToJson::visit_str(const char* v, uint32_t size) {
  if (stack_.empty() && next_ == Role::kTop) return fail("frame is not a MessagePack map");
  if (stack_.size() >= kMaxMsgpackDepth) return fail("values nest too deep");
  if (!simdjson::validate_utf8(v, size)) return fail("strings must be valid UTF-8");
  const std::string_view s(v, size);
  if (!stack_.empty() && in_key()) {
    stack_.back().key = s;
    // A body's value starts right after its key's bytes; the first one counts
    // (a second is a duplicate field, refused by the decoder).
    if (starts_ && s == "body") {
      const auto at = static_cast<size_t>(v + size - base_);
      size_t* slot = nullptr;
      if (stack_.back().role == Role::kTop) slot = &starts_->body;
      if (stack_.back().role == Role::kEvent && !starts_->event_bodies.empty()) {
        slot = &starts_->event_bodies.back();
      }
      if (slot && *slot == ArrivedSizes::kUnknown) *slot = at;
    }
  }
  append_json_string(out_, s);
  return true;
}

bool ToJson::visit_bin(const char* v, uint32_t size) {
  if (!scalar()) return false;
  if (next_ != Role::kBody) return fail("bin is allowed only inside a body");
  out_ += R"({"$bin":")";
  append_base64(out_, std::string_view(v, size));
  out_ += "\"}";
  return true;
}

bool ToJson::container(uint32_t n) {
  if (!stack_.empty() && in_key()) return fail("map keys must be strings");
  if (stack_.size() >= kMaxMsgpackDepth) return fail("values nest too deep");
  // Each element takes at least one byte: a larger count is a lie, refused
  // before anything is set aside for it.
  if (n > frame_bytes_) return fail("a container declares more elements than the frame holds");
  return true;
}

bool ToJson::start_array(uint32_t n) {
  if (stack_.empty() && next_ == Role::kTop) return fail("frame is not a MessagePack map");
  if (!container(n)) return false;
  stack_.push_back(Level{next_, false, true, false, {}});
  out_ += '[';
  return true;
}

bool ToJson::start_array_item() {
  Level& l = stack_.back();
  if (!l.first) out_ += ',';
  l.first = false;
  next_ = l.role == Role::kBody ? Role::kBody : l.role == Role::kEvents ? Role::kEvent : Role::kOther;
  if (starts_ && l.role == Role::kEvents && stack_.size() == 2) {
    starts_->event_bodies.push_back(ArrivedSizes::kUnknown);
  }
  return true;
}

bool ToJson::end_array() {
  stack_.pop_back();
  out_ += ']';
  return true;
}

bool ToJson::start_map(uint32_t n) {
  if (!container(n)) return false;
  stack_.push_back(Level{next_, true, true, false, {}});
  out_ += '{';
  return true;
}

bool ToJson::start_map_key() {
  Level& l = stack_.back();
  if (!l.first) out_ += ',';
  l.first = false;
  l.in_key = true;
  return true;
}

bool ToJson::end_map_key() {
  stack_.back().in_key = false;
  out_ += ':';
  return true;
}

bool ToJson::start_map_value() {
  const Level& l = stack_.back();
  switch (l.role) {
    case Role::kBody:
      next_ = Role::kBody;
      break;
    case Role::kTop:
      next_ = l.key == "body" ? Role::kBody : l.key == "events" ? Role::kEvents : Role::kOther;
      break;
    case Role::kEvent:
      next_ = l.key == "body" ? Role::kBody : Role::kOther;
      break;
    default:
      next_ = Role::kOther;
  }
  return true;
}

bool ToJson::end_map() {
  stack_.pop_back();
  out_ += '}';
  return true;
}

std::optional<std::string> convert(std::string_view data, std::string& json, Role top,
                                   ArrivedSizes* starts = nullptr) {
  thread_local std::vector<Level> stack;
  ToJson v(json, data, top, stack, starts);
  size_t off = 0;
  if (!msgpack::parse(data.data(), data.size(), off, v)) {
    return std::string(v.error() ? v.error() : "frame is not valid MessagePack");
  }
  if (off != data.size()) return std::string("a frame holds one MessagePack value");
  return std::nullopt;
}

// --- sizes as they arrived --------------------------------------------------

// The bytes of the one value at `start` of a validated frame (msgpack-c skips it).
size_t value_size(std::string_view frame, size_t start) {
  if (start == ArrivedSizes::kUnknown) return start;
  msgpack::null_visitor skip;
  size_t off = start;
  msgpack::parse(frame.data(), frame.size(), off, skip);
  return off - start;
}

}  // namespace

std::optional<std::string> msgpack_frame_to_json(std::string_view frame, std::string& json) {
  return convert(frame, json, Role::kTop);
}

std::optional<std::string> msgpack_body_to_json(std::string_view value, std::string& json) {
  return convert(value, json, Role::kBody);
}

std::variant<ClientOp, DecodeFailure> decode_client_op_msgpack(std::string_view frame,
                                                               const DecodeLimits& limits) {
  const auto too_large = [&] {
    return DecodeFailure{Error{ErrorCode::kTooLarge, "frame exceeds max_message_bytes (" +
                                                         std::to_string(limits.max_message_bytes) + ")"},
                         {}};
  };
  if (frame.size() > hard_frame_limit(limits)) return too_large();
  thread_local std::string json;
  thread_local ArrivedSizes sizes;
  json.clear();
  sizes.body = ArrivedSizes::kUnknown;
  sizes.event_bodies.clear();
  if (auto why = convert(frame, json, Role::kTop, &sizes)) {
    // As in JSON: an unreadable frame over the limit is too_large, without rid.
    if (frame.size() > limits.max_message_bytes) return too_large();
    return DecodeFailure{Error{ErrorCode::kBadRequest, std::move(*why)}, {}};
  }
  sizes.frame = frame.size();
  sizes.body = value_size(frame, sizes.body);
  for (size_t& b : sizes.event_bodies) b = value_size(frame, b);
  return decode_converted_client_op(json, limits, sizes);
}

}  // namespace parley::protocol
