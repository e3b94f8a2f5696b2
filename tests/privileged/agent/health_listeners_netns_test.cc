// What a client on the node's network reaches of the agent's HTTP listeners, with their default
// addresses (health.listen 0.0.0.0:19874, health.adminListen 127.0.0.1:19875): the probes,
// without the detail of their checks, and neither /metrics nor /debug/plan (which name
// networks, VM addresses, the OVS configuration).
// The "node" is a network namespace with one veth to a "client" namespace, on TEST-NET-1
// (192.0.2.0/24, RFC 5737), both created and deleted here; no packet leaves them. Sockets belong
// to the namespace of the thread that creates them, so the servers run on a loop thread and each
// client on a thread that joined its namespace with setns(2).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/health_server.h"
#include "tests/fakes/loop_thread.h"
#include "tests/fakes/process.h"
#include "tests/fakes/raw_http.h"

namespace okna::agent {
namespace {

using namespace std::chrono_literals;

constexpr const char* kNodeAddress = "192.0.2.1";
constexpr const char* kClientAddress = "192.0.2.2";

struct Shell {
  int status;
  std::string output;
};

Shell sh(const std::string& command) {
  Shell r{-1, ""};
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) r.output += buf;
  r.status = ::pclose(p);
  return r;
}

// Moves the calling thread into namespace `ns`; false if it cannot.
bool enterNamespace(const std::string& ns) {
  const int fd = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

// A TCP connect from here: 0 or the errno.
int connectErrno(const char* ip, unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
  ::close(fd);
  return rc;
}

// One GET on a new connection: the status, 0 if none came, -errno if the connect failed.
struct Got {
  int status = 0;
  std::string body;
};
Got get(const char* ip, unsigned short port, const std::string& path) {
  if (const int e = connectErrno(ip, port); e != 0) return {-e, ""};
  testing::RawClient c(port, ip);
  if (!c.send(testing::getRequest(path))) return {};
  const auto r = c.read(5s);
  return r ? Got{r->status, r->body} : Got{};
}

// Runs `f` on a new thread inside namespace `ns`.
template <typename F>
auto inNamespace(const std::string& ns, F f) {
  return std::async(std::launch::async,
                    [ns, f] {
                      if (!enterNamespace(ns)) throw std::runtime_error("setns " + ns + " failed");
                      return f();
                    })
      .get();
}

class HealthListenersNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: creates two network namespaces and a veth pair between them";
    const std::string id = std::to_string(::getpid());
    node_ = "okha-" + id + "-srv";
    client_ = "okha-" + id + "-cli";
    for (const auto& ns : {node_, client_}) {
      sh("ip netns del " + ns);
      const Shell added = sh("ip netns add " + ns);
      ASSERT_EQ(added.status, 0) << "ip netns add " << ns << ": " << added.output;
      created_.push_back(ns);
    }
    const std::string nodeIf = "okha" + id + "s", clientIf = "okha" + id + "c";
    // Created inside the node's namespace with its peer in the client's: never on the host.
    for (const std::string& cmd :
         {"-n " + node_ + " link add " + nodeIf + " type veth peer name " + clientIf + " netns " +
              client_,
          "-n " + node_ + " addr add " + kNodeAddress + "/24 dev " + nodeIf,
          "-n " + client_ + " addr add " + kClientAddress + "/24 dev " + clientIf,
          "-n " + node_ + " link set " + nodeIf + " up", "-n " + node_ + " link set lo up",
          "-n " + client_ + " link set " + clientIf + " up", "-n " + client_ + " link set lo up"}) {
      const Shell r = sh("ip " + cmd);
      ASSERT_EQ(r.status, 0) << "ip " << cmd << ": " << r.output;
    }
  }

  void TearDown() override {
    if (loop_)
      loop_->run([&] {
        probes_.reset();
        admin_.reset();
      });
    loop_.reset();
    // The veth pair goes with its namespaces.
    for (const auto& ns : created_) sh("ip netns del " + ns);
  }

