#include "auth/token_bucket.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>

namespace parley::auth {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'000'000 * kMs;  // an arbitrary steady time, far from 0

// The same behaviour is required of both buckets.
template <typename Bucket>
class Buckets : public ::testing::Test {};
using BucketTypes = ::testing::Types<TokenBucket, SharedTokenBucket>;
TYPED_TEST_SUITE(Buckets, BucketTypes);

TYPED_TEST(Buckets, BurstIsOneSecondOfTheRate) {
  TypeParam b(10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.take(kT0), 0) << i;
  EXPECT_GT(b.take(kT0), 0);
}

TYPED_TEST(Buckets, RetryMsIsTheTimeUntilTheNextToken) {
  TypeParam b(10);  // one token per 100 ms
  for (int i = 0; i < 10; ++i) ASSERT_EQ(b.take(kT0), 0);
  EXPECT_EQ(b.take(kT0), 100);
  EXPECT_EQ(b.take(kT0 + 40 * kMs), 60);
  EXPECT_EQ(b.take(kT0 + 99 * kMs), 1);
  EXPECT_EQ(b.take(kT0 + 100 * kMs), 0);
  EXPECT_EQ(b.take(kT0 + 100 * kMs), 100);
}

TYPED_TEST(Buckets, RetryMsIsAtLeastOne) {
  TypeParam b(1000);  // one token per ms
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.take(kT0), 0);
  EXPECT_EQ(b.take(kT0 + kMs - 1000), 1);  // 1 us short still says 1 ms, never 0
}

TYPED_TEST(Buckets, RefillsAtTheRateUpToTheBurstOnly) {
  TypeParam b(10);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(b.take(kT0), 0);
  int64_t later = kT0 + 350 * kMs;  // 3.5 tokens' worth
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.take(later), 0) << i;
  EXPECT_GT(b.take(later), 0);

  int64_t idle = later + 60'000 * kMs;  // a minute idle still refills one second only
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b.take(idle), 0) << i;
  EXPECT_GT(b.take(idle), 0);
}

TYPED_TEST(Buckets, ZeroPerSecondIsUnlimited) {
  TypeParam b(0);
  for (int i = 0; i < 100'000; ++i) ASSERT_EQ(b.take(kT0), 0);
}

TYPED_TEST(Buckets, AnEarlierClockReadDoesNotRefill) {
  TypeParam b(10);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(b.take(kT0 + 500 * kMs), 0);
  EXPECT_GT(b.take(kT0), 0);
  EXPECT_GT(b.take(kT0 + 500 * kMs), 0);
}

TEST(TokenBucket, DefaultConstructedIsUnlimited) {
  TokenBucket b;
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.take(kT0), 0);
}

// Two threads race over the same span of (injected) time, each trying far
// more often than the rate allows: together they may never get more than the
// burst plus what the rate refills over that span.
TEST(SharedTokenBucket, TakesManyTokensAtOnceOrNone) {
  SharedTokenBucket b(10);  // one token per 100 ms, burst 10
  EXPECT_EQ(b.take(kT0, 6), 0);
  EXPECT_EQ(b.take(kT0, 5), 100);  // 4 left: the 5th comes in 100 ms, none taken
  EXPECT_EQ(b.take(kT0, 4), 0);
  EXPECT_EQ(b.take(kT0 + 300 * kMs, 3), 0);
  EXPECT_GT(b.take(kT0 + 300 * kMs, 11), 0);  // above the burst: never fits
}

TEST(SharedTokenBucket, TwoThreadsNeverExceedBurstPlusRateTimesElapsed) {
  constexpr uint32_t kRate = 1000;
  constexpr int kSteps = 200'000;
  constexpr int64_t kStepNs = 5'000;  // 200k steps of 5 us: one second
  SharedTokenBucket b(kRate);
  std::latch start(2);
  int granted[2] = {0, 0};
  auto run = [&](int who) {
    start.arrive_and_wait();
    for (int i = 0; i <= kSteps; ++i) granted[who] += b.take(kT0 + i * kStepNs) == 0;
  };
  std::thread a(run, 0), c(run, 1);
  a.join();
  c.join();
  int64_t elapsed_ns = kSteps * kStepNs;
  int64_t bound = kRate + kRate * elapsed_ns / 1'000'000'000;
  EXPECT_LE(granted[0] + granted[1], bound);
  EXPECT_GT(granted[0] + granted[1], int(kRate));  // and it did refill
}


TEST(SharedTokenBucket, SetRateAppliesToTheNextTake) {
  constexpr int64_t kSec = 1'000'000'000;
  SharedTokenBucket b(100);
  int64_t now = 10 * kSec;
  int taken = 0;
  while (b.take(now) == 0) ++taken;
  EXPECT_EQ(taken, 100);
  // Two seconds later at 5/s: a full burst of 5, then a wait of ~200 ms.
  b.set_rate(5);
  now += 2 * kSec;
  taken = 0;
  int wait = 0;
  while ((wait = b.take(now)) == 0) ++taken;
  EXPECT_EQ(taken, 5);
  EXPECT_GT(wait, 150);
  EXPECT_LE(wait, 200);
  b.set_rate(0);  // unlimited
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.take(now), 0);
}

}  // namespace
}  // namespace parley::auth
