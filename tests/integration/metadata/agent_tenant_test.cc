// Issue 36, "metadata under a determined tenant", end to end: the real agent binary on a real OVN
// chassis (agent_metadata_fixture.h), VMs as network namespaces on one shared network, the
// tenant's VMs running small python scripts that hold connections the way an attacker would.
//
// Before: fairness was per address and a network's cap refused newcomers, so 8 VMs of one
// project trickling request bytes on 8 connections each (and reconnecting when cut) kept the
// network full and another project's VM was served 2 times in 40.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/metadata/agent_metadata_fixture.h"

namespace okna {
namespace {

using namespace metadata_e2e;
using namespace std::chrono_literals;

const std::string kProjectA = "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0";
const std::string kProjectB = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";

// Holds `count` connections to 169.254.169.254, each sending one byte of a request that never
// ends (a header value growing by a byte every 0.3 s), and opens a new one as soon as one is cut.
const char* kTrickler = R"(
import select, socket, sys, time
count = int(sys.argv[1])
head = b"GET /openstack/latest/meta_data.json HTTP/1.1\r\nHost: 169.254.169.254\r\nX-Trickle: "
def connect():
    while True:
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("169.254.169.254", 80))
            s.setblocking(False)
            return [s, 0]
        except OSError:
            s.close()
            time.sleep(0.05)
conns = [connect() for _ in range(count)]
print("opened", len(conns), flush=True)
cuts, rounds = 0, 0
while True:
    for c in conns:
        s, sent = c
        try:
            readable, _, _ = select.select([s], [], [], 0)
            if readable and not s.recv(4096):
                raise ConnectionResetError("closed by the agent")
            s.send(head[sent:sent + 1] if sent < len(head) else b"a")
            c[1] = sent + 1
        except OSError:
            s.close()
            c[:] = connect()
            cuts += 1
    rounds += 1
    if rounds % 10 == 0:
        print("cut and reconnected", cuts, flush=True)
    time.sleep(0.3)
)";

// Opens a connection every 0.1 s, asks each for a `size`-byte answer and never reads it, until
// it holds 3 x `count` of them (those the agent closed included: it does not look).
const char* kNonReader = R"(
import socket, sys, time
count, size = int(sys.argv[1]), int(sys.argv[2])
request = ("GET /_debug/bytes?n=%d HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n" % size).encode()
held = []
while len(held) < 3 * count:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("169.254.169.254", 80))
        s.sendall(request)
        held.append(s)
    except OSError:
        s.close()
    if len(held) == count:
        print("opened", count, flush=True)
    time.sleep(0.1)
print("holding", len(held), flush=True)
time.sleep(600)
)";

// The resident memory of a process, in bytes (VmRSS), or 0.
std::size_t residentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  return 0;
}

class AgentTenantTest : public AgentMetadataTest {
 protected:
  // A python script in the VM's namespace, for the rest of the test.
  std::unique_ptr<Process> runInVm(const OvnChassis::Vm& vm, const char* script,
                                   const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/sbin/ip",     "netns", "exec", vm.netns,
                                  "/usr/bin/python3", "-c",    script};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<Process>(argv, dir_ + "/script-" + vm.name + ".log");
  }

  // `count` sequential requests from the VM, each on its own connection as cloud-init makes
  // them: the statuses, in order.
  std::vector<int> askInTurn(const OvnChassis::Vm& vm, int count) {
    std::vector<int> statuses;
    for (int i = 0; i < count; ++i)
      statuses.push_back(
          curlFromVm(*chassis_, vm.netns, "/openstack/latest/meta_data.json").status);
    return statuses;
  }

  std::vector<OvnChassis::Vm> projectAVms(int count) {
    std::vector<OvnChassis::Vm> vms;
    for (int i = 1; i <= count; ++i) {
      char mac[32];
      std::snprintf(mac, sizeof mac, "fa:16:3e:00:a0:%02x", i);
      vms.push_back(chassis_->add_vm(kNet1, "a" + std::to_string(i),
                                     "10.0.0." + std::to_string(20 + i), mac, "", kProjectA));
    }
    return vms;
  }
};

