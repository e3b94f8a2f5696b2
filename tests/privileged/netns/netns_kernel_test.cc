// netns/ against the real kernel, checked with iproute2 and ethtool as an operator would. Root
// only; each test names its objects ovnmeta-oktn<random> / oktn-<random> and deletes them.

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>

#include <cstdio>
#include <random>
#include <string>

#include "netns/applier.h"
#include "netns/enter.h"
#include "netns/netlink.h"
#include "netns/worker.h"

namespace okna::netns {
namespace {

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult sh(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  r.status = ::pclose(pipe);
  return r;
}

std::string randomHex(size_t n) {
  std::random_device rd;
  std::string s;
  const char* digits = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) s += digits[rd() % 16];
  return s;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

ino_t ownNamespaceInode() {
  struct stat st {};
  ::stat("/proc/thread-self/ns/net", &st);
  return st.st_ino;
}

uint16_t portOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

// A blocking TCP connect from namespace `ns` ("" = here); errno on failure, 0 on success.
int connectFrom(const std::string& ns, const std::string& ip, uint16_t port,
                const std::string& scopeIface = "") {
  int result = -1;
  auto st = runInNamespace(ns, [&]() -> core::Status {
    sockaddr_storage ss{};
    socklen_t len = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(port);
      len = sizeof(*v4);
    } else {
      inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr);
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(port);
      if (!scopeIface.empty()) v6->sin6_scope_id = if_nametoindex(scopeIface.c_str());
      len = sizeof(*v6);
    }
    const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    result = ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 ? 0 : errno;
    ::close(fd);
    return {};
  });
  return st.ok() ? result : st.error().code;
}

// Accepts one pending connection within a bound (the client connected before we get here).
bool acceptOne(int listener) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return false;
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

class NetnsKernel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) {
      skipReason_ = "needs root (network namespaces, /run/netns mounts)";
      return;
    }
    const std::string probe = "oktn-probe-" + randomHex(8);
    auto r = sh("ip netns add " + probe);
    sh("ip netns del " + probe);
    if (r.status != 0) skipReason_ = "cannot use /run/netns here: " + r.output;
  }

  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
    networkId_ = "oktn" + randomHex(12);
    auto d = metadataNamespaceFor(networkId_, "fa:16:3e:12:34:56",
                                  {"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"});
    ASSERT_TRUE(d.ok()) << d.error().message;
    desired_ = *d;
  }

  void TearDown() override {
    if (!skipReason_.empty()) return;
    for (int fd : fds_) ::close(fd);
    EXPECT_TRUE(applier_.remove(desired_.name).ok());
    sh("ip link del " + desired_.hostIface);
    for (const auto& ns : extraNamespaces_) sh("ip netns del " + ns);
  }

  int keep(int fd) {
    fds_.push_back(fd);
    return fd;
  }

  std::string innerLink() {
    return sh("ip -n " + desired_.name + " addr show dev " + desired_.innerIface).output;
  }

  static inline std::string skipReason_;
  std::string networkId_;
  DesiredNamespace desired_;
  NetlinkImpl netlink_;
  NamespaceApplier applier_{netlink_};
  std::vector<int> fds_;
  std::vector<std::string> extraNamespaces_;
};

