#include "agent/health_server.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

namespace okna::agent {
namespace {

TEST(HealthServerTest, ReadyzFollowsComponents) {
  boost::asio::io_context io;
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, health, metrics, [] { return nlohmann::json{{"roles", {"compute"}}}; });
  health.addComponent("node-informer");
  health.addComponent("pod-informer");
  auto r = server.handle("/readyz");
  EXPECT_EQ(r.status, 503u);
  EXPECT_NE(r.body.find("[-]node-informer failed: not synced yet"), std::string::npos) << r.body;
  health.setReady("node-informer", true);
  EXPECT_EQ(server.handle("/readyz").status, 503u);
  health.setReady("pod-informer", true);
  EXPECT_EQ(server.handle("/readyz").status, 200u);
  EXPECT_EQ(server.handle("/readyz").body, "ok");
  EXPECT_NE(server.handle("/readyz?verbose").body.find("[+]pod-informer ok"), std::string::npos);
}

TEST(HealthServerTest, HealthzFailsWhenAHeartbeatStops) {
  boost::asio::io_context io;
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, health, metrics, nullptr);
  health.addHeartbeat("event-loop", std::chrono::milliseconds(0));
  health.addHeartbeat("ovsdb-idl", std::chrono::hours(1));
  // A zero allowance is exceeded as soon as any time passes.
  const auto later = core::HealthRegistry::Clock::now() + std::chrono::milliseconds(5);
  EXPECT_FALSE(health.live(later));
  EXPECT_TRUE(health.liveness(later)[1].ok);
  health.addHeartbeat("event-loop", std::chrono::hours(1));
  EXPECT_EQ(server.handle("/healthz").status, 200u);
}

TEST(HealthServerTest, MetricsPlanAndNotFound) {
  boost::asio::io_context io;
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  metrics.counter("okna_test_total", "t").inc();
  HealthServer server(io, health, metrics, [] { return nlohmann::json{{"roles", {"compute"}}}; });
  auto m = server.handle("/metrics");
  EXPECT_EQ(m.contentType, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("okna_test_total 1"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(server.handle("/debug/plan").body)["roles"][0], "compute");
  EXPECT_EQ(server.handle("/nope").status, 404u);
}

TEST(HealthServerTest, PortInUseIsAClearError) {
  boost::asio::io_context io;
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer first(io, health, metrics, nullptr);
  ASSERT_TRUE(first.listen("127.0.0.1", 0).ok());
  HealthServer second(io, health, metrics, nullptr);
  auto s = second.listen("127.0.0.1", first.port());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("already in use"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace okna::agent
