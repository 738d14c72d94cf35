// The hook request's JSON and the parsing of app server answers, hostile ones
// included (PROTOCOL.md "Hooks").
#include "hooks/hook_codec.h"

#include <gtest/gtest.h>

namespace parley::hooks {
namespace {

using session::HookKind;

constexpr size_t kMax = 1024;

// An ask of tenant `t` in channel `ch` by u1 on connection 1.
session::HookAsk ask_of(HookKind kind, const TenantConfig& t, std::string ns, std::string ch) {
  session::HookAsk ask;
  ask.kind = kind;
  ask.tenant = &t;
  ask.ns = std::move(ns);
  ask.ch = std::move(ch);
  ask.user = "u1";
  ask.conn = 1;
  return ask;
}

TEST(HookRequest, PubCarriesWhatAnUpstreamMsgEventCarriesAndTheBodyAsSent) {
  TenantConfig t;
  t.id = "demo";
  session::HookAsk ask = ask_of(HookKind::kPub, t, "chat", "chat:lobby");
  ask.user = "u\"1";
  ask.conn = 0x81;
  ask.id = "m1";
  ask.body = R"({"t":"hi"})";
  EXPECT_EQ(encode_hook_request(ask, 1764460800123),
            R"({"hook":"pub","tenant":"demo","ns":"chat","ch":"chat:lobby","user":"u\"1","conn":"c81",)"
            R"("ts":1764460800123,"id":"m1","body":{"t":"hi"}})");
}

TEST(HookRequest, JoinCarriesSinceOnlyWhenGivenAndConnectHasNoChannel) {
  TenantConfig t;
  t.id = "demo";
  session::HookAsk join = ask_of(HookKind::kJoin, t, "default", "lobby");
  EXPECT_EQ(encode_hook_request(join, 5),
            R"({"hook":"join","tenant":"demo","ns":"default","ch":"lobby","user":"u1","conn":"c1","ts":5})");
  join.since = 7;
  EXPECT_NE(encode_hook_request(join, 5).find(R"("since":7})"), std::string::npos);
  session::HookAsk connect = join;
  connect.kind = HookKind::kConnect;
  EXPECT_EQ(encode_hook_request(connect, 5),
            R"({"hook":"connect","tenant":"demo","user":"u1","conn":"c1","ts":5})");
}

TEST(HookAnswer, AllowDenyAndModify) {
  auto allow = parse_hook_answer(R"({"allow":true})", HookKind::kJoin, kMax);
  ASSERT_TRUE(allow);
  EXPECT_TRUE(allow->allow);
  EXPECT_FALSE(allow->body);

  auto deny = parse_hook_answer(R"({"allow":false,"code":"rate_limited","msg":"slow down","retry_ms":500})",
                                HookKind::kPub, kMax);
  ASSERT_TRUE(deny);
  EXPECT_FALSE(deny->allow);
  EXPECT_EQ(deny->error.code, ErrorCode::kRateLimited);
  EXPECT_EQ(deny->error.msg, "slow down");
  EXPECT_EQ(deny->error.retry_ms, 500);

  auto plain_deny = parse_hook_answer(R"({"allow":false})", HookKind::kJoin, kMax);
  ASSERT_TRUE(plain_deny);
  EXPECT_EQ(plain_deny->error.code, ErrorCode::kForbidden);
  EXPECT_FALSE(plain_deny->error.msg.empty());

  // The body as the app wrote it, minified: numbers keep their text.
  auto mod = parse_hook_answer("{ \"allow\" : true, \"body\" : { \"t\" : \"***\", \"n\" : 1.0 }, \"x\":[1] }",
                               HookKind::kPub, kMax);
  ASSERT_TRUE(mod);
  ASSERT_TRUE(mod->body);
  EXPECT_EQ(*mod->body, R"({"t":"***","n":1.0})");
  auto scalar = parse_hook_answer(R"({"body":"plain","allow":true})", HookKind::kPub, kMax);
  ASSERT_TRUE(scalar);
  EXPECT_EQ(*scalar->body, R"("plain")");
}

TEST(HookAnswer, HostileAnswersAreErrorsNotVerdicts) {
  const char* bad[] = {
      "",
      "not json",
      "[]",
      "\"allow\"",
      "{}",                                        // no allow
      R"({"allow":"yes"})",                         // wrong type
      R"({"allow":1})",
      R"({"allow":false,"code":7})",
      R"({"allow":false,"code":"internal"})",       // only the server may mean that
      R"({"allow":false,"code":"made_up"})",
      R"({"allow":false,"msg":{"a":1}})",
      R"({"allow":false,"retry_ms":-1})",
      R"({"allow":false,"retry_ms":1.5})",
      R"({"allow":true,"body":{"a":)",             // truncated
      R"({"allow":true} trailing)",
      R"({"allow":true,"x":[1,2)",
  };
  for (const char* text : bad) {
    EXPECT_FALSE(parse_hook_answer(text, HookKind::kPub, kMax)) << text;
  }
}

TEST(HookAnswer, BodiesAreBoundedAndOnlyForPub) {
  const std::string big = R"({"allow":true,"body":")" + std::string(kMax, 'x') + R"("})";
  EXPECT_FALSE(parse_hook_answer(big, HookKind::kPub, kMax));
  EXPECT_FALSE(parse_hook_answer(R"({"allow":true,"body":{}})", HookKind::kJoin, kMax));
  EXPECT_FALSE(parse_hook_answer(R"({"allow":true,"body":{}})", HookKind::kConnect, kMax));
  // A deny's body is not a modification: ignored.
  auto deny = parse_hook_answer(R"({"allow":false,"body":{}})", HookKind::kJoin, kMax);
  ASSERT_TRUE(deny);
  EXPECT_FALSE(deny->allow);
  const std::string long_msg = R"({"allow":false,"msg":")" + std::string(kMaxDenyMsgBytes + 1, 'm') + R"("})";
  EXPECT_FALSE(parse_hook_answer(long_msg, HookKind::kJoin, kMax));
}

}  // namespace
}  // namespace parley::hooks
