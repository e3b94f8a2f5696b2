// End to end, issue 28: what Neutron master serves and the agent used to miss, on the REAL OVN
// chassis (tests/fixtures/ovn) with the real agent binary and fake Nova (agent_metadata_fixture.h):
//   - a network with more localports than its metadata port (ovn-octavia's health monitor);
//   - an IPv6-only network (fe80::a9fe:a9fe);
//   - an external port (baremetal / SR-IOV direct) bound to a network-role chassis;
//   - Neutron's liveness keys as neutron-server's ovsdb_monitor.py reads them;
//   - Nova answering 503, and Nova unreachable.
// Root only; skips with the reason otherwise.
#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class AgentNeutronParityTest : public AgentMetadataTest {
 protected:
  // Chassis_Private.external_ids:<key> of this chassis ("" when absent), unquoted.
  std::string privateId(const std::string& key) {
    auto r = chassis_->sbctl({"--if-exists", "get", "Chassis_Private", chassis_->chassis_name(),
                              "external_ids:\"" + key + "\""});
    std::string v = trim(r.out);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  std::string sbGlobalNbCfg() {
    return trim(chassis_->sbctl({"get", "SB_Global", ".", "nb_cfg"}).out);
  }
  // The inner veth's MAC in a metadata namespace.
  std::string innerMac(const OvnChassis::Network& net) {
    const auto r = chassis_->in_netns(
        net.metadata_netns, {"cat", "/sys/class/net/" + net.metadata_tap_ns + "/address"});
    return trim(r.out);
  }
  std::string ifaceId(const std::string& port) {
    std::string v = trim(
        chassis_->vsctl({"--if-exists", "get", "Interface", port, "external_ids:iface-id"}).out);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  // A Node with only the network role, and a bridge mapping (the agent creates br-phys).
  void serveANetworkNode() {
    std::ofstream(dir_ + "/gw.node.yaml") << R"(apiVersion: v1
kind: Node
metadata:
  name: hv-e2e
  uid: 7d3c1a52-0000-4e2e-8000-00000000e2e0
  resourceVersion: "1"
  labels:
    kubernetes.io/hostname: hv-e2e
    node-role.openkeel.io/network: ""
  annotations:
    network.openkeel.io/bridge-mappings: "physnet1:br-phys"
spec: {}
status:
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
)";
    server_ = std::make_unique<FakeApiServer>(std::vector<std::string>{dir_ + "/gw.node.yaml"});
  }
  void TearDown() override {
    ::system("ip netns del okof-bm 2>/dev/null");
    AgentMetadataTest::TearDown();
  }
};

