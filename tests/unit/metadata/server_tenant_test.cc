// Issue 36, point 1: fairness by who the client is, not by the address it uses. MetadataServer on
// 127.0.0.1 with VMs at 127.0.0.1, .2, .3... (ServerTest, server_fixture.h). Each test here
// failed before: counts were per address, an address of no port was served 404 and kept, a
// newcomer at the network's cap was refused, and a request still arriving held its place for the
// whole header timeout.

#include <memory>
#include <thread>
#include <vector>

#include "server_fixture.h"

namespace okna::metadata {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A VM's fixed IPs and its IPv6 link-local address are one client: one port's cap, whichever
// address it connects from.
TEST_F(ServerTest, AllAddressesOfOnePortShareItsConnectionCap) {
  config_.limits.maxConnectionsPerClient = 2;
  config_.limits.maxConnectionsPerNamespace = 16;
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  lookup_.setPort(kNet, "127.0.0.2", kNoInstance);  // the same port's second fixed IP
  start();
  RawClient a(port_), b(port_);
  ASSERT_TRUE(waitFor([&] { return connections() == 2; }, seconds(10)));
  RawClient viaSecond(port_, "127.0.0.1", "127.0.0.2");
  // The port's oldest connection made room: still two, not three.
  EXPECT_TRUE(a.closedByPeer());
  EXPECT_EQ(connections(), 2u);
  EXPECT_EQ(metric("okna_metadata_connections_evicted_total{reason=\"client\"}"), 1);
  ASSERT_TRUE(viaSecond.send(getRequest("/latest")));
  auto r = viaSecond.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

// An address that is no port of this network is closed at once, counted and logged: it holds
// nothing, and is not kept alive after a 404 to hold a place.
TEST_F(ServerTest, AnAddressOfNoPortIsClosedAtAccept) {
  lookup_.set(kNet, "127.0.0.1", LookupResult{});
  start();
  RawClient stranger(port_);
  EXPECT_TRUE(stranger.closedByPeer());
  EXPECT_EQ(metric("okna_metadata_connections_refused_total{reason=\"unknown\"}"), 1);
  EXPECT_EQ(connections(), 0u);
  // Several ports with the address (Neutron logs "More than one port found"): not served either.
  loop_.run([&] { lookup_.set(kNet, "127.0.0.1", LookupResult{2, {}, "u1, u2"}); });
  RawClient ambiguous(port_);
  EXPECT_TRUE(ambiguous.closedByPeer());
  EXPECT_EQ(metric("okna_metadata_connections_refused_total{reason=\"unknown\"}"), 2);
  EXPECT_EQ(loop_.run([&] { return http_.all().size(); }), 0u);
}

// At the network's cap the newcomer is let in; the connection that has done least (idle the
// longest) makes room. One whose request is at Nova never does.
TEST_F(ServerTest, AtTheNetworksCapTheConnectionThatDidLeastMakesRoom) {
  config_.limits.maxInFlightPerNamespace = 4;
  for (int vm = 1; vm <= 4; ++vm) addVm(vm, "project-" + std::to_string(vm));
  start();
  RawClient first(port_, "127.0.0.1", "127.0.0.1");
  RawClient second(port_, "127.0.0.1", "127.0.0.2");
  RawClient third(port_, "127.0.0.1", "127.0.0.3");
  ASSERT_TRUE(waitFor([&] { return connections() == 3; }, seconds(10)));
  // The first one asks Nova (never answered yet): it is not the one to go.
  ASSERT_TRUE(first.send(getRequest("/first")));
  auto atNova = nextNova();
  ASSERT_TRUE(atNova);
  RawClient newcomer(port_, "127.0.0.1", "127.0.0.4");
  EXPECT_TRUE(second.closedByPeer()) << "the connection idle the longest makes room";
  EXPECT_EQ(metric("okna_metadata_connections_evicted_total{reason=\"namespace\"}"), 1);
  EXPECT_EQ(metric("okna_metadata_connections_refused_total{reason=\"namespace\"}"), 0);
  ASSERT_TRUE(newcomer.send(getRequest("/newcomer")));
  auto p = nextNova();
  ASSERT_TRUE(p);
  answer(p, 200, "welcome");
  auto r = newcomer.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "welcome");
  answer(atNova, 200, "first");
  r = first.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "first");
}

// Every connection of a full network is with Nova: nobody can give way, the newcomer is refused.
TEST_F(ServerTest, AFullNetworkWhoseConnectionsAreAllWithNovaRefusesTheNewcomer) {
  config_.limits.maxInFlightPerNamespace = 4;
  for (int vm = 1; vm <= 4; ++vm) addVm(vm, "project-" + std::to_string(vm));
  start();
  std::vector<std::unique_ptr<RawClient>> asking;
  std::vector<std::shared_ptr<okna::testing::FakeHttpClient::Pending>> pending;
  for (int vm = 1; vm <= 3; ++vm) {
    const std::string source = "127.0.0." + std::to_string(vm);
    asking.push_back(std::make_unique<RawClient>(port_, "127.0.0.1", source.c_str()));
    ASSERT_TRUE(asking.back()->send(getRequest("/slow")));
    pending.push_back(nextNova());
    ASSERT_TRUE(pending.back());
  }
  RawClient newcomer(port_, "127.0.0.1", "127.0.0.4");
  EXPECT_TRUE(newcomer.closedByPeer());
  EXPECT_EQ(metric("okna_metadata_connections_refused_total{reason=\"namespace\"}"), 1);
  for (auto& p : pending) answer(p, 200, "done");
  for (auto& c : asking) EXPECT_TRUE(c->read());
}

