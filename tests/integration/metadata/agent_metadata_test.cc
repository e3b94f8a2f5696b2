// End to end: the real agent binary serves 169.254.169.254 to "VMs" on a REAL OVN chassis
// (ovs-vswitchd userspace datapath, ovn-controller, northd, NB/SB; tests/fixtures/ovn), with the
// Node from the fake kube-apiserver and Nova played by tests/fixtures/nova/fake_nova.py, which
// checks the signature as Nova does. A VM's curl goes through OVN into the agent's ovnmeta
// namespace; nothing here plumbs metadata by hand.
//
// The fixture (agent_metadata_fixture.h) runs the chassis in the caller's network namespace
// (OKOF_CHASSIS_NETNS=host). Root only; skips with the reason otherwise.
#include <csignal>

#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

TEST_F(AgentMetadataTest, VmsGetTheirOwnDataThroughOvnAndOnlyTheirs) {
  // A namespace left by a network that is gone: removed once the agent has the full SB view.
  ASSERT_EQ(::system(("ip netns add " + kStray).c_str()), 0);
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();

  const auto md1 = metaData(vm1.netns);
  EXPECT_EQ(md1.value("uuid", ""), vm1.device_id);
  EXPECT_EQ(md1.value("project_id", ""), vm1.project_id);
  EXPECT_TRUE(namespaceExists(net1.metadata_netns));
  EXPECT_TRUE(hasPort(net1.metadata_tap_host)) << "Neutron's veth name in br-int";
  ASSERT_TRUE(waitFor([&] { return !namespaceExists(kStray); }, 20s)) << "stray namespace stays";
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s))
      << agent_->get("/readyz?verbose").body;
  // Neutron's liveness keys: `openstack network agent list` shows the metadata agent alive.
  // (Written a few seconds after ovn-controller registered the chassis: ovsdb/idl_thread.cc.)
  const auto privateIds = [&] {
    return chassis_->sbctl({"--bare", "--columns=external_ids", "list", "Chassis_Private"}).out;
  };
  ASSERT_TRUE(waitFor(
      [&] {
        const std::string ids = privateIds();
        return ids.find("neutron:ovn-metadata-id=") != std::string::npos &&
               ids.find("neutron:ovn-metadata-sb-cfg=") != std::string::npos;
      },
      20s))
      << privateIds();

  // Nova sees what Neutron's agent sends: the VM's address, one signed instance id, whatever the
  // VM puts in its own headers.
  const Answer forged = curlFromVm(
      *chassis_, vm1.netns, "/_debug/headers",
      {"X-Instance-ID: 00000000-0000-0000-0000-000000000bad", "X-Forwarded-For: 10.0.0.99",
       "X-OVN-Network-ID: " + kNet2, "X-Tenant-ID: evil", "X-Instance-ID-Signature: 00"});
  ASSERT_EQ(forged.status, 200) << forged.body;
  std::map<std::string, std::vector<std::string>> seen;
  for (const auto& pair : nlohmann::json::parse(forged.body))
    seen[pair[0].get<std::string>()].push_back(pair[1].get<std::string>());
  EXPECT_EQ(seen["X-Instance-ID"], std::vector<std::string>{vm1.device_id});
  EXPECT_EQ(seen["X-Tenant-ID"], std::vector<std::string>{vm1.project_id});
  EXPECT_EQ(seen["X-Forwarded-For"], std::vector<std::string>{vm1.ip});
  EXPECT_EQ(seen.count("X-OVN-Network-ID"), 0u);

  // A second VM on the same network, and a second network with the same CIDR and the same VM
  // address: each VM gets its own instance, never the other's.
  const auto vm2 = chassis_->add_vm(kNet1, "vm2", "10.0.0.12", "fa:16:3e:00:e2:12");
  const auto net2 = chassis_->add_network(kNet2, "10.0.0.0/24");
  const auto vm3 = chassis_->add_vm(kNet2, "vm3", "10.0.0.11", "fa:16:3e:00:e2:13");
  EXPECT_EQ(metaData(vm2.netns).value("uuid", ""), vm2.device_id);
  EXPECT_EQ(metaData(vm3.netns).value("uuid", ""), vm3.device_id);
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  EXPECT_NE(vm3.device_id, vm1.device_id);

  // The last VM of network 2 leaves this chassis: its namespace and OVS port go.
  chassis_->del_vm("vm3");
  EXPECT_TRUE(waitFor(
      [&] { return !namespaceExists(net2.metadata_netns) && !hasPort(net2.metadata_tap_host); },
      20s))
      << agent_->log();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);

  // An operator deletes a namespace by hand; the SB says nothing. The periodic check (every
  // 0.5 s here) rebuilds it and the VM is served again.
  ASSERT_EQ(::system(("ip netns del " + net1.metadata_netns).c_str()), 0);
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  EXPECT_TRUE(waitFor(
      [&] { return agent_->log().find("was broken and is repaired") != std::string::npos; }, 10s));

  // Nova's own counters: every request the agent signed was accepted (a bad signature is a 403
  // there, and the VM would have seen it).
  const auto stats = okna::testing::httpCall(
      "GET", "http://127.0.0.1:" + std::to_string(novaPort_) + "/_control/stats");
  EXPECT_GE(nlohmann::json::parse(stats.body).value("requests", 0), 5);
}

