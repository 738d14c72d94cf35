// State deltas (PROTOCOL.md "State deltas"): the top-level fields of a `state`
// body that changed since a base body, and the client's rule that applies them.
// Pure functions over JSON text; no I/O.
//
// Server side the bodies are the minified JSON the decoder stored, so a field
// is compared by its value's text: `1.50` and `1.5` differ (the receiver gets
// the new text, as a full body would carry it). A body takes part only when it
// is an object whose keys hold no escape and appear once, with at most
// kMaxDeltaFields fields; anything else goes out whole (the server may always
// send a full body). The applier (the bench's audit, the fuzz target, tests)
// takes any bytes: what is not a JSON object is refused, never read past.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parley::protocol {

// Fields are matched by a linear scan (bodies of games hold a handful), so the
// cost of one delta is bounded by this squared.
inline constexpr size_t kMaxDeltaFields = 64;

// The top-level fields of a body, as offsets into its text.
struct BodyFields {
  struct Field {
    uint32_t key_at, key_len;  // the key between its quotes (no escapes in it)
    uint32_t val_at, val_len;  // the value's text
  };
  std::vector<Field> fields;
  std::string_view key(std::string_view body, const Field& f) const {
    return body.substr(f.key_at, f.key_len);
  }
  std::string_view value(std::string_view body, const Field& f) const {
    return body.substr(f.val_at, f.val_len);
  }
};

// Reads the top level of `body` (minified JSON, or JSON with whitespace
// between tokens). False when it is not an object that deltas can describe:
// not an object, a key with a backslash, a key twice, too many fields, or text
// that is not well formed at the top level.
bool parse_body_fields(std::string_view body, BodyFields& out);

// What changed from `base` to `next` (both parsed by parse_body_fields):
// appends `"body":{<each field of next that base lacks or holds with other
// text, in next's order>}` and, when base has fields next lacks,
// `,"unset":[<their keys, in base's order>]`.
void append_state_delta(std::string& out, std::string_view base, const BodyFields& base_fields,
                        std::string_view next, const BodyFields& next_fields);

// The parts of a delta, for the batched frame (PROTOCOL.md "Batched state
// deltas"): `{<changed fields>}` as above, whether base has fields next lacks,
// and `[<their keys>]`.
void append_changed_fields(std::string& out, std::string_view base, const BodyFields& base_fields,
                           std::string_view next, const BodyFields& next_fields);
bool has_removed_fields(std::string_view base, const BodyFields& base_fields, std::string_view next,
                        const BodyFields& next_fields);
void append_removed_keys(std::string& out, std::string_view base, const BodyFields& base_fields,
                         std::string_view next, const BodyFields& next_fields);

// The client's rule: `base` with the keys of `unset` removed, then each field
// of `set` (a JSON object) replacing the base's field of that key where it has
// one (in place) or appended (in set's order). Writes minified JSON to `out`.
// False when base or set is not an object parse_body_fields accepts.
bool apply_state_delta(std::string_view base, std::string_view set,
                       const std::vector<std::string>& unset, std::string& out);

}  // namespace parley::protocol
