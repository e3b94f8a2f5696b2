// The Southbound loses this chassis's bindings while the VMs are still here (issue 27, point 1):
// an emptied Southbound, one restored from an older backup, ovn-northd resyncing the Southbound
// from a restored Northbound. The agent must keep every namespace whose VMs' interfaces are still
// on br-int (removal is proven by their absence there, never inferred from the Southbound's
// silence), say so in /readyz, and serve again as soon as the bindings are back, without
// rebuilding anything. A VM really gone (its interface off br-int, its port deleted) still takes
// its namespace with it. The real agent on a real OVN chassis (agent_metadata_fixture.h).
#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

class AgentSouthboundLossTest : public AgentMetadataTest {
 protected:
  std::string readiness() { return agent_->get("/readyz?verbose").body; }

  // Waits until the agent has either torn the namespace down or reports, in /readyz, the
  // Southbound state `why` names: whichever comes first, the agent has seen the new contents.
  // Either way the caller asserts which it was.
  void waitForVerdict(const std::string& netns, const std::string& why) {
    EXPECT_TRUE(waitFor(
        [&] { return !namespaceExists(netns) || readiness().find(why) != std::string::npos; }, 60s))
        << readiness();
  }

  // The Southbound server restarted on another database file: an empty one or a backup.
  void replaceSouthbound(const std::string& fileOrEmpty) {
    chassis_->stop_daemon("ovsdb-server-sb");
    chassis_->replace_db("sb", fileOrEmpty);
    chassis_->start_daemon("ovsdb-server-sb");
  }

  void expectServedAndReady(const std::vector<OvnChassis::Vm>& vms) {
    for (const auto& vm : vms) EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
    EXPECT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
        << readiness() << "\n/debug/plan: " << agent_->plan()["appliers"]["metadata"].dump()
        << "\nSouthbound:\n"
        << chassis_->sbctl({"--columns=_uuid,name", "list", "Chassis"}).out
        << chassis_->sbctl({"--columns=logical_port,type,chassis,datapath", "list", "Port_Binding"})
               .out;
  }
};

// The reported fault: northd stopped, the SB database replaced by an empty one. Once
// ovn-controller has registered the chassis again, the Southbound says nothing is bound here;
// br-int says two VMs are. Nothing goes, readiness says why, and all serve again once northd
// has rebuilt the Southbound, from the very namespaces they had. A VM deleted meanwhile
// (interface off br-int, port deleted in the Northbound) loses its namespace even so.
TEST_F(AgentSouthboundLossTest, AnEmptiedSouthboundRemovesNothingAndSaysSoUntilNorthdRestoresIt) {
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  const auto net2 = chassis_->add_network(kNet2, "10.0.1.0/24");
  const auto vm2 = chassis_->add_vm(kNet2, "vm2", "10.0.1.12", "fa:16:3e:00:e2:12");
  const auto net3Id = std::string("5a1e0c3b-3333-4d2e-9f00-00000000e2e3");
  const auto net3 = chassis_->add_network(net3Id, "10.0.2.0/24");
  const auto vm3 = chassis_->add_vm(net3Id, "vm3", "10.0.2.13", "fa:16:3e:00:e2:13");
  startAgent();
  expectServedAndReady({vm1, vm2, vm3});
  const ino_t inode1 = namespaceInode(net1.metadata_netns);
  const ino_t inode2 = namespaceInode(net2.metadata_netns);

  chassis_->stop_daemon("ovn-northd");
  replaceSouthbound("empty");
  waitForVerdict(net1.metadata_netns, "no VM port is bound to this chassis in the Southbound");
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode1) << agent_->log();
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << agent_->log();
  EXPECT_TRUE(namespaceExists(net3.metadata_netns));
  EXPECT_TRUE(hasPort(net1.metadata_tap_host));
  EXPECT_TRUE(hasPort(net2.metadata_tap_host));
  EXPECT_EQ(agent_->get("/readyz").status, 503);
  EXPECT_NE(readiness().find("3 VM interface(s) are on br-int"), std::string::npos) << readiness();
  // The dry run (a restarted agent's first plan) removes nothing either, and says why.
  std::ofstream(dir_ + "/dry.yaml")
      << "ovs: {stateFile: \"\"}\nmetadata: {sharedSecretFile: " << dir_ << "/agent-secret}\n";
  const auto dry = okna::testing::detail::run(
      {std::string(::okna::testing::kBinaryDir) + "/agent/openkeel-node-agent", "--dry-run",
       "--config", dir_ + "/dry.yaml", "--node-file", dir_ + "/hv-e2e.node.yaml", "--ovsdb",
       chassis_->ovs_remote(), "--output", "json"});
  ASSERT_TRUE(dry.ok()) << dry.err;
  const auto md = nlohmann::json::parse(dry.out)["metadata"];
  EXPECT_EQ(md["remove"], nlohmann::json::array()) << md.dump(2);
  EXPECT_NE(md["southbound"].get<std::string>().find("no VM port is bound to this chassis"),
            std::string::npos)
      << md.dump(2);

  // VM 3 is deleted during the outage (os-vif unplugs it, Neutron deletes its port). Nothing is
  // removed while the Southbound has nothing for this chassis; once it has, its namespace and
  // port go (proven by br-int), the others stay.
  chassis_->del_vm("vm3");
  EXPECT_TRUE(waitFor(
      [&] { return readiness().find("2 VM interface(s) are on br-int") != std::string::npos; },
      30s))
      << readiness();
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode1);
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2);

  chassis_->start_daemon("ovn-northd");
  // ovn-controller (23.03, Debian 12) dies without a log line when Chassis_Private.external_ids
  // is written right after it registered the chassis again in the emptied Southbound, as the
  // agent's Neutron liveness keys are (reproduced with `ovn-sbctl wait-until Chassis_Private
  // <name> -- set ...` and no agent; with the agent stopped first it lives). Its supervisor
  // restarts it, as the pod's would; the agent's part is what follows.
  if (!chassis_->daemon_running("ovn-controller")) {
    std::cerr << "ovn-controller is gone; restarting it\n";
    chassis_->start_daemon("ovn-controller");
  }
  expectServedAndReady({vm1, vm2});
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode1) << "rebuilt instead of kept";
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << "rebuilt instead of kept";
  EXPECT_TRUE(waitFor(
      [&] { return !namespaceExists(net3.metadata_netns) && !hasPort(net3.metadata_tap_host); },
      30s))
      << agent_->log();
}

