// The dry run and the live chassis applier decide alike (issue 26). On the same Node file and
// the same REAL ovsdb-servers (Open_vSwitch, and an OVN Southbound with a router gateway bound to
// this chassis), `--dry-run --ovsdb` (runDryRun, in-process) prints the decision the live
// ChassisReconciler makes (decideChassis: the external NIC's check with this host's real NIC
// facts, the gateway drain's step), and once the live applier has applied its decision the dry
// run has nothing left to change. A dry run that skipped the NIC check or the drain (as it did
// before) fails here: it would plug the NIC and remove the held network.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "agent/dry_run.h"
#include "agent/dry_run_metadata.h"
#include "agent/plan.h"
#include "chassis/chassis_reconciler.h"
#include "chassis/ownership.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "core/yaml_field.h"
#include "metadata/reconciler.h"
#include "metadata/sb_participant.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb::parity_test {
namespace {

using namespace std::chrono_literals;
using okna::testing::bridgeExists;
using okna::testing::externalId;
using okna::testing::LoopRunner;
using okna::testing::OvsdbServer;
using okna::testing::ports;
using okna::testing::quoted;

// The decision without the drain's transition: the live applier's last evaluation follows its
// first (Started, then None while it holds), a new process's first is the dry run's.
nlohmann::json state(nlohmann::json decision) {
  decision["drain"].erase("step");
  decision["drain"].erase("why");
  return decision;
}

class DryRunParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OvnSouthbound);
    ovs_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OpenVSwitch);
    sb_ = std::make_unique<OvsdbServer>(OvsdbServer::Kind::OvnSouthbound);
    ovs_->vsctl({"set", "Open_vSwitch", ".", "external_ids:system-id=chassis-1",
                 "external_ids:ovn-remote=\"" + sb_->remote() + "\""});
    sb_->sbctl({"chassis-add", "chassis-1", "geneve", "192.0.2.10"});
    const std::string chassis =
        sb_->sbctl({"--bare", "--columns=_uuid", "find", "Chassis", "name=chassis-1"});
    const std::string dp = sb_->sbctl({"create", "Datapath_Binding", "tunnel_key=7"});
    sb_->sbctl({"create", "Port_Binding", "logical_port=cr-lrp-ext", "type=chassisredirect",
                "tunnel_key=3", "datapath=" + dp, "chassis=" + chassis});
    config_.ovs.enabled = true;
    config_.ovs.remote = ovs_->remote();
    config_.ovs.stateFile = "";
    config_.ovs.drainTimeout = 120s;
  }

  // A Node file as `kubectl get node -o json` prints it, and the Node the agent parses from it.
  k8s::NodeInfo writeNode(const nlohmann::json& labels, const nlohmann::json& annotations,
                          const std::string& internalIp) {
    nodeFile_ = ovs_->dir() + "/node.json";
    const nlohmann::json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata",
         {{"name", "net-1"}, {"uid", "uid-1"}, {"labels", labels}, {"annotations", annotations}}},
        {"status",
         {{"capacity", {{"cpu", "4"}}},
          {"addresses", {{{"type", "InternalIP"}, {"address", internalIp}}}}}}};
    std::ofstream(nodeFile_) << node.dump();
    auto doc = core::loadJsonOrYaml(nodeFile_);
    EXPECT_TRUE(doc.ok());
    auto parsed = k8s::parseNode(*doc, nodeFile_);
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    return *parsed;
  }

  // `--dry-run --ovsdb REMOTE --output json`'s "ovs" section.
  nlohmann::json dryRun() {
    std::ostringstream out, err;
    const int code = agent::runDryRun(config_, {nodeFile_, "", "json"}, ovs_->remote(), out, err);
    EXPECT_EQ(code, 0) << err.str();
    return code == 0 ? nlohmann::json::parse(out.str())["ovs"] : nlohmann::json();
  }

  // The live applier (the IDL thread, this host's NIC facts) given the plan the agent makes.
  std::unique_ptr<ChassisReconciler> live(const k8s::NodeInfo& node) {
    auto r =
        std::make_unique<ChassisReconciler>(io_, clock_, config_.ovs, metrics_, health_, nullptr);
    const agent::Plan plan = agent::computePlan(config_, {node, {}});
    r->update(node, plan.chassis);
    // Applied, and decided on a synced Southbound (the dry run waits for it too).
    EXPECT_TRUE(loop_.runUntil([&] {
      return r->snapshot() && r->snapshot()->sb.synced && r->snapshot()->convergedGeneration > 0 &&
             r->snapshot()->convergedGeneration == r->submittedGeneration();
    }));
    return r;
  }

  static bool anyOpNames(const nlohmann::json& ovs, const std::string& what) {
    for (const auto& op : ovs["diff"]["ops"])
      if (op.get<std::string>().find(what) != std::string::npos) return true;
    return false;
  }

  agent::AgentConfig config_;
  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  std::unique_ptr<OvsdbServer> ovs_;
  std::unique_ptr<OvsdbServer> sb_;
  std::string nodeFile_;
};

