// TLS to OVSDB: ovsdb-servers listening on pssl: with certificates the test makes (openssl CLI),
// the agent's IDL connecting with ovs.ssl, for the local Open_vSwitch DB (the chassis keys are
// applied) and for the Southbound DB (the gateway drain's and the metadata service's view
// syncs). A CA that did not sign the server's certificate, or a missing file, leaves the
// "ovsdb" readiness component not ready with an error that says what to check.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "chassis/chassis_reconciler.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/metrics.h"
#include "tests/fakes/chassis_plan.h"
#include "tests/integration/ovsdb/ovs_test_util.h"

namespace okna::ovsdb {
namespace {

using okna::testing::externalId;
using okna::testing::LoopRunner;
using okna::testing::OvsdbServer;

// A port free on 127.0.0.1 now (the kernel's pick; ovsdb-server binds it right after).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot find a free port");
  ::close(fd);
  return ntohs(a.sin_port);
}

void run(const std::vector<std::string>& argv) {
  const auto r = okna::testing::detail::run(argv);
  if (!r.ok()) throw std::runtime_error(argv[0] + " failed: " + r.err);
}

// A CA and certificates it signs, in a temp dir.
class TestPki {
 public:
  explicit TestPki(const std::filesystem::path& dir) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    makeCa("ca");
    makeCa("other-ca");
    sign("server", "ca");
    sign("client", "ca");
    // The rotation's next generation: a new CA, and a server and a client certificate it signs.
    makeCa("ca-2");
    sign("server-2", "ca-2");
    sign("client-2", "ca-2");
  }
  std::string key(const std::string& name) const { return (dir_ / (name + ".key")).string(); }
  std::string cert(const std::string& name) const { return (dir_ / (name + ".crt")).string(); }

 private:
  void makeCa(const std::string& name) {
    run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=okc8 test " + name, "-keyout", key(name), "-out", cert(name)});
  }
  void sign(const std::string& name, const std::string& ca) {
    const std::string csr = (dir_ / (name + ".csr")).string();
    run({"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name, "-keyout",
         key(name), "-out", csr});
    run({"openssl", "x509", "-req", "-in", csr, "-CA", cert(ca), "-CAkey", key(ca),
         "-CAcreateserial", "-days", "2", "-out", cert(name)});
  }
  std::filesystem::path dir_;
};

class OvsdbTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OpenVSwitch);
    OKNA_SKIP_WITHOUT_OVSDB(OvsdbServer::Kind::OvnSouthbound);
    if (okna::testing::detail::find_in_path("openssl").empty())
      GTEST_SKIP() << "the openssl CLI is not installed (package openssl)";
    dir_ = std::filesystem::temp_directory_path() /
           ("okc8-tls-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    pki_ = std::make_unique<TestPki>(dir_);
  }
  void TearDown() override {
    r_.reset();
    std::filesystem::remove_all(dir_);
  }

  // An ovsdb-server that also listens on pssl:<port>:127.0.0.1 with the server certificate.
  std::unique_ptr<OvsdbServer> tlsServer(OvsdbServer::Kind kind, int port,
                                         const std::string& server = "server",
                                         const std::string& ca = "ca") {
    return std::make_unique<OvsdbServer>(
        kind, std::chrono::seconds(15),
        std::vector<std::string>{
            "--private-key=" + pki_->key(server), "--certificate=" + pki_->cert(server),
            "--ca-cert=" + pki_->cert(ca), "--remote=pssl:" + std::to_string(port) + ":127.0.0.1"});
  }

  void start(const std::string& remote, const std::string& sbRemote, const std::string& ca,
             const std::string& key = "", const std::string& cert = "") {
    OvsConfig c;
    c.enabled = true;
    c.remote = remote;
    c.sbRemote = sbRemote;
    c.stateFile = "";
    c.drainTimeout = std::chrono::seconds(0);
    c.ssl = {key.empty() ? pki_->key("client") : key, cert.empty() ? pki_->cert("client") : cert,
             ca};
    r_ = std::make_unique<ChassisReconciler>(io_, clock_, c, metrics_, health_, nullptr);
    k8s::NodeInfo n;
    n.name = "net-1";
    okna::testing::planAndUpdate(*r_, n, {"network"});
  }

  bool ready() const { return component().first; }
  std::string detail() const { return component().second; }
  std::pair<bool, std::string> component() const {
    for (const auto& c : health_.readiness())
      if (c.name == "ovsdb") return {c.ok, c.detail};
    return {false, ""};
  }

  boost::asio::io_context io_;
  core::AsioClock clock_{io_};
  LoopRunner loop_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  std::filesystem::path dir_;
  std::unique_ptr<TestPki> pki_;
  std::unique_ptr<ChassisReconciler> r_;
};

