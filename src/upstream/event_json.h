// One upstream event as the JSON object of PROTOCOL.md "Upstream forwarding":
// type, tenant, ch, user, conn, ts; msg adds seq and id, state adds key, edit
// and delete add seq and target, and msg, state, up and edit add body. Pure;
// any thread.
#pragma once

#include <string>

#include "hub/upstream_sink.h"

namespace parley::upstream {

void append_event_json(std::string& out, const hub::UpstreamEvent& ev);

}  // namespace parley::upstream