TEST_F(AgentMetadataTest, RestartAdoptsTheNamespaceAndNovaDownIsAPromptError) {
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  const ino_t before = namespaceInode(net1.metadata_netns);
  ASSERT_NE(before, 0u);

  // SIGTERM: the namespace, veth and OVS port stay for the next agent, which adopts them.
  agent_->process().signal(SIGTERM);
  ASSERT_EQ(agent_->process().waitExit(10s), std::optional<int>(0)) << agent_->log();
  EXPECT_EQ(namespaceInode(net1.metadata_netns), before);
  EXPECT_TRUE(hasPort(net1.metadata_tap_host));
  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 20s))
      << agent_->get("/readyz?verbose").body;
  EXPECT_EQ(namespaceInode(net1.metadata_netns), before) << "rebuilt instead of adopted";
  EXPECT_NE(agent_->log().find("adopted as it was"), std::string::npos) << agent_->log();

  // Nova goes away: the VM gets Neutron master's 503 at once (connection refused), not a hang.
  nova_.reset();
  const Answer down = curlFromVm(*chassis_, vm1.netns, "/openstack/latest/meta_data.json");
  EXPECT_EQ(down.status, 503) << down.body;
}

TEST_F(AgentMetadataTest, DryRunListsWhatItWouldCreateKeepAndRemoveAndWritesNothing) {
  ASSERT_EQ(::system(("ip netns add " + kStray).c_str()), 0);
  const auto net1 = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  std::ofstream(dir_ + "/dry.yaml")
      << "ovs: {stateFile: \"\"}\nmetadata: {sharedSecretFile: " << dir_ << "/agent-secret}\n";
  const auto dryRun = [&] {
    const auto r = okna::testing::detail::run(
        {std::string(::okna::testing::kBinaryDir) + "/agent/openkeel-node-agent", "--dry-run",
         "--config", dir_ + "/dry.yaml", "--node-file", dir_ + "/hv-e2e.node.yaml", "--ovsdb",
         chassis_->ovs_remote(), "--output", "json"});
    EXPECT_TRUE(r.ok()) << r.err;
    return r.ok() ? nlohmann::json::parse(r.out)["metadata"] : nlohmann::json();
  };
  auto md = dryRun();
  EXPECT_EQ(md["enabled"], true);
  EXPECT_EQ(md["chassis"], chassis_->chassis_name());
  ASSERT_EQ(md["namespaces"].size(), 1u) << md.dump(2);
  EXPECT_EQ(md["namespaces"][0]["namespace"], net1.metadata_netns);
  EXPECT_EQ(md["namespaces"][0]["action"], "create");
  EXPECT_EQ(md["namespaces"][0]["mac"], net1.metadata_mac);
  EXPECT_EQ(md["namespaces"][0]["metadataPort"], net1.metadata_lsp);
  EXPECT_EQ(md["namespaces"][0]["vmAddresses"], nlohmann::json({vm1.ip}));
  EXPECT_EQ(md["remove"], nlohmann::json({kStray}));
  // Read-only: no namespace, no OVS port, no Neutron liveness key.
  EXPECT_FALSE(namespaceExists(net1.metadata_netns));
  EXPECT_TRUE(namespaceExists(kStray));
  EXPECT_FALSE(hasPort(net1.metadata_tap_host));
  const auto ids = chassis_->sbctl({"--bare", "--columns=external_ids", "list", "Chassis_Private"});
  EXPECT_EQ(ids.out.find("neutron:ovn-metadata-id"), std::string::npos) << ids.out;

  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  ASSERT_TRUE(waitFor([&] { return !namespaceExists(kStray); }, 20s));
  md = dryRun();
  ASSERT_EQ(md["namespaces"].size(), 1u) << md.dump(2);
  EXPECT_EQ(md["namespaces"][0]["action"], "keep");
  EXPECT_EQ(md["remove"], nlohmann::json::array());
  // The live agent's view of the same, on /debug/plan (what the metadata applier does).
  const auto live = agent_->plan()["appliers"]["metadata"];
  ASSERT_EQ(live["networks"].size(), 1u) << live.dump(2);
  EXPECT_EQ(live["networks"][0]["state"], "serving");
  EXPECT_EQ(live["southbound"], "synced");
  // The live agent and the dry run decide in the same function (metadata/namespace_decision.h).
  EXPECT_EQ(live["decisions"], md["decisions"]) << live.dump(2) << md.dump(2);
}

