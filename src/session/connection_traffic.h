// What each open client connection is sent, for the admin page's listing
// (api/admin_api.cc): the connections that were sent the most since the
// previous listing, and the open connections' totals by the form they receive
// (metrics/namespace_traffic.h's encodings). Per connection on purpose only
// here: Prometheus gets no label per connection (its series would be as many
// as the connections, and gone with them).
//
// Bytes are what the connection wrote to its socket (net::Connection counts
// them as they leave: transport framing included, every frame in the
// connection's encoding, after conversion; a frame dropped at close not).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "metrics/namespace_traffic.h"

namespace parley::session {

struct ConnectionBytes {
  uint64_t conn = 0;       // the `conn` of its welcome
  std::string tenant, user;
  metrics::WireForm form = metrics::WireForm::kJson;
  uint64_t bytes_out = 0;  // since the connection opened
  uint64_t recent = 0;     // since the previous listing (or since it opened)
};

struct ConnectionTraffic {
  std::vector<ConnectionBytes> top;  // most `recent` first, at most the n asked
  struct Form {
    uint64_t connections = 0, bytes_out = 0, recent = 0;
  };
  std::array<Form, metrics::kWireForms> by_form{};  // open connections only
};

using ConnectionTrafficDone = std::function<void(ConnectionTraffic)>;

}  // namespace parley::session