// `lo` carries 127.0.0.1 on every host: named as the external NIC of a node whose InternalIP it
// is, the NIC check refuses it, with the host's real facts, in both.
TEST_F(DryRunParityTest, BothRefuseAnExternalNicCarryingTheNodesAddress) {
  const auto node = writeNode({{"node-role.openkeel.io/compute", ""}, {kExternalNicKey, "lo"}},
                              {{kBridgeMappingsKey, "physnet1:br-ex"}}, "127.0.0.1");
  const auto dry = dryRun();
  ASSERT_TRUE(dry["decision"]["refusedNic"].is_string())
      << "the dry run would plug lo: " << dry.dump(2);
  EXPECT_NE(dry["decision"]["refusedNic"].get<std::string>().find("InternalIP 127.0.0.1"),
            std::string::npos);
  EXPECT_TRUE(anyOpNames(dry, "br-ex")) << dry["diff"].dump(2);
  EXPECT_FALSE(anyOpNames(dry, "add port lo"))
      << "the dry run would plug lo: " << dry["diff"].dump(2);

  // --output text says it too.
  std::ostringstream text, err;
  ASSERT_EQ(agent::runDryRun(config_, {nodeFile_, "", "text"}, ovs_->remote(), text, err), 0)
      << err.str();
  EXPECT_NE(text.str().find("ovs decision on " + ovs_->remote() +
                            ":\n  external NIC not plugged: label " + kExternalNicKey),
            std::string::npos)
      << text.str();

  const auto r = live(node);
  ASSERT_TRUE(r->decision());
  EXPECT_EQ(state(decisionToJson(*r->decision())), state(dry["decision"]));
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));
  EXPECT_TRUE(ports(*ovs_, "br-ex").empty());
  // What the live applier did is all the dry run said: nothing is left to change.
  const auto after = dryRun();
  EXPECT_EQ(after["diff"]["ops"], nlohmann::json::array()) << after["diff"].dump(2);
  EXPECT_EQ(state(after["decision"]), state(dry["decision"]));
}

