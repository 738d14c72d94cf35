#include "upstream/event_json.h"

#include "common/json_writer.h"

namespace parley::upstream {

namespace {
std::string_view type_name(hub::UpstreamEventType t) {
  switch (t) {
    case hub::UpstreamEventType::kJoin: return "join";
    case hub::UpstreamEventType::kLeave: return "leave";
    case hub::UpstreamEventType::kMsg: return "msg";
    case hub::UpstreamEventType::kState: return "state";
    case hub::UpstreamEventType::kUp: return "up";
    case hub::UpstreamEventType::kEdit: return "edit";
    case hub::UpstreamEventType::kDelete: return "delete";
  }
  return "unknown";
}
}  // namespace

void append_event_json(std::string& out, const hub::UpstreamEvent& ev) {
  JsonWriter w(out);
  w.begin_object()
      .field("type", type_name(ev.type))
      .field("tenant", ev.tenant ? std::string_view(ev.tenant->id) : std::string_view())
      .field("ch", ev.ch)
      .field("user", ev.user)
      .field("conn", hub::connection_name(ev.conn))
      .field_num("ts", ev.ts_ms);
  switch (ev.type) {
    case hub::UpstreamEventType::kMsg:
      w.field_unum("seq", ev.seq).field("id", ev.id).field_raw("body", ev.body.empty() ? "null" : ev.body);
      break;
    case hub::UpstreamEventType::kState:
      w.field("key", ev.key).field_raw("body", ev.body.empty() ? "null" : ev.body);
      break;
    case hub::UpstreamEventType::kUp:
      w.field_raw("body", ev.body.empty() ? "null" : ev.body);
      break;
    case hub::UpstreamEventType::kEdit:
      w.field_unum("seq", ev.seq).field_unum("target", ev.target).field_raw("body", ev.body.empty() ? "null" : ev.body);
      break;
    case hub::UpstreamEventType::kDelete:
      w.field_unum("seq", ev.seq).field_unum("target", ev.target);
      break;
    case hub::UpstreamEventType::kJoin:
    case hub::UpstreamEventType::kLeave:
      break;
  }
  w.end_object();
}

}  // namespace parley::upstream