// A request whose bytes trickle in does nothing for Nova, just as an idle connection: on a busy
// network it is cut after busyIdleTimeout, not after the whole header timeout.
TEST_F(ServerTest, ARequestStillArrivingGivesWayOnABusyNetworkAsAnIdleOneDoes) {
  config_.limits.maxConnectionsPerNamespace = 4;
  config_.limits.busyIdleTimeout = milliseconds(200);
  config_.limits.headerTimeout = seconds(30);
  lookup_.setPort(kNet, "127.0.0.1", kNoInstance);
  start();
  RawClient a(port_), b(port_), c(port_);
  ASSERT_TRUE(waitFor([&] { return connections() == 3; }, seconds(10)));
  const std::string request = getRequest("/trickled");
  const auto began = std::chrono::steady_clock::now();
  bool allCut = false;
  // A byte every 50 ms on each, until they are cut (bounded: 3 s, the header timeout is 30).
  for (std::size_t i = 0; i < request.size() - 1 && !allCut; ++i) {
    const bool sentA = a.send(request.substr(i, 1));
    const bool sentB = b.send(request.substr(i, 1));
    const bool sentC = c.send(request.substr(i, 1));
    allCut = connections() == 0;
    if (std::chrono::steady_clock::now() - began > seconds(3)) break;
    if (!sentA && !sentB && !sentC) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(waitFor([&] { return connections() == 0; }, milliseconds(500)))
      << connections() << " connections still trickling after "
      << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began).count()
      << " ms";
  EXPECT_GE(metric("okna_metadata_connections_evicted_total{reason=\"busy\"}"), 3);
}

// A project's VMs together hold at most their share of a network's connections: VMs of another
// project on the same (shared) network keep theirs.
TEST_F(ServerTest, AProjectsVmsTogetherHoldAtMostTheirShareOfConnections) {
  config_.limits.maxConnectionsPerNamespace = 8;
  config_.limits.maxConnectionsPerClient = 2;
  config_.limits.projectShare = 0.5;  // 4 of 8
  for (int vm = 1; vm <= 3; ++vm) addVm(vm, "project-a", false);
  addVm(4, "project-b", false);
  addVm(5, "project-b", false);
  start();
  std::vector<std::unique_ptr<RawClient>> tenantA;
  for (int vm = 1; vm <= 3; ++vm)
    for (int i = 0; i < 2; ++i) {
      const std::string source = "127.0.0." + std::to_string(vm);
      tenantA.push_back(std::make_unique<RawClient>(port_, "127.0.0.1", source.c_str()));
      ASSERT_TRUE(waitFor([&] { return connections() == std::min<std::size_t>(tenantA.size(), 4); },
                          seconds(10)));
    }
  EXPECT_TRUE(waitFor(
      [&] { return metric("okna_metadata_connections_evicted_total{reason=\"project\"}") == 2; },
      seconds(10)));
  EXPECT_EQ(connections(), 4u);
  // Project B's two VMs open their own caps' worth: all four stay.
  std::vector<std::unique_ptr<RawClient>> tenantB;
  for (const char* source : {"127.0.0.4", "127.0.0.4", "127.0.0.5", "127.0.0.5"})
    tenantB.push_back(std::make_unique<RawClient>(port_, "127.0.0.1", source));
  ASSERT_TRUE(waitFor([&] { return connections() == 8; }, seconds(10)));
  for (auto& c : tenantB) {
    ASSERT_TRUE(c->send(getRequest("/latest")));
    auto r = c->read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
  }
}

// ... and at most their share of its requests in flight to Nova: a request of another project
// reaches Nova at once although project A has more requests than the network has slots.
TEST_F(ServerTest, AProjectsVmsTogetherHoldAtMostTheirShareOfNovaSlots) {
  config_.limits.maxConnectionsPerNamespace = 8;
  config_.limits.maxInFlightPerNamespace = 4;
  config_.limits.maxInFlightPerClient = 1;
  config_.limits.projectShare = 0.5;  // 2 of 4
  for (int vm = 1; vm <= 4; ++vm) addVm(vm, "project-a");
  addVm(5, "project-b");
  start();
  std::vector<std::unique_ptr<RawClient>> tenantA;
  for (int vm = 1; vm <= 4; ++vm) {
    const std::string source = "127.0.0." + std::to_string(vm);
    tenantA.push_back(std::make_unique<RawClient>(port_, "127.0.0.1", source.c_str()));
    ASSERT_TRUE(tenantA.back()->send(getRequest("/a" + std::to_string(vm))));
  }
  auto a1 = nextNova();
  auto a2 = nextNova();
  ASSERT_TRUE(a1 && a2);
  ASSERT_TRUE(
      waitFor([&] { return metric("okna_metadata_requests_queued_total{limit=\"project\"}") == 2; },
              seconds(10)));
  RawClient neighbour(port_, "127.0.0.1", "127.0.0.5");
  ASSERT_TRUE(neighbour.send(getRequest("/b")));
  auto b = nextNova();
  ASSERT_TRUE(b);
  EXPECT_NE(b->request.url.find("/b"), std::string::npos) << b->request.url;
  answer(b, 200, "b");
  EXPECT_EQ(neighbour.read()->body, "b");
  // A's waiting requests go on as its own slots free.
  answer(a1, 200, "a");
  answer(a2, 200, "a");
  auto a3 = nextNova();
  auto a4 = nextNova();
  ASSERT_TRUE(a3 && a4);
  answer(a3, 200, "a");
  answer(a4, 200, "a");
  for (auto& c : tenantA) EXPECT_TRUE(c->read());
}

}  // namespace
}  // namespace okna::metadata
