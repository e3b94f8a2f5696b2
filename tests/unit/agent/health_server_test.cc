#include "agent/health_server.h"
#include "core/clock.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "tests/fakes/loop_thread.h"
#include "tests/fakes/process.h"
#include "tests/fakes/raw_http.h"

namespace okna::agent {
namespace {

using namespace std::chrono_literals;
using Endpoints = HealthServerOptions::Endpoints;
constexpr auto kThisHost = HealthServer::Peer::ThisHost;
constexpr auto kOtherHost = HealthServer::Peer::OtherHost;
using testing::getRequest;
using testing::LoopThread;
using testing::RawClient;
using testing::waitFor;

// A client from 127.0.0.2 to the server on 127.0.0.1: to the server, another host (its address
// is not the one it connected to).
class OtherHostClient {
 public:
  explicit OtherHostClient(unsigned short port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("bind 127.0.0.2");
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("connect");
  }
  ~OtherHostClient() { ::close(fd_); }
  OtherHostClient(const OtherHostClient&) = delete;
  OtherHostClient& operator=(const OtherHostClient&) = delete;

  /** A GET of /healthz answered 200 within 5 s. */
  bool answers() {
    const std::string request = getRequest("/healthz");
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size()))
      return false;
    std::string got;
    while (got.find("\r\n\r\nok") == std::string::npos) {
      if (!readable(5s)) return false;
      char buf[1024];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      got.append(buf, static_cast<size_t>(n));
    }
    return got.rfind("HTTP/1.1 200", 0) == 0;
  }
  /** The server closed (EOF or reset) within 5 s, sending nothing. */
  bool closedByPeer() {
    char c;
    return readable(5s) && ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  bool readable(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }
  int fd_;
};

HealthServerOptions probes(std::size_t maxConnections = 64) {
  return {Endpoints::Probes, maxConnections};
}
HealthServerOptions admin(std::size_t maxConnections = 64) {
  return {Endpoints::Admin, maxConnections};
}

TEST(HealthServerTest, ReadyzFollowsComponents) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, clock, health, metrics, nullptr, probes());
  health.addComponent("node-informer");
  health.addComponent("pod-informer");
  auto r = server.handle("/readyz", kThisHost);
  EXPECT_EQ(r.status, 503u);
  EXPECT_NE(r.body.find("[-]node-informer failed: not synced yet"), std::string::npos) << r.body;
  health.setReady("node-informer", true);
  EXPECT_EQ(server.handle("/readyz", kThisHost).status, 503u);
  health.setReady("pod-informer", true);
  EXPECT_EQ(server.handle("/readyz", kThisHost).status, 200u);
  EXPECT_EQ(server.handle("/readyz", kThisHost).body, "ok");
  EXPECT_NE(server.handle("/readyz?verbose", kThisHost).body.find("[+]pod-informer ok"),
            std::string::npos);
}

// What a ready component works around (placement/README.md: a child Placement refuses to
// delete) shows in /readyz?verbose without failing readiness.
TEST(HealthServerTest, VerboseShowsTheDetailOfPassingChecks) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, clock, health, metrics, nullptr, probes());
  health.addComponent("placement");
  health.setReady("placement", true, "provider n1 up to date; cannot delete n1:hugepages-1Gi");
  auto r = server.handle("/readyz?verbose", kThisHost);
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(
      r.body.find("[+]placement ok: provider n1 up to date; cannot delete n1:hugepages-1Gi\n"),
      std::string::npos)
      << r.body;
  EXPECT_EQ(server.handle("/readyz", kThisHost).body, "ok");
}

