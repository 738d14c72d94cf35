#include "protocol/identifier.h"

#include <gtest/gtest.h>

#include <string>

namespace parley::protocol {
namespace {

TEST(Identifier, CountsCodePointsNotBytes) {
  EXPECT_EQ(code_points("abc"), 3u);
  EXPECT_EQ(code_points("\xC3\xA9t\xC3\xA9"), 3u);  // "été"
  EXPECT_TRUE(is_valid_id(std::string(64, 'a')));
  EXPECT_FALSE(is_valid_id(std::string(65, 'a')));
  std::string e64;
  for (int i = 0; i < 64; ++i) e64 += "\xC3\xA9";
  EXPECT_TRUE(is_valid_id(e64));  // 128 bytes, 64 chars
}

TEST(Identifier, EmptyIsInvalid) { EXPECT_FALSE(is_valid_id("")); }

TEST(Identifier, RefusesC0ControlsDelAndC1Controls) {
  EXPECT_FALSE(is_valid_id(std::string("a\0b", 3)));
  EXPECT_FALSE(is_valid_id("a\nb"));
  EXPECT_FALSE(is_valid_id("a\x1f"));
  EXPECT_FALSE(is_valid_id("a\x7f"));
  EXPECT_FALSE(is_valid_id("a\xC2\x85"));  // U+0085 NEL
  EXPECT_FALSE(is_valid_id("\xC2\x9F"));
}

TEST(Identifier, AcceptsPrintableUnicodeAndSpaces) {
  EXPECT_TRUE(is_valid_id("player one"));
  EXPECT_TRUE(is_valid_id("\xC2\xA0nbsp"));      // U+00A0 is not a control
  EXPECT_TRUE(is_valid_id("\xF0\x9F\x8E\xAE"));  // an emoji
}

// The one rule says what is wrong, in the words every caller answers with
// (decoder: "id must be a string of 1-64 chars"; a token: "token claim sub ...").
TEST(Identifier, AFaultNamesTheRuleItBreaks) {
  EXPECT_EQ(id_fault("ok"), IdFault::kNone);
  EXPECT_EQ(id_fault(""), IdFault::kLength);
  EXPECT_EQ(id_fault(std::string(kMaxIdChars + 1, 'a')), IdFault::kLength);
  EXPECT_EQ(id_fault("a\nb"), IdFault::kControlChars);
  EXPECT_EQ(id_fault_text(IdFault::kLength), "must be a string of 1-64 chars");
  EXPECT_EQ(id_fault_text(IdFault::kControlChars), "must not contain control characters");
}

}  // namespace
}  // namespace parley::protocol
