// The encoding of frames on the wire, behind an interface so that a second
// encoding (MessagePack, PROTOCOL.md "Binary encoding") plugs in beside JSON
// without touching the state machine.
//
// Thread: a codec is immutable after construction; any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parley/json.h"

namespace parley {

class Codec {
 public:
  virtual ~Codec() = default;

  /// "json" or "msgpack": what `hello`'s `enc` / the subprotocol names.
  virtual std::string_view name() const = 0;
  /// True when frames travel as binary WebSocket messages.
  virtual bool binary() const = 0;
  /// Encodes one client frame (an object). False if it cannot be encoded.
  virtual bool encode(const Json& frame, std::string& out) const = 0;
  /// Decodes one server frame: a single object or an array of objects
  /// (PROTOCOL.md "Transports"), appended to `out` in order. False, with `out`
  /// unchanged, when the bytes are not such a frame.
  virtual bool decode(std::string_view bytes, std::vector<Json>& out) const = 0;
};

/// The JSON encoding (text frames). Shared; it holds no state.
std::shared_ptr<const Codec> json_codec();

/// MessagePack (PROTOCOL.md "Binary encoding: MessagePack"): the WebSocket
/// subprotocol `parley.v1.msgpack`, or `"enc":"msgpack"` in a TCP / Unix
/// `hello`. Bodies reach the application as they would over JSON: a `bin`
/// inside a body is the object {"$bin": "<standard base64, padded>"}, and
/// such an object (one key, canonical base64) in a body the application
/// sends goes out as `bin`. Shared; it holds no state.
std::shared_ptr<const Codec> msgpack_codec();

/// {"$bin": base64 of `bytes`}: a binary value of a body, in either encoding.
Json make_bin(std::string_view bytes);
/// The bytes of a {"$bin": canonical base64} value; false for anything else.
bool read_bin(const Json& value, std::string& bytes);

}  // namespace parley
