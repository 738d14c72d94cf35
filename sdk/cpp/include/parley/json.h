// The JSON value type of the API (message bodies, state, `direct`): nlohmann's.
// Chosen over simdjson because the SDK needs a value that owns its data, can be
// built by the application and written back out (simdjson parses only, into
// views tied to its parser), and because nlohmann's json reads and writes
// MessagePack as well, which the binary encoding will use.
//
// The SDK itself never lets one of nlohmann's exceptions escape: it parses with
// the non-throwing entry points and checks types before it reads a field.
#pragma once

#include <nlohmann/json.hpp>

namespace parley {
using Json = nlohmann::json;
}
