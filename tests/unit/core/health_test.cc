#include "core/health.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>

#include "core/run_loop.h"

namespace okna::core {
namespace {

TEST(HealthRegistryTest, AStoppedWorkerFailsLivenessAtOnce) {
  HealthRegistry h;
  const auto t0 = HealthRegistry::Clock::now();
  h.addHeartbeat("event-loop", std::chrono::seconds(10));
  h.addHeartbeat("ovsdb-idl", std::chrono::seconds(10));
  h.beat("ovsdb-idl");
  EXPECT_TRUE(h.live(t0));
  h.stopped("ovsdb-idl", "std::bad_alloc");
  // No silence to wait for: it is dead now, whatever its last beat.
  EXPECT_FALSE(h.live(HealthRegistry::Clock::now()));
  const auto checks = h.liveness(HealthRegistry::Clock::now());
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_TRUE(checks[0].ok);
  EXPECT_FALSE(checks[1].ok);
  EXPECT_EQ(checks[1].detail, "stopped: std::bad_alloc");
  h.beat("ovsdb-idl");
  EXPECT_FALSE(h.live(HealthRegistry::Clock::now())) << "a stopped thread does not come back";
}

TEST(RunLoopTest, AHandlerThatThrowsIsCountedAndTheLoopCarriesOn) {
  boost::asio::io_context io;
  std::vector<std::string> ran, caught;
  boost::asio::post(io, [&] { ran.push_back("first"); });
  boost::asio::post(io, [] { throw std::runtime_error("[json.exception.type_error.302]"); });
  boost::asio::post(io, [&] { ran.push_back("after"); });
  const auto n = runLoop(io, [&](const std::string& what) { caught.push_back(what); });
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(ran, (std::vector<std::string>{"first", "after"}));
  EXPECT_EQ(caught, (std::vector<std::string>{"[json.exception.type_error.302]"}));
}

}  // namespace
}  // namespace okna::core
