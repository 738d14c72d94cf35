// The JSON codec: nlohmann's parser in its non-throwing form, so a frame that
// is not JSON is a `false` and never an exception.
#include "parley/codec.h"

namespace parley {
namespace {

class JsonCodec final : public Codec {
 public:
  std::string_view name() const override { return "json"; }
  bool binary() const override { return false; }

  bool encode(const Json& frame, std::string& out) const override {
    // `replace`: invalid UTF-8 in an application string becomes U+FFFD instead
    // of an exception; the server would refuse such bytes anyway.
    out = frame.dump(-1, ' ', false, Json::error_handler_t::replace);
    return true;
  }

  bool decode(std::string_view bytes, std::vector<Json>& out) const override {
    Json v = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) return false;
    if (v.is_object()) {
      out.push_back(std::move(v));
      return true;
    }
    if (!v.is_array()) return false;
    for (const Json& e : v) {
      if (!e.is_object()) return false;
    }
    for (Json& e : v) out.push_back(std::move(e));
    return true;
  }
};

}  // namespace

std::shared_ptr<const Codec> json_codec() {
  static const std::shared_ptr<const Codec> codec = std::make_shared<JsonCodec>();
  return codec;
}

}  // namespace parley