TEST_F(NetnsKernel, EnsureCreatesWhatIproute2AndEthtoolSee) {
  EnsureReport report;
  auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(report.created()) << report.summary(desired_);

  EXPECT_TRUE(contains(sh("ip netns list").output, desired_.name));
  EXPECT_TRUE(contains(sh("findmnt -n -o PROPAGATION /run/netns").output, "shared"));
  const auto inner = innerLink();
  EXPECT_TRUE(contains(inner, "link/ether fa:16:3e:12:34:56")) << inner;
  EXPECT_TRUE(contains(inner, "inet 10.0.0.2/24 brd 10.0.0.255")) << inner;
  EXPECT_TRUE(contains(inner, "inet 169.254.169.254/32")) << inner;
  EXPECT_TRUE(contains(inner, "inet6 fe80::a9fe:a9fe/64")) << inner;
  EXPECT_TRUE(contains(inner, ",UP")) << inner;
  EXPECT_TRUE(contains(inner, "@if")) << inner;  // a veth whose peer is in another namespace
  const auto host = sh("ip link show dev " + desired_.hostIface);
  EXPECT_EQ(host.status, 0) << host.output;
  EXPECT_TRUE(contains(host.output, ",UP")) << host.output;
  EXPECT_TRUE(contains(host.output, "link-netns " + desired_.name)) << host.output;
  // The host end is an OVS port: no IPv6 address, hence no fe80::/64 route in the host's list.
  const auto host6 = sh("ip -6 addr show dev " + desired_.hostIface).output;
  EXPECT_FALSE(contains(host6, "inet6")) << host6;
  const auto route6 = sh("ip -6 route show dev " + desired_.hostIface).output;
  EXPECT_FALSE(contains(route6, "fe80::")) << route6;
  // No IPv6 on it at all, so not even the ff00::/8 multicast route that every IPv6 link adds to
  // the local table (one more route for ovs-vswitchd to re-read after every link change).
  const auto allRoutes6 = sh("ip -6 route show table all dev " + desired_.hostIface).output;
  EXPECT_EQ(allRoutes6, "") << allRoutes6;
  EXPECT_EQ(sh("cat /proc/sys/net/ipv6/conf/" + desired_.hostIface + "/disable_ipv6").output,
            "1\n");
  // The inner end was created with its MAC: no separate change for it.
  for (const auto& op : report.applied) EXPECT_NE(op.kind, NsOpKind::SetMac) << toString(op.kind);
  EXPECT_TRUE(contains(sh("ip -n " + desired_.name + " link show lo").output, ",UP"));

  const auto k = sh("ip netns exec " + desired_.name + " ethtool -k " + desired_.innerIface).output;
  EXPECT_TRUE(contains(k, "tx-checksumming: off")) << k;
  EXPECT_TRUE(contains(k, "tcp-segmentation-offload: off")) << k;
  EXPECT_TRUE(contains(k, "generic-segmentation-offload: off")) << k;

  ASSERT_TRUE(applier_.ensure(desired_, &report).ok());
  EXPECT_TRUE(report.unchanged()) << report.summary(desired_);
}

TEST_F(NetnsKernel, IPv6OffInTheNamespaceKeepsIpv4AndSaysWhy) {
  // What a kernel booted with ipv6.disable=1 does to the IPv6 address, reproduced without
  // rebooting: the namespace exists first with IPv6 disabled for every interface it will get,
  // so the real kernel refuses fe80::a9fe:a9fe (EACCES) on the inner veth.
  ASSERT_EQ(sh("ip netns add " + desired_.name).status, 0);
  ASSERT_EQ(
      sh("ip netns exec " + desired_.name +
         " sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
          .status,
      0);
  EnsureReport report;
  const auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_NE(report.ipv6Unavailable.find("fe80::a9fe:a9fe/64"), std::string::npos)
      << report.ipv6Unavailable;
  const std::string inner = innerLink();
  EXPECT_TRUE(contains(inner, "inet 10.0.0.2/24")) << inner;
  EXPECT_TRUE(contains(inner, "inet 169.254.169.254/32")) << inner;
  EXPECT_FALSE(contains(inner, "inet6")) << inner;
  // IPv4 metadata is served there.
  auto l = openListener(desired_.name, "169.254.169.254", 0, 16, false);
  ASSERT_TRUE(l.ok()) << l.error().message;
  keep(*l);
  // Checked again later: the same outcome, nothing to change, no error.
  EnsureReport again;
  ASSERT_TRUE(applier_.ensure(desired_, &again).ok());
  EXPECT_TRUE(again.applied.empty());
  EXPECT_FALSE(again.ipv6Unavailable.empty());
}

TEST_F(NetnsKernel, RepairsDriftAndChangesLiveWithoutRecreating) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  const std::string ns = desired_.name;
  ASSERT_EQ(sh("ip -n " + ns + " addr add 10.9.9.9/24 dev " + desired_.innerIface).status, 0);
  ASSERT_EQ(sh("ip -n " + ns + " link set lo down").status, 0);
  ASSERT_EQ(sh("ip link set " + desired_.hostIface + " down").status, 0);
  EnsureReport report;
  auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(report.applied, (std::vector<NsOp>{{NsOpKind::LoopbackUp, "", false},
                                               {NsOpKind::HostLinkUp, "", false},
                                               {NsOpKind::DelAddress, "10.9.9.9/24", false}}))
      << report.summary(desired_);

  auto changed =
      *metadataNamespaceFor(networkId_, "fa:16:3e:65:43:21", {"10.0.1.2/24", "169.254.169.254/32"});
  ASSERT_TRUE(applier_.ensure(changed, &report).ok());
  for (const auto& op : report.applied) {
    EXPECT_NE(op.kind, NsOpKind::CreateVeth) << report.summary(changed);
  }
  const auto inner = innerLink();
  EXPECT_TRUE(contains(inner, "link/ether fa:16:3e:65:43:21")) << inner;
  EXPECT_TRUE(contains(inner, "inet 10.0.1.2/24")) << inner;
  EXPECT_FALSE(contains(inner, "10.0.0.2/24")) << inner;
  EXPECT_FALSE(contains(inner, "fe80::a9fe:a9fe")) << inner;
  ASSERT_TRUE(applier_.ensure(changed, &report).ok());
  EXPECT_TRUE(report.unchanged()) << report.summary(changed);
}

