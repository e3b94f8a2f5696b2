#pragma once
// The fixture of the Placement integration tests: one real Placement (Debian placement-api 8.0,
// sqlite, noauth2) per test binary, started by the fixture scripts on loopback; each test uses its
// own node (fresh name and uid), so tests share the server.

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/curl_http_client.h"
#include "placement/reconciler.h"
#include "tests/fakes/placement_plan.h"
#include "tests/integration/placement/counting_http_client.h"
#include "tests/integration/placement/harness.h"

namespace okna::placement {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::makeNode;
using testing::makePod;

class PlacementIT : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::placementInstalled()) return;
    dir_ = new std::string(testing::makeTempDir("okna-placement-it-"));
    if (!testing::runScript(testing::kFixtures + "/start-placement.sh " + *dir_ + "/p",
                            *dir_ + "/p.out"))
      std::cerr << "start-placement.sh failed:\n" << testing::readFile(*dir_ + "/p.out") << "\n";
    url_ = new std::string(testing::readFile(*dir_ + "/p/url"));
  }
  static void TearDownTestSuite() {
    if (dir_ == nullptr) return;
    testing::runScript(testing::kFixtures + "/stop.sh " + *dir_ + "/p", *dir_ + "/stop.out");
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete url_;
    dir_ = url_ = nullptr;
  }

  void SetUp() override {
    if (!testing::placementInstalled())
      GTEST_SKIP()
          << "Debian's placement-api (and uwsgi) is not installed: apt-get install placement-api "
             "uwsgi-core uwsgi-plugin-python3 (packaging/install-deps.sh)";
    ASSERT_FALSE(url_->empty()) << "the Placement fixture did not start";
    name_ = "it-" + testing::randomUuid().substr(0, 8);
    uid_ = testing::randomUuid();
    node_ = makeNode(name_, uid_);
    config_.auth.type = "none";
    config_.endpointOverride = *url_;
    config_.debounce = 200ms;
    config_.resyncInterval = 0s;
    config_.capabilityTraits = {};
    config_.backoff.initial = 50ms;
    config_.backoff.max = 500ms;
    config_.stateFile = *dir_ + "/" + name_ + ".state.json";
  }

  std::unique_ptr<Reconciler> agent(const std::string& url = "") {
    PlacementConfig c = config_;
    if (!url.empty()) c.endpointOverride = url;
    auto r = std::make_unique<Reconciler>(io_, clock_, counting_, c, metrics_, health_);
    r->setEventSink([this](const std::string&, const std::string& reason, const std::string& m) {
      events_.emplace_back(reason, m);
    });
    r->setActive(true);
    return r;
  }
  json get(const std::string& path) { return op_.call("GET", path).body; }
  json inventories(const std::string& uuid) {
    return get("/resource_providers/" + uuid + "/inventories")["inventories"];
  }
  // Empty while the provider does not exist yet.
  std::set<std::string> traits(const std::string& uuid) {
    const json body = get("/resource_providers/" + uuid + "/traits");
    if (!body.is_object() || !body.contains("traits") || !body["traits"].is_array()) return {};
    return body["traits"].get<std::set<std::string>>();
  }
  bool pushed(Reconciler& r, unsigned passes) {
    return testing::runUntil(io_, [&] { return r.successfulPasses() >= passes && !r.busy(); });
  }

  static inline std::string* dir_ = nullptr;
  static inline std::string* url_ = nullptr;
  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  core::CurlHttpClient http_{io_};
  testing::CountingHttpClient counting_{http_};
  testing::Operator op_{io_, http_, url_ != nullptr ? *url_ : std::string()};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  PlacementConfig config_;
  std::string name_;
  std::string uid_;
  k8s::NodeInfo node_;
  // Node Events the reconciler sent: {reason, message}.
  std::vector<std::pair<std::string, std::string>> events_;
};

/** A consumer's allocation body (microversion 1.28) on one provider. */
inline json allocation(const std::string& provider, const json& resources) {
  return {{"allocations", {{provider, {{"resources", resources}}}}},
          {"project_id", testing::randomUuid()},
          {"user_id", testing::randomUuid()},
          {"consumer_generation", nullptr}};
}

/** The readiness detail of "placement" ("" when absent). */
inline std::string placementDetail(const core::HealthRegistry& health) {
  for (const auto& c : health.readiness())
    if (c.name == "placement") return c.detail;
  return "";
}

}  // namespace okna::placement
