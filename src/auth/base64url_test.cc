#include "auth/base64url.h"

#include <gtest/gtest.h>

namespace parley::auth {
namespace {

TEST(Base64Url, EncodesRfc4648VectorsWithoutPadding) {
  EXPECT_EQ(base64url_encode(""), "");
  EXPECT_EQ(base64url_encode("f"), "Zg");
  EXPECT_EQ(base64url_encode("fo"), "Zm8");
  EXPECT_EQ(base64url_encode("foo"), "Zm9v");
  EXPECT_EQ(base64url_encode("foob"), "Zm9vYg");
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");  // the two url-safe characters
}

TEST(Base64Url, RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes += char(i * 7);
    auto back = base64url_decode(base64url_encode(bytes));
    ASSERT_TRUE(back.has_value()) << i;
    EXPECT_EQ(*back, bytes);
  }
}

TEST(Base64Url, RejectsPaddingAndStandardAlphabet) {
  EXPECT_FALSE(base64url_decode("Zg==").has_value());
  EXPECT_FALSE(base64url_decode("Zm8=").has_value());
  EXPECT_FALSE(base64url_decode("+/8").has_value());
  EXPECT_FALSE(base64url_decode("Zm 9v").has_value());
}

TEST(Base64Url, RejectsImpossibleLengthAndNonCanonicalTrailingBits) {
  EXPECT_FALSE(base64url_decode("Zm9vY").has_value());  // 4n+1 characters
  EXPECT_FALSE(base64url_decode("Zh").has_value());     // "Zg" with stray low bits
  EXPECT_FALSE(base64url_decode("Zm9").has_value());    // "Zm8" with stray low bits
}

}  // namespace
}  // namespace parley::auth
