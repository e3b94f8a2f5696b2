#include "core/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <chrono>
#include <mutex>

namespace okna::core {

namespace {

// JSON lines: {"ts":"...","level":"info","logger":"k8s","msg":"..."}; one object per line so
// that log collectors parse it without a multi-line rule.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto tt = std::chrono::system_clock::to_time_t(msg.time);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char ts[64];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms));
    const auto level = spdlog::level::to_string_view(msg.level);
    append(dest, "{\"ts\":\"");
    append(dest, ts);
    append(dest, "\",\"level\":\"");
    append(dest, std::string_view(level.data(), level.size()));
    append(dest, "\",\"logger\":\"");
    escape(dest, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
    append(dest, "\",\"msg\":\"");
    escape(dest, std::string_view(msg.payload.data(), msg.payload.size()));
    append(dest, "\"}\n");
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

 private:
  static void append(spdlog::memory_buf_t& d, std::string_view s) {
    d.append(s.data(), s.data() + s.size());
  }
  static void escape(spdlog::memory_buf_t& d, std::string_view s) {
    for (unsigned char c : s) {
      switch (c) {
        case '"':
          append(d, "\\\"");
          break;
        case '\\':
          append(d, "\\\\");
          break;
        case '\n':
          append(d, "\\n");
          break;
        case '\r':
          append(d, "\\r");
          break;
        case '\t':
          append(d, "\\t");
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            append(d, buf);
          } else {
            d.push_back(static_cast<char>(c));
          }
      }
    }
  }
};

struct State {
  std::mutex mutex;
  LogConfig config;
  spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  std::map<std::string, std::shared_ptr<spdlog::logger>> loggers;
};

State& state() {
  static State s;
  return s;
}

void configure(spdlog::logger& l, const LogConfig& c) {
  auto it = c.components.find(l.name());
  l.set_level(spdlog::level::from_str(it != c.components.end() ? it->second : c.level));
  l.flush_on(spdlog::level::trace);
}

std::unique_ptr<spdlog::formatter> makeFormatter(const std::string& format) {
  if (format == "json") return std::make_unique<JsonFormatter>();
  return std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ [%n] %v",
                                                     spdlog::pattern_time_type::utc);
}

}  // namespace

bool isLogLevel(const std::string& level) {
  return level == "off" || spdlog::level::from_str(level) != spdlog::level::off;
}

Status setupLogging(const LogConfig& config) {
  if (config.format != "text" && config.format != "json")
    return makeError("log format \"" + config.format + "\": must be text or json");
  if (!isLogLevel(config.level))
    return makeError("log level \"" + config.level + "\" is not a level");
  for (const auto& [component, level] : config.components)
    if (!isLogLevel(level))
      return makeError("log level of " + component + ": \"" + level + "\" is not a level");
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.config = config;
  s.sink->set_formatter(makeFormatter(config.format));
  for (auto& [name, l] : s.loggers) configure(*l, config);
  return {};
}

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  auto& l = s.loggers[component];
  if (!l) {
    l = std::make_shared<spdlog::logger>(component, s.sink);
    configure(*l, s.config);
  }
  return l;
}

}  // namespace okna::core