TEST_F(NetnsKernel, ListenerAcceptsInsideTheNamespaceOnly) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  const ino_t before = ownNamespaceInode();
  auto fd = openListener(desired_.name, "169.254.169.254", 0, 16, false);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  keep(*fd);
  EXPECT_EQ(ownNamespaceInode(), before);
  EXPECT_TRUE(::fcntl(*fd, F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(*fd, F_GETFD) & FD_CLOEXEC);
  ASSERT_EQ(connectFrom(desired_.name, "169.254.169.254", portOf(*fd)), 0);
  EXPECT_TRUE(acceptOne(*fd));

  // The same port on the namespace's loopback; on the host that port is held by a bound, not
  // listening socket of ours, so a host connect is refused unless it reached the namespace.
  int hostHold = -1;
  uint16_t port = 0;
  for (int attempt = 0; attempt < 10 && hostHold < 0; ++attempt) {
    auto inner = openListener(desired_.name, "127.0.0.1", 0, 16, false);
    ASSERT_TRUE(inner.ok()) << inner.error().message;
    keep(*inner);
    port = portOf(*inner);
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      hostHold = keep(s);
    } else {
      ::close(s);
    }
  }
  ASSERT_GE(hostHold, 0) << "no free loopback port on the host";
  EXPECT_EQ(connectFrom("", "127.0.0.1", port), ECONNREFUSED);
  EXPECT_EQ(connectFrom(desired_.name, "127.0.0.1", port), 0);
}

TEST_F(NetnsKernel, LinkLocalListenerUsesTheInnerScope) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  auto a = openListener(desired_.name, "fe80::a9fe:a9fe%" + desired_.innerIface, 0, 16, false);
  ASSERT_TRUE(a.ok()) << a.error().message;
  keep(*a);
  ASSERT_EQ(connectFrom(desired_.name, "fe80::a9fe:a9fe", portOf(*a), desired_.innerIface), 0);
  EXPECT_TRUE(acceptOne(*a));
  auto b = openListener(desired_.name, "fe80::a9fe:a9fe", 0, 16, false, desired_.innerIface);
  ASSERT_TRUE(b.ok()) << b.error().message;
  keep(*b);
  auto unscoped = openListener(desired_.name, "fe80::a9fe:a9fe", 0, 16, false);
  ASSERT_FALSE(unscoped.ok());
  EXPECT_TRUE(contains(unscoped.error().message, "scope")) << unscoped.error().message;
}

TEST_F(NetnsKernel, ReusePortLetsTwoListenersShareTheAddress) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  auto first = openListener(desired_.name, "169.254.169.254", 0, 16, true);
  ASSERT_TRUE(first.ok()) << first.error().message;
  keep(*first);
  const uint16_t port = portOf(*first);
  auto second = openListener(desired_.name, "169.254.169.254", port, 16, true);
  ASSERT_TRUE(second.ok()) << second.error().message;
  keep(*second);
  auto third = openListener(desired_.name, "169.254.169.254", port, 16, false);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, EADDRINUSE);
  EXPECT_TRUE(contains(third.error().message, "bind")) << third.error().message;
}