TEST(HealthServerTest, HealthzFailsWhenAHeartbeatStops) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, clock, health, metrics, nullptr, probes());
  health.addHeartbeat("event-loop", std::chrono::milliseconds(0));
  health.addHeartbeat("ovsdb-idl", std::chrono::hours(1));
  // A zero allowance is exceeded as soon as any time passes.
  const auto later = core::HealthRegistry::Clock::now() + std::chrono::milliseconds(5);
  EXPECT_FALSE(health.live(later));
  EXPECT_TRUE(health.liveness(later)[1].ok);
  health.addHeartbeat("event-loop", std::chrono::hours(1));
  EXPECT_EQ(server.handle("/healthz", kThisHost).status, 200u);
  EXPECT_EQ(server.handle("/livez", kThisHost).status, 200u);
}

TEST(HealthServerTest, AdminServesMetricsAndPlan) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  metrics.counter("okna_test_total", "t").inc();
  HealthServer server(
      io, clock, health, metrics,
      [] {
        return nlohmann::json{{"roles", {"compute"}}};
      },
      admin());
  auto m = server.handle("/metrics", kThisHost);
  EXPECT_EQ(m.status, 200u);
  EXPECT_EQ(m.contentType, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("okna_test_total 1"), std::string::npos);
  EXPECT_NE(m.body.find("okna_health_connections_refused_total{listener=\"admin\"} 0"),
            std::string::npos)
      << m.body;
  EXPECT_EQ(nlohmann::json::parse(server.handle("/debug/plan", kThisHost).body)["roles"][0],
            "compute");
  EXPECT_EQ(server.handle("/nope", kThisHost).status, 404u);
  // The liveness probes are the other listener's.
  EXPECT_EQ(server.handle("/healthz", kThisHost).status, 404u);
  EXPECT_EQ(server.handle("/livez", kThisHost).status, 404u);
}

// The admin listener tells why a check fails to whoever reaches it (it serves the plan, which
// says more): the operator's place to read it when the probes' port tells other hosts nothing.
TEST(HealthServerTest, AdminServesReadyzWithEveryDetail) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, clock, health, metrics, nullptr, admin());
  health.addComponent("placement");
  health.setReady("placement", false, "Keystone https://keystone.example/v3: 401");
  for (const auto peer : {kThisHost, kOtherHost}) {
    const auto r = server.handle("/readyz", peer);
    EXPECT_EQ(r.status, 503u);
    EXPECT_EQ(r.body,
              "[-]placement failed: Keystone https://keystone.example/v3: 401\n"
              "readyz check failed\n");
  }
}

// On the probes' listener another host reads the names and ok/failed; this host reads why.
TEST(HealthServerTest, ProbesTellWhyToThisHostOnly) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(io, clock, health, metrics, nullptr, probes());
  health.addComponent("metadata");
  health.setReady("metadata", false, "VM port 0d3e lost; ovnmeta-5f1c");
  health.addComponent("placement");
  health.setReady("placement", true, "provider n1 up to date");
  const std::string names = "[-]metadata failed\n[+]placement ok\nreadyz check failed\n";
  EXPECT_EQ(server.handle("/readyz", kOtherHost).body, names);
  EXPECT_EQ(server.handle("/readyz?verbose", kOtherHost).body, names);
  EXPECT_EQ(server.handle("/readyz", kThisHost).body,
            "[-]metadata failed: VM port 0d3e lost; ovnmeta-5f1c\n"
            "[+]placement ok: provider n1 up to date\nreadyz check failed\n");
  health.setReady("metadata", true);
  EXPECT_EQ(server.handle("/readyz", kOtherHost).body, "ok");
  EXPECT_EQ(server.handle("/readyz?verbose", kOtherHost).body,
            "[+]metadata ok\n[+]placement ok\nreadyz check passed\n");
}

// What the node's network reaches (health.listen) names no network, address or OVS setting.
TEST(HealthServerTest, ProbesListenerDoesNotServeMetricsOrPlan) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer server(
      io, clock, health, metrics,
      [] {
        return nlohmann::json{{"secret", "plan"}};
      },
      probes());
  for (const char* path : {"/metrics", "/debug/plan", "/debug/plan?x", "/metrics/"}) {
    const auto r = server.handle(path, kThisHost);
    EXPECT_EQ(r.status, 404u) << path;
    EXPECT_EQ(r.body, "not found\n") << path;
  }
}