// A project member sets its port's device_id to its own instance id followed by a second
// request (neutron-lib allows any 255 characters; Neutron -> NB -> northd -> SB). Written raw
// into X-Instance-ID it split the request to Nova: Nova answered twice on the pooled
// connection and the next VM, of another project and network, got a stale answer (5 of 20
// alternating rounds handed VM 1 VM 2's meta_data.json). Now the port is refused (404), no
// byte of it reaches Nova, and the neighbour keeps getting its own data, round after round.
TEST_F(AgentMetadataTest, ADeviceIdCarryingARequestIsRefusedAndNeighboursKeepTheirOwn) {
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  chassis_->add_network(kNet2, "10.0.1.0/24");
  const auto vm2 = chassis_->add_vm(kNet2, "vm2", "10.0.1.12", "fa:16:3e:00:e2:12");
  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  EXPECT_EQ(metaData(vm2.netns).value("uuid", ""), vm2.device_id);

  // ovn-nbctl reads a double-quoted value as a C-style string: \r and \n are the bytes.
  const std::string hostile = vm1.device_id +
                              "\\r\\n\\r\\nGET /openstack/latest/meta_data.json HTTP/1.1\\r\\n"
                              "X-A: b";
  const auto set = chassis_->nbctl({"set", "Logical_Switch_Port", vm1.lsp,
                                    "external_ids:\"neutron:device_id\"=\"" + hostile + "\""});
  ASSERT_TRUE(set.ok()) << set.err;
  const auto sb = chassis_->sbctl(
      {"--bare", "--columns=external_ids", "find", "Port_Binding", "logical_port=" + vm1.lsp});
  ASSERT_TRUE(waitFor(
      [&] {
        return curlFromVm(*chassis_, vm1.netns, "/openstack/latest/meta_data.json").status == 404;
      },
      30s))
      << "SB: " << sb.out;
  const auto novaRequests = [&] {
    const auto stats = okna::testing::httpCall(
        "GET", "http://127.0.0.1:" + std::to_string(novaPort_) + "/_control/stats");
    return nlohmann::json::parse(stats.body).value("requests", 0);
  };
  const int before = novaRequests();
  for (int round = 0; round < 20; ++round) {
    const Answer one = curlFromVm(*chassis_, vm1.netns, "/openstack/latest/meta_data.json");
    EXPECT_EQ(one.status, 404) << "round " << round << ": " << one.body;
    const Answer two = curlFromVm(*chassis_, vm2.netns, "/openstack/latest/meta_data.json");
    ASSERT_EQ(two.status, 200) << "round " << round << ": " << two.body;
    EXPECT_EQ(nlohmann::json::parse(two.body).value("uuid", ""), vm2.device_id)
        << "round " << round;
  }
  // Nova got VM 2's 20 requests and nothing of VM 1's.
  EXPECT_EQ(novaRequests() - before, 20);
  EXPECT_NE(agent_->log().find("is not served: external_ids:neutron:device_id holds a control "
                               "character"),
            std::string::npos);
  // The port is served again once its device_id is an instance id.
  ASSERT_TRUE(chassis_
                  ->nbctl({"set", "Logical_Switch_Port", vm1.lsp,
                           "external_ids:\"neutron:device_id\"=\"" + vm1.device_id + "\""})
                  .ok());
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
}

