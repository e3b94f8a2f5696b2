// The metadata service's OVSDB side against REAL ovsdb-servers (Open_vSwitch and OVN
// Southbound): the conditional chassis view follows what this chassis hosts (and nothing else
// arrives), Neutron's liveness keys are kept, and metadata ports are plugged, adopted and pruned.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "chassis/chassis_participant.h"
#include "chassis/chassis_reconciler.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "metadata/planner.h"
#include "metadata/sb_participant.h"
#include "ovsdb/idl_thread.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using namespace std::chrono_literals;
using okna::testing::LoopRunner;
using okna::testing::OvsdbServer;

class MetadataViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OvnSouthbound);
    ovs_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OpenVSwitch);
    sb_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OvnSouthbound);
    ovs_->vsctl({"set", "Open_vSwitch", ".", "external_ids:system-id=chassis-1",
                 "external_ids:ovn-remote=\"" + sb_->remote() + "\""});
    ovs_->vsctl({"add-br", "br-int"});
    sb_->sbctl({"chassis-add", "chassis-1", "geneve", "192.0.2.10"});
    sb_->sbctl({"chassis-add", "chassis-2", "geneve", "192.0.2.11"});
    sb_->sbctl({"create", "Chassis_Private", "name=chassis-1", "chassis=" + chassis("chassis-1")});
    dpA_ = datapath("neutron-net-a", 1);
    dpB_ = datapath("neutron-net-b", 2);
    port("md-a", dpA_, "localport", "fa:16:3e:00:00:01 10.0.0.2", "", "neutron:cidrs",
         "10.0.0.2/24");
    vmA_ = port("vm-a", dpA_, "", "fa:16:3e:00:00:10 10.0.0.10", "chassis-1", "neutron:device_id",
                "inst-a", 10);
    port("md-b", dpB_, "localport", "fa:16:3e:00:01:01 10.1.0.2", "", "neutron:cidrs",
         "10.1.0.2/24");
    // As Neutron creates a network's metadata port (the planner takes no other localport).
    for (const char* md : {"md-a", "md-b"})
      sb_->sbctl({"set", "Port_Binding", md,
                  "external_ids:\"neutron:device_owner\"=\"network:distributed\""});
    vmB_ = port("vm-b", dpB_, "", "fa:16:3e:00:01:10 10.1.0.10", "chassis-2", "neutron:device_id",
                "inst-b", 11);
    // The rest of the cloud: ports of network B on chassis 2 that this chassis must never see.
    for (int i = 0; i < 20; ++i)
      port("other-" + std::to_string(i), dpB_, "",
           "fa:16:3e:00:02:01 10.1.0." + std::to_string(50 + i), "chassis-2", "neutron:device_id",
           "x", 100 + i);
  }

  std::string chassis(const std::string& name) const {
    return sb_->sbctl({"--bare", "--columns=_uuid", "find", "Chassis", "name=" + name});
  }
  std::string datapath(const std::string& name, int key) const {
    return sb_->sbctl({"create", "Datapath_Binding", "tunnel_key=" + std::to_string(key),
                       "external_ids:name=" + name});
  }
  std::string port(const std::string& lport, const std::string& dp, const std::string& type,
                   const std::string& mac, const std::string& chassisName, const std::string& idKey,
                   const std::string& idValue, int key = 1) const {
    std::vector<std::string> args{"create",
                                  "Port_Binding",
                                  "logical_port=" + lport,
                                  "tunnel_key=" + std::to_string(key),
                                  "datapath=" + dp,
                                  "mac=\"" + mac + "\"",
                                  "external_ids:\"" + idKey + "\"=\"" + idValue + "\""};
    if (!type.empty()) args.push_back("type=" + type);
    if (!chassisName.empty()) args.push_back("chassis=" + chassis(chassisName));
    return sb_->sbctl(args);
  }

  void start() {
    OvsConfig c;
    c.enabled = true;
    c.remote = ovs_->remote();
    c.stateFile = "";
    // As the agent wires them: one transport, the chassis' participant and the metadata one.
    transport_ = std::make_unique<IdlThread>(c, health_, clock_);
    r_ = std::make_unique<ChassisReconciler>(
        io_, clock_, c, metrics_, health_, nullptr, [this](OvsdbApplier::SnapshotCallback publish) {
          return std::make_unique<ChassisTransportApplier>(*transport_, std::move(publish));
        });
    southbound_ = std::make_shared<metadata::SouthboundParticipant>(c.livenessDelayMax);
    southbound_->setPublish([this](std::shared_ptr<const metadata::SouthboundView> v) {
      boost::asio::post(io_, [this, v] { view_ = v; });
    });
    transport_->add(southbound_);
    k8s::NodeInfo n;
    n.name = "cmp-1";
    okna::testing::planAndUpdate(*r_, n, {"compute"});
    DesiredMetadataOvs d;
    d.enabled = true;
    submitMetadata(d);
  }

  std::uint64_t submitMetadata(const DesiredMetadataOvs& d) {
    southbound_->submit(std::make_shared<const DesiredMetadataOvs>(d), ++generation_);
    return generation_;
  }
  const SbMetadataView* view() const { return view_ ? &view_->sb : nullptr; }
  metadata::MetadataPlan plan() const { return metadata::planMetadata(*view(), false); }
  bool planHas(const std::set<std::string>& networks) const {
    if (!view() || !view()->synced) return false;
    std::set<std::string> got;
    for (const auto& [id, n] : plan().networks) got.insert(id);
    return got == networks;
  }
  std::string describe() const {
    std::string out =
        "synced=" + std::to_string(view()->synced) + " (" + view()->notSyncedReason + ") ports:";
    for (const auto& p : view()->rows->ports)
      out += " " + p.logicalPort + "[" + p.datapath.substr(0, 8) +
             " here=" + std::to_string(p.onChassis) + " add=" + std::to_string(p.onAdditional) +
             "]";
    for (const auto& [id, n] : plan().networks) out += " net:" + id;
    return out;
  }
  std::string privateId(const std::string& key) const {
    return sb_->sbctl(
        {"--if-exists", "get", "Chassis_Private", "chassis-1", "external_ids:\"" + key + "\""});
  }
  std::string ifaceId(const std::string& port, const std::string& key) const {
    return ovs_->vsctl({"--if-exists", "get", "Interface", port, "external_ids:" + key});
  }

  boost::asio::io_context io_;
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  std::unique_ptr<OvsdbServer> ovs_;
  std::unique_ptr<OvsdbServer> sb_;
  core::AsioClock clock_{io_};
  std::unique_ptr<IdlThread> transport_;
  std::shared_ptr<metadata::SouthboundParticipant> southbound_;
  std::shared_ptr<const metadata::SouthboundView> view_;
  std::uint64_t generation_ = 0;
  std::unique_ptr<ChassisReconciler> r_;
  std::string dpA_, dpB_, vmA_, vmB_;
};

