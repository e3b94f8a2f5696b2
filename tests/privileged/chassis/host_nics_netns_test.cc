// The external NIC's safety check end to end against the kernel: in a network namespace the test
// creates, a veth carrying the default route (IPv4 or IPv6) or the Node's InternalIP is refused
// as the external NIC, the annotation network.openkeel.io/external-nic-address-moves=true lets it
// go, and a NIC with neither is taken. LinuxHostNics reads the namespace of the calling thread
// (getifaddrs' netlink socket, /proc/thread-self/net), so the checks run on a thread that joined
// the namespace with setns(2).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <string>

#include "chassis/chassis_desired.h"
#include "chassis/host_nics.h"
#include "k8s/objects.h"

namespace okna::ovsdb {
namespace {

struct Shell {
  int status;
  std::string output;
};

Shell sh(const std::string& command) {
  Shell r{-1, ""};
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  r.status = ::pclose(p);
  return r;
}

class HostNicsNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces)";
    ns_ = "okc8-nics-" + std::to_string(::getpid());
    sh("ip netns del " + ns_);
    const Shell added = sh("ip netns add " + ns_);
    if (added.status != 0) GTEST_SKIP() << "cannot create a network namespace: " << added.output;
    created_ = true;
    // okc8-ext0: the NIC that carries the node (address + default routes); okc8-ext2: a spare
    // NIC with nothing on it.
    for (const std::string cmd :
         {"link add okc8-ext0 type veth peer name okc8-ext1",
          "link add okc8-ext2 type veth peer name okc8-ext3", "link set okc8-ext0 up",
          "link set okc8-ext1 up", "link set okc8-ext2 up", "link set okc8-ext3 up",
          "addr add 10.77.0.2/24 dev okc8-ext0", "route add default via 10.77.0.1 dev okc8-ext0",
          "-6 addr add fd00:77::2/64 dev okc8-ext2 nodad",
          "-6 route add default via fd00:77::1 dev okc8-ext2"}) {
      const Shell r = sh("ip -n " + ns_ + " " + cmd);
      ASSERT_EQ(r.status, 0) << "ip " << cmd << ": " << r.output;
    }
  }
  void TearDown() override {
    if (created_) sh("ip netns del " + ns_);
  }

  // LinuxHostNics::facts(nic) as seen from inside the namespace.
  NicFacts factsInNamespace(const std::string& nic) {
    auto result = std::async(std::launch::async, [&]() -> NicFacts {
      const int fd = ::open(("/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) throw std::runtime_error("setns failed");
      ::close(fd);
      return LinuxHostNics("/proc/thread-self/net").facts(nic);
    });
    return result.get();
  }

  static k8s::NodeInfo node(const std::string& nic, k8s::StringMap annotations = {}) {
    k8s::NodeInfo n;
    n.name = "net-1";
    n.labels[kExternalNicKey] = nic;
    n.annotations = std::move(annotations);
    return n;
  }

  // The plan for `n` after the safety check: is the NIC plugged, and with which warning?
  std::pair<bool, std::string> guarded(const k8s::NodeInfo& n, const NicFacts& facts) {
    DesiredChassis d = planChassis({}, n, {"network"});
    guardExternalNic(d, n, facts);
    bool plugged = false;
    for (const auto& b : d.bridges)
      plugged = plugged || std::find(b.ports.begin(), b.ports.end(),
                                     n.labels.at(kExternalNicKey)) != b.ports.end();
    std::string reason;
    for (const auto& w : d.warnings) reason += w.reason;
    return {plugged, reason};
  }

  std::string ns_;
  bool created_ = false;
};

TEST_F(HostNicsNetns, TheKernelsFactsAreRead) {
  const NicFacts ext0 = factsInNamespace("okc8-ext0");
  EXPECT_TRUE(ext0.carriesDefaultRoute);
  EXPECT_NE(std::find(ext0.addresses.begin(), ext0.addresses.end(), "10.77.0.2"),
            ext0.addresses.end());
  const NicFacts ext2 = factsInNamespace("okc8-ext2");
  EXPECT_TRUE(ext2.carriesDefaultRoute) << "the IPv6 default route";
  const NicFacts ext1 = factsInNamespace("okc8-ext1");
  EXPECT_FALSE(ext1.carriesDefaultRoute);
  // Only link-local IPv6 (if any), never the node's addresses.
  for (const auto& a : ext1.addresses) EXPECT_EQ(a.rfind("fe80:", 0), 0u) << a;
  // The host's own namespace is not what was read (its NICs do not have these names).
  EXPECT_FALSE(LinuxHostNics().facts("okc8-ext0").carriesDefaultRoute);
}

TEST_F(HostNicsNetns, ADefaultRouteOrTheInternalIpIsRefusedUnlessTheAddressMoves) {
  // The default route alone.
  auto [plugged, reason] = guarded(node("okc8-ext0"), factsInNamespace("okc8-ext0"));
  EXPECT_FALSE(plugged);
  EXPECT_EQ(reason, "UnsafeExternalNic");
  // The IPv6 default route.
  std::tie(plugged, reason) = guarded(node("okc8-ext2"), factsInNamespace("okc8-ext2"));
  EXPECT_FALSE(plugged);
  EXPECT_EQ(reason, "UnsafeExternalNic");
  // The InternalIP alone: the route moved away, the address stayed.
  ASSERT_EQ(sh("ip -n " + ns_ + " route del default").status, 0);
  ASSERT_FALSE(factsInNamespace("okc8-ext0").carriesDefaultRoute);
  k8s::NodeInfo withIp = node("okc8-ext0");
  withIp.internalIps = {"10.77.0.2"};
  std::tie(plugged, reason) = guarded(withIp, factsInNamespace("okc8-ext0"));
  EXPECT_FALSE(plugged);
  EXPECT_EQ(reason, "UnsafeExternalNic");
  // The same NIC once the Node's InternalIP is elsewhere: taken.
  withIp.internalIps = {"10.99.0.2"};
  std::tie(plugged, reason) = guarded(withIp, factsInNamespace("okc8-ext0"));
  EXPECT_TRUE(plugged);
  EXPECT_EQ(reason, "");
  // The operator moves the address with it.
  withIp.internalIps = {"10.77.0.2"};
  withIp.annotations[kExternalNicAddressMovesKey] = "true";
  std::tie(plugged, reason) = guarded(withIp, factsInNamespace("okc8-ext0"));
  EXPECT_TRUE(plugged);
  EXPECT_EQ(reason, "");
}

TEST_F(HostNicsNetns, ANicWithNeitherIsTaken) {
  k8s::NodeInfo n = node("okc8-ext1");
  n.internalIps = {"10.77.0.2", "fd00:77::2"};
  const auto [plugged, reason] = guarded(n, factsInNamespace("okc8-ext1"));
  EXPECT_TRUE(plugged);
  EXPECT_EQ(reason, "");
}

}  // namespace
}  // namespace okna::ovsdb