TEST_F(AgentNeutronParityTest, OnlyTheNetworkDistributedLocalportIsTheMetadataPort) {
  const auto net = chassis_->add_network(kNet1, "10.0.0.0/24");
  // ovn-octavia's health-monitor ports are localports of the same network. Several of them, so
  // that "the first localport by uuid" (random Port_Binding uuids) is one of them 8 times in 9.
  for (int i = 0; i < 8; ++i) {
    const std::string name = "ovn-lb-hm-" + std::to_string(i);
    char mac[32];
    std::snprintf(mac, sizeof mac, "fa:16:3e:00:ee:%02x", i);
    const std::string ip = "10.0.0." + std::to_string(240 + i);
    const auto r = chassis_->nbctl(
        {"--", "lsp-add", net.logical_switch, name, "--", "lsp-set-type", name, "localport", "--",
         "lsp-set-addresses", name, std::string(mac) + " " + ip, "--", "set", "Logical_Switch_Port",
         name,
         "external_ids={\"neutron:device_owner\"=\"ovn-lb-hm:distributed\", \"neutron:cidrs\"=\"" +
             ip + "/24\", \"neutron:device_id\"=\"ovn-lb-hm-subnet\"}"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto vm = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();
  EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  EXPECT_EQ(innerMac(net), net.metadata_mac) << "the namespace took another localport's MAC";
  EXPECT_EQ(ifaceId(net.metadata_tap_host), net.metadata_lsp);
  const auto addrs = chassis_->in_netns(net.metadata_netns, {"ip", "-4", "addr", "show"}).out;
  EXPECT_NE(addrs.find(net.metadata_ip + "/24"), std::string::npos) << addrs;
  EXPECT_EQ(addrs.find("10.0.0.24"), std::string::npos) << addrs;
}

TEST_F(AgentNeutronParityTest, AnIpv6OnlyNetworkIsServedOnTheLinkLocalAddress) {
  const auto net = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  // The network becomes IPv6-only, as ML2/OVN writes it for an IPv6 subnet: the metadata port
  // and the VM port have an IPv6 address and no IPv4 one.
  auto r = chassis_->nbctl({"--", "lsp-set-addresses", net.metadata_lsp,
                            net.metadata_mac + " fd00:e2e::2", "--", "set", "Logical_Switch_Port",
                            net.metadata_lsp, "external_ids:\"neutron:cidrs\"=\"fd00:e2e::2/64\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = chassis_->nbctl({"--", "lsp-set-addresses", vm.lsp, vm.mac + " fd00:e2e::11", "--",
                       "lsp-set-port-security", vm.lsp, vm.mac + " fd00:e2e::11", "--", "set",
                       "Logical_Switch_Port", vm.lsp,
                       "external_ids:\"neutron:cidrs\"=\"fd00:e2e::11/64\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(chassis_->nbctl({"--wait=hv", "sync"}).exit_code, 0);
  startAgent();
  Answer a;
  ASSERT_TRUE(waitFor(
      [&] {
        const auto out = chassis_->in_netns(
            vm.netns, {"curl", "-s", "-g", "-m", "5", "-o", "-", "-w", "\n%{http_code}",
                       "http://[fe80::a9fe:a9fe%eth0]/openstack/latest/meta_data.json"});
        const auto nl = out.out.rfind('\n');
        if (nl == std::string::npos) return false;
        a.body = out.out.substr(0, nl);
        a.status = std::atoi(out.out.c_str() + nl + 1);
        return a.status == 200;
      },
      60s))
      << a.status << " " << a.body << "\n"
      << agent_->get("/readyz?verbose").body;
  EXPECT_EQ(nlohmann::json::parse(a.body).value("uuid", ""), vm.device_id);
  const auto addrs = chassis_->in_netns(net.metadata_netns, {"ip", "addr", "show"}).out;
  EXPECT_NE(addrs.find("fe80::a9fe:a9fe/64"), std::string::npos) << addrs;
  EXPECT_EQ(addrs.find(net.metadata_ip + "/"), std::string::npos) << "no IPv4 cidr is left";
}

TEST_F(AgentNeutronParityTest, AnExternalPortIsServedOnTheNetworkNodeHostingIt) {
  serveANetworkNode();
  const auto net = chassis_->add_network(kNet1, "10.0.0.0/24");
  const std::string chassisName = chassis_->chassis_name();
  const std::string device = "0b1a0cc0-7c2d-4e6a-9a9b-00000000e2e7";
  const std::string mac = "fa:16:3e:00:e2:77", ip = "10.0.0.77";
  // As ML2/OVN writes a baremetal (or SR-IOV direct) port: type external, in an HA chassis group
  // of the network nodes, on a network with a localnet port.
  auto r = chassis_->nbctl({"ha-chassis-group-add", "e2e-hcg"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = chassis_->nbctl({"ha-chassis-group-add-chassis", "e2e-hcg", chassisName, "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string hcg = trim(
      chassis_->nbctl({"--bare", "--columns=_uuid", "find", "HA_Chassis_Group", "name=e2e-hcg"})
          .out);
  r = chassis_->nbctl({"--", "lsp-add", net.logical_switch, "ln-e2e", "--", "lsp-set-type",
                       "ln-e2e", "localnet", "--", "lsp-set-addresses", "ln-e2e", "unknown", "--",
                       "lsp-set-options", "ln-e2e", "network_name=physnet1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = chassis_->nbctl(
      {"--",
       "lsp-add",
       net.logical_switch,
       "ext-e2e",
       "--",
       "lsp-set-type",
       "ext-e2e",
       "external",
       "--",
       "lsp-set-addresses",
       "ext-e2e",
       mac + " " + ip,
       "--",
       "lsp-set-port-security",
       "ext-e2e",
       mac + " " + ip,
       "--",
       "set",
       "Logical_Switch_Port",
       "ext-e2e",
       "ha_chassis_group=" + hcg,
       "external_ids={\"neutron:device_owner\"=\"baremetal:none\", \"neutron:cidrs\"=\"" + ip +
           "/24\", \"neutron:device_id\"=\"" + device + "\", \"neutron:project_id\"=\"" +
           net.project_id + "\"}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  startAgent();
  // ovn-controller claims the external port for this chassis (the HA group's active member).
  ASSERT_TRUE(waitFor(
      [&] {
        return !trim(chassis_
                         ->sbctl({"--bare", "--columns=chassis", "find", "Port_Binding",
                                  "logical_port=ext-e2e"})
                         .out)
                    .empty();
      },
      60s))
      << chassis_->sbctl({"list", "Port_Binding", "ext-e2e"}).out;
  ASSERT_TRUE(waitFor([&] { return namespaceExists(net.metadata_netns); }, 30s)) << agent_->log();
  ASSERT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
      << agent_->get("/readyz?verbose").body;
  EXPECT_EQ(ifaceId(net.metadata_tap_host), net.metadata_lsp);

  // The baremetal host: on the physical network behind br-phys (the agent made it from the
  // Node's bridge mapping), its traffic enters OVN through the localnet port on the chassis
  // that hosts the external port.
  ASSERT_TRUE(waitFor(
      [&] {
        return chassis_->vsctl({"br-exists", "br-phys"}).exit_code == 0;
      },
      30s));
  ASSERT_EQ(::system("ip netns add okof-bm"), 0);
  ASSERT_EQ(::system("ip link add okbm0 type veth peer name eth0 netns okof-bm"), 0);
  ASSERT_EQ(chassis_->vsctl({"add-port", "br-phys", "okbm0"}).exit_code, 0);
  ASSERT_EQ(::system(("ip -n okof-bm link set eth0 address " + mac +
                      " up && ip -n okof-bm addr "
                      "add " +
                      ip +
                      "/24 dev eth0 && ip -n okof-bm route add 169.254.169.254/32 "
                      "via " +
                      net.metadata_ip +
                      " && ip link set okbm0 up && ip netns exec "
                      "okof-bm ethtool -K eth0 tx off tso off >/dev/null")
                         .c_str()),
            0);
  const Answer a = waitForMetadata("okof-bm", "/openstack/latest/meta_data.json");
  ASSERT_EQ(a.status, 200) << a.body << "\n" << agent_->log();
  EXPECT_EQ(nlohmann::json::parse(a.body).value("uuid", ""), device);
}

TEST_F(AgentNeutronParityTest, LivenessKeysReadAsNeutronServerReadsThem) {
  const auto net = chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  // The host ran Neutron's OVN agent before (neutron-ovn-agent): its keys are left, and
  // neutron-server reads them first (ChassisOVNAgentWriteEvent: agent_id, _agent_sb_cfg).
  auto r = chassis_->sbctl({"set", "Chassis_Private", chassis_->chassis_name(),
                            "external_ids:\"neutron:ovn-neutron-agent-id\"=\"11111111-2222-3333-"
                            "4444-555555555555\"",
                            "external_ids:\"neutron:ovn-neutron-agent-sb-cfg\"=\"0\"",
                            "external_ids:\"neutron:description-neutron-agent\"=\"old\"",
                            "external_ids:\"other:key\"=\"kept\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  startAgent();
  EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  // neutron-server: agent_id(row) = neutron:ovn-neutron-agent-id or neutron:ovn-metadata-id;
  // _agent_sb_cfg(row) = neutron:ovn-neutron-agent-sb-cfg or neutron:ovn-metadata-sb-cfg; alive
  // when that equals SB_Global.nb_cfg. Master's agent also writes neutron:ovn-bridge.
  ASSERT_TRUE(waitFor(
      [&] {
        return privateId("neutron:ovn-neutron-agent-id").empty() &&
               privateId("neutron:ovn-neutron-agent-sb-cfg").empty() &&
               privateId("neutron:ovn-metadata-sb-cfg") == sbGlobalNbCfg() &&
               privateId("neutron:ovn-bridge") == chassis_->bridge();
      },
      30s))
      << chassis_->sbctl({"list", "Chassis_Private"}).out;
  EXPECT_TRUE(privateId("neutron:description-neutron-agent").empty());
  EXPECT_EQ(privateId("other:key"), "kept");
  EXPECT_EQ(privateId("neutron:ovn-metadata-id").size(), 36U);
  EXPECT_NE(agent_->log().find("removing the OVN Neutron agent's keys"), std::string::npos);

  // Each nb_cfg bump (a Neutron write with --wait) is echoed after a random delay of 0-10 s.
  for (int bump = 0; bump < 2; ++bump) {
    ASSERT_EQ(chassis_->nbctl({"--wait=sb", "sync"}).exit_code, 0);
    const std::string cfg = sbGlobalNbCfg();
    ASSERT_TRUE(waitFor([&] { return privateId("neutron:ovn-metadata-sb-cfg") == cfg; }, 40s))
        << cfg << "\n"
        << chassis_->sbctl({"list", "Chassis_Private"}).out;
    const std::regex spread("nb_cfg " + cfg +
                            ": echoed to Chassis_Private \\S+ in ([0-9]+) ms "
                            "\\(a random 0-10000 ms");
    std::smatch m;
    const std::string log = agent_->log();
    ASSERT_TRUE(std::regex_search(log, m, spread)) << log;
    EXPECT_LE(std::stoi(m[1]), 10000);
  }
}

TEST_F(AgentNeutronParityTest, Nova503AndNovaUnreachableAreWhatTheVmSees) {
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto vm = chassis_->add_vm(kNet1, "vm1", "10.0.0.11", "fa:16:3e:00:e2:11");
  startAgent();
  EXPECT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  // Nova overloaded: its 503, its body, its Content-Type, as Neutron master passes the status.
  okna::testing::httpCall("POST", "http://127.0.0.1:" + std::to_string(novaPort_) +
                                      "/_control/status?code=503&type=text/html");
  const auto busy = chassis_->in_netns(
      vm.netns, {"curl", "-s", "-m", "5", "-o", "-", "-w", "\n%{http_code} %{content_type}",
                 "http://169.254.169.254/openstack/latest/meta_data.json"});
  EXPECT_EQ(busy.out, "scripted status 503\n503 text/html");
  // Nova gone: 503 with Neutron master's text.
  nova_.reset();
  const Answer down = curlFromVm(*chassis_, vm.netns, "/openstack/latest/meta_data.json");
  EXPECT_EQ(down.status, 503) << down.body;
  EXPECT_NE(down.body.find("temporarily unavailable"), std::string::npos) << down.body;
}

}  // namespace
}  // namespace okna
