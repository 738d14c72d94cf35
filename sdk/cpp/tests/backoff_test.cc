#include "backoff.h"

#include <gtest/gtest.h>

namespace parley::detail {
namespace {

TEST(Backoff, EqualJitterSpansHalfTheCapToTheCap) {
  EXPECT_EQ(backoff_delay(0, 250, 15000, 2, 0.0), 125);
  EXPECT_EQ(backoff_delay(0, 250, 15000, 2, 1.0), 250);
  EXPECT_EQ(backoff_delay(3, 250, 15000, 2, 0.0), 1000);
  EXPECT_EQ(backoff_delay(10, 250, 15000, 2, 1.0), 15000);
  EXPECT_EQ(backoff_delay(1000, 250, 15000, 2, 0.0), 7500);  // capped; no overflow
}

TEST(Backoff, ServerGivenDelaysAreAFloor) {
  EXPECT_EQ(with_jitter(200, 0.25, 0.0), 200);
  EXPECT_EQ(with_jitter(200, 0.25, 1.0), 250);
  EXPECT_EQ(with_jitter(500, 0.5, 0.5), 625);
}

}  // namespace
}  // namespace parley::detail
