// libopenvswitch's own log (vlog) in the agent's logger: with logging.format json, a message
// emitted through the library's vlog comes out on stderr as ONE JSON line of logger "ovs" with
// its level, and nothing raw (vlog's "...|module|WARN|..." console format) reaches stderr.
#include <gtest/gtest.h>

#include <spdlog/sinks/base_sink.h>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/logging.h"
#include "ovsdb/ovs_idl_glue.h"
#include "ovsdb/ovs_log.h"

namespace okna::ovsdb {
namespace {

// Tells the test when the "ovs" logger got a message containing `needle` (no sleeping).
class WaitSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  bool waitFor(const std::string& needle, std::chrono::seconds timeout) {
    std::unique_lock lock(seenMutex_);
    return seenCv_.wait_for(lock, timeout, [&] { return seen_.find(needle) != std::string::npos; });
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    {
      const std::lock_guard lock(seenMutex_);
      seen_.append(msg.payload.data(), msg.payload.size()).append("\n");
    }
    seenCv_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex seenMutex_;
  std::condition_variable seenCv_;
  std::string seen_;
};

TEST(OvsLog, ParsesTheFixedPattern) {
  EXPECT_EQ(parseOvsLogLine("WARN|reconnect|unix:/x: connection dropped"),
            (OvsLogLine{spdlog::level::warn, "reconnect", "unix:/x: connection dropped"}));
  EXPECT_EQ(parseOvsLogLine("ERR|stream_ssl|SSL_connect: a|b")->message, "SSL_connect: a|b");
  EXPECT_EQ(parseOvsLogLine("EMER|x|y")->level, spdlog::level::critical);
  EXPECT_EQ(parseOvsLogLine("DBG|x|y")->level, spdlog::level::debug);
  EXPECT_FALSE(parseOvsLogLine("second line of a message"));
  EXPECT_FALSE(parseOvsLogLine("warn|x|y"));
  EXPECT_EQ(vlogLevelFor(spdlog::level::info), 3);
  EXPECT_EQ(vlogLevelFor(spdlog::level::debug), 4);
  EXPECT_EQ(vlogLevelFor(spdlog::level::off), 0);
}

TEST(OvsLog, VlogMessagesBecomeJsonLinesOfLoggerOvsWithTheirLevel) {
  core::LogConfig config;
  config.format = "json";
  config.level = "info";
  ASSERT_TRUE(core::setupLogging(config).ok());
  auto sink = std::make_shared<WaitSink>();
  core::logger("ovs")->sinks().push_back(sink);
  ::testing::internal::CaptureStderr();
  routeOvsLogs();
  // In order through one pipe: the info one, were it let through, would come before the last.
  okna_ovsdb_vlog(4, "okc8 info through vlog: below the vlog level for logger level info");
  okna_ovsdb_vlog(3, "okc8 warning through vlog");
  okna_ovsdb_vlog(2, "okc8 error through vlog");
  const bool arrived = sink->waitFor("okc8 error through vlog", std::chrono::seconds(10));
  core::logger("ovs")->flush();
  const std::string err = ::testing::internal::GetCapturedStderr();
  core::logger("ovs")->sinks().pop_back();
  ASSERT_TRUE(arrived) << err;

  std::map<std::string, std::string> levels;  // message -> level
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not JSON on stderr: " << line;
    if (j.value("logger", "") == "ovs") levels[j.value("msg", "")] = j.value("level", "");
  }
  EXPECT_EQ(levels["okna_glue: okc8 warning through vlog"], "warning") << err;
  EXPECT_EQ(levels["okna_glue: okc8 error through vlog"], "error") << err;
  for (const auto& [msg, level] : levels) EXPECT_EQ(msg.find("okc8 info"), std::string::npos);
}

}  // namespace
}  // namespace okna::ovsdb
