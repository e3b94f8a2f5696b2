#pragma once
// The fixture of the MetadataServer unit tests: the server on 127.0.0.1 on its own loop thread,
// a scripted Nova (FakeHttpClient), a port table the test fills (StaticLookup). Other VMs
// connect from 127.0.0.2, 127.0.0.3... (RawClient's source address).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <list>
#include <string>

#include "core/clock.h"
#include "core/metrics.h"
#include "metadata/config.h"
#include "metadata/server.h"
#include "static_lookup.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/fakes/loop_thread.h"
#include "tests/fakes/process.h"
#include "tests/fakes/raw_http.h"

namespace okna::metadata {

using okna::testing::getRequest;
using okna::testing::RawClient;
using okna::testing::waitFor;

inline const std::string kNet = "6f1e4c3a-1111-2222-3333-444455556666";
inline const InstancePort kVm{"lport-1", "4b1a0cc0-7c2d-4e6a-9a9b-1a2b3c4d5e6f", "project-1", ""};
// The same VM's port without an instance: its requests are answered 404 without asking Nova.
inline const InstancePort kNoInstance{"lport-1", "", "project-1", ""};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.limits.maxConnectionsPerNamespace = 3;
    config_.limits.maxRequestHeaderBytes = 1024;
    config_.limits.maxBodyBytes = 64;
    config_.limits.maxInFlightPerNamespace = 1;
    // The tests of the busy-network timeout set their own; the others keep idle connections.
    config_.limits.busyIdleTimeout = std::chrono::seconds(60);
    config_.nova.host = "10.9.9.9";
    lookup_.setPort(kNet, "127.0.0.1", kVm);
  }
  void start() {
    server_ =
        std::make_unique<MetadataServer>(loop_.io(), clock_, http_, config_, lookup_, metrics_);
    auto [fd, port] = okna::testing::listenOnLoopback();
    port_ = port;
    auto status = loop_.run([&, fd = fd] { return server_->addListener(kNet, fd); });
    ASSERT_TRUE(status.ok()) << status.error().message;
  }
  void TearDown() override {
    if (server_) loop_.run([&] { server_.reset(); });
    loop_.stop();
  }
  std::shared_ptr<okna::testing::FakeHttpClient::Pending> nextNova() {
    std::shared_ptr<okna::testing::FakeHttpClient::Pending> p;
    waitFor([&] { return (p = loop_.run([&] { return http_.next(); })) != nullptr; },
            std::chrono::seconds(10));
    return p;
  }
  void answer(const std::shared_ptr<okna::testing::FakeHttpClient::Pending>& p, long status,
              const std::string& body, const std::string& type = "application/json") {
    loop_.run([&] {
      p->response.headers["content-type"] = type;
      p->reply(status, body);
    });
  }
  std::size_t connections() {
    return loop_.run([&] { return server_->connectionCount(kNet); });
  }
  // Registers VM `n`, connecting from 127.0.0.n, as a port of its own in `project`; without
  // `instance` its port has no device_id (404 without Nova). Returns its address.
  std::string addVm(int n, const std::string& project, bool instance = true) {
    const std::string ip = "127.0.0." + std::to_string(n);
    const auto& port = strings_.emplace_back("lport-" + std::to_string(n));
    const auto& device =
        strings_.emplace_back(instance ? fmt::format("4b1a0cc0-7c2d-4e6a-9a9b-{:012}", n) : "");
    const auto& owner = strings_.emplace_back(project);
    lookup_.setPort(kNet, ip, {port, device, owner, ""});
    return ip;
  }
  double metric(const std::string& line) {
    const std::string text = loop_.run([&] { return metrics_.render(); });
    const auto pos = text.find("\n" + line + " ");
    return pos == std::string::npos ? -1 : std::stod(text.substr(pos + line.size() + 2));
  }

  // The lookup's strings (InstancePort views them).
  std::list<std::string> strings_;
  okna::testing::LoopThread loop_;
  core::AsioClock clock_{loop_.io()};
  okna::testing::FakeHttpClient http_;
  core::MetricsRegistry metrics_;
  MetadataConfig config_;
  StaticLookup lookup_;
  std::unique_ptr<MetadataServer> server_;
  int port_ = 0;
};

}  // namespace okna::metadata