TEST_F(NetnsKernel, ListenerErrorsReturnTheThreadHome) {
  const ino_t before = ownNamespaceInode();
  auto missing = openListener("ovnmeta-oktn-missing-" + randomHex(6), "127.0.0.1", 0, 16, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ENOENT);
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  auto bad = openListener(desired_.name, "192.0.2.1", 0, 16, false);  // not on any interface
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, EADDRNOTAVAIL);
  EXPECT_EQ(ownNamespaceInode(), before);
}

TEST_F(NetnsKernel, RemoveCleansEverythingAndIsIdempotent) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  auto list = applier_.listMetadataNamespaces();
  ASSERT_TRUE(list.ok());
  EXPECT_NE(std::find(list->begin(), list->end(), desired_.name), list->end());
  ASSERT_TRUE(applier_.remove(desired_.name).ok());
  EXPECT_FALSE(contains(sh("ip netns list").output, desired_.name));
  EXPECT_NE(sh("ip link show dev " + desired_.hostIface).status, 0);
  struct stat st {};
  EXPECT_NE(::stat(("/run/netns/" + desired_.name).c_str(), &st), 0);
  EXPECT_TRUE(applier_.remove(desired_.name).ok());
  list = applier_.listMetadataNamespaces();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(std::find(list->begin(), list->end(), desired_.name), list->end());
}

// What Neutron's ML2/OVN metadata agent runs (ensure_namespace, add_veth, set_address,
// add_address, set_up), by hand.
void neutronSetup(const DesiredNamespace& d) {
  const std::string ns = d.name;
  for (const std::string& c : {
           "ip netns add " + ns,
           "ip -n " + ns + " link set lo up",
           "ip link add " + d.hostIface + " type veth peer name " + d.innerIface + " netns " + ns,
           "ip -n " + ns + " link set " + d.innerIface + " address " + d.mac,
           "ip -n " + ns + " addr add 10.0.0.2/24 brd 10.0.0.255 scope global dev " + d.innerIface,
           "ip -n " + ns + " addr add 169.254.169.254/32 scope global dev " + d.innerIface,
           "ip -n " + ns + " addr add fe80::a9fe:a9fe/64 scope link dev " + d.innerIface,
           "ip link set " + d.hostIface + " up",
           "ip -n " + ns + " link set " + d.innerIface + " up",
       }) {
    auto r = sh(c);
    ASSERT_EQ(r.status, 0) << c << ": " << r.output;
  }
}

TEST_F(NetnsKernel, AdoptsANeutronNamespaceTouchingOnlyOffloads) {
  neutronSetup(desired_);
  if (HasFatalFailure()) return;
  EnsureReport report;
  auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  // Neutron uses an iptables CHECKSUM rule instead; turning offloads off does not flap the link.
  EXPECT_EQ(report.applied, (std::vector<NsOp>{{NsOpKind::DisableOffloads, "", false}}))
      << report.summary(desired_);
}

TEST_F(NetnsKernel, AdoptsANeutronNamespaceWithOffloadsOffWithZeroOps) {
  neutronSetup(desired_);
  if (HasFatalFailure()) return;
  auto r = sh("ip netns exec " + desired_.name + " ethtool -K " + desired_.innerIface +
              " tx off tso off gso off");
  ASSERT_EQ(r.status, 0) << r.output;
  EnsureReport report;
  auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(report.unchanged()) << report.summary(desired_);
}

bool appliedHas(const EnsureReport& r, NsOpKind kind) {
  for (const auto& op : r.applied) {
    if (op.kind == kind) return true;
  }
  return false;
}

TEST_F(NetnsKernel, InterruptedCreationIsFinishedByMovingTheInnerEnd) {
  // Both ends still in the host namespace, as if a creation stopped before the move.
  ASSERT_EQ(sh("ip netns add " + desired_.name).status, 0);
  auto r = sh("ip link add " + desired_.hostIface + " type veth peer name " + desired_.innerIface);
  ASSERT_EQ(r.status, 0) << r.output;
  EnsureReport report;
  auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(appliedHas(report, NsOpKind::MoveInner)) << report.summary(desired_);
  EXPECT_FALSE(appliedHas(report, NsOpKind::CreateVeth)) << report.summary(desired_);
  EXPECT_NE(sh("ip link show dev " + desired_.innerIface).status, 0);  // no longer in the host
  EXPECT_TRUE(contains(innerLink(), "inet 169.254.169.254/32"));
  ASSERT_TRUE(applier_.ensure(desired_, &report).ok());
  EXPECT_TRUE(report.unchanged()) << report.summary(desired_);
}