// The network role went while a router gateway is bound here, during a drain an earlier agent
// process started 30 s ago (its start is in the ownership record): both resume the same drain
// and keep the network, and only the gateway flag goes.
TEST_F(DryRunParityTest, BothHoldTheNetworkDuringAGatewayDrain) {
  const auto gateway = writeNode({{"node-role.openkeel.io/network", ""}},
                                 {{kBridgeMappingsKey, "physnet1:br-ex"}}, "192.0.2.10");
  live(gateway).reset();
  ASSERT_EQ(externalId(*ovs_, "ovn-bridge-mappings"), "physnet1:br-ex");
  auto record = parseOwnership(externalId(*ovs_, kOwnershipKey).value_or(""));
  ASSERT_TRUE(record.ok());
  const std::int64_t since = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count() -
                             30;
  record->drainSince = since;
  ovs_->vsctl(
      {"set", "Open_vSwitch", ".",
       std::string("external_ids:") + kOwnershipKey + "=" + quoted(formatOwnership(*record))});

  const auto compute = writeNode({{"node-role.openkeel.io/compute", ""}}, {}, "192.0.2.10");
  const auto dry = dryRun();
  EXPECT_EQ(dry["decision"]["drain"]["holdOwned"], true) << dry["decision"].dump(2);
  EXPECT_EQ(dry["decision"]["drain"]["since"], since);
  EXPECT_TRUE(anyOpNames(dry, "delete external_ids:ovn-cms-options")) << dry["diff"].dump(2);
  EXPECT_FALSE(anyOpNames(dry, "delete bridge br-ex") ||
               anyOpNames(dry, "delete external_ids:ovn-bridge-mappings"))
      << "the dry run would remove the held network: " << dry["diff"].dump(2);

  const auto r = live(compute);
  EXPECT_EQ(state(decisionToJson(*r->decision())), state(dry["decision"]));
  EXPECT_TRUE(r->draining());
  EXPECT_EQ(externalId(*ovs_, "ovn-bridge-mappings"), "physnet1:br-ex");
  EXPECT_TRUE(bridgeExists(*ovs_, "br-ex"));
  EXPECT_EQ(externalId(*ovs_, "ovn-cms-options").value_or("").find(kGatewayItem),
            std::string::npos);
  const auto after = dryRun();
  EXPECT_EQ(after["diff"]["ops"], nlohmann::json::array()) << after["diff"].dump(2);
  EXPECT_EQ(state(after["decision"]), state(dry["decision"]));
}

// The live metadata applier's host side, recorded: which namespaces it ensured (creating those
// not on the host) and removed.
class RecordingPlumbing : public metadata::Plumbing {
 public:
  explicit RecordingPlumbing(std::set<std::string> host) : host_(std::move(host)) {}
  core::Result<Ensured> ensure(const metadata::NetworkPlan& n) override {
    Ensured e;
    e.namespaceCreated = !host_.count(n.namespaceName);
    done[n.namespaceName] = e.namespaceCreated ? "create" : "keep";
    host_.insert(n.namespaceName);
    return e;
  }
  core::Status remove(const std::string& ns) override {
    done[ns] = "remove";
    host_.erase(ns);
    return {};
  }
  core::Result<std::vector<std::string>> list() override {
    return std::vector<std::string>(host_.begin(), host_.end());
  }
  core::Result<int> listen(const metadata::NetworkPlan&, const std::string&, int) override {
    return ::dup(0);
  }
  std::map<std::string, std::string> done;

 private:
  std::set<std::string> host_;
};

class NoListeners : public metadata::Listeners {
 public:
  core::Status addListener(const std::string&, int fd) override {
    ::close(fd);
    return {};
  }
  void removeNetwork(const std::string&) override {}
};

