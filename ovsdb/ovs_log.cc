#include "ovsdb/ovs_log.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/logging.h"
#include "ovsdb/ovs_idl_glue.h"

namespace okna::ovsdb {

namespace {

constexpr const char* kComponent = "ovs";

void readLoop(int fd) {
  auto log = core::logger(kComponent);
  std::string buffer;
  OvsLogLine last{spdlog::level::info, "", ""};
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string line = buffer.substr(start, nl - start);
      if (line.empty()) continue;
      if (auto parsed = parseOvsLogLine(line)) {
        last = std::move(*parsed);
        log->log(last.level, "{}: {}", last.module, last.message);
      } else {
        // A message with a newline in it: the rest keeps its level and module.
        if (last.module.empty()) {
          log->log(last.level, "{}", line);
        } else {
          log->log(last.level, "{}: {}", last.module, line);
        }
      }
    }
    buffer.erase(0, start);
  }
}

}  // namespace

std::optional<OvsLogLine> parseOvsLogLine(const std::string& line) {
  const auto bar = line.find('|');
  if (bar == std::string::npos) return std::nullopt;
  const auto bar2 = line.find('|', bar + 1);
  if (bar2 == std::string::npos) return std::nullopt;
  const std::string level = line.substr(0, bar);
  spdlog::level::level_enum l;
  if (level == "EMER") {
    l = spdlog::level::critical;
  } else if (level == "ERR") {
    l = spdlog::level::err;
  } else if (level == "WARN") {
    l = spdlog::level::warn;
  } else if (level == "INFO") {
    l = spdlog::level::info;
  } else if (level == "DBG") {
    l = spdlog::level::debug;
  } else {
    return std::nullopt;
  }
  return OvsLogLine{l, line.substr(bar + 1, bar2 - bar - 1), line.substr(bar2 + 1)};
}

int vlogLevelFor(spdlog::level::level_enum componentLevel) {
  switch (componentLevel) {
    case spdlog::level::trace:
      return 5;
    case spdlog::level::debug:
      return 4;
    case spdlog::level::info:
    case spdlog::level::warn:
      return 3;
    case spdlog::level::err:
      return 2;
    case spdlog::level::critical:
      return 1;
    default:
      return 0;
  }
}

void routeOvsLogs() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int fd = okna_ovsdb_log_to_pipe(vlogLevelFor(core::logger(kComponent)->level()));
    if (fd < 0) {
      core::logger(kComponent)
          ->warn("cannot route libopenvswitch's log ({}); it stays on stderr, at warn",
                 std::strerror(errno));
      okna_ovsdb_set_log_level(3);
      return;
    }
    std::thread([fd] {
      // Signals are the loop thread's business (Asio signal_set).
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      readLoop(fd);
    }).detach();
  });
}

}  // namespace okna::ovsdb
