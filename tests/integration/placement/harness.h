#pragma once
// Shared by the Placement integration tests and the bench: runs the OpenStack fixture scripts
// (tests/fixtures/openstack) in a temp dir, gives an "operator" client that talks to the real
// Placement directly, and builds Node/Pod inputs.

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "core/http_client.h"
#include "k8s/objects.h"
#include "tests/support/test_paths.h"

namespace okna::testing {

inline const std::string kFixtures =
    std::string(::okna::testing::kSourceDir) + "/tests/fixtures/openstack";

inline bool placementInstalled() {
  return std::filesystem::exists("/usr/bin/placement-api") &&
         std::filesystem::exists("/usr/bin/uwsgi");
}
inline bool keystoneInstalled() {
  return std::filesystem::exists("/usr/bin/keystone-wsgi-public");
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

/** Runs a fixture script; output goes to DIR.out. True on exit 0. */
inline bool runScript(const std::string& commandLine, const std::string& outFile) {
  const std::string cmd = commandLine + " >" + outFile + " 2>&1";
  return std::system(cmd.c_str()) == 0;
}

inline std::string makeTempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  return ::mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
}

/**
 * Restarts a Placement that stop.sh stopped, on the same port and with the same database (the
 * start script would pick a new port and wipe the database), with start-placement.sh's command.
 */
inline bool restartPlacement(const std::string& dir) {
  const std::string url = readFile(dir + "/url");
  const std::string port = url.substr(url.rfind(':') + 1);
  const std::string cmd =
      "cd " + dir + " && (setsid env OS_PLACEMENT_CONFIG_DIR=" + dir +
      " uwsgi --plugin python3 --master --die-on-term --need-app --lazy-apps --skip-atexit-teardown"
      " --http-socket 127.0.0.1:" +
      port +
      " --processes 1 --threads 1 --buffer-size 65535 --add-header 'Connection: close'"
      " --wsgi-file /usr/bin/placement-api --chdir " +
      dir + " </dev/null >>" + dir + "/placement.log 2>&1 & echo $! >" + dir + "/placement.pid)";
  return std::system(cmd.c_str()) == 0;
}

inline std::string randomUuid() {
  std::random_device rd;
  std::mt19937_64 rng(rd());
  unsigned char b[16];
  for (auto& c : b) c = static_cast<unsigned char>(rng());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

/** Runs the loop until `cond` holds; bounded by `limit` (a safety net, not a timing assertion). */
template <typename F>
bool runUntil(boost::asio::io_context& io, F cond,
              std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond() && std::chrono::steady_clock::now() < end) {
    io.run_for(std::chrono::milliseconds(10));
    if (io.stopped()) io.restart();
  }
  return cond();
}

/** Lets the loop run for `d` (for "nothing is sent" checks past a debounce window). */
inline void runFor(boost::asio::io_context& io, std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
    io.run_for(std::chrono::milliseconds(10));
    if (io.stopped()) io.restart();
  }
}

/** Direct Placement calls, as an operator (or Nova) would make them, outside the agent. */
class Operator {
 public:
  Operator(boost::asio::io_context& io, core::HttpClient& http, std::string url,
           std::string token = "admin")
      : io_(io), http_(http), url_(std::move(url)), token_(std::move(token)) {}

  struct Reply {
    long status = 0;
    nlohmann::json body;
  };

  /** `service`: "placement", or "compute" (Nova, which also reads its legacy header). */
  Reply call(const std::string& method, const std::string& path,
             const nlohmann::json& body = nullptr, const std::string& microversion = "1.39",
             const std::string& service = "placement") {
    core::HttpRequest r;
    r.method = method;
    r.url = url_ + path;
    r.headers = {{"X-Auth-Token", token_},
                 {"OpenStack-API-Version", service + " " + microversion},
                 {"Accept", "application/json"}};
    if (service == "compute") r.headers["X-OpenStack-Nova-API-Version"] = microversion;
    if (!body.is_null()) {
      r.headers["Content-Type"] = "application/json";
      r.body = body.dump();
    }
    bool done = false;
    Reply reply;
    core::HttpCallbacks cb;
    cb.onDone = [&](core::Result<core::HttpResponse> res) {
      done = true;
      if (!res) return;
      reply.status = res->status;
      reply.body = nlohmann::json::parse(res->body, nullptr, false);
    };
    http_.send(std::move(r), std::move(cb));
    runUntil(
        io_, [&] { return done; }, std::chrono::seconds(30));
    return reply;
  }

 private:
  boost::asio::io_context& io_;
  core::HttpClient& http_;
  std::string url_;
  std::string token_;
};

inline k8s::NodeInfo makeNode(const std::string& name, const std::string& uid) {
  k8s::NodeInfo n;
  n.name = name;
  n.uid = uid;
  n.allocatable = {{"cpu", "16"},
                   {"memory", "64Gi"},
                   {"hugepages-1Gi", "4Gi"},
                   {"hugepages-2Mi", "512Mi"},
                   {"pods", "110"}};
  return n;
}

inline k8s::PodInfo makePod(const std::string& node, const std::string& name,
                            const std::string& cpu, const std::string& memory, bool vm = false) {
  k8s::PodInfo p;
  p.namespace_ = vm ? "tenant" : "infra";
  p.name = name;
  p.nodeName = node;
  p.phase = "Running";
  if (vm) p.labels["kubevirt.io"] = "virt-launcher";
  p.containers.push_back({"main", {{"cpu", cpu}, {"memory", memory}}, ""});
  return p;
}

}  // namespace okna::testing
