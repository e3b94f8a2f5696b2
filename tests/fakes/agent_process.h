#pragma once
// Runs the real openkeel-node-agent binary for integration tests, finds its health and admin
// ports from its log, and reads /readyz (health port), /metrics and /debug/plan (admin port).

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/fakes/blocking_http.h"
#include "tests/fakes/process.h"
#include "tests/support/test_paths.h"

namespace okna::testing {

class AgentProcess {
 public:
  /** `wrapper`: a command the agent runs under (e.g. prlimit with its options). */
  AgentProcess(const std::string& dir, const std::string& configYaml, std::vector<std::string> args,
               std::vector<std::string> wrapper = {}) {
    const std::string config = dir + "/agent.yaml";
    std::ofstream(config) << configYaml;
    std::vector<std::string> argv{
        std::string(::okna::testing::kBinaryDir) + "/agent/openkeel-node-agent",
        "--config",
        config,
        "--health-listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0"};
    for (auto& a : args) argv.push_back(std::move(a));
    argv.insert(argv.begin(), wrapper.begin(), wrapper.end());
    process_ = std::make_unique<Process>(argv, dir + "/agent.log");
    const std::regex portRe(R"(serving /healthz .* on 127\.0\.0\.1:(\d+))");
    const std::regex adminPortRe(R"(serving /metrics .* on 127\.0\.0\.1:(\d+))");
    waitFor(
        [&] {
          std::smatch m;
          const std::string log = process_->log();
          if (std::regex_search(log, m, portRe)) port_ = std::stoi(m[1]);
          if (std::regex_search(log, m, adminPortRe)) adminPort_ = std::stoi(m[1]);
          return (port_ != 0 && adminPort_ != 0) || !process_->running();
        },
        std::chrono::seconds(20));
    if (port_ == 0 || adminPort_ == 0)
      throw std::runtime_error("agent did not start:\n" + process_->log());
  }

  /** From the health listener: /healthz, /livez, /readyz. */
  BlockingResponse get(const std::string& path) const {
    return httpCall("GET", "http://127.0.0.1:" + std::to_string(port_) + path);
  }
  /** From the admin listener: /metrics, /debug/plan. */
  BlockingResponse adminGet(const std::string& path) const {
    return httpCall("GET", "http://127.0.0.1:" + std::to_string(adminPort_) + path);
  }
  nlohmann::json plan() const {
    auto r = adminGet("/debug/plan");
    return r.status == 200 ? nlohmann::json::parse(r.body) : nlohmann::json();
  }
  /** The value of one metric line (exact name with labels), or -1. */
  double metric(const std::string& nameWithLabels) const {
    const std::string text = adminGet("/metrics").body;
    const auto p = text.find("\n" + nameWithLabels + " ");
    if (p == std::string::npos) return -1;
    return std::stod(text.substr(p + nameWithLabels.size() + 2));
  }
  std::string log() const { return process_->log(); }
  Process& process() { return *process_; }

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
  int adminPort_ = 0;
};

}  // namespace okna::testing