TEST_F(MetadataViewTest, ViewHoldsOnlyWhatThisChassisHosts) {
  start();
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({"net-a"}); }));
  const auto p = plan();
  EXPECT_EQ(p.networks.at("net-a")->metadataPort, "md-a");
  EXPECT_EQ(p.index.at("net-a").at("10.0.0.10").at(0)->deviceId, "inst-a");
  // Conditional monitoring: no row of network B (hosted elsewhere) reached the agent.
  for (const auto& port : view()->rows->ports) EXPECT_EQ(port.datapath, dpA_) << port.logicalPort;
  EXPECT_EQ(view()->rows->datapathNames.size(), 1U);
  EXPECT_EQ(view()->rows->datapathNames.count(dpA_), 1U);
}

TEST_F(MetadataViewTest, LiveMigrationTargetAndMovesFollowTheSouthbound) {
  start();
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({"net-a"}); }));
  // Live migration of vm-b towards this chassis: its network gets metadata before it lands.
  sb_->sbctl({"set", "Port_Binding", vmB_, "additional_chassis=" + chassis("chassis-1")});
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({"net-a", "net-b"}); }, 3s)) << describe();
  EXPECT_EQ(plan().index.at("net-b").at("10.1.0.10").at(0)->deviceId, "inst-b");
  EXPECT_EQ(plan().index.at("net-b").count("10.1.0.50"), 0U) << "bound elsewhere";
  // The migration is aborted; vm-a moves directly to chassis 2.
  sb_->sbctl({"clear", "Port_Binding", vmB_, "additional_chassis"});
  sb_->sbctl({"set", "Port_Binding", vmA_, "chassis=" + chassis("chassis-2")});
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({}); })) << describe();
  // ... and back: a direct move from another chassis to ours.
  sb_->sbctl({"set", "Port_Binding", vmA_, "chassis=" + chassis("chassis-1")});
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({"net-a"}); }));
}

TEST_F(MetadataViewTest, MetadataPortAndVmAddressChangesArrive) {
  start();
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({"net-a"}); }));
  sb_->sbctl({"set", "Port_Binding", "md-a", "mac=\"fa:16:3e:00:00:99 10.0.0.3\"",
              "external_ids:\"neutron:cidrs\"=\"10.0.0.3/24\""});
  sb_->sbctl({"set", "Port_Binding", vmA_, "mac=\"fa:16:3e:00:00:10 10.0.0.20\""});
  ASSERT_TRUE(loop_.runUntil([&] {
    if (!planHas({"net-a"})) return false;
    const auto p = plan();
    return p.networks.at("net-a")->mac == "fa:16:3e:00:00:99" &&
           p.index.at("net-a").count("10.0.0.20") == 1;
  }));
  EXPECT_EQ(plan().networks.at("net-a")->addresses[0], "10.0.0.3/24");
  EXPECT_EQ(plan().index.at("net-a").count("10.0.0.10"), 0U);
  // The datapath goes: the network goes.
  sb_->sbctl({"destroy", "Port_Binding", vmA_});
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({}); }));
}