// The Southbound restored from a backup taken before network 2 existed (northd down, so nothing
// rebuilds it yet): network 1's binding is back, network 2's is not, while its VM is still on
// br-int. Network 2 is kept and named in /readyz; northd restores it; a real VM removal
// afterwards still removes the namespace.
TEST_F(AgentSouthboundLossTest, ASouthboundFromAnOlderBackupKeepsTheNewerNetworkWhoseVmIsHere) {
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();
  expectServedAndReady({vm1});
  chassis_->backup_db("sb", dir_ + "/sb-backup.db");
  const auto net2 = chassis_->add_network(kNet2, "10.0.1.0/24");
  const auto vm2 = chassis_->add_vm(kNet2, "vm2", "10.0.1.12", "fa:16:3e:00:e2:12");
  expectServedAndReady({vm1, vm2});
  const ino_t inode1 = namespaceInode(net1.metadata_netns);
  const ino_t inode2 = namespaceInode(net2.metadata_netns);

  chassis_->stop_daemon("ovn-northd");
  replaceSouthbound(dir_ + "/sb-backup.db");
  waitForVerdict(net2.metadata_netns, "kept " + net2.metadata_netns);
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << agent_->log();
  EXPECT_TRUE(hasPort(net2.metadata_tap_host));
  EXPECT_EQ(agent_->get("/readyz").status, 503);
  EXPECT_NE(readiness().find(vm2.lsp), std::string::npos) << "names the VM port: " << readiness();
  // Network 1 is in the backup: it serves (its binding is back, ovn-controller has its flows).
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode1);

  chassis_->start_daemon("ovn-northd");
  expectServedAndReady({vm1, vm2});
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << "rebuilt instead of kept";

  // The VM really leaves (interface off br-int, port deleted): its namespace goes.
  chassis_->del_vm("vm2");
  EXPECT_TRUE(waitFor(
      [&] { return !namespaceExists(net2.metadata_netns) && !hasPort(net2.metadata_tap_host); },
      30s))
      << agent_->log();
  expectServedAndReady({vm1});
}

// The Northbound restored from a backup older than network 2 while northd was down: when northd
// starts, it makes the Southbound match that Northbound and deletes network 2's bindings,
// although its VM still runs here. Kept, named in /readyz; once the Northbound is whole again
// (Neutron's resync, here the newer backup) all serve from the namespaces they had.
TEST_F(AgentSouthboundLossTest, NorthdResyncingFromARestoredNorthboundKeepsTheNetworkItDropped) {
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  chassis_->backup_db("nb", dir_ + "/nb-old.db");
  const auto net2 = chassis_->add_network(kNet2, "10.0.1.0/24");
  const auto vm2 = chassis_->add_vm(kNet2, "vm2", "10.0.1.12", "fa:16:3e:00:e2:12");
  chassis_->backup_db("nb", dir_ + "/nb-new.db");
  startAgent();
  expectServedAndReady({vm1, vm2});
  const ino_t inode1 = namespaceInode(net1.metadata_netns);
  const ino_t inode2 = namespaceInode(net2.metadata_netns);

  chassis_->stop_daemon("ovn-northd");
  chassis_->stop_daemon("ovsdb-server-nb");
  chassis_->replace_db("nb", dir_ + "/nb-old.db");
  chassis_->start_daemon("ovsdb-server-nb");
  chassis_->start_daemon("ovn-northd");
  waitForVerdict(net2.metadata_netns, "kept " + net2.metadata_netns);
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << agent_->log();
  EXPECT_TRUE(hasPort(net2.metadata_tap_host));
  EXPECT_EQ(agent_->get("/readyz").status, 503);
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);

  chassis_->stop_daemon("ovsdb-server-nb");
  chassis_->replace_db("nb", dir_ + "/nb-new.db");
  chassis_->start_daemon("ovsdb-server-nb");
  expectServedAndReady({vm1, vm2});
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode1);
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << "rebuilt instead of kept";
}

}  // namespace
}  // namespace okna