TEST_F(AgentTenantTest, AProjectsTricklingVmsDoNotKeepAnotherProjectsVmOut) {
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto tenant = projectAVms(8);
  const auto neighbour =
      chassis_->add_vm(kNet1, "b", "10.0.0.50", "fa:16:3e:00:b0:01", "", kProjectB);
  startAgent();
  EXPECT_EQ(metaData(neighbour.netns).value("uuid", ""), neighbour.device_id);
  for (const auto& vm : tenant) ASSERT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);

  std::vector<std::unique_ptr<Process>> tricklers;
  for (const auto& vm : tenant) tricklers.push_back(runInVm(vm, kTrickler, {"8"}));
  for (const auto& t : tricklers)
    ASSERT_TRUE(waitFor([&] { return t->log().find("opened 8") != std::string::npos; }, 60s))
        << t->log();
  // Each has trickled for 10 rounds (3 s): its connections are no longer fresh.
  for (const auto& t : tricklers)
    ASSERT_TRUE(
        waitFor([&] { return t->log().find("cut and reconnected") != std::string::npos; }, 30s))
        << t->log();

  const auto began = std::chrono::steady_clock::now();
  const std::vector<int> statuses = askInTurn(neighbour, 20);
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(statuses, std::vector<int>(20, 200));
  EXPECT_LT(took, 30s) << "20 requests, one at a time";
  std::cout << "project B's VM: 20 requests in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms while project A's 8 VMs trickled on 8 connections each; agent: evicted "
            << agent_->metric("okna_metadata_connections_evicted_total{reason=\"project\"}")
            << " (project), "
            << agent_->metric("okna_metadata_connections_evicted_total{reason=\"client\"}")
            << " (client), "
            << agent_->metric("okna_metadata_connections_evicted_total{reason=\"busy\"}")
            << " (busy); refused "
            << agent_->metric("okna_metadata_connections_refused_total{reason=\"namespace\"}")
            << " (namespace); open " << agent_->metric("okna_metadata_open_connections") << "\n";
  // The tenant tried 64 and holds its project's share, 32 of the network's 64; the rest of its
  // attempts took the place of its own.
  EXPECT_LE(agent_->metric("okna_metadata_open_connections"), 33) << "32 for A, B's one";
  EXPECT_GE(agent_->metric("okna_metadata_connections_evicted_total{reason=\"project\"}"), 32);
  for (const auto& t : tricklers) EXPECT_TRUE(t->running()) << t->log();
}

// Memory was bounded only by the file limit: an answer was held whole, for up to idleTimeout, for
// a VM that did not read it. Project A's 8 VMs each keep opening connections that ask for a 1 MiB
// answer and never read; the agent, with a 16 MiB budget, stays within it and goes on serving
// project B's VM.
TEST_F(AgentTenantTest, NonReadingVmsStayWithinTheMemoryBudgetAndAnotherProjectIsServed) {
  constexpr std::size_t kBudget = 16 << 20;
  constexpr std::size_t kAnswer = 1 << 20;
  chassis_->add_network(kNet1, "10.0.0.0/24");
  const auto tenant = projectAVms(8);
  const auto neighbour =
      chassis_->add_vm(kNet1, "b", "10.0.0.50", "fa:16:3e:00:b0:01", "", kProjectB);
  startAgent("{memoryBudgetBytes: " + std::to_string(kBudget) + "}");
  EXPECT_EQ(metaData(neighbour.netns).value("uuid", ""), neighbour.device_id);
  for (const auto& vm : tenant) ASSERT_EQ(metaData(vm.netns).value("uuid", ""), vm.device_id);
  const pid_t agentPid = agent_->process().pid();
  const std::size_t before = residentBytes(agentPid);

  // The agent's resident memory and what it charges against the budget, sampled every 20 ms
  // while the VMs do not read.
  std::atomic<bool> sampling{true};
  std::atomic<std::size_t> peakRss{before};
  std::atomic<double> peakHeld{0};
  std::thread sampler([&] {
    while (sampling) {
      peakRss = std::max(peakRss.load(), residentBytes(agentPid));
      peakHeld = std::max(peakHeld.load(), agent_->metric("okna_metadata_memory_held_bytes"));
      std::this_thread::sleep_for(20ms);
    }
  });
  std::vector<std::unique_ptr<Process>> nonReaders;
  for (const auto& vm : tenant)
    nonReaders.push_back(runInVm(vm, kNonReader, {"8", std::to_string(kAnswer)}));
  for (const auto& n : nonReaders)
    EXPECT_TRUE(waitFor([&] { return n->log().find("holding") != std::string::npos; }, 60s))
        << n->log();
  const auto began = std::chrono::steady_clock::now();
  const std::vector<int> statuses = askInTurn(neighbour, 20);
  const auto took = std::chrono::steady_clock::now() - began;
  sampling = false;
  sampler.join();

  const double mib = 1 << 20;
  std::cout << "agent RSS " << static_cast<double>(before) / mib << " MiB before, peak "
            << static_cast<double>(peakRss.load()) / mib << " MiB while 8 VMs held up to 24 "
            << "connections each with a 1 MiB answer unread; charged at most "
            << peakHeld.load() / mib << " MiB of a " << kBudget / (1 << 20) << " MiB budget; "
            << agent_->metric("okna_metadata_connections_evicted_total{reason=\"memory\"}")
            << " connections closed over the budget; project B's 20 requests in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  EXPECT_EQ(statuses, std::vector<int>(20, 200));
  EXPECT_LT(took, 30s);
  EXPECT_LE(peakHeld.load(), static_cast<double>(kBudget));
  EXPECT_GT(agent_->metric("okna_metadata_connections_evicted_total{reason=\"memory\"}"), 0);
  // Beyond the budget the agent holds only the answers arriving from Nova (project A's share of
  // the network's Nova slots, 8, at 1 MiB each) and the allocator's slack.
  EXPECT_LT(peakRss.load() - before, kBudget + 8 * kAnswer)
      << "grew by " << static_cast<double>(peakRss.load() - before) / mib << " MiB";
}

}  // namespace
}  // namespace okna
