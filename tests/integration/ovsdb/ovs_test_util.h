#pragma once
// Helpers for the OVSDB integration tests: exact reads of a real ovsdb-server through ovs-vsctl's
// JSON output (no quoting ambiguity), and an io_context driven from the test thread.

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fakes/process.h"
#include "tests/fixtures/ovs/ovsdb_server_fixture.h"

namespace okna::testing {

// An OVSDB string literal for ovs-vsctl arguments.
inline std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/** A real ovs-vswitchd on `ovs`'s database with the dummy datapath (nothing reaches the kernel),
 *  its pid file and unixctl socket (ovs-vswitchd.pid, ovs-vswitchd.ctl) in the server's
 *  directory; null when ovs-vswitchd is not installed. SIGKILLed when destroyed. */
inline std::unique_ptr<Process> startDummyVswitchd(const OvsdbServer& ovs) {
  const std::string binary = "/usr/sbin/ovs-vswitchd";
  if (::access(binary.c_str(), X_OK) != 0) return nullptr;
  const std::string& dir = ovs.dir();
  return std::make_unique<Process>(
      std::vector<std::string>{binary, ovs.remote(), "--pidfile=" + dir + "/ovs-vswitchd.pid",
                               "--unixctl=" + dir + "/ovs-vswitchd.ctl",
                               "--log-file=" + dir + "/ovs-vswitchd.log", "-vconsole:off",
                               "--disable-system", "--enable-dummy=override"},
      dir + "/ovs-vswitchd.out");
}

/** Open_vSwitch.external_ids, byte for byte. */
inline std::map<std::string, std::string> externalIds(const OvsdbServer& ovs) {
  const auto doc = nlohmann::json::parse(
      ovs.vsctl({"--format=json", "--columns=external_ids", "list", "Open_vSwitch"}));
  std::map<std::string, std::string> out;
  for (const auto& kv : doc["data"][0][0][1]) out[kv[0]] = kv[1];
  return out;
}

inline std::optional<std::string> externalId(const OvsdbServer& ovs, const std::string& key) {
  const auto ids = externalIds(ovs);
  const auto it = ids.find(key);
  return it == ids.end() ? std::nullopt : std::optional<std::string>(it->second);
}

inline bool bridgeExists(const OvsdbServer& ovs, const std::string& bridge) {
  return ovs.try_ctl({"br-exists", bridge}).exit_code == 0;
}

/** Port names of a bridge (list-ports leaves out the bridge's own internal port). */
inline std::vector<std::string> ports(const OvsdbServer& ovs, const std::string& bridge) {
  const CommandResult r = ovs.try_ctl({"list-ports", bridge});
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

/** The value of one sample ("name" or "name{labels}") in Prometheus text, or -1. */
inline double metricValue(const std::string& text, const std::string& sample) {
  const auto p = ("\n" + text).find("\n" + sample + " ");
  if (p == std::string::npos) return -1;
  return std::stod(text.substr(p + sample.size() + 1));
}

/** Runs `io` on this thread until `done` holds or `timeout` passes; returns `done()`. */
class LoopRunner {
 public:
  explicit LoopRunner(boost::asio::io_context& io) : io_(io), guard_(io.get_executor()) {}
  bool runUntil(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io_.run_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  /** Runs the loop for `d` (to check that something does NOT happen). */
  void runFor(std::chrono::milliseconds d) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline) io_.run_for(std::chrono::milliseconds(10));
  }

 private:
  boost::asio::io_context& io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
};

}  // namespace okna::testing
