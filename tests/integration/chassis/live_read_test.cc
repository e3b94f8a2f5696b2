// readObservedOnce (the dry run's one-shot read of a live Open_vSwitch database) against a REAL
// ovsdb-server: it observes what the IDL thread observes, failed interfaces included (the dry run
// kept a copy of the reader of its own that did not read them).
#include "chassis/live_read.h"

#include <gtest/gtest.h>

#include "tests/fixtures/ovs/ovsdb_server_fixture.h"

namespace okna::ovsdb {
namespace {

using okna::testing::OvsdbServer;

TEST(LiveReadTest, ObservesKeysBridgesPortsFailedAndPendingInterfaces) {
  OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
  OvsdbServer ovs(OvsdbServer::Kind::OpenVSwitch);
  ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev"});
  ovs.vsctl({"set", "Open_vSwitch", ".", "external_ids:system-id=chassis-1"});
  // What ovs-vswitchd writes when it cannot create a port (no ovs-vswitchd runs here).
  ovs.vsctl({"add-port", "br-int", "tap-gone", "--", "set", "Interface", "tap-gone",
             R"x(error="could not open network device tap-gone (No such device)")x"});
  ovs.vsctl({"add-port", "br-int", "tap-noofport", "--", "set", "Interface", "tap-noofport",
             "ofport=-1"});
  // Numbered (created in the datapath), and written but not yet numbered.
  ovs.vsctl(
      {"add-port", "br-int", "tap-created", "--", "set", "Interface", "tap-created", "ofport=7"});
  ovs.vsctl({"add-port", "br-int", "tap-pending"});

  auto observed = readObservedOnce(ovs.remote(), std::chrono::seconds(10));
  ASSERT_TRUE(observed.ok()) << observed.error().message;
  EXPECT_TRUE(observed->hasRoot);
  EXPECT_EQ(observed->externalIds.at("system-id"), "chassis-1");
  const ObservedBridge& br = observed->bridges.at("br-int");
  EXPECT_EQ(br.datapathType, "netdev");
  EXPECT_EQ(br.failedPorts.size(), 2u);
  EXPECT_EQ(br.failedPorts.at("tap-gone"),
            "could not open network device tap-gone (No such device)");
  EXPECT_EQ(br.failedPorts.at("tap-noofport"), "ofport -1 (ovs-vswitchd could not add it)");
  EXPECT_EQ(br.failedPorts.count("br-int"), 0u) << "the bridge's own port has no error";
  // No ovs-vswitchd numbers the bridge's own port here either.
  EXPECT_EQ(br.pendingPorts, (std::set<std::string>{"br-int", "tap-pending"}));
}

}  // namespace
}  // namespace okna::ovsdb
