#pragma once
// The fixture of the end-to-end metadata tests: the real agent binary on a REAL OVN chassis
// (tests/fixtures/ovn, OKOF_CHASSIS_NETNS=host: the agent plugs its veths where ovs-vswitchd
// lives and reaches the fake API server and Nova on 127.0.0.1), the Node from the fake
// kube-apiserver, Nova played by tests/fixtures/nova/fake_nova.py (checks the signature as Nova
// does). Root only; skips with the reason otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/fakes/agent_process.h"
#include "tests/fakes/fake_apiserver_fixture.h"
#include "tests/fixtures/ovn/ovn_chassis_fixture.h"
#include "tests/support/test_paths.h"

namespace okna::metadata_e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using okna::testing::AgentProcess;
using okna::testing::FakeApiServer;
using okna::testing::OvnChassis;
using okna::testing::Process;
using okna::testing::waitFor;

inline const std::string kNet1 = "5a1e0c3b-1111-4d2e-9f00-00000000e2e1";
inline const std::string kNet2 = "5a1e0c3b-2222-4d2e-9f00-00000000e2e2";
inline const std::string kStray = "ovnmeta-5a1e0c3b-dead-4d2e-9f00-00000000e2e9";
inline const std::string kSecret = "e2e-shared-secret";

inline constexpr const char* kNode = R"(apiVersion: v1
kind: Node
metadata:
  name: hv-e2e
  uid: 7d3c1a52-0000-4e2e-8000-00000000e2e0
  resourceVersion: "1"
  labels:
    kubernetes.io/hostname: hv-e2e
    node-role.openkeel.io/compute: ""
spec: {}
status:
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
)";

struct Answer {
  int status = 0;
  std::string body;
};

// What cloud-init's first request gets, from inside the VM's namespace.
inline Answer curlFromVm(const OvnChassis& chassis, const std::string& netns,
                         const std::string& path, const std::vector<std::string>& headers = {}) {
  std::vector<std::string> argv{"curl", "-s", "-m", "5", "-o", "-", "-w", "\n%{http_code}"};
  for (const auto& h : headers) argv.insert(argv.end(), {"-H", h});
  argv.push_back("http://169.254.169.254" + path);
  const auto r = chassis.in_netns(netns, argv);
  Answer a;
  const auto nl = r.out.rfind('\n');
  if (nl == std::string::npos) return a;
  a.body = r.out.substr(0, nl);
  a.status = std::atoi(r.out.c_str() + nl + 1);
  return a;
}

// The namespace's identity: a rebuilt namespace has another nsfs inode.
inline ino_t namespaceInode(const std::string& name) {
  struct stat st {};
  return ::stat(("/run/netns/" + name).c_str(), &st) == 0 ? st.st_ino : 0;
}

inline bool namespaceExists(const std::string& name) {
  return namespaceInode(name) != 0;
}

class AgentMetadataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVN_CHASSIS();
    for (const char* tool : {"/usr/bin/python3", "/usr/bin/curl"})
      if (!fs::exists(tool)) GTEST_SKIP() << tool << " is not installed";
    ::setenv("OKOF_CHASSIS_NETNS", "host", 1);
    chassis_ = std::make_unique<OvnChassis>();
    dir_ = chassis_->dir();
    std::ofstream(dir_ + "/nova-secret") << kSecret << "\n";
    std::ofstream(dir_ + "/agent-secret") << kSecret << "\n";
    startNova();
    std::ofstream(dir_ + "/hv-e2e.node.yaml") << kNode;
    server_ = std::make_unique<FakeApiServer>(std::vector<std::string>{dir_ + "/hv-e2e.node.yaml"});
  }

  void TearDown() override {
    if (HasFailure()) {
      if (agent_) std::cerr << "---- agent log\n" << agent_->log();
      if (nova_) std::cerr << "---- fake nova log\n" << nova_->log();
    }
    agent_.reset();
    ::system(("ip netns del " + kStray + " 2>/dev/null").c_str());
    chassis_.reset();  // stops every daemon, deletes the namespaces of its networks
  }

  void startNova() {
    nova_ = std::make_unique<Process>(
        std::vector<std::string>{
            "/usr/bin/python3",
            std::string(::okna::testing::kSourceDir) + "/tests/fixtures/nova/fake_nova.py",
            "--secret-file", dir_ + "/nova-secret"},
        dir_ + "/fake_nova.log");
    const std::regex ready("listening on port ([0-9]+)");
    ASSERT_TRUE(waitFor(
        [&] {
          std::smatch m;
          const std::string text = nova_->log();
          if (std::regex_search(text, m, ready)) novaPort_ = std::stoi(m[1]);
          return novaPort_ != 0 || !nova_->running();
        },
        30s));
    ASSERT_NE(novaPort_, 0) << nova_->log();
  }

  void startAgent(const std::string& limits = "", std::vector<std::string> wrapper = {}) {
    const std::string config =
        "logging: {level: debug}\n"
        "placement: {enabled: false}\n"
        "ovs: {drainTimeoutSeconds: 0, stateFile: \"\"}\n"
        "metadata:\n"
        "  verifyIntervalSeconds: 0.5\n"
        "  sharedSecretFile: " +
        dir_ +
        "/agent-secret\n"
        "  nova: {host: 127.0.0.1, port: " +
        std::to_string(novaPort_) + "}\n" + (limits.empty() ? "" : "  limits: " + limits + "\n") +
        extraConfig_;
    agent_ = std::make_unique<AgentProcess>(
        server_->dir(), config,
        std::vector<std::string>{"--node-name", "hv-e2e", "--kubeconfig", server_->kubeconfig(),
                                 "--context", "node-agent", "--ovsdb", chassis_->ovs_remote()},
        std::move(wrapper));
  }

  // Waits until the VM gets an answer from Nova through the agent (OVN installs the flows for the
  // agent's port asynchronously), and returns it.
  Answer waitForMetadata(const std::string& netns, const std::string& path) {
    Answer a;
    waitFor(
        [&] {
          a = curlFromVm(*chassis_, netns, path);
          return a.status == 200;
        },
        60s);
    return a;
  }

  nlohmann::json metaData(const std::string& netns) {
    const Answer a = waitForMetadata(netns, "/openstack/latest/meta_data.json");
    EXPECT_EQ(a.status, 200) << a.body;
    return a.status == 200 ? nlohmann::json::parse(a.body) : nlohmann::json();
  }

  std::vector<std::string> brIntPorts() {
    const auto r = chassis_->vsctl({"list-ports", chassis_->bridge()});
    std::vector<std::string> ports;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);)
      if (!l.empty()) ports.push_back(l);
    return ports;
  }

  bool hasPort(const std::string& name) {
    const auto p = brIntPorts();
    return std::find(p.begin(), p.end(), name) != p.end();
  }

  // A VM that opens `count` connections to 169.254.169.254 and holds them, idle, until the
  // test ends (a process in the VM's namespace).
  std::unique_ptr<Process> holdIdleConnections(const std::string& netns, int count) {
    static const char* kScript =
        "import socket, sys, time\n"
        "held = []\n"
        "for i in range(int(sys.argv[1])):\n"
        "    s = socket.socket(); s.settimeout(5)\n"
        "    try:\n"
        "        s.connect(('169.254.169.254', 80)); held.append(s)\n"
        "    except OSError as e:\n"
        "        print('connect failed:', e, flush=True)\n"
        "print('opened', len(held), flush=True)\n"
        "time.sleep(600)\n";
    auto p = std::make_unique<Process>(
        std::vector<std::string>{"/usr/sbin/ip", "netns", "exec", netns, "/usr/bin/python3", "-c",
                                 kScript, std::to_string(count)},
        dir_ + "/flood-" + netns + ".log");
    EXPECT_TRUE(waitFor([&] { return p->log().find("opened") != std::string::npos; }, 60s))
        << p->log();
    return p;
  }

  std::unique_ptr<OvnChassis> chassis_;
  std::string dir_;
  std::unique_ptr<Process> nova_;
  int novaPort_ = 0;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<AgentProcess> agent_;
  // Appended to the agent's configuration (top-level keys other than those startAgent writes).
  std::string extraConfig_;
};

}  // namespace okna::metadata_e2e
