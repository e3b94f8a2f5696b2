#pragma once
// Starts the project's fake kube-apiserver (tests/fake_apiserver) on a free loopback port in a
// temp dir, with an admin token and the restricted node-agent token, and stops it at the end.

#include <filesystem>
#include <string>
#include <vector>

#include "tests/fakes/blocking_http.h"
#include "tests/fakes/process.h"
#include "tests/support/test_paths.h"

namespace okna::testing {

class FakeApiServer {
 public:
  static constexpr const char* kAdminToken = "admin-token";
  static constexpr const char* kAgentToken = "agent-token";

  explicit FakeApiServer(const std::vector<std::string>& objectFiles,
                         const std::vector<std::string>& extraArgs = {}) {
    namespace fs = std::filesystem;
    dir_ = fs::temp_directory_path() /
           ("okna-apiserver-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::vector<std::string> argv{
        "/usr/bin/python3",
        std::string(::okna::testing::kSourceDir) + "/tests/fake_apiserver/fake_apiserver.py",
        "--listen",
        "127.0.0.1:0",
        "--tls-dir",
        (dir_ / "tls").string(),
        "--token",
        std::string("admin=") + kAdminToken,
        "--token",
        std::string("node-agent=") + kAgentToken + ":node-agents",
        "--ready-file",
        (dir_ / "url").string()};
    for (const auto& f : objectFiles) {
      argv.push_back("--objects");
      argv.push_back(f);
    }
    for (const auto& a : extraArgs) argv.push_back(a);
    process_ = std::make_unique<Process>(argv, (dir_ / "apiserver.log").string());
    if (!waitFor([&] { return fs::exists(dir_ / "url") || !process_->running(); },
                 std::chrono::seconds(30)) ||
        !fs::exists(dir_ / "url"))
      throw std::runtime_error("fake apiserver did not start: " + process_->log());
    url_ = readWholeFile((dir_ / "url").string());
  }
  ~FakeApiServer() {
    process_.reset();
    std::filesystem::remove_all(dir_);
  }

  const std::string& url() const { return url_; }
  std::string caFile() const { return (dir_ / "tls" / "ca.crt").string(); }
  std::string kubeconfig() const { return (dir_ / "tls" / "kubeconfig").string(); }
  std::string dir() const { return dir_.string(); }

  /** An API call as the admin (kubectl's rights). */
  BlockingResponse admin(const std::string& method, const std::string& path,
                         const std::string& body = "",
                         const std::string& contentType = "application/merge-patch+json") const {
    return httpCall(method, url_ + path, body, contentType, kAdminToken, caFile());
  }
  /** A control call (/_fake/...). */
  BlockingResponse control(const std::string& method, const std::string& pathAndQuery) const {
    return httpCall(method, url_ + "/_fake/" + pathAndQuery, "", "", "", caFile());
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  static std::string readWholeFile(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::filesystem::path dir_;
  std::string url_;
  std::unique_ptr<Process> process_;
};

}  // namespace okna::testing
