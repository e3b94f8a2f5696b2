// core::KeyedRetry on a clock the test drives: each key waits its own growing, capped delay, a
// success starts it over, and the owner's one timer goes to the earliest key still waiting.
#include "core/keyed_retry.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>

#include "tests/fakes/manual_clock.h"

namespace okna::core {
namespace {

using namespace std::chrono_literals;

class KeyedRetryTest : public ::testing::Test {
 protected:
  boost::asio::io_context io_;
  okna::testing::ManualClock clock_{io_};
  // No jitter: the delays are exact.
  KeyedRetry<std::string> retry_{clock_, BackoffConfig{100ms, 400ms, 2.0, 0.0}};
};

TEST_F(KeyedRetryTest, AKeyThatNeverFailedIsDue) {
  EXPECT_TRUE(retry_.due("net-a"));
  EXPECT_FALSE(retry_.dueAt("net-a"));
  EXPECT_EQ(retry_.attempts("net-a"), 0u);
  EXPECT_FALSE(retry_.nextDue());
}

TEST_F(KeyedRetryTest, EachFailureWaitsLongerUpToTheCapExactlyItsDelay) {
  const auto t0 = clock_.now();
  EXPECT_EQ(retry_.failed("net-a"), 100ms);
  EXPECT_EQ(retry_.dueAt("net-a"), t0 + 100ms);
  clock_.advance(99ms);
  EXPECT_FALSE(retry_.due("net-a")) << "not 1 ms before its delay";
  clock_.advance(1ms);
  EXPECT_TRUE(retry_.due("net-a"));
  EXPECT_EQ(retry_.failed("net-a"), 200ms);
  EXPECT_EQ(retry_.failed("net-a"), 400ms);
  EXPECT_EQ(retry_.failed("net-a"), 400ms) << "capped";
  EXPECT_EQ(retry_.attempts("net-a"), 4u);
}

TEST_F(KeyedRetryTest, KeysWaitApartAndASuccessStartsOver) {
  retry_.failed("net-a");
  retry_.failed("net-a");  // 200 ms
  clock_.advance(50ms);
  retry_.failed("net-b");  // 100 ms from now: due before net-a
  EXPECT_EQ(retry_.nextDue(), clock_.now() + 100ms);
  EXPECT_FALSE(retry_.due("net-a"));
  EXPECT_FALSE(retry_.due("net-b"));
  EXPECT_TRUE(retry_.due("net-c"));

  clock_.advance(100ms);
  EXPECT_TRUE(retry_.due("net-b"));
  EXPECT_FALSE(retry_.due("net-a"));
  EXPECT_EQ(retry_.nextDue(), clock_.now() + 50ms) << "the one still waiting: net-a";

  retry_.forget("net-b");
  EXPECT_EQ(retry_.attempts("net-b"), 0u);
  EXPECT_EQ(retry_.failed("net-b"), 100ms) << "a success starts the delays over";
  EXPECT_EQ(retry_.size(), 2u);
  clock_.advance(1s);
  EXPECT_FALSE(retry_.nextDue()) << "every key is due";
}

TEST(KeyedRetryJitterTest, DelaysStayInTheJitterWindow) {
  boost::asio::io_context io;
  okna::testing::ManualClock clock(io);
  KeyedRetry<int> retry(clock, BackoffConfig{100ms, 1000ms, 2.0, 0.5}, 7);
  for (int key = 0; key < 50; ++key) {
    const auto first = retry.failed(key);
    EXPECT_GE(first, 50ms);
    EXPECT_LE(first, 100ms);
    const auto second = retry.failed(key);
    EXPECT_GE(second, 100ms);
    EXPECT_LE(second, 200ms);
  }
}

}  // namespace
}  // namespace okna::core
