#include "upstream/event_json.h"

#include <gtest/gtest.h>

namespace parley::upstream {
namespace {

TenantConfig demo() {
  TenantConfig t;
  t.id = "demo";
  return t;
}

TEST(EventJson, JoinAndLeaveCarryTheCommonFieldsOnly) {
  const TenantConfig t = demo();
  hub::UpstreamEvent ev{hub::UpstreamEventType::kJoin, &t, nullptr, "world:7", "u1", 0x81,
                        1764460800123, 0, "", "", ""};
  std::string out;
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"join","tenant":"demo","ch":"world:7","user":"u1","conn":"c81","ts":1764460800123})");
  ev.type = hub::UpstreamEventType::kLeave;
  out.clear();
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"leave","tenant":"demo","ch":"world:7","user":"u1","conn":"c81","ts":1764460800123})");
}

TEST(EventJson, MsgAddsSeqIdAndBody) {
  const TenantConfig t = demo();
  hub::UpstreamEvent ev{hub::UpstreamEventType::kMsg, &t, nullptr, "world:7", "u1", 0x81, 5, 9,
                        "m9", "", R"({"a":[1,2.50]})"};
  std::string out;
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"msg","tenant":"demo","ch":"world:7","user":"u1","conn":"c81","ts":5,"seq":9,"id":"m9","body":{"a":[1,2.50]}})");
}

TEST(EventJson, StateAddsKeyAndUpAddsBodyUnchanged) {
  const TenantConfig t = demo();
  hub::UpstreamEvent ev{hub::UpstreamEventType::kState, &t, nullptr, "w", "u\"1", 1, 5, 0, "",
                        "pos", "[1,2]"};
  std::string out;
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"state","tenant":"demo","ch":"w","user":"u\"1","conn":"c1","ts":5,"key":"pos","body":[1,2]})");
  ev.type = hub::UpstreamEventType::kUp;
  ev.body = R"("text")";
  out.clear();
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"up","tenant":"demo","ch":"w","user":"u\"1","conn":"c1","ts":5,"body":"text"})");
}

TEST(EventJson, EditAddsSeqTargetAndBodyDeleteSeqAndTarget) {
  const TenantConfig t = demo();
  hub::UpstreamEvent ev{hub::UpstreamEventType::kEdit, &t, nullptr, "chat:a", "mod7", 0x81, 5, 12,
                        "", "", R"({"t":"fixed"})", 9};
  std::string out;
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"edit","tenant":"demo","ch":"chat:a","user":"mod7","conn":"c81","ts":5,"seq":12,"target":9,"body":{"t":"fixed"}})");
  ev.type = hub::UpstreamEventType::kDelete;
  ev.body.clear();
  out.clear();
  append_event_json(out, ev);
  EXPECT_EQ(out, R"({"type":"delete","tenant":"demo","ch":"chat:a","user":"mod7","conn":"c81","ts":5,"seq":12,"target":9})");
}

}  // namespace
}  // namespace parley::upstream