TEST_F(NetnsKernel, ForeignObjectsInTheWayAreReplaced) {
  // A plain file where the namespace mount belongs, and a veth with the host end's name whose
  // peer is some other interface.
  ASSERT_EQ(sh("mkdir -p /run/netns && touch /run/netns/" + desired_.name).status, 0);
  const std::string otherPeer = "oktnx" + randomHex(8);
  auto r = sh("ip link add " + desired_.hostIface + " type veth peer name " + otherPeer);
  ASSERT_EQ(r.status, 0) << r.output;
  EnsureReport report;
  auto st = applier_.ensure(desired_, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(report.created());
  EXPECT_TRUE(appliedHas(report, NsOpKind::DeleteHostIface)) << report.summary(desired_);
  EXPECT_TRUE(contains(sh("ip -d link show dev " + desired_.hostIface).output, "veth"));
  EXPECT_NE(sh("ip link show dev " + otherPeer).status, 0);  // went with its veth
  EXPECT_TRUE(contains(sh("ip netns list").output, desired_.name));
}

TEST_F(NetnsKernel, DeletedVethIsRecreated) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  ASSERT_EQ(sh("ip -n " + desired_.name + " link del " + desired_.innerIface).status, 0);
  EnsureReport report;
  ASSERT_TRUE(applier_.ensure(desired_, &report).ok());
  EXPECT_FALSE(report.created());
  EXPECT_TRUE(appliedHas(report, NsOpKind::CreateVeth)) << report.summary(desired_);
  EXPECT_TRUE(contains(innerLink(), "link/ether fa:16:3e:12:34:56"));
}

// The TCP SYN the namespace sends to `ip`:`port`, as a packet socket on the inner end sees it
// leave (what the next hop, OVS, gets); its checksum verified over the pseudo-header. Returns
// "valid", "partial" (the checksum is left to an offload) or why no frame was seen.
std::string synChecksumLeaving(const std::string& ns, const std::string& iface,
                               const std::string& ip, uint16_t port) {
  int capture = -1;
  int client = -1;
  auto st = runInNamespace(ns, [&]() -> core::Status {
    // Only ETH_P_ALL sockets see outgoing frames.
    capture = ::socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ALL));
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_protocol = htons(ETH_P_ALL);
    ll.sll_ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    if (capture < 0 || ::bind(capture, reinterpret_cast<sockaddr*>(&ll), sizeof(ll)) != 0) {
      return core::makeError("packet socket", errno);
    }
    client = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, ip.c_str(), &to.sin_addr);
    ::connect(client, reinterpret_cast<sockaddr*>(&to), sizeof(to));  // EINPROGRESS
    return {};
  });
  std::string verdict = st.ok() ? "no SYN seen" : st.error().message;
  uint8_t buf[2048];
  pollfd p{capture, POLLIN, 0};
  while (st.ok() && ::poll(&p, 1, 5000) == 1) {
    sockaddr_ll from{};
    socklen_t fromLen = sizeof(from);
    const ssize_t n =
        ::recvfrom(capture, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &fromLen);
    if (n < 40 || from.sll_pkttype != PACKET_OUTGOING || from.sll_protocol != htons(ETH_P_IP) ||
        buf[9] != IPPROTO_TCP) {
      continue;
    }
    const size_t ihl = (buf[0] & 0x0fU) * 4U;
    const size_t total = (static_cast<size_t>(buf[2]) << 8) | buf[3];
    const uint8_t* tcp = buf + ihl;
    if (((tcp[2] << 8) | tcp[3]) != port || (tcp[13] & 0x02) == 0) continue;
    // Ones' complement sum of the pseudo-header and the segment: 0xffff when the checksum is full.
    uint32_t sum = 0;
    const auto add = [&sum](const uint8_t* d, size_t len) {
      for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>((d[i] << 8) | d[i + 1]);
      if (len % 2 != 0) sum += static_cast<uint32_t>(d[len - 1] << 8);
    };
    const size_t tcpLen = total - ihl;
    add(buf + 12, 8);  // source and destination addresses
    sum += IPPROTO_TCP + static_cast<uint32_t>(tcpLen);
    add(tcp, tcpLen);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    verdict = sum == 0xffff ? "valid" : "partial";
    break;
  }
  if (capture >= 0) ::close(capture);
  if (client >= 0) ::close(client);
  return verdict;
}

