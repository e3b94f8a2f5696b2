// The OVN Southbound as a 3-member RAFT cluster (as Debian's ovn-central runs it clustered;
// tests/fixtures/ovn with OKOF_SB_CLUSTER=3), its leader SIGKILLed (issue 27's fault matrix):
// the real agent, connected to whichever member it picked, removes no namespace whose VMs are
// here, every VM is served again, and the outage it saw is logged and counted.
//
// The agent's Southbound IDL is not leader-only (ovs_metadata_glue.c): killing the leader cuts
// the agent off only when the agent was on it. When it was on a follower, the test then kills
// that member too: the last member alone has no quorum, so the agent has a real Southbound
// outage until the first killed member is back. Either way the agent lost its Southbound once.
#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

class AgentSouthboundClusterTest : public AgentMetadataTest {
 protected:
  void SetUp() override {
    ::setenv("OKOF_SB_CLUSTER", "3", 1);
    AgentMetadataTest::SetUp();
  }
  void TearDown() override {
    AgentMetadataTest::TearDown();
    ::unsetenv("OKOF_SB_CLUSTER");
  }

  // The member the agent's Southbound connection is on, from libopenvswitch's own log lines
  // ("unix:DIR/sb2.sock: connected") that the agent logs under "ovs".
  std::string agentsMember() {
    const std::string log = agent_->log();
    const std::regex connected("/(sb[23]?)\\.sock: connected");
    std::string member;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), connected);
         it != std::sregex_iterator(); ++it)
      member = (*it)[1];
    return member.empty() ? "" : "ovsdb-server-" + member;
  }
};

TEST_F(AgentSouthboundClusterTest, LeaderKilledRemovesNothingAllServeAgainAndTheOutageIsCounted) {
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  const auto net2 = chassis_->add_network(kNet2, "10.0.1.0/24");
  const auto vm2 = chassis_->add_vm(kNet2, "vm2", "10.0.1.12", "fa:16:3e:00:e2:12");
  startAgent();
  for (const auto& vm : {vm1, vm2}) EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  const ino_t inode1 = namespaceInode(net1.metadata_netns);
  const ino_t inode2 = namespaceInode(net2.metadata_netns);
  const std::string losses = R"(okna_ovsdb_connection_losses_total{db="OVN_Southbound"})";
  const std::string reconnects = R"(okna_ovsdb_reconnects_total{db="OVN_Southbound"})";
  ASSERT_EQ(agent_->metric(losses), 0);
  const std::string on = agentsMember();
  ASSERT_FALSE(on.empty()) << "no Southbound connection in the agent's log\n" << agent_->log();

  const std::string leader = chassis_->sb_leader();
  ASSERT_FALSE(leader.empty());
  std::cout << "[ cluster  ] leader " << leader << ", the agent on " << on << std::endl;
  chassis_->kill_daemon(leader);
  ASSERT_TRUE(waitFor(
      [&] {
        const std::string now = chassis_->sb_leader();
        return !now.empty() && now != leader;
      },
      30s))
      << "no new leader";
  if (on != leader) {
    // The agent did not notice: it is on a follower. Cut it off for real: its member killed
    // too, the last one has no quorum until the first comes back.
    chassis_->kill_daemon(on);
    EXPECT_TRUE(waitFor([&] { return agent_->metric(losses) >= 1; }, 30s)) << agent_->log();
    chassis_->start_daemon(leader);
  }
  EXPECT_TRUE(waitFor([&] { return agent_->metric(losses) >= 1; }, 30s)) << agent_->log();
  EXPECT_TRUE(waitFor([&] { return agent_->metric(reconnects) >= 1; }, 60s)) << agent_->log();
  for (const auto& vm : {vm1, vm2}) EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  EXPECT_EQ(namespaceInode(net1.metadata_netns), inode1) << "a namespace was rebuilt";
  EXPECT_EQ(namespaceInode(net2.metadata_netns), inode2) << "a namespace was rebuilt";
  const std::string log = agent_->log();
  EXPECT_NE(log.find("lost the connection to the Southbound DB"), std::string::npos);
  EXPECT_NE(log.find("reconnected to the Southbound DB"), std::string::npos);
  EXPECT_EQ(log.find("; removing ovnmeta-"), std::string::npos) << log;
  EXPECT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
      << agent_->get("/readyz?verbose").body;
}

}  // namespace
}  // namespace okna
