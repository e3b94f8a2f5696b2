#include "core/listener_guard.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

namespace okna::core {
namespace {

using namespace std::chrono_literals;

TEST(ListenerGuardTest, AcceptRetryDelayDoublesFrom10msTo1s) {
  EXPECT_EQ(acceptRetryDelay(0), 10ms);
  EXPECT_EQ(acceptRetryDelay(1), 10ms);
  EXPECT_EQ(acceptRetryDelay(2), 20ms);
  EXPECT_EQ(acceptRetryDelay(3), 40ms);
  EXPECT_EQ(acceptRetryDelay(7), 640ms);
  EXPECT_EQ(acceptRetryDelay(8), 1000ms);
  EXPECT_EQ(acceptRetryDelay(9), 1000ms);
  // No overflow of the shift however long the failures last.
  EXPECT_EQ(acceptRetryDelay(1000000), 1000ms);
}

TEST(ListenerGuardTest, LogThrottleWritesOneLinePerIntervalWithTheCountDropped) {
  LogThrottle throttle(10s);
  const LogThrottle::Clock::time_point t0{std::chrono::hours(1)};
  std::uint64_t suppressed = 99;
  ASSERT_TRUE(throttle.allow(t0, suppressed));
  EXPECT_EQ(suppressed, 0u);
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(throttle.allow(t0 + std::chrono::seconds(i), suppressed));
  EXPECT_FALSE(throttle.allow(t0 + 9999ms, suppressed));
  ASSERT_TRUE(throttle.allow(t0 + 10s, suppressed));
  EXPECT_EQ(suppressed, 6u);
  // The count restarts after each line written.
  EXPECT_FALSE(throttle.allow(t0 + 11s, suppressed));
  ASSERT_TRUE(throttle.allow(t0 + 25s, suppressed));
  EXPECT_EQ(suppressed, 1u);
  ASSERT_TRUE(throttle.allow(t0 + 40s, suppressed));
  EXPECT_EQ(suppressed, 0u);
}

TEST(ListenerGuardTest, EscapeForLogKeepsPrintableAsciiOnly) {
  EXPECT_EQ(escapeForLog("GET /healthz HTTP/1.1"), "GET /healthz HTTP/1.1");
  EXPECT_EQ(escapeForLog("a\r\nb\tc"), "a\\x0d\\x0ab\\x09c");
  EXPECT_EQ(escapeForLog(std::string_view("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(escapeForLog("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(escapeForLog("del\x7f"), "del\\x7f");
  // A backslash is escaped too, so that an escaped line reads one way only.
  EXPECT_EQ(escapeForLog("a\\x41"), "a\\x5cx41");
  // U+202E RIGHT-TO-LEFT OVERRIDE (UTF-8 e2 80 ae) and any other byte >= 0x80.
  EXPECT_EQ(escapeForLog("\xe2\x80\xae"
                         "abc"),
            "\\xe2\\x80\\xaeabc");
  EXPECT_EQ(escapeForLog("\xff\x80"), "\\xff\\x80");
  EXPECT_EQ(escapeForLog(""), "");
}

TEST(ListenerGuardTest, EscapeForLogCutsTheInput) {
  EXPECT_EQ(escapeForLog("abcdef", 4), "abcd...");
  EXPECT_EQ(escapeForLog("abcd", 4), "abcd");
  // The cut counts input bytes: an escaped byte within it is kept whole.
  EXPECT_EQ(escapeForLog("ab\ncd", 3), "ab\\x0a...");
  EXPECT_EQ(escapeForLog(std::string(1000, 'x')).size(), 256u + 3u);
}

TEST(ListenerGuardTest, ConnectionBudgetLeavesAReserve) {
  EXPECT_EQ(connectionBudgetFor(1024), 768u);
  EXPECT_EQ(connectionBudgetFor(1048576), 786432u);
  EXPECT_EQ(connectionBudgetFor(256), 16u);
  EXPECT_EQ(connectionBudgetFor(0), 16u);
}

TEST(ListenerGuardTest, RaiseFileLimitSetsTheSoftLimitToTheHardOne) {
  auto limit = raiseFileLimit();
  ASSERT_TRUE(limit.ok()) << limit.error().message;
  EXPECT_EQ(limit->soft, limit->hard);
  EXPECT_LE(limit->before, limit->soft);
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, limit->soft);
  // Again: nothing left to raise.
  auto again = raiseFileLimit();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->before, again->soft);
}

}  // namespace
}  // namespace okna::core