TEST_F(OvsdbTlsTest, OpenVSwitchAndSouthboundOverTls) {
  const int ovsPort = freePort();
  auto ovs = tlsServer(OvsdbServer::Kind::OpenVSwitch, ovsPort);
  ovs->vsctl({"set", "Open_vSwitch", ".", "external_ids:system-id=chassis-1"});
  const int sbPort = freePort();
  auto sb = tlsServer(OvsdbServer::Kind::OvnSouthbound, sbPort);
  const std::string sbRemote = "ssl:127.0.0.1:" + std::to_string(sbPort);
  start("ssl:127.0.0.1:" + std::to_string(ovsPort), sbRemote, pki_->cert("ca"));
  // The chassis keys, written over TLS (read back through the unix socket).
  ASSERT_TRUE(loop_.runUntil([&] {
    return externalId(*ovs, "ovn-cms-options") == "enable-chassis-as-gw" && ready();
  })) << detail();
  // The Southbound view synced over TLS too.
  ASSERT_TRUE(loop_.runUntil([&] {
    const auto& s = r_->snapshot();
    return s && s->sb.remote == sbRemote && s->sb.connected && s->sb.synced;
  }));
}

// An ssl: Southbound whose certificates rotate (issue 27's fault matrix): the server comes back
// with a certificate from a new CA, and the agent's three files (mounted from a Secret, replaced
// in place) now hold the new CA and a client certificate it signed. The agent's next handshakes
// use the files as they are now: it reconnects and syncs, with no restart.
TEST_F(OvsdbTlsTest, ASouthboundWhoseCertificatesRotateIsFollowedWithoutARestart) {
  const int ovsPort = freePort();
  auto ovs = tlsServer(OvsdbServer::Kind::OpenVSwitch, ovsPort);
  ovs->vsctl({"set", "Open_vSwitch", ".", "external_ids:system-id=chassis-1"});
  const int sbPort = freePort();
  auto sb = tlsServer(OvsdbServer::Kind::OvnSouthbound, sbPort);
  const std::string sbRemote = "ssl:127.0.0.1:" + std::to_string(sbPort);
  const auto mounted = [&](const std::string& name) {
    return (dir_ / ("mounted-" + name)).string();
  };
  const auto mount = [&](const std::string& key, const std::string& cert, const std::string& ca) {
    for (const auto& [from, to] : {std::pair{pki_->key(key), mounted("tls.key")},
                                   std::pair{pki_->cert(cert), mounted("tls.crt")},
                                   std::pair{pki_->cert(ca), mounted("ca.crt")}}) {
      // Atomically, as the kubelet swaps a Secret volume's files.
      std::filesystem::copy_file(from, to + ".new",
                                 std::filesystem::copy_options::overwrite_existing);
      std::filesystem::rename(to + ".new", to);
    }
  };
  mount("client", "client", "ca");
  start("ssl:127.0.0.1:" + std::to_string(ovsPort), sbRemote, mounted("ca.crt"), mounted("tls.key"),
        mounted("tls.crt"));
  const auto synced = [&] {
    const auto& s = r_->snapshot();
    return s && s->sb.connected && s->sb.synced;
  };
  ASSERT_TRUE(loop_.runUntil(synced)) << detail();

  // The rotation: the Southbound restarts with the new CA's certificate (and trusts only the new
  // CA), the agent's files are replaced.
  sb.reset();
  ASSERT_TRUE(loop_.runUntil([&] { return !r_->snapshot()->sb.connected; }));
  mount("client-2", "client-2", "ca-2");
  sb = tlsServer(OvsdbServer::Kind::OvnSouthbound, sbPort, "server-2", "ca-2");
  EXPECT_TRUE(loop_.runUntil(synced, std::chrono::seconds(30)))
      << "not reconnected with the rotated certificates: " << detail();
  EXPECT_TRUE(ready()) << detail();
}

TEST_F(OvsdbTlsTest, AWrongCaFailsWithAClearErrorAndNotReady) {
  const int port = freePort();
  auto ovs = tlsServer(OvsdbServer::Kind::OpenVSwitch, port);
  const std::string remote = "ssl:127.0.0.1:" + std::to_string(port);
  start(remote, "", pki_->cert("other-ca"));
  ASSERT_TRUE(loop_.runUntil([&] {
    const std::string d = detail();
    return d.find("not connected to " + remote) != std::string::npos &&
           d.find("TLS") != std::string::npos && d.find("caCertFile") != std::string::npos;
  })) << detail();
  EXPECT_FALSE(ready());
  EXPECT_FALSE(externalId(*ovs, "ovn-cms-options"));
}

TEST_F(OvsdbTlsTest, AMissingFileIsNamedInTheReadinessDetail) {
  const int port = freePort();
  auto ovs = tlsServer(OvsdbServer::Kind::OpenVSwitch, port);
  const std::string missing = (dir_ / "nowhere.crt").string();
  start("ssl:127.0.0.1:" + std::to_string(port), "", missing);
  ASSERT_TRUE(loop_.runUntil([&] {
    return detail().find("ovs.ssl.caCertFile " + missing) != std::string::npos;
  })) << detail();
  EXPECT_FALSE(ready());
}

}  // namespace
}  // namespace okna::ovsdb