TEST(HealthServerTest, TwoListenersSplitThePathsOverTheWire) {
  LoopThread loop;
  core::AsioClock clock(loop.io());
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  auto plan = [] { return nlohmann::json{{"roles", {"compute"}}}; };
  auto probe = std::make_unique<HealthServer>(loop.io(), clock, health, metrics, plan, probes());
  auto adm = std::make_unique<HealthServer>(loop.io(), clock, health, metrics, plan, admin());
  ASSERT_TRUE(loop.run([&] { return probe->listen("127.0.0.1", 0); }).ok());
  ASSERT_TRUE(loop.run([&] { return adm->listen("127.0.0.1", 0); }).ok());
  const auto get = [](unsigned short port, const std::string& path) {
    RawClient c(port);
    EXPECT_TRUE(c.send(getRequest(path)));
    auto r = c.read(5s);
    return r ? r->status : 0;
  };
  EXPECT_EQ(get(probe->port(), "/healthz"), 200);
  EXPECT_EQ(get(probe->port(), "/readyz"), 200);
  EXPECT_EQ(get(probe->port(), "/metrics"), 404);
  EXPECT_EQ(get(probe->port(), "/debug/plan"), 404);
  EXPECT_EQ(get(adm->port(), "/metrics"), 200);
  EXPECT_EQ(get(adm->port(), "/debug/plan"), 200);
  EXPECT_EQ(get(adm->port(), "/healthz"), 404);
  loop.run([&] {
    probe.reset();
    adm.reset();
  });
}

TEST(HealthServerTest, PortInUseIsAClearError) {
  boost::asio::io_context io;
  core::AsioClock clock(io);
  core::HealthRegistry health;
  core::MetricsRegistry metrics;
  HealthServer first(io, clock, health, metrics, nullptr, probes());
  ASSERT_TRUE(first.listen("127.0.0.1", 0).ok());
  HealthServer second(io, clock, health, metrics, nullptr, probes());
  auto s = second.listen("127.0.0.1", first.port());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("already in use"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("--health-listen"), std::string::npos) << s.error().message;
  HealthServer third(io, clock, health, metrics, nullptr, admin());
  s = third.listen("127.0.0.1", first.port());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("admin endpoint"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("health.adminListen"), std::string::npos) << s.error().message;
}

// A server on its own loop thread, read and driven from the test thread through run().
class LiveServer : public ::testing::Test {
 protected:
  void start(HealthServerOptions options) {
    server_ =
        std::make_unique<HealthServer>(loop_.io(), clock_, health_, metrics_, nullptr, options);
    ASSERT_TRUE(loop_.run([&] { return server_->listen("127.0.0.1", 0); }).ok());
  }
  void TearDown() override {
    loop_.run([&] { server_.reset(); });
  }

  std::size_t open() {
    return loop_.run([&] { return server_->openConnections(); });
  }
  double counter(const std::string& name) {
    return loop_.run([&] { return metrics_.counter(name, "", {{"listener", "health"}}).value(); });
  }
  static bool answers(RawClient& c, const std::string& path = "/healthz") {
    if (!c.send(getRequest(path))) return false;
    const auto r = c.read(5s);
    return r && r->status == 200;
  }

  LoopThread loop_;
  core::AsioClock clock_{loop_.io()};
  core::HealthRegistry health_;
  core::MetricsRegistry metrics_;
  std::unique_ptr<HealthServer> server_;
};

