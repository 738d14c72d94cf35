// Appends JSON to a std::string with no intermediate tree.
//
// Written by hand because every server frame is a flat object with a few known
// fields plus one pre-validated raw `body`: a DOM library would allocate a tree
// per frame for nothing. Callers are responsible for well-formedness (keys and
// commas); string values are escaped here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace parley {

// Appends `s` as a JSON string literal (with quotes), escaping per RFC 8259.
void append_json_string(std::string& out, std::string_view s);

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object() { sep(); out_ += '{'; first_ = true; return *this; }
  JsonWriter& end_object() { out_ += '}'; first_ = false; return *this; }
  JsonWriter& begin_array() { sep(); out_ += '['; first_ = true; return *this; }
  JsonWriter& end_array() { out_ += ']'; first_ = false; return *this; }

  JsonWriter& key(std::string_view k);
  JsonWriter& str(std::string_view v) { sep(); append_json_string(out_, v); return *this; }
  JsonWriter& num(int64_t v);
  JsonWriter& unum(uint64_t v);
  JsonWriter& boolean(bool v) { sep(); out_ += v ? "true" : "false"; return *this; }
  // Appends already-valid JSON text verbatim (a body, an echoed rid).
  JsonWriter& raw(std::string_view json) { sep(); out_ += json; return *this; }

  // Shorthands for "key":value.
  JsonWriter& field(std::string_view k, std::string_view v) { return key(k).str(v); }
  JsonWriter& field_num(std::string_view k, int64_t v) { return key(k).num(v); }
  JsonWriter& field_unum(std::string_view k, uint64_t v) { return key(k).unum(v); }
  JsonWriter& field_bool(std::string_view k, bool v) { return key(k).boolean(v); }
  JsonWriter& field_raw(std::string_view k, std::string_view json) { return key(k).raw(json); }

 private:
  void sep() {
    if (after_key_) { after_key_ = false; return; }
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace parley