// On a real Southbound (network A's VM bound here, its namespace already on the host; network
// C's VM bound here, no namespace; network B's VM on another chassis; a namespace of a network
// gone), the dry run's metadata decisions (its own one read-only observation) are what the live
// metadata applier does with the same view and the same host namespaces: keep A, create C,
// remove the gone one, nothing for B.
TEST_F(DryRunParityTest, MetadataNamespacesAreDecidedAliveAndDry) {
  ovs_->vsctl({"add-br", "br-int"});
  const std::string chassis =
      sb_->sbctl({"--bare", "--columns=_uuid", "find", "Chassis", "name=chassis-1"});
  sb_->sbctl({"create", "Chassis_Private", "name=chassis-1", "chassis=" + chassis});
  sb_->sbctl({"chassis-add", "chassis-2", "geneve", "192.0.2.11"});
  const std::string other =
      sb_->sbctl({"--bare", "--columns=_uuid", "find", "Chassis", "name=chassis-2"});
  int key = 10;
  for (const auto& [net, where] : std::vector<std::pair<std::string, std::string>>{
           {"a", chassis}, {"b", other}, {"c", chassis}}) {
    const std::string octet = std::to_string(key);
    const std::string dp = sb_->sbctl({"create", "Datapath_Binding", "tunnel_key=" + octet,
                                       "external_ids:name=neutron-net-" + net});
    sb_->sbctl({"create", "Port_Binding", "logical_port=md-" + net, "type=localport",
                "tunnel_key=1", "datapath=" + dp,
                "mac=\"fa:16:3e:00:" + octet + ":01 10." + octet + ".0.2\"",
                "external_ids:\"neutron:cidrs\"=\"10." + octet + ".0.2/24\"",
                "external_ids:\"neutron:device_owner\"=\"network:distributed\""});
    sb_->sbctl({"create", "Port_Binding", "logical_port=vm-" + net, "tunnel_key=2",
                "datapath=" + dp, "mac=\"fa:16:3e:00:" + octet + ":10 10." + octet + ".0.10\"",
                "external_ids:\"neutron:device_id\"=\"inst-" + net + "\"", "chassis=" + where});
    ++key;
  }
  const std::set<std::string> host = {"ovnmeta-net-a", "ovnmeta-net-gone"};
  writeNode({{"node-role.openkeel.io/compute", ""}}, {}, "192.0.2.10");

  // The dry run's own steps: observe once, decide on what it saw.
  auto observed = agent::observeOnce(config_.ovs, true, 10s);
  ASSERT_TRUE(observed.ok()) << observed.error().message;
  ASSERT_TRUE(observed->metadata);
  const metadata::SouthboundView& view = *observed->metadata;
  const auto dry = agent::decideMetadataOnce(view, config_.metadata, true, host);
  ASSERT_EQ(dry["southbound"], "synced") << dry.dump(2);
  std::map<std::string, std::string> decided;
  for (const auto& d : dry["decisions"])
    if (d["action"] != "hold") decided[d["namespace"]] = d["action"];
  EXPECT_EQ(decided, (std::map<std::string, std::string>{{"ovnmeta-net-a", "keep"},
                                                         {"ovnmeta-net-c", "create"},
                                                         {"ovnmeta-net-gone", "remove"}}))
      << dry.dump(2);

  // The live applier on the same view and host.
  RecordingPlumbing plumbing(host);
  NoListeners listeners;
  metadata::Reconciler live(
      io_, clock_, {}, plumbing, [](std::function<void()> job) { job(); }, listeners,
      [](std::shared_ptr<const DesiredMetadataOvs>) {}, metrics_, health_);
  live.setActive(true);
  // As agent/MetadataService hands the participant's view to it.
  live.update(view.sb, view.bridge, view.bridgePorts, view.createdPorts, view.vmIfaceIds);
  EXPECT_TRUE(loop_.runUntil([&] { return plumbing.done.size() >= decided.size(); }));
  while (io_.poll() > 0) {
  }  // and nothing more: every ready handler has run (the worker runs inline)
  EXPECT_EQ(plumbing.done, decided);
  live.stop();
}
// The dry run's observation (the live agent's participants on a read-only transport) reads what
// the IDL thread reads, failed and pending interfaces included (the dry run once kept a reader of
// its own that did not read them).
TEST(DryRunObservationTest, ObservesKeysBridgesPortsFailedAndPendingInterfaces) {
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

  OvsConfig config;
  config.remote = ovs.remote();
  auto seen = agent::observeOnce(config, false, 10s);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  ASSERT_TRUE(seen->chassis);
  const ObservedOvs& observed = *seen->chassis->ovs;
  EXPECT_TRUE(observed.hasRoot);
  EXPECT_EQ(observed.externalIds.at("system-id"), "chassis-1");
  const ObservedBridge& br = observed.bridges.at("br-int");
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
}  // namespace okna::ovsdb::parity_test
