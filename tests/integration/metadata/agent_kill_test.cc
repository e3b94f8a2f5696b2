// The agent SIGKILLed at random points while networks bind, VMs leave and the Node's labels flip,
// then restarted (issue 27's fault matrix, "the agent"): once it has converged, the host is in
// exactly the state a clean run leaves on the same chassis (namespaces, their links and
// addresses, veths, br-int ports and their external_ids, the Open_vSwitch row's external_ids),
// nothing leaked and nothing half-built, and every VM is served. The real agent binary on a real
// OVN chassis (agent_metadata_fixture.h); Placement is not part of this test.
//
// The kill points are random but reproducible: the test prints its seed; OKNA_FAULT_SEED=<seed>
// runs the same draws again. A kill point is "after the agent has written K more log lines"
// (debug level: every step it takes logs), K drawn from the seed, so the points follow the
// agent's progress rather than the clock.
#include <csignal>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

std::string idOf(int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04dc0de-1111-4d2e-9f00-0000000c%04d", n, n);
  return buf;
}

// Sorted non-empty lines, without the peer's interface index ("tapX@if2387"), which the kernel
// numbers afresh for every veth.
std::vector<std::string> lines(const std::string& text) {
  static const std::regex peerIndex("@if[0-9]+");
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(std::regex_replace(l, peerIndex, ""));
  std::sort(out.begin(), out.end());
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

class AgentKillTest : public AgentMetadataTest {
 protected:
  static constexpr const char* kNodePath = "/api/v1/nodes/hv-e2e";

  void patchLabels(bool compute, bool network, const std::string& zone) {
    const nlohmann::json patch = {
        {"metadata",
         {{"labels",
           {{"node-role.openkeel.io/compute", compute ? nlohmann::json("") : nlohmann::json()},
            {"node-role.openkeel.io/network", network ? nlohmann::json("") : nlohmann::json()},
            {"topology.kubernetes.io/zone", zone}}}}}};
    const auto r = server_->admin("PATCH", kNodePath, patch.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }

  std::string run(const std::vector<std::string>& argv) {
    return okna::testing::detail::run(argv).out;
  }

  // What the agent leaves on the host, normalised (sorted lines; counters and timestamps that
  // differ between any two runs left out).
  std::string hostState() {
    std::string s;
    std::vector<std::string> namespaces;
    for (const auto& l : lines(run({"ip", "netns", "list"})))
      if (ours(l)) namespaces.push_back(l.substr(0, l.find(' ')));
    s += "== namespaces\n" + join(namespaces);
    for (const auto& ns : namespaces) {
      s += "== in " + ns + "\n" + join(lines(run({"ip", "-n", ns, "-br", "link"})));
      s += join(lines(run({"ip", "-n", ns, "-br", "addr"})));
    }
    std::vector<std::string> taps;
    for (const auto& l : lines(run({"ip", "-br", "link"})))
      if (ours(l)) taps.push_back(l.substr(0, l.find(' ')));
    s += "== host taps\n" + join(taps);
    s += "== br-int ports\n" + join(lines(chassis_->vsctl({"list-ports", chassis_->bridge()}).out));
    s += "== interfaces\n" +
         join(lines(chassis_
                        ->vsctl({"--format=csv", "--no-headings",
                                 "--columns=name,type,external_ids", "list", "Interface"})
                        .out));
    s += "== Open_vSwitch external_ids\n" + ovsExternalIds() + "\n";
    return s;
  }

  std::string ovsExternalIds() {
    return chassis_->vsctl({"--bare", "get", "Open_vSwitch", ".", "external_ids"}).out;
  }

  // Converged: one namespace per network with a VM here and no other, every VM answered, the
  // network role's external_ids written, ready.
  void waitConverged(const std::set<std::string>& netsWithVms,
                     const std::vector<OvnChassis::Vm>& vms, const std::string& zone) {
    std::set<std::string> want;
    for (const auto& n : netsWithVms) want.insert("ovnmeta-" + n);
    const auto have = [&] {
      std::set<std::string> got;
      for (const auto& l : lines(run({"ip", "netns", "list"})))
        if (ours(l)) got.insert(l.substr(0, l.find(' ')));
      return got;
    };
    EXPECT_TRUE(waitFor([&] { return have() == want; }, 60s))
        << "namespaces:\n"
        << join({have().begin(), have().end()}) << "wanted:\n"
        << join({want.begin(), want.end()});
    for (const auto& vm : vms) {
      const auto md = metaData(vm.netns);
      EXPECT_EQ(md.is_object() ? md.value("uuid", "") : "", vm.device_id) << vm.netns;
    }
    EXPECT_TRUE(waitFor(
        [&] {
          const std::string ids = ovsExternalIds();
          return ids.find("enable-chassis-as-gw") != std::string::npos &&
                 ids.find("availability-zones=" + zone) != std::string::npos;
        },
        30s))
        << ovsExternalIds();
    EXPECT_TRUE(waitFor([&] { return agent_->get("/readyz").status == 200; }, 30s))
        << agent_->get("/readyz?verbose").body;
  }

  // Whether a namespace or host link (a line of `ip netns list` / `ip -br link`) is this test's:
  // its networks' ovnmeta-<id> and tap<id[:10]>0, its VMs' taps. The host namespace may hold
  // other chassis' (another test or a bench on the same machine).
  bool ours(const std::string& line) const {
    const std::string name = line.substr(0, line.find_first_of(" @"));
    if (ourTaps_.count(name)) return true;
    for (const auto& id : ourNets_)
      if (name == "ovnmeta-" + id || name == "tap" + id.substr(0, 10) + "0") return true;
    return false;
  }
  std::set<std::string> ourNets_, ourTaps_;

  size_t logLines() {
    const std::string log = agent_->log();
    return static_cast<size_t>(std::count(log.begin(), log.end(), '\n'));
  }
};

TEST_F(AgentKillTest, SigkilledAtRandomPointsWhileNetworksBindAndLabelsFlipLeavesACleanRunsState) {
  unsigned seed = std::random_device{}();
  if (const char* env = std::getenv("OKNA_FAULT_SEED")) seed = std::stoul(env);
  std::cout << "[ seed     ] OKNA_FAULT_SEED=" << seed << std::endl;
  SCOPED_TRACE("OKNA_FAULT_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);

  // What the fixture alone wrote, before any agent ran.
  const std::string fixtureIds = ovsExternalIds();
  std::vector<OvnChassis::Vm> vms;
  std::vector<std::string> vmNames;  // as del_vm takes them (without the fixture's tag)
  std::set<std::string> netsWithVms;
  int next = 1;
  const auto addNetworkWithVm = [&] {
    const int n = next++;
    const std::string id = idOf(n);
    chassis_->add_network(id, "10.0." + std::to_string(n) + ".0/24");
    char mac[32];
    std::snprintf(mac, sizeof mac, "fa:16:3e:00:c0:%02x", n);
    vmNames.push_back("vm" + std::to_string(n));
    ourNets_.insert(id);
    vms.push_back(chassis_->add_vm(id, vmNames.back(), "10.0." + std::to_string(n) + ".11", mac));
    ourTaps_.insert(vms.back().tap);
    netsWithVms.insert(id);
  };
  addNetworkWithVm();
  addNetworkWithVm();
  patchLabels(true, true, "az-0");
  startAgent();

  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    // Kill once the agent has written K more lines; K is drawn from the seed.
    const size_t killAfter = logLines() + std::uniform_int_distribution<size_t>(1, 80)(rng);
    std::atomic<bool> churnDone{false};
    std::vector<bool> flips;
    for (int i = 0; i < 6; ++i) flips.push_back(std::bernoulli_distribution(0.5)(rng));
    const bool dropAVm = vms.size() > 2 && std::bernoulli_distribution(0.7)(rng);
    const size_t victim =
        dropAVm ? std::uniform_int_distribution<size_t>(0, vms.size() - 1)(rng) : 0;
    std::thread churn([&] {
      // Networks arrive, a VM leaves, the roles and the zone flip: all while the agent works.
      patchLabels(flips[0], flips[1], "az-" + std::to_string(round + 1));
      addNetworkWithVm();
      patchLabels(flips[2], flips[3], "az-x" + std::to_string(round));
      if (dropAVm) {
        chassis_->del_vm(vmNames[victim]);
        vmNames.erase(vmNames.begin() + static_cast<long>(victim));
        netsWithVms.erase(vms[victim].net_id);
        vms.erase(vms.begin() + static_cast<long>(victim));
      }
      addNetworkWithVm();
      patchLabels(flips[4], flips[5], "az-y" + std::to_string(round));
      churnDone = true;
    });
    waitFor([&] { return logLines() >= killAfter || churnDone; }, 120s);
    std::cout << "[ round " << round << "  ] SIGKILL after " << logLines() << " log lines"
              << (churnDone ? " (churn already done)" : "") << std::endl;
    agent_->process().signal(SIGKILL);
    agent_->process().waitExit(10s);
    churn.join();
    if (HasFatalFailure()) return;
    std::filesystem::copy_file(server_->dir() + "/agent.log",
                               dir_ + "/agent-killed-" + std::to_string(round) + ".log",
                               std::filesystem::copy_options::overwrite_existing);
    startAgent();
  }
  patchLabels(true, true, "az-final");
  waitConverged(netsWithVms, vms, "az-final");
  const std::string afterKills = hostState();

  // The clean run: the agent's traces wiped (its namespaces with their veths, its br-int ports,
  // the external_ids back to the fixture's), the agent started afresh on the same chassis.
  agent_->process().signal(SIGKILL);
  agent_->process().waitExit(10s);
  for (int n = 1; n < next; ++n) {
    const std::string id = idOf(n);
    run({"ip", "netns", "del", "ovnmeta-" + id});
    (void)chassis_->vsctl(
        {"--if-exists", "del-port", chassis_->bridge(), "tap" + id.substr(0, 10) + "0"});
  }
  ASSERT_TRUE(waitFor(
      [&] {
        for (const auto& l : lines(run({"ip", "-br", "link"})))
          for (int n = 1; n < next; ++n)
            if (l.rfind("tap" + idOf(n).substr(0, 10) + "0", 0) == 0) return false;
        return true;
      },
      20s));
  ASSERT_EQ(chassis_->vsctl({"set", "Open_vSwitch", ".", "external_ids=" + fixtureIds}).exit_code,
            0);
  agent_.reset();
  startAgent();
  waitConverged(netsWithVms, vms, "az-final");
  const std::string clean = hostState();
  EXPECT_EQ(afterKills, clean) << "the host after " << kRounds
                               << " SIGKILLs differs from a clean run's";
}

}  // namespace
}  // namespace okna
