// State deltas (PROTOCOL.md "State deltas"): what changed between two bodies,
// and the client's rule that rebuilds the new body from the base and a delta.
// The vectors are PROTOCOL.md's own.
#include "protocol/state_delta.h"

#include <gtest/gtest.h>
#include <simdjson.h>

namespace parley::protocol {
namespace {

std::string delta_of(std::string_view base, std::string_view next) {
  BodyFields b, n;
  EXPECT_TRUE(parse_body_fields(base, b)) << base;
  EXPECT_TRUE(parse_body_fields(next, n)) << next;
  std::string out;
  append_state_delta(out, base, b, next, n);
  return out;
}

// The delta's "body" object and "unset" keys, applied to base.
std::string applied(std::string_view base, const std::string& delta_fields) {
  simdjson::dom::parser parser;
  const std::string obj = "{" + delta_fields + "}";
  simdjson::dom::element e = parser.parse(obj);
  std::vector<std::string> unset;
  simdjson::dom::array arr;
  if (!e["unset"].get(arr)) {
    for (auto k : arr) unset.emplace_back(std::string_view(k));
  }
  std::string out;
  EXPECT_TRUE(apply_state_delta(base, simdjson::minify(e["body"]), unset, out));
  return out;
}

TEST(StateDelta, ProtocolVectors) {
  // 1: a position moves; the name stays.
  EXPECT_EQ(delta_of(R"({"x":1,"y":2,"name":"ann"})", R"({"x":1.5,"y":2,"name":"ann"})"),
            R"("body":{"x":1.5})");
  EXPECT_EQ(applied(R"({"x":1,"y":2,"name":"ann"})", R"("body":{"x":1.5})"),
            R"({"x":1.5,"y":2,"name":"ann"})");
  // 2: nothing changed: an empty body, still a delivery.
  EXPECT_EQ(delta_of(R"({"x":1})", R"({"x":1})"), R"("body":{})");
  // 3: a field goes, one comes; values compare by their text (1.0 is not 1).
  EXPECT_EQ(delta_of(R"({"x":1,"hp":9,"fx":null})", R"({"x":1.0,"hp":9,"emote":"wave"})"),
            R"("body":{"x":1.0,"emote":"wave"},"unset":["fx"])");
  EXPECT_EQ(applied(R"({"x":1,"hp":9,"fx":null})", R"("body":{"x":1.0,"emote":"wave"},"unset":["fx"])"),
            R"({"x":1.0,"hp":9,"emote":"wave"})");
  // 4: nested values are replaced whole.
  EXPECT_EQ(delta_of(R"({"inv":[1,2],"o":{"a":1,"b":2}})", R"({"inv":[1,2],"o":{"a":1,"b":3}})"),
            R"("body":{"o":{"a":1,"b":3}})");
  // 5: to and from an empty object.
  EXPECT_EQ(delta_of(R"({"a":1})", R"({})"), R"("body":{},"unset":["a"])");
  EXPECT_EQ(applied(R"({"a":1})", R"("body":{},"unset":["a"])"), "{}");
  EXPECT_EQ(applied("{}", R"("body":{"a":"}"})"), R"({"a":"}"})");
}

TEST(StateDelta, BodiesWithoutOneMeaningAreNotDeltaBodies) {
  BodyFields f;
  for (const char* b : {"1", R"("s")", "[1]", "null", R"({"a":1,"a":2})", R"({"a\u0062":1})",
                        R"({"a":1)", R"({"a":})", R"({"a" 1})", R"({"a":1,})", R"({"a":[1}})",
                        R"({"a":"x)", "{} x", ""}) {
    EXPECT_FALSE(parse_body_fields(b, f)) << b;
  }
  std::string many = "{";
  for (size_t i = 0; i <= kMaxDeltaFields; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  many += "}";
  EXPECT_FALSE(parse_body_fields(many, f));
  EXPECT_TRUE(parse_body_fields(R"( { "a" : [1, {"b": "]"}] , "c":"\"" } )", f));
  ASSERT_EQ(f.fields.size(), 2u);
}

TEST(StateDelta, ApplyingTheDeltaGivesTheNewBody) {
  const char* bodies[] = {R"({"t":1,"x":1,"y":2})", R"({"t":2,"x":1,"y":2})", R"({"t":3,"y":2})",
                          R"({"t":4,"y":{"z":[1,2,3]},"x":"q"})", R"({})", R"({"only":true})"};
  simdjson::dom::parser p1, p2;
  for (const char* a : bodies) {
    for (const char* b : bodies) {
      const std::string got = applied(a, delta_of(a, b));
      // As JSON values (field order is not part of a body's meaning).
      simdjson::dom::object x = p1.parse(got), y = p2.parse(std::string(b));
      EXPECT_EQ(x.size(), y.size()) << a << " -> " << b << " gave " << got;
      for (auto [k, v] : y) {
        simdjson::dom::element w;
        ASSERT_FALSE(x[k].get(w)) << got << " lacks " << k;
        EXPECT_EQ(simdjson::minify(w), simdjson::minify(v)) << a << " -> " << b;
      }
    }
  }
}

}  // namespace
}  // namespace parley::protocol
