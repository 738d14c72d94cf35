#include "protocol/raw_member.h"

#include <gtest/gtest.h>

namespace parley::protocol {
namespace {

TEST(RawMember, FindsEachMemberInDocumentOrder) {
  const std::string_view json = R"( { "a" : 1 , "b":"x\"y" ,"c" :[1,{"d":"]}"}], "e":{} } )";
  EXPECT_EQ(raw_member_value(json, 0), "1");
  EXPECT_EQ(raw_member_value(json, 1), R"("x\"y")");
  EXPECT_EQ(raw_member_value(json, 2), R"([1,{"d":"]}"}])");
  EXPECT_EQ(raw_member_value(json, 3), "{}");
  EXPECT_EQ(raw_member_value(json, 4), std::nullopt);
}

TEST(RawMember, SkipsKeysWithEscapedQuotesAndBackslashes) {
  EXPECT_EQ(raw_member_value(R"({"k\\":1,"\"":[true,false,null]})", 1), "[true,false,null]");
}

TEST(RawMember, TakesScalarsUpToTheirDelimiter) {
  EXPECT_EQ(raw_member_value("{\"a\":-1.5e+3\n}", 0), "-1.5e+3");
  EXPECT_EQ(raw_member_value(R"({"a":null})", 0), "null");
}

TEST(RawMember, GivesUpOnWhatIsNotAnObject) {
  EXPECT_EQ(raw_member_value("[1]", 0), std::nullopt);
  EXPECT_EQ(raw_member_value("{}", 0), std::nullopt);
  EXPECT_EQ(raw_member_value("", 0), std::nullopt);
}

TEST(RawMember, NeverReadsPastTruncatedInput) {
  for (std::string_view cut : {R"({"a)", R"({"a":)", R"({"a":"x\)", R"({"a":[1,{"b")",
                               R"({"a" 1})"}) {
    EXPECT_EQ(raw_member_value(cut, 0), std::nullopt) << cut;
  }
  EXPECT_EQ(raw_member_value(R"({"a":1,)", 1), std::nullopt);
}

}  // namespace
}  // namespace parley::protocol
