// agent::MetadataService with the kernel injected: its worker side (agent/metadata_plumbing.h)
// plumbs the ovnmeta namespaces into a fake kernel (tests/fakes/fake_netlink.h) on the real
// worker thread, and its loop side serves the listeners that kernel hands back (loopback sockets
// standing in for sockets inside the namespaces). Its Southbound participant is fed no transport:
// the test hands the service the view the participant would publish. No root, no netlink.
#include "agent/metadata_service.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "metadata/sb_participant.h"
#include "tests/fakes/fake_http_client.h"
#include "tests/fakes/fake_netlink.h"

namespace okna::agent {
namespace {

using namespace std::chrono_literals;

// The fake kernel, whose listeners are real sockets on the loopback (the server must accept on
// them); records where each was asked for.
class ListeningFakeNetlink : public okna::testing::FakeNetlink {
 public:
  core::Result<int> openListener(const std::string& name,
                                 const netns::ListenerOptions& options) override {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return core::makeError("socket", errno);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) {
      const int e = errno;
      ::close(fd);
      return core::makeError("bind", e);
    }
    listeners.push_back(name + " " + options.address + ":" + std::to_string(options.port));
    return fd;
  }
  std::vector<std::string> listeners;
};

class MetadataServiceTest : public ::testing::Test {
 protected:
  MetadataServiceTest() {
    service_ = std::make_unique<MetadataService>(io_, clock_, http_, config_, southbound_, metrics_,
                                                 health_, kernel_);
  }
  ~MetadataServiceTest() override {
    if (service_) service_->stop();
  }

  // One network (net-a) with its metadata port and a VM bound to this chassis; br-int has no
  // ports yet.
  static metadata::SouthboundView view() {
    metadata::SouthboundView s;
    s.connected = true;
    s.systemId = "cmp-1";
    ovsdb::SbMetadataView& v = s.sb;
    v.enabled = true;
    v.synced = true;
    v.version = 1;
    ovsdb::SbRows rows;
    rows.datapathNames["dp-a"] = "neutron-net-a";
    ovsdb::SbPort md;
    md.uuid = md.logicalPort = "md-net-a";
    md.type = "localport";
    md.datapath = "dp-a";
    md.mac0 = "fa:16:3e:00:00:01 10.0.1.2";
    md.cidrs = "10.0.1.2/24";
    md.deviceOwner = "network:distributed";
    rows.ports.push_back(md);
    ovsdb::SbPort vm;
    vm.uuid = vm.logicalPort = "vm-net-a";
    vm.datapath = "dp-a";
    vm.onChassis = true;
    vm.mac0 = "fa:16:3e:00:01:01 10.0.1.10";
    vm.deviceId = "dev-vm-net-a";
    rows.ports.push_back(vm);
    v.rows = std::move(rows);
    return s;
  }

  // Runs the loop until `cond` holds; `limit` is a safety net, not a timing assertion.
  bool runUntil(const std::function<bool()>& cond, std::chrono::seconds limit = 30s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cond() && std::chrono::steady_clock::now() < end) {
      io_.restart();
      io_.run_one_for(50ms);
    }
    return cond();
  }

  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  okna::testing::FakeHttpClient http_;
  metadata::MetadataConfig config_;
  ListeningFakeNetlink kernel_;
  std::shared_ptr<metadata::SouthboundParticipant> southbound_ =
      std::make_shared<metadata::SouthboundParticipant>(0ms);
  std::unique_ptr<MetadataService> service_;
};

TEST_F(MetadataServiceTest, PlumbsThroughTheInjectedKernelAndServesItsListeners) {
  service_->apply({true, "compute role"});
  service_->onView(view());
  ASSERT_TRUE(runUntil([&] { return service_->listenerCount("net-a") == 2; }))
      << service_->describe().dump();
  // Set up and listening; no VM reaches it before its port is on br-int.
  EXPECT_EQ(service_->describe()["networks"][0]["state"], "plugging")
      << service_->describe().dump();
  // Its readiness (handed on at most every outputInterval during a burst) says why not ready.
  ASSERT_TRUE(runUntil([&] {
    const auto h = service_->health();
    return h && h->detail.find("tapnet-a0 not yet on br-int") != std::string::npos;
  })) << service_->health().value_or(core::HealthRegistry::Check{}).detail;
  EXPECT_EQ(service_->health()->name, "metadata");
  EXPECT_FALSE(service_->health()->ok);

  // The worker thread is done with the fake once stopped: what it did is read from here.
  service_->stop();
  ASSERT_TRUE(kernel_.namespaces.count("ovnmeta-net-a")) << "created in the injected kernel";
  const auto& links = kernel_.namespaces.at("ovnmeta-net-a").links;
  ASSERT_TRUE(links.count("tapnet-a1")) << "the namespace end of the veth";
  EXPECT_EQ(links.at("tapnet-a1").mac, "fa:16:3e:00:00:01");
  EXPECT_TRUE(kernel_.namespaces.at("").links.count("tapnet-a0")) << "the host end";
  EXPECT_EQ(kernel_.listeners,
            (std::vector<std::string>{"ovnmeta-net-a 169.254.169.254:80",
                                      "ovnmeta-net-a fe80::a9fe:a9fe%tapnet-a1:80"}));
}

}  // namespace
}  // namespace okna::agent