TEST_F(NetnsKernel, TcpLeavesTheNamespaceWithFullChecksums) {
  ASSERT_TRUE(applier_.ensure(desired_).ok());
  // A neighbour that does not exist, with a MAC that is not the host end's: the host drops the
  // frames (not for it), the packet socket inside still sees them leave.
  const std::string ns = desired_.name;
  auto r =
      sh("ip -n " + ns + " neigh add 10.0.0.5 lladdr 02:00:00:00:00:05 dev " + desired_.innerIface);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(synChecksumLeaving(ns, desired_.innerIface, "10.0.0.5", 40001), "valid");

  // The control: with tx checksumming back on, the kernel leaves the checksum to the "device".
  r = sh("ip netns exec " + ns + " ethtool -K " + desired_.innerIface + " tx on");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(synChecksumLeaving(ns, desired_.innerIface, "10.0.0.5", 40002), "partial");

  EnsureReport report;
  ASSERT_TRUE(applier_.ensure(desired_, &report).ok());
  EXPECT_EQ(report.applied, (std::vector<NsOp>{{NsOpKind::DisableOffloads, "", false}}))
      << report.summary(desired_);
  EXPECT_EQ(synChecksumLeaving(ns, desired_.innerIface, "10.0.0.5", 40003), "valid");
}

TEST_F(NetnsKernel, WorkerRunsEnsureAndListenerOffTheLoop) {
  // As the agent uses it: the loop thread posts, the worker enters namespaces, results come back.
  core::HealthRegistry health;
  Worker worker(&health);
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  const ino_t hostNs = ownNamespaceInode();
  struct Outcome {
    core::Status ensured;
    core::Result<int> listener = core::makeError("not run");
    ino_t workerNsAfter = 0;
  };
  Outcome got;
  worker.runThenPost(
      io,
      [&] {
        Outcome o;
        o.ensured = applier_.ensure(desired_);
        o.listener = openListener(desired_.name, "169.254.169.254", 0, 16, true);
        o.workerNsAfter = ownNamespaceInode();
        return o;
      },
      [&](Outcome o) {
        got = std::move(o);
        guard.reset();
      });
  io.run();
  ASSERT_TRUE(got.ensured.ok()) << got.ensured.error().message;
  ASSERT_TRUE(got.listener.ok()) << got.listener.error().message;
  keep(*got.listener);
  EXPECT_EQ(got.workerNsAfter, hostNs);
  EXPECT_EQ(ownNamespaceInode(), hostNs);
  EXPECT_TRUE(health.live());
  ASSERT_EQ(connectFrom(desired_.name, "169.254.169.254", portOf(*got.listener)), 0);
  EXPECT_TRUE(acceptOne(*got.listener));
}

TEST_F(NetnsKernel, DisableOffloadsWorksOnAnyInterfaceInAnyNamespace) {
  const std::string vm = "oktn-" + randomHex(8);
  extraNamespaces_.push_back(vm);
  ASSERT_EQ(sh("ip netns add " + vm).status, 0);
  ASSERT_EQ(sh("ip -n " + vm + " link add oktnvm0 type veth peer name oktnvm1").status, 0);
  auto st = disableOffloads(vm, "oktnvm0");
  ASSERT_TRUE(st.ok()) << st.error().message;
  const auto k = sh("ip netns exec " + vm + " ethtool -k oktnvm0").output;
  EXPECT_TRUE(contains(k, "tx-checksumming: off")) << k;
  EXPECT_TRUE(contains(k, "generic-segmentation-offload: off")) << k;
  auto missing = disableOffloads(vm, "nosuchdev");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ENODEV);
}

}  // namespace
}  // namespace okna::netns