// One VM holding idle connections once took all 64 of its network's: a neighbour (on a shared
// provider network, another project) was refused. Per-VM limits keep the neighbour served: past
// its own 8, each new connection of the VM takes the place of its own oldest.
TEST_F(AgentMetadataTest, OneVmHoldingManyIdleConnectionsDoesNotStopAnother) {
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  const auto vm2 = chassis_->add_vm(kNet1, "vm2", "10.0.0.12", "fa:16:3e:00:e2:12");
  startAgent();
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  EXPECT_EQ(metaData(vm2.netns).value("uuid", ""), vm2.device_id);
  const auto flood = holdIdleConnections(vm1.netns, 64);
  // All but the VM's own 8 are closed.
  EXPECT_TRUE(waitFor(
      [&] {
        return agent_->metric("okna_metadata_connections_evicted_total{reason=\"client\"}") >= 56;
      },
      30s))
      << agent_->adminGet("/metrics").body;
  for (int round = 0; round < 5; ++round) {
    const Answer a = curlFromVm(*chassis_, vm2.netns, "/openstack/latest/meta_data.json");
    ASSERT_EQ(a.status, 200) << "round " << round << ": " << a.body;
    EXPECT_EQ(nlohmann::json::parse(a.body).value("uuid", ""), vm2.device_id);
  }
}

// Under a low file limit, connections from VMs are capped below it: the agent never runs out of
// descriptors for its own work, and the kubelet's probe is answered throughout a flood.
TEST_F(AgentMetadataTest, AFloodUnderALowFileLimitLeavesTheHealthEndpointAnswering) {
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm1 = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  // Soft and hard: the agent cannot raise it back.
  startAgent("{maxConnectionsPerClient: 100000, maxConnectionsPerNamespace: 100000}",
             {"/usr/bin/prlimit", "--nofile=512:512", "--"});
  EXPECT_EQ(metaData(vm1.netns).value("uuid", ""), vm1.device_id);
  // 512 - a reserve of 256 - 128 for the health and admin listeners.
  EXPECT_NE(agent_->log().find("at most 128 in all"), std::string::npos);
  const auto flood = holdIdleConnections(vm1.netns, 400);
  // Past the cap each newcomer takes the place of the connection idle the longest.
  EXPECT_TRUE(waitFor(
      [&] {
        return agent_->metric("okna_metadata_connections_evicted_total{reason=\"total\"}") >= 200;
      },
      60s))
      << agent_->adminGet("/metrics").body;
  EXPECT_EQ(agent_->get("/healthz").status, 200);
  EXPECT_EQ(agent_->metric("okna_metadata_accept_failures_total"), 0) << "no EMFILE";
  // Hundreds of evictions, a bounded number of log lines about them.
  const std::string log = agent_->log();
  std::size_t lines = 0;
  for (std::size_t p = 0; (p = log.find("connection limit reached", p)) != std::string::npos; ++p)
    ++lines;
  EXPECT_LT(lines, 60u);
}

}  // namespace
}  // namespace okna