TEST_F(LiveServer, ConnectionsOverTheCapAreClosedAtOnceAndCounted) {
  start(probes(3));
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(server_->port()));
  ASSERT_TRUE(waitFor([&] { return open() == 3; }, 5s)) << open();
  EXPECT_EQ(counter("okna_health_connections_refused_total"), 0);

  RawClient extra(server_->port());
  // Closed by the server at accept, not after the 10 s request deadline.
  const auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(extra.closedByPeer(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_EQ(counter("okna_health_connections_refused_total"), 1);
  EXPECT_EQ(open(), 3u);
  // The connections within the cap are served as before, and keep-alive keeps them.
  for (auto& c : held) EXPECT_TRUE(answers(*c));
  for (auto& c : held) EXPECT_TRUE(answers(*c, "/readyz"));

  // A slot freed is a slot taken again.
  held.pop_back();
  ASSERT_TRUE(waitFor([&] { return open() == 2; }, 5s)) << open();
  RawClient next(server_->port());
  EXPECT_TRUE(answers(next));
  EXPECT_EQ(counter("okna_health_connections_refused_total"), 1);
}

// The kubelet probes a hostNetwork pod from the node's own address: a flood from elsewhere fills
// the other hosts' slots only, and the probes are still answered.
TEST_F(LiveServer, AFloodFromOtherHostsLeavesThisHostsProbesServed) {
  start(probes(2));
  OtherHostClient first(server_->port()), second(server_->port());
  ASSERT_TRUE(waitFor([&] { return open() == 2; }, 5s)) << open();
  OtherHostClient third(server_->port());
  EXPECT_TRUE(third.closedByPeer());
  EXPECT_EQ(counter("okna_health_connections_refused_total"), 1);

  RawClient kubelet(server_->port()), another(server_->port());
  EXPECT_TRUE(answers(kubelet));
  EXPECT_TRUE(answers(another));
  EXPECT_EQ(open(), 4u);
  EXPECT_TRUE(first.answers());
  EXPECT_TRUE(second.answers());
  // This host's slots have their own cap.
  RawClient overLocalCap(server_->port());
  EXPECT_TRUE(overLocalCap.closedByPeer(5s));
  EXPECT_EQ(counter("okna_health_connections_refused_total"), 2);
}

// What a failing check says names VM ports, namespaces, URLs: only this host reads it. A client
// from another address (127.0.0.2 to the server on 127.0.0.1) gets the check names and ok or
// failed, with or without ?verbose.
TEST_F(LiveServer, ReadyzTellsOtherHostsNoDetail) {
  health_.addComponent("metadata");
  health_.setReady("metadata", false, "network 5f1c: ovnmeta-5f1c missing; VM port tap9 lost");
  health_.addComponent("node-informer");
  health_.setReady("node-informer", true, "synced at https://10.0.0.1:6443");
  start(probes());
  const auto get = [&](const char* source, const std::string& path) {
    RawClient c(server_->port(), "127.0.0.1", source);
    EXPECT_TRUE(c.send(getRequest(path)));
    const auto r = c.read(5s);
    return r ? *r : testing::RawResponse{};
  };
  for (const char* path : {"/readyz", "/readyz?verbose"}) {
    const auto remote = get("127.0.0.2", path);
    EXPECT_EQ(remote.status, 503) << path;
    EXPECT_EQ(remote.body, "[-]metadata failed\n[+]node-informer ok\nreadyz check failed\n")
        << path;
    const auto local = get(nullptr, path);
    EXPECT_EQ(local.status, 503) << path;
    EXPECT_NE(local.body.find("[-]metadata failed: network 5f1c: ovnmeta-5f1c missing"),
              std::string::npos)
        << path << ": " << local.body;
    EXPECT_NE(local.body.find("[+]node-informer ok: synced at https://10.0.0.1:6443"),
              std::string::npos)
        << path << ": " << local.body;
  }
  health_.setReady("metadata", true, "3 network(s) serving metadata");
  EXPECT_EQ(get("127.0.0.2", "/readyz").body, "ok");
  EXPECT_EQ(get("127.0.0.2", "/readyz?verbose").body,
            "[+]metadata ok\n[+]node-informer ok\nreadyz check passed\n");
  EXPECT_NE(get(nullptr, "/readyz?verbose").body.find("3 network(s) serving metadata"),
            std::string::npos);
}

// Liveness the same way: why a thread stopped (an exception's message) is this host's.
TEST_F(LiveServer, HealthzTellsOtherHostsNoDetail) {
  health_.addHeartbeat("event-loop", std::chrono::hours(1));
  health_.addHeartbeat("okna-netns-work", std::chrono::hours(1));
  health_.stopped("okna-netns-work", "setns(/run/netns/ovnmeta-5f1c): EINVAL");
  start(probes());
  RawClient remote(server_->port(), "127.0.0.1", "127.0.0.2");
  ASSERT_TRUE(remote.send(getRequest("/healthz")));
  const auto r = remote.read(5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body.find("ovnmeta"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("okna-netns-work failed"), std::string::npos) << r->body;
  RawClient local(server_->port());
  ASSERT_TRUE(local.send(getRequest("/healthz")));
  const auto l = local.read(5s);
  ASSERT_TRUE(l.has_value());
  EXPECT_NE(l->body.find("setns(/run/netns/ovnmeta-5f1c): EINVAL"), std::string::npos) << l->body;
}

// One byte at a time, each well within any per-read timeout: the deadline covers the request.
TEST_F(LiveServer, ATricklingClientIsCutAtTheRequestDeadline) {
  EXPECT_EQ(HealthServerOptions{}.requestDeadline, 10s);
  start({Endpoints::Probes, 64, 300ms});
  RawClient slow(server_->port());
  const std::string request = getRequest("/healthz", "X-Padding: " + std::string(60, 'a') + "\r\n");
  const auto started = std::chrono::steady_clock::now();
  bool cut = false;
  for (char byte : request) {
    if (!slow.send(std::string(1, byte))) break;
    // Paces the client and notices the close: waits for the server, never sleeps.
    if ((cut = slow.closedByPeer(50ms))) break;
  }
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(cut || slow.closedByPeer(1s)) << "the whole request was sent, 50 ms per byte";
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 3s);
  ASSERT_TRUE(waitFor([&] { return open() == 0; }, 5s));
}

TEST_F(LiveServer, StopClosesOpenConnections) {
  start(probes());
  RawClient idle(server_->port());
  ASSERT_TRUE(waitFor([&] { return open() == 1; }, 5s));
  loop_.run([&] { server_->stop(); });
  EXPECT_TRUE(idle.closedByPeer(5s));
  ASSERT_TRUE(waitFor([&] { return open() == 0; }, 5s));
}

// Out of descriptors, the accept fails (EMFILE) for as long as they are short: it is retried
// after 10, 20, 40 ms ..., not re-posted at once (which spun the loop), and the connection
// waiting in the backlog is served once descriptors are back.
TEST_F(LiveServer, AcceptErrorsAreRetriedAfterABackoff) {
  start(probes());
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowestFree = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowestFree, 0);
  ::close(lowestFree);
  // Room for the client's socket (lowestFree) and none for the server's accepted one.
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowestFree) + 1;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<RawClient> client;
  try {
    client = std::make_unique<RawClient>(server_->port());
  } catch (const std::exception& e) {
    ::setrlimit(RLIMIT_NOFILE, &saved);
    FAIL() << e.what();
  }
  const bool failedFourTimes =
      waitFor([&] { return counter("okna_health_accept_errors_total") >= 4; }, 5s);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  const double failures = counter("okna_health_accept_errors_total");
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(failedFourTimes) << failures;
  // Four failures in a row are three delays apart: 10 + 20 + 40 ms at least. At once, the
  // loop would have failed thousands of times by now.
  EXPECT_GE(elapsed, 70ms);
  EXPECT_LE(failures, 12) << "accept retried without a delay";
  EXPECT_TRUE(answers(*client));
  // Accepting again, the listener takes new connections as before.
  RawClient next(server_->port());
  EXPECT_TRUE(answers(next));
}

}  // namespace
}  // namespace okna::agent