  // The agent's two listeners with the default health config, in the node's namespace.
  void startDefaultListeners() {
    loop_ = std::make_unique<testing::LoopThread>();
    clock_ = std::make_unique<core::AsioClock>(loop_->io());
    ASSERT_TRUE(loop_->run([&] { return enterNamespace(node_); }));
    const HealthConfig defaults;
    ASSERT_TRUE(checkHealthListeners(defaults).ok());
    const auto probesAt = parseListenAddress(defaults.listen, "health.listen");
    const auto adminAt = parseListenAddress(defaults.adminListen, "health.adminListen");
    ASSERT_TRUE(probesAt.ok() && adminAt.ok());
    health_.addComponent("node-informer");
    health_.setReady("node-informer", true);
    const auto plan = [] { return nlohmann::json{{"networks", {"net-1"}}}; };
    const auto start = [&](std::unique_ptr<HealthServer>& server, HealthServerOptions options,
                           const std::pair<std::string, unsigned short>& at) {
      return loop_->run([&] {
        server =
            std::make_unique<HealthServer>(loop_->io(), *clock_, health_, metrics_, plan, options);
        return server->listen(at.first, at.second);
      });
    };
    auto s = start(probes_, {HealthServerOptions::Endpoints::Probes, defaults.maxConnections},
                   *probesAt);
    ASSERT_TRUE(s.ok()) << s.error().message;
    s = start(admin_, {HealthServerOptions::Endpoints::Admin, defaults.maxConnections}, *adminAt);
    ASSERT_TRUE(s.ok()) << s.error().message;
    healthPort_ = probesAt->second;
    adminPort_ = adminAt->second;
  }

  std::string node_, client_;
  std::vector<std::string> created_;
  core::HealthRegistry health_;
  core::MetricsRegistry metrics_;
  std::unique_ptr<testing::LoopThread> loop_;
  std::unique_ptr<core::AsioClock> clock_;
  std::unique_ptr<HealthServer> probes_, admin_;
  unsigned short healthPort_ = 0, adminPort_ = 0;
};

TEST_F(HealthListenersNetns, TheNodesNetworkReachesTheProbesOnly) {
  ASSERT_NO_FATAL_FAILURE(startDefaultListeners());
  ASSERT_EQ(healthPort_, 19874);
  ASSERT_EQ(adminPort_, 19875);

  struct Seen {
    Got healthz, readyz, livez, metrics, plan;
    int adminConnect = -1;
  };
  const Seen fromNetwork = inNamespace(client_, [&] {
    Seen s;
    s.healthz = get(kNodeAddress, healthPort_, "/healthz");
    s.readyz = get(kNodeAddress, healthPort_, "/readyz");
    s.livez = get(kNodeAddress, healthPort_, "/livez");
    s.metrics = get(kNodeAddress, healthPort_, "/metrics");
    s.plan = get(kNodeAddress, healthPort_, "/debug/plan");
    s.adminConnect = connectErrno(kNodeAddress, adminPort_);
    return s;
  });
  EXPECT_EQ(fromNetwork.healthz.status, 200);
  EXPECT_EQ(fromNetwork.readyz.status, 200);
  EXPECT_EQ(fromNetwork.livez.status, 200);
  EXPECT_EQ(fromNetwork.metrics.status, 404) << fromNetwork.metrics.body;
  EXPECT_EQ(fromNetwork.plan.status, 404) << fromNetwork.plan.body;
  EXPECT_EQ(fromNetwork.adminConnect, ECONNREFUSED)
      << "the admin port answered a connect from the node's network";

  // On the node itself (its loopback), the admin port serves both.
  const auto onNode = inNamespace(node_, [&] {
    return std::make_pair(get("127.0.0.1", adminPort_, "/metrics"),
                          get("127.0.0.1", adminPort_, "/debug/plan"));
  });
  EXPECT_EQ(onNode.first.status, 200);
  EXPECT_NE(onNode.first.body.find("okna_health_connections_refused_total{listener=\"health\"} 0"),
            std::string::npos)
      << onNode.first.body;
  EXPECT_EQ(onNode.second.status, 200);
  EXPECT_EQ(nlohmann::json::parse(onNode.second.body)["networks"][0], "net-1");
}