TEST_F(MetadataViewTest, NeutronLivenessKeysAreKept) {
  sb_->sbctl({"set", "SB_Global", ".", "nb_cfg=5"});
  // Left by Neutron's OVN agent (neutron-ovn-agent), which neutron-server reads first.
  sb_->sbctl(
      {"set", "Chassis_Private", "chassis-1", "external_ids:\"neutron:ovn-neutron-agent-id\"=\"x\"",
       "external_ids:\"neutron:ovn-neutron-agent-sb-cfg\"=\"1\"",
       "external_ids:\"neutron:description-neutron-agent\"=\"d\"", "external_ids:foreign=kept"});
  start();
  ASSERT_TRUE(loop_.runUntil([&] {
    return privateId("neutron:ovn-metadata-id") ==
               "\"" + neutronMetadataAgentId("chassis-1") + "\"" &&
           privateId("neutron:ovn-metadata-sb-cfg") == "\"5\"" &&
           privateId("neutron:ovn-bridge") == "br-int" &&
           privateId("neutron:ovn-neutron-agent-id").empty();
  })) << sb_->sbctl({"list", "Chassis_Private"});
  EXPECT_TRUE(privateId("neutron:ovn-neutron-agent-sb-cfg").empty());
  EXPECT_TRUE(privateId("neutron:description-neutron-agent").empty());
  EXPECT_EQ(privateId("foreign"), "kept");
  // Later echoes wait a random 0-10 s (Neutron's spread).
  sb_->sbctl({"set", "SB_Global", ".", "nb_cfg=6"});
  ASSERT_TRUE(loop_.runUntil([&] { return privateId("neutron:ovn-metadata-sb-cfg") == "\"6\""; },
                             std::chrono::seconds(30)));
  // The integration bridge is renamed: neutron:ovn-bridge follows.
  ovs_->vsctl({"set", "Open_vSwitch", ".", "external_ids:ovn-bridge=br-int2"});
  ASSERT_TRUE(loop_.runUntil([&] { return privateId("neutron:ovn-bridge") == "br-int2"; }));
}

TEST_F(MetadataViewTest, PortsArePluggedAdoptedAndOnlyMarkedOnesPruned) {
  // A VM port and a port left by Neutron's Python agent are already on the bridge.
  ovs_->vsctl({"add-port", "br-int", "vm-tap", "--", "set", "Interface", "vm-tap",
               "external_ids:iface-id=vm-a"});
  ovs_->vsctl({"add-port", "br-int", "tapnet-b0", "--", "set", "Interface", "tapnet-b0",
               "external_ids:iface-id=md-b"});
  start();
  ASSERT_TRUE(loop_.runUntil([&] { return planHas({"net-a"}); }));
  DesiredMetadataOvs d;
  d.enabled = true;
  d.ports = {{"tapnet-a0", "md-a"}, {"tapnet-b0", "md-b"}};
  d.prune = true;
  const auto gen = submitMetadata(d);
  ASSERT_TRUE(loop_.runUntil([&] { return view_ && view_->convergedGeneration == gen; }));
  EXPECT_EQ(ifaceId("tapnet-a0", "iface-id"), "md-a");
  EXPECT_EQ(ifaceId("tapnet-a0", "openkeel-node-agent"), "metadata");
  EXPECT_EQ(ifaceId("tapnet-b0", "openkeel-node-agent"), "metadata") << "adopted";
  const std::string adoptedUuid = ovs_->vsctl({"get", "Interface", "tapnet-b0", "_uuid"});

  d.ports = {{"tapnet-b0", "md-b"}};
  const auto gen2 = submitMetadata(d);
  ASSERT_TRUE(loop_.runUntil([&] { return view_ && view_->convergedGeneration == gen2; }));
  const auto ports = okna::testing::ports(*ovs_, "br-int");
  EXPECT_EQ(std::count(ports.begin(), ports.end(), "tapnet-a0"), 0);
  EXPECT_EQ(std::count(ports.begin(), ports.end(), "vm-tap"), 1) << "not ours";
  EXPECT_EQ(ovs_->vsctl({"get", "Interface", "tapnet-b0", "_uuid"}), adoptedUuid)
      << "adopting must not re-create the port";
}

}  // namespace
}  // namespace okna::ovsdb
