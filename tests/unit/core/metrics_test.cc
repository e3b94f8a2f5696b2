#include "core/metrics.h"

#include <gtest/gtest.h>

#include "core/backoff.h"

namespace okna::core {
namespace {

TEST(MetricsTest, RendersPrometheusText) {
  MetricsRegistry r;
  r.counter("okna_x_total", "Things", {{"kind", "a\"b"}}).inc(2);
  r.gauge("okna_y", "Level").set(1.5);
  auto& h = r.histogram("okna_d_seconds", "Durations", {}, {0.1, 1});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  const std::string text = r.render();
  EXPECT_NE(text.find("# TYPE okna_x_total counter\nokna_x_total{kind=\"a\\\"b\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("okna_y 1.5\n"), std::string::npos);
  EXPECT_NE(text.find("okna_d_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("okna_d_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("okna_d_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("okna_d_seconds_count 3\n"), std::string::npos);
}

TEST(MetricsTest, SameNameDifferentTypeIsABug) {
  MetricsRegistry r;
  r.counter("okna_z", "z");
  EXPECT_THROW(r.gauge("okna_z", "z"), std::logic_error);
}

TEST(BackoffTest, GrowsWithJitterAndCaps) {
  Backoff b({std::chrono::milliseconds(100), std::chrono::milliseconds(1000), 2.0, 0.5}, 42);
  std::int64_t previousMax = 0;
  for (int i = 0; i < 10; ++i) {
    const auto d = b.next().count();
    const std::int64_t ceiling = std::min<std::int64_t>(100LL << i, 1000);
    EXPECT_LE(d, ceiling);
    EXPECT_GE(d, ceiling / 2);
    previousMax = std::max(previousMax, d);
  }
  EXPECT_LE(previousMax, 1000);
  b.reset();
  EXPECT_LE(b.next().count(), 100);
}

}  // namespace
}  // namespace okna::core