// Why a check fails names VM ports, namespaces, the Keystone URL, the Southbound: a client on the
// node's network reads the check names and ok/failed only, with or without ?verbose; the node
// itself (loopback, or its own address as the kubelet probes it) and the admin listener read why.
TEST_F(HealthListenersNetns, OnlyTheNodeItselfReadsWhyACheckFails) {
  ASSERT_NO_FATAL_FAILURE(startDefaultListeners());
  const std::string why =
      "network 5f1c9a: ovnmeta-5f1c9a: VM port 0d3e-iface lost; Southbound tcp:10.0.0.5:6642";
  health_.addComponent("metadata");
  health_.setReady("metadata", false, why);

  const auto fromNetwork = inNamespace(client_, [&] {
    return std::make_pair(get(kNodeAddress, healthPort_, "/readyz"),
                          get(kNodeAddress, healthPort_, "/readyz?verbose"));
  });
  for (const Got& g : {fromNetwork.first, fromNetwork.second}) {
    EXPECT_EQ(g.status, 503);
    EXPECT_EQ(g.body, "[-]metadata failed\n[+]node-informer ok\nreadyz check failed\n");
  }

  struct OnNode {
    Got loopback, ownAddress, admin;
  };
  const OnNode onNode = inNamespace(node_, [&] {
    return OnNode{get("127.0.0.1", healthPort_, "/readyz"),
                  get(kNodeAddress, healthPort_, "/readyz?verbose"),
                  get("127.0.0.1", adminPort_, "/readyz?verbose")};
  });
  for (const Got& g : {onNode.loopback, onNode.ownAddress, onNode.admin}) {
    EXPECT_EQ(g.status, 503);
    EXPECT_NE(g.body.find("[-]metadata failed: " + why + "\n"), std::string::npos) << g.body;
  }
}

// A client on the network that holds health.maxConnections connections gets no more, and the
// kubelet's probe (from the node's own address to itself) is still answered.
TEST_F(HealthListenersNetns, AFloodFromTheNetworkDoesNotFailTheKubeletsProbe) {
  ASSERT_NO_FATAL_FAILURE(startDefaultListeners());
  const std::size_t cap = HealthConfig{}.maxConnections;
  using Held = std::vector<std::unique_ptr<testing::RawClient>>;
  auto held = inNamespace(client_, [&] {
    Held h;
    for (std::size_t i = 0; i < cap; ++i)
      h.push_back(std::make_unique<testing::RawClient>(healthPort_, kNodeAddress));
    return h;
  });
  const auto openConnections = [&] {
    return loop_->run([&] { return probes_->openConnections(); });
  };
  ASSERT_TRUE(testing::waitFor([&] { return openConnections() == cap; }, 5s)) << openConnections();
  const bool extraClosed = inNamespace(client_, [&] {
    testing::RawClient extra(healthPort_, kNodeAddress);
    return extra.closedByPeer(5s);
  });
  EXPECT_TRUE(extraClosed) << "connection " << cap + 1 << " from the network was kept";

  const Got kubelet =
      inNamespace(node_, [&] { return get(kNodeAddress, healthPort_, "/healthz"); });
  EXPECT_EQ(kubelet.status, 200);
  const double refused = loop_->run([&] {
    return metrics_.counter("okna_health_connections_refused_total", "", {{"listener", "health"}})
        .value();
  });
  EXPECT_EQ(refused, 1);
  // The connections within the cap are served.
  EXPECT_TRUE(held.front()->send(testing::getRequest("/readyz")));
  const auto r = held.front()->read(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

}  // namespace
}  // namespace okna::agent
