#include "metadata/reconciler.h"
#include "metadata/namespace_decision.h"

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/health.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "tests/fakes/manual_clock.h"

namespace okna::metadata {
namespace {

using ovsdb::SbMetadataView;
using ovsdb::SbPort;

class FakePlumbing : public Plumbing {
 public:
  core::Result<Ensured> ensure(const NetworkPlan& n) override {
    calls.push_back("ensure " + n.networkId);
    ensured.push_back(n);
    if (failEnsure) return core::makeError("netlink: boom");
    Ensured e;
    e.namespaceCreated = !existing.count(n.namespaceName);
    e.changes = e.namespaceCreated ? "created namespace" : "";
    e.ipv6Unavailable = ipv6Unavailable;
    existing.insert(n.namespaceName);
    return e;
  }
  void prepare(const std::vector<std::shared_ptr<const NetworkPlan>>& networks) override {
    std::string call = "prepare";
    for (const auto& n : networks) call += " " + n->networkId;
    calls.push_back(call);
  }
  core::Status remove(const std::string& ns) override {
    removed.push_back(ns);
    existing.erase(ns);
    return {};
  }
  core::Result<std::vector<std::string>> list() override {
    ++lists;
    return std::vector<std::string>(existing.begin(), existing.end());
  }
  core::Result<int> listen(const NetworkPlan&, const std::string& address, int) override {
    listens.push_back(address);
    return ::dup(0);
  }
  std::vector<NetworkPlan> ensured;
  // prepare and ensure calls, in the worker's order.
  std::vector<std::string> calls;
  std::vector<std::string> removed;
  std::vector<std::string> listens;
  std::set<std::string> existing;
  int lists = 0;
  bool failEnsure = false;
  // What ensure() reports about IPv6 (a kernel with ipv6.disable=1).
  std::string ipv6Unavailable;
};

class FakeListeners : public Listeners {
 public:
  core::Status addListener(const std::string& id, int fd) override {
    fds[id].push_back(fd);
    return {};
  }
  void removeNetwork(const std::string& id) override {
    for (int fd : fds[id]) ::close(fd);
    fds.erase(id);
    ++removals;
  }
  ~FakeListeners() override {
    for (auto& [id, list] : fds)
      for (int fd : list) ::close(fd);
  }
  std::map<std::string, std::vector<int>> fds;
  int removals = 0;
};

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    clock_.setSettle([this] { settle(); });
    make(std::chrono::milliseconds(0));
  }

  // Outputs (OVS ports, readiness) handed on every time unless `outputInterval` says otherwise;
  // the ports' window grows up to `outputIntervalMax` (default: it does not grow).
  void make(std::chrono::milliseconds outputInterval,
            std::optional<std::chrono::milliseconds> outputIntervalMax = std::nullopt) {
    ReconcilerOptions o;
    o.retryMin = std::chrono::milliseconds(100);
    o.retryMax = std::chrono::milliseconds(200);
    o.outputInterval = outputInterval;
    o.outputIntervalMax = outputIntervalMax.value_or(outputInterval);
    o.settledAfter = settledAfter_;
    r_ = std::make_unique<Reconciler>(
        io_, clock_, o, plumbing_,
        [this](std::function<void()> job) { jobs_.push_back(std::move(job)); }, listeners_,
        [this](std::shared_ptr<const ovsdb::DesiredMetadataOvs> d) {
          ovs_ = *d;
          ++submits_;
        },
        metrics_, health_);
  }

  // Runs the queued worker jobs and the loop until both are idle (time stands still).
  void settle() {
    const auto poll = [this] {
      io_.restart();  // a poll that found nothing left the context stopped
      return io_.poll();
    };
    for (int i = 0; i < 100 && (!jobs_.empty() || poll() > 0); ++i) {
      while (!jobs_.empty()) {
        auto job = std::move(jobs_.front());
        jobs_.pop_front();
        job();
      }
    }
  }

  // Lives through `window` of simulated time: every timer due in it fires, in order, and the
  // worker's jobs and the loop settle after each.
  void live(std::chrono::milliseconds window) { clock_.runFor(window); }

  static SbPort port(const std::string& lport, const std::string& dp, const std::string& type,
                     bool here, const std::string& mac0, const std::string& cidrs = "") {
    SbPort p;
    p.uuid = lport;
    p.logicalPort = lport;
    p.type = type;
    p.datapath = dp;
    p.onChassis = here;
    p.mac0 = mac0;
    p.cidrs = cidrs;
    p.deviceId = "dev-" + lport;
    if (type == "localport") p.deviceOwner = "network:distributed";
    return p;
  }

  // One network (net-a) with a VM here; `extra` networks are added the same way.
  SbMetadataView view(std::vector<std::string> networks, bool synced = true) {
    SbMetadataView v;
    v.enabled = true;
    v.synced = synced;
    v.version = ++version_;
    ovsdb::SbRows rows;
    int i = 0;
    for (const auto& net : networks) {
      const std::string dp = "dp-" + net;
      const std::string octet = std::to_string(++i);
      rows.datapathNames[dp] = "neutron-" + net;
      rows.ports.push_back(port("md-" + net, dp, "localport", false,
                                "fa:16:3e:00:00:0" + octet + " 10.0." + octet + ".2",
                                "10.0." + octet + ".2/24"));
      rows.ports.push_back(
          port("vm-" + net, dp, "", true, "fa:16:3e:00:01:0" + octet + " 10.0." + octet + ".10"));
    }
    v.rows = std::move(rows);
    lastView_ = v;
    return v;
  }

  // ovs-vswitchd plugged the ports handed on: the bridge now has them (same Southbound view).
  void plug() {
    std::set<std::string> names;
    for (const auto& [port, iface] : ovs_.ports) names.insert(port);
    r_->update(lastView_, "br-int", ports(names), ports(names), vmIfaces_);
    settle();
  }

  // A new Southbound view, the bridge's ports as they are and the VMs' interfaces vmIfaces_.
  void see(const SbMetadataView& v) {
    std::set<std::string> names;
    for (const auto& [port, iface] : ovs_.ports) names.insert(port);
    r_->update(v, "br-int", ports(names), ports(names), vmIfaces_);
    settle();
  }

  // The integration bridge's ports, as the metadata service hands them on.
  static core::SharedValue<std::set<std::string>> ports(std::set<std::string> names = {}) {
    return names;
  }

  bool ready() const {
    for (const auto& c : health_.readiness())
      if (c.name == "metadata") return c.ok;
    return false;
  }
  // What /readyz?verbose says about metadata.
  std::string readinessDetail() const {
    for (const auto& c : health_.readiness())
      if (c.name == "metadata") return c.detail;
    return "";
  }

  boost::asio::io_context io_;
  testing::ManualClock clock_{io_};
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  FakePlumbing plumbing_;
  FakeListeners listeners_;
  std::deque<std::function<void()>> jobs_;
  ovsdb::DesiredMetadataOvs ovs_;
  int submits_ = 0;
  std::size_t settledAfter_ = 64;
  std::uint64_t version_ = 0;
  SbMetadataView lastView_;
  // The iface-ids of the VM interfaces on br-int (the VMs of view() are "vm-<net>").
  core::SharedValue<std::set<std::string>> vmIfaces_;
  std::unique_ptr<Reconciler> r_;
};

TEST_F(ReconcilerTest, SetsUpServesAndPlugsANetwork) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  EXPECT_FALSE(ready());
  settle();
  ASSERT_EQ(plumbing_.ensured.size(), 1U);
  EXPECT_EQ(plumbing_.ensured[0].namespaceName, "ovnmeta-net-a");
  EXPECT_EQ(plumbing_.listens,
            (std::vector<std::string>{"169.254.169.254", "fe80::a9fe:a9fe%tapnet-a1"}));
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
  EXPECT_EQ(ovs_.ports, (std::map<std::string, std::string>{{"tapnet-a0", "md-net-a"}}));
  EXPECT_TRUE(ovs_.enabled);
  EXPECT_TRUE(ovs_.prune);
  // Listening, but no VM reaches it before its port is on the bridge.
  EXPECT_FALSE(ready());
  EXPECT_TRUE(r_->readyNetworks().empty());
  EXPECT_EQ(r_->debugJson()["networks"][0]["state"], "plugging");
  EXPECT_NE(readinessDetail().find("tapnet-a0 not yet on br-int"), std::string::npos)
      << readinessDetail();
  plug();
  EXPECT_TRUE(ready());
  EXPECT_EQ(r_->readyNetworks(), (std::set<std::string>{"net-a"}));
  EXPECT_EQ(r_->debugJson()["networks"][0]["state"], "serving");
  // Unplugged behind the agent's back: not serving until it is back.
  r_->update(lastView_, "br-int", ports({}));
  settle();
  EXPECT_FALSE(ready());
}

TEST_F(ReconcilerTest, WithIpv6OffEveryNetworkServesIpv4AndItIsSaidOnce) {
  plumbing_.ipv6Unavailable =
      "namespace ovnmeta-x: AddAddress fe80::a9fe:a9fe/64: Operation not "
      "supported";
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  sink->set_pattern("%v");
  core::logger("metadata")->sinks().push_back(sink);
  r_->setActive(true);
  r_->update(view({"net-a", "net-b"}), "br-int", ports({}));
  settle();
  plug();
  auto& sinks = core::logger("metadata")->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  const std::string text = log.str();
  const auto first = text.find("IPv6 is off");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("IPv6 is off", first + 1), std::string::npos) << "said once: " << text;
  // No IPv6 listener is even tried; both networks serve.
  EXPECT_EQ(plumbing_.listens, (std::vector<std::string>{"169.254.169.254", "169.254.169.254"}));
  EXPECT_EQ(listeners_.fds["net-a"].size(), 1U);
  EXPECT_EQ(listeners_.fds["net-b"].size(), 1U);
  EXPECT_TRUE(ready()) << readinessDetail();
  EXPECT_EQ(r_->ipv6Unavailable(), plumbing_.ipv6Unavailable);
  EXPECT_EQ(r_->debugJson()["ipv6Unavailable"], plumbing_.ipv6Unavailable);
  EXPECT_NE(metrics_.render().find("okna_metadata_plumbing_total{op=\"ensure\",result=\"ok\"} 2"),
            std::string::npos)
      << metrics_.render();
  EXPECT_EQ(metrics_.render().find("result=\"error\"} 1"), std::string::npos);
}

TEST_F(ReconcilerTest, ServesOnlyOnceOvsVswitchdHasCreatedThePort) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  ASSERT_EQ(ovs_.ports, (std::map<std::string, std::string>{{"tapnet-a0", "md-net-a"}}));
  // The port is in the database (the agent's write read back), not yet numbered by
  // ovs-vswitchd: no packet reaches the namespace yet.
  r_->update(lastView_, "br-int", ports({"tapnet-a0"}), ports({}));
  settle();
  EXPECT_FALSE(ready());
  EXPECT_TRUE(r_->readyNetworks().empty());
  EXPECT_EQ(r_->debugJson()["networks"][0]["state"], "plugging");
  EXPECT_NE(readinessDetail().find("tapnet-a0 on br-int, not yet created by ovs-vswitchd"),
            std::string::npos)
      << readinessDetail();
  // Kept in the wanted ports meanwhile: nothing is unplugged or re-added.
  EXPECT_EQ(ovs_.ports, (std::map<std::string, std::string>{{"tapnet-a0", "md-net-a"}}));
  r_->update(lastView_, "br-int", ports({"tapnet-a0"}), ports({"tapnet-a0"}));
  settle();
  EXPECT_TRUE(ready());
  EXPECT_EQ(r_->debugJson()["networks"][0]["state"], "serving");
}

TEST_F(ReconcilerTest, ABurstOfSetUpsIsPluggedInOneGoAndALoneOneAtOnce) {
  make(std::chrono::milliseconds(40));
  r_->setActive(true);
  r_->update(view({"net-a", "net-b", "net-c"}), "br-int", ports({}));
  // The first hand-over (nothing set up yet) goes at once; the three set-ups completing within
  // the window wait for it to close and then go together, in one hand-over.
  settle();
  const int afterBurst = submits_;
  EXPECT_TRUE(ovs_.ports.empty());
  EXPECT_FALSE(ready());
  live(std::chrono::milliseconds(39));
  EXPECT_EQ(submits_, afterBurst) << "the window is still open";
  live(std::chrono::milliseconds(1));
  EXPECT_EQ(submits_, afterBurst + 1);
  EXPECT_EQ(ovs_.ports.size(), 3u);
  // Plugged; quiet for as long as the (grown, 80 ms) window: a fourth network's port is handed
  // on as soon as its namespace is up, without waiting for any timer.
  plug();
  live(std::chrono::milliseconds(80));
  EXPECT_TRUE(ready());
  r_->update(view({"net-a", "net-b", "net-c", "net-d"}), "br-int", ports({}));
  settle();
  EXPECT_EQ(submits_, afterBurst + 2);
  EXPECT_EQ(ovs_.ports.size(), 4u);
}

TEST_F(ReconcilerTest, NewNetworksOfOnePassArePreparedTogetherBeforeTheirEnsures) {
  r_->setActive(true);
  r_->update(view({"net-a", "net-b", "net-c"}), "br-int", ports({}));
  settle();
  EXPECT_EQ(plumbing_.calls, (std::vector<std::string>{"prepare net-a net-b net-c", "ensure net-a",
                                                       "ensure net-b", "ensure net-c"}));
  // One more network alone, and re-checks of serving ones, are not prepared.
  plumbing_.calls.clear();
  r_->update(view({"net-a", "net-b", "net-c", "net-d"}), "br-int", ports({}));
  settle();
  EXPECT_EQ(plumbing_.calls, (std::vector<std::string>{"ensure net-d"}));
}

TEST_F(ReconcilerTest, ABurstThatSettledIsReportedOnceAndALoneNetworkIsNot) {
  settledAfter_ = 2;
  make(std::chrono::milliseconds(0));
  std::vector<std::size_t> settled;
  r_->setOnSettled([&](std::size_t networks) { settled.push_back(networks); });
  r_->setActive(true);
  r_->update(view({"net-a", "net-b", "net-c"}), "br-int", ports({}));
  settle();
  EXPECT_TRUE(settled.empty()) << "set up, but not serving until plugged";
  plug();
  ASSERT_TRUE(ready());
  EXPECT_EQ(settled, std::vector<std::size_t>{3});
  // Readiness is published again (a re-plan): nothing new was set up, nothing reported.
  r_->update(view({"net-a", "net-b", "net-c"}), "br-int", ports({}));
  plug();
  EXPECT_EQ(settled.size(), 1u);
  // One more network is under the threshold; a second one makes a burst again.
  r_->update(view({"net-a", "net-b", "net-c", "net-d"}), "br-int", ports({}));
  settle();
  plug();
  ASSERT_TRUE(ready());
  EXPECT_EQ(settled.size(), 1u);
  r_->update(view({"net-a", "net-b", "net-c", "net-d", "net-e"}), "br-int", ports({}));
  settle();
  plug();
  ASSERT_TRUE(ready());
  EXPECT_EQ(settled, (std::vector<std::size_t>{3, 2}));
}

TEST_F(ReconcilerTest, TheWindowForPortsGrowsDuringABurstAndIsBackAfterAPause) {
  using std::chrono::milliseconds;
  make(milliseconds(50), milliseconds(400));
  r_->setActive(true);
  const auto networks = [](int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back("net-" + std::to_string(i));
    return ids;
  };
  r_->update(view(networks(2)), "br-int", ports({}));
  settle();  // the first hand-over went at once; the two set-ups wait for its 50 ms window
  const int first = submits_;
  live(milliseconds(49));
  EXPECT_EQ(submits_, first);
  live(milliseconds(1));
  EXPECT_EQ(submits_, first + 1);
  EXPECT_EQ(ovs_.ports.size(), 2u);
  // That hand-over had waited: a burst, the next window is 100 ms.
  live(milliseconds(10));
  r_->update(view(networks(3)), "br-int", ports({}));
  settle();
  live(milliseconds(89));
  EXPECT_EQ(submits_, first + 1) << "a third network waits for the grown window";
  live(milliseconds(1));
  EXPECT_EQ(submits_, first + 2);
  EXPECT_EQ(ovs_.ports.size(), 3u);
  // That one waited too: the window is now 200 ms. A pause longer than it: the next network
  // goes at once.
  live(milliseconds(200));
  r_->update(view(networks(4)), "br-int", ports({}));
  settle();
  EXPECT_EQ(submits_, first + 3);
  EXPECT_EQ(ovs_.ports.size(), 4u);
  // ...and, not having waited, put the window back at 50 ms: one more 50 ms later goes at once.
  live(milliseconds(50));
  r_->update(view(networks(5)), "br-int", ports({}));
  settle();
  EXPECT_EQ(submits_, first + 4);
}

TEST_F(ReconcilerTest, AnUnchangedViewDoesNothing) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  r_->update(view({"net-a"}), "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_EQ(plumbing_.ensured.size(), 1U);
  EXPECT_EQ(plumbing_.listens.size(), 2U);
}

TEST_F(ReconcilerTest, AMetadataPortChangeReaddressesLiveWithoutNewListeners) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  auto v = view({"net-a"});
  v.rows.mutableCopy().ports[0].mac0 = "fa:16:3e:00:00:99 10.0.1.3";
  v.rows.mutableCopy().ports[0].cidrs = "10.0.1.3/24";
  r_->update(v, "br-int", ports({"tapnet-a0"}));
  settle();
  ASSERT_EQ(plumbing_.ensured.size(), 2U);
  EXPECT_EQ(plumbing_.ensured[1].mac, "fa:16:3e:00:00:99");
  EXPECT_EQ(plumbing_.listens.size(), 2U) << "the namespace was kept: so were its sockets";
  EXPECT_EQ(listeners_.removals, 0);
}

TEST_F(ReconcilerTest, ANamespaceRecreatedUnderneathGetsNewListeners) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  plumbing_.existing.clear();  // someone ran `ip netns delete`
  auto v = view({"net-a"});
  v.rows.mutableCopy().ports[0].cidrs = "10.0.1.2/24 10.9.0.2/24";  // any change triggers an ensure
  r_->update(v, "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_EQ(plumbing_.listens.size(), 4U);
  EXPECT_EQ(listeners_.removals, 1);
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
}

TEST_F(ReconcilerTest, ANetworkWithoutVmsHereIsTornDown) {
  r_->setActive(true);
  r_->update(view({"net-a", "net-b"}), "br-int", ports({}));
  settle();
  r_->update(view({"net-b"}), "br-int", ports({"tapnet-a0", "tapnet-b0"}));
  settle();
  EXPECT_EQ(plumbing_.removed, (std::vector<std::string>{"ovnmeta-net-a"}));
  EXPECT_EQ(listeners_.fds.count("net-a"), 0U);
  EXPECT_EQ(ovs_.ports.count("tapnet-a0"), 0U);
  EXPECT_EQ(ovs_.ports.count("tapnet-b0"), 1U);
  EXPECT_TRUE(ready());
}

TEST_F(ReconcilerTest, NothingIsTornDownWhileTheViewIsNotSynced) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  r_->update(view({}, false), "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_TRUE(plumbing_.removed.empty());
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
  EXPECT_FALSE(ovs_.prune);
  EXPECT_EQ(ovs_.ports.count("tapnet-a0"), 1U);
  EXPECT_FALSE(ready());
}

TEST_F(ReconcilerTest, StrayNamespacesAreRemovedOnceSyncedAndOnlyOvnmetaOnes) {
  plumbing_.existing = {"ovnmeta-gone", "ovnmeta-net-a", "other-ns"};
  r_->setActive(true);
  r_->update(view({"net-a"}, false), "br-int", ports({}));
  settle();
  EXPECT_EQ(plumbing_.lists, 0) << "no judgement before the view is synced";
  r_->update(view({"net-a"}), "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_EQ(plumbing_.lists, 1);
  EXPECT_EQ(plumbing_.removed, (std::vector<std::string>{"ovnmeta-gone"}));
  EXPECT_EQ(plumbing_.existing.count("other-ns"), 1U);
}

// The agent leaves a node no role of which serves metadata (agent/departure.h): every namespace
// goes, its own and the strays, with the Southbound synced or not, and the marked ports are
// pruned; nothing is set up again afterwards.
TEST_F(ReconcilerTest, RetiredEverythingGoesSyncedOrNotAndNothingComesBack) {
  plumbing_.existing = {"ovnmeta-stray", "other-ns"};
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  plug();
  ASSERT_TRUE(ready());
  // The Southbound is gone (not synced) when the agent leaves: it removes all the same.
  r_->update(view({"net-a"}, false), "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_FALSE(r_->retirementDone());
  r_->setActive(false);
  r_->retire();
  settle();
  EXPECT_TRUE(r_->retired());
  std::vector<std::string> removed = plumbing_.removed;
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{"ovnmeta-net-a", "ovnmeta-stray"}));
  EXPECT_EQ(plumbing_.existing, (std::set<std::string>{"other-ns"}));
  EXPECT_EQ(listeners_.fds.count("net-a"), 0U);
  EXPECT_TRUE(ovs_.enabled) << "the marked ports are still read, to be pruned";
  EXPECT_TRUE(ovs_.prune);
  EXPECT_TRUE(ovs_.ports.empty());
  EXPECT_TRUE(r_->retirementDone());
  // A later view with the VM still bound sets nothing up again.
  const auto ensures = plumbing_.ensured.size();
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  EXPECT_EQ(plumbing_.ensured.size(), ensures);
  EXPECT_TRUE(r_->retirementDone());
}

TEST_F(ReconcilerTest, RetiredIsNotDoneUntilTheHostWasListed) {
  r_->setActive(true);
  r_->update(view({}, false), "br-int", ports({}));
  settle();
  r_->retire();
  EXPECT_FALSE(r_->retirementDone()) << "the listing is a worker job not run yet";
  settle();
  EXPECT_EQ(plumbing_.lists, 1);
  EXPECT_TRUE(r_->retirementDone());
}

TEST_F(ReconcilerTest, ARestartKeepsExistingPortsPluggedWhileAdopting) {
  plumbing_.existing = {"ovnmeta-net-a"};
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({"tapnet-a0"}));
  // Before the worker ran: the port that is already on the bridge is still wanted.
  EXPECT_EQ(ovs_.ports, (std::map<std::string, std::string>{{"tapnet-a0", "md-net-a"}}));
  EXPECT_TRUE(ovs_.prune);
  settle();
  EXPECT_TRUE(plumbing_.removed.empty());
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
}

TEST_F(ReconcilerTest, AFailedEnsureIsRetriedAndShownInReadiness) {
  plumbing_.failEnsure = true;
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  EXPECT_FALSE(ready());
  EXPECT_NE(readinessDetail().find("netlink: boom"), std::string::npos) << readinessDetail();
  plumbing_.failEnsure = false;
  // Retried after the first backoff (retryMin), not before.
  live(std::chrono::milliseconds(99));
  EXPECT_EQ(plumbing_.ensured.size(), 1U);
  EXPECT_FALSE(ready());
  live(std::chrono::milliseconds(1));
  EXPECT_EQ(plumbing_.ensured.size(), 2U);
  plug();
  EXPECT_TRUE(ready());
}

TEST_F(ReconcilerTest, ThePeriodicCheckRebuildsANamespaceDeletedBehindTheAgentsBack) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  plug();
  ASSERT_TRUE(ready());
  // Nothing changed: the check re-ensures, opens no listener, repairs nothing.
  r_->verifyAll();
  settle();
  EXPECT_EQ(plumbing_.ensured.size(), 2U);
  EXPECT_EQ(plumbing_.listens.size(), 2U);
  EXPECT_EQ(metrics_.counter("okna_metadata_repairs_total", "").value(), 0);
  // `ip netns delete ovnmeta-net-a`, and the SB says nothing: the next check rebuilds it and
  // serves from new listeners.
  plumbing_.existing.clear();
  r_->verifyAll();
  settle();
  EXPECT_EQ(plumbing_.ensured.size(), 3U);
  EXPECT_EQ(plumbing_.listens.size(), 4U);
  EXPECT_EQ(listeners_.removals, 1);
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
  EXPECT_EQ(metrics_.counter("okna_metadata_repairs_total", "").value(), 1);
  // The new veth is re-plugged (the old port held the dead device): serving once it is back.
  EXPECT_FALSE(ready());
  r_->update(lastView_, "br-int", ports({}));
  settle();
  plug();
  EXPECT_TRUE(ready());
}

TEST_F(ReconcilerTest, ARecreatedVethIsUnpluggedThenPluggedAgain) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  r_->update(view({"net-a"}), "br-int", ports({"tapnet-a0"}));
  settle();
  // The namespace (and its veth) rebuilt under the existing OVS port: the port goes first...
  plumbing_.existing.clear();
  r_->verifyAll();
  settle();
  EXPECT_EQ(ovs_.ports.count("tapnet-a0"), 0U) << "ovs-vswitchd would keep the dead device";
  EXPECT_TRUE(ovs_.prune);
  // ...and comes back once the bridge no longer has it.
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  EXPECT_EQ(ovs_.ports, (std::map<std::string, std::string>{{"tapnet-a0", "md-net-a"}}));
  // A check that finds nothing wrong never unplugs.
  r_->update(view({"net-a"}), "br-int", ports({"tapnet-a0"}));
  r_->verifyAll();
  settle();
  EXPECT_EQ(ovs_.ports.count("tapnet-a0"), 1U);
}

TEST_F(ReconcilerTest, AFailedCheckIsNotReadyAndRetriedUntilRepaired) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  plug();
  ASSERT_TRUE(ready());
  plumbing_.existing.clear();
  plumbing_.failEnsure = true;
  r_->verifyAll();
  settle();
  EXPECT_FALSE(ready()) << "a namespace that cannot be repaired is not serving";
  const auto failed = plumbing_.ensured.size();
  // Still failing: retried at 100 ms, then 200 ms after that (the backoff doubles).
  live(std::chrono::milliseconds(100));
  EXPECT_EQ(plumbing_.ensured.size(), failed + 1);
  EXPECT_FALSE(ready());
  plumbing_.failEnsure = false;
  live(std::chrono::milliseconds(199));
  EXPECT_EQ(plumbing_.ensured.size(), failed + 1);
  live(std::chrono::milliseconds(1));
  EXPECT_EQ(plumbing_.ensured.size(), failed + 2);
  r_->update(lastView_, "br-int", ports({}));  // re-plugged, as above
  settle();
  plug();
  EXPECT_TRUE(ready());
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
}

TEST_F(ReconcilerTest, InactiveCreatesNothingButKeepsServingUntilTheVmsLeave) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  settle();
  r_->setActive(false);
  r_->update(view({"net-a", "net-b"}), "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_EQ(listeners_.fds.count("net-b"), 0U);
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
  EXPECT_TRUE(r_->wantsSouthbound());
  r_->update(view({"net-b"}), "br-int", ports({"tapnet-a0"}));
  settle();
  EXPECT_EQ(plumbing_.removed, (std::vector<std::string>{"ovnmeta-net-a"}));
  EXPECT_FALSE(r_->wantsSouthbound());
}

TEST_F(ReconcilerTest, LookupByIpAndByIpv6LinkLocal) {
  r_->setActive(true);
  r_->update(view({"net-a"}), "br-int", ports({}));
  EXPECT_EQ(r_->lookup("net-a", "10.0.1.10").size(), 1U);
  EXPECT_EQ(r_->lookup("net-a", "10.0.1.10")[0]->deviceId, "dev-vm-net-a");
  EXPECT_TRUE(r_->lookup("net-a", "10.0.1.11").empty());
  EXPECT_TRUE(r_->lookup("net-b", "10.0.1.10").empty());
  // fa:16:3e:00:01:01 -> fe80::f816:3eff:fe00:101
  EXPECT_EQ(r_->lookup("net-a", "fe80::f816:3eff:fe00:101").size(), 1U);
  EXPECT_TRUE(r_->lookup("net-a", "fe80::1234").empty());
}

// Issue 27, point 1: an emptied Southbound once tore down every namespace while /readyz said
// "metadata ok". The VMs' interfaces on br-int prove them still here: nothing goes, lookups
// answer from the last view, readiness says why; all of it as before once the bindings are back.
TEST_F(ReconcilerTest, AnEmptiedSouthboundRemovesNothingServesOnAndSaysWhy) {
  r_->setActive(true);
  vmIfaces_ = std::set<std::string>{"vm-net-a", "vm-net-b"};
  see(view({"net-a", "net-b"}));
  plug();
  ASSERT_TRUE(ready());
  const auto ensures = plumbing_.ensured.size();
  const auto listens = plumbing_.listens.size();

  see(view({}));
  EXPECT_TRUE(plumbing_.removed.empty());
  EXPECT_EQ(plumbing_.lists, 1) << "strays judged once, at the first synced view, not again";
  EXPECT_EQ(listeners_.fds["net-a"].size(), 2U);
  EXPECT_EQ(listeners_.fds["net-b"].size(), 2U);
  EXPECT_EQ(ovs_.ports.size(), 2U);
  EXPECT_FALSE(ovs_.prune);
  EXPECT_FALSE(ready());
  EXPECT_NE(readinessDetail().find("no VM port is bound to this chassis in the Southbound, but 2 "
                                   "VM interface(s) are on br-int"),
            std::string::npos)
      << readinessDetail();
  ASSERT_EQ(r_->lookup("net-a", "10.0.1.10").size(), 1U);
  EXPECT_EQ(r_->lookup("net-a", "10.0.1.10")[0]->deviceId, "dev-vm-net-a");
  EXPECT_EQ(r_->debugJson()["southbound"], readinessDetail());

  // ovn-northd rebuilt it, ovn-controller claimed the ports again: served as they were, nothing
  // set up anew.
  see(view({"net-a", "net-b"}));
  EXPECT_TRUE(ready()) << readinessDetail();
  EXPECT_TRUE(ovs_.prune);
  EXPECT_TRUE(plumbing_.removed.empty());
  EXPECT_EQ(plumbing_.ensured.size(), ensures);
  EXPECT_EQ(plumbing_.listens.size(), listens);
}

TEST_F(ReconcilerTest, ANetworkARestoredSouthboundLacksIsKeptUntilItsVmLeavesBrInt) {
  r_->setActive(true);
  vmIfaces_ = std::set<std::string>{"vm-net-a", "vm-net-b"};
  see(view({"net-a", "net-b"}));
  plug();
  ASSERT_TRUE(ready());

  // Restored from a backup older than net-b: net-a is back, net-b is not, its VM is here.
  see(view({"net-a"}));
  EXPECT_TRUE(plumbing_.removed.empty());
  EXPECT_EQ(ovs_.ports.count("tapnet-b0"), 1U);
  EXPECT_EQ(listeners_.fds["net-b"].size(), 2U);
  EXPECT_FALSE(ready());
  EXPECT_EQ(readinessDetail(),
            "the Southbound lost VM ports that are still on br-int: kept ovnmeta-net-b: VM "
            "port(s) vm-net-b still on br-int but not in the Southbound;");
  const auto networks = r_->debugJson()["networks"];
  ASSERT_EQ(networks.size(), 2U);
  EXPECT_EQ(networks[1]["state"], "serving");
  EXPECT_NE(networks[1]["lost"].get<std::string>().find("vm-net-b"), std::string::npos);

  // The VM is deleted: its interface leaves br-int, and that proves the network gone.
  vmIfaces_ = std::set<std::string>{"vm-net-a"};
  see(view({"net-a"}));
  EXPECT_EQ(plumbing_.removed, (std::vector<std::string>{"ovnmeta-net-b"}));
  EXPECT_EQ(ovs_.ports.count("tapnet-b0"), 0U);
  EXPECT_EQ(listeners_.fds.count("net-b"), 0U);
  EXPECT_TRUE(ready()) << readinessDetail();
}

TEST_F(ReconcilerTest, ARestartWhileTheSouthboundIsEmptyPrunesNothing) {
  // The agent starts while the Southbound has nothing for this chassis and br-int has a VM:
  // the namespaces it finds are not strays, and their ports stay on the bridge.
  plumbing_.existing = {"ovnmeta-net-a", "ovnmeta-net-b"};
  r_->setActive(true);
  vmIfaces_ = std::set<std::string>{"vm-net-a"};
  r_->update(view({}), "br-int", ports({"tapnet-a0", "tapnet-b0"}), ports({"tapnet-a0"}),
             vmIfaces_);
  settle();
  EXPECT_EQ(plumbing_.lists, 0);
  EXPECT_TRUE(plumbing_.removed.empty());
  EXPECT_FALSE(ovs_.prune);
  EXPECT_FALSE(ready());
  EXPECT_NE(readinessDetail().find("no VM port is bound to this chassis"), std::string::npos);
  // The bindings are back: net-a is adopted, net-b (no VM here) is a stray and goes.
  r_->update(view({"net-a"}), "br-int", ports({"tapnet-a0", "tapnet-b0"}), ports({"tapnet-a0"}),
             vmIfaces_);
  settle();
  EXPECT_EQ(plumbing_.lists, 1);
  EXPECT_EQ(plumbing_.removed, (std::vector<std::string>{"ovnmeta-net-b"}));
}

TEST_F(ReconcilerTest, AVmThatReallyLeftTakesItsNamespaceAlthoughOthersStay) {
  // Unbound and off br-int: removed at once, as before, whatever else is on the bridge.
  r_->setActive(true);
  vmIfaces_ = std::set<std::string>{"vm-net-a", "vm-net-b", "some-other-vm"};
  see(view({"net-a", "net-b"}));
  plug();
  vmIfaces_ = std::set<std::string>{"vm-net-b", "some-other-vm"};
  see(view({"net-b"}));
  EXPECT_EQ(plumbing_.removed, (std::vector<std::string>{"ovnmeta-net-a"}));
  EXPECT_EQ(ovs_.ports.count("tapnet-a0"), 0U);
  EXPECT_TRUE(ready()) << readinessDetail();
}

// Parity with namespace_decision.h: on the same Southbound view, local evidence and host
// namespaces, a new reconciler does exactly what decideMetadata (the dry run's function) says:
// it ensures the networks to create or keep (creating exactly those to create), removes exactly
// those to remove, and touches nothing it holds.
struct ParityCase {
  const char* name;
  bool active;
  std::vector<std::string> networks;
  bool synced;
  std::set<std::string> host;
  std::set<std::string> vmIfaces;
};

TEST_F(ReconcilerTest, DoesWhatTheNamespaceDecisionSays) {
  const ParityCase cases[] = {
      {"adopt, create, prune",
       true,
       {"net-a", "net-b"},
       true,
       {"ovnmeta-net-a", "ovnmeta-stray", "other"},
       {}},
      {"view not synced", true, {"net-a"}, false, {"ovnmeta-stray"}, {}},
      {"inactive", false, {"net-a"}, true, {"ovnmeta-net-a", "ovnmeta-stray"}, {}},
      {"emptied Southbound, VMs on br-int", true, {}, true, {"ovnmeta-net-a"}, {"vm-net-a"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    plumbing_ = {};
    plumbing_.existing = c.host;
    make(std::chrono::milliseconds(0));
    vmIfaces_ = c.vmIfaces;
    const SbMetadataView v = view(c.networks, c.synced);

    MetadataDecisionInputs in;
    in.active = c.active;
    in.ipv6 = true;
    in.local = {vmIfaces_, nullptr, "br-int"};
    in.namespaces = c.host;
    std::map<std::string, std::string> decided;
    for (const auto& d : decideMetadata(v, in).namespaces)
      if (d.action != NamespaceAction::Hold) decided[d.namespaceName] = actionName(d.action);

    r_->setActive(c.active);
    see(v);
    std::map<std::string, std::string> done;
    for (const auto& n : plumbing_.ensured)
      done[n.namespaceName] = c.host.count(n.namespaceName) ? "keep" : "create";
    for (const auto& ns : plumbing_.removed) done[ns] = "remove";
    EXPECT_EQ(done, decided);
    // And once it has acted, what it reports deciding is what a new decision on the host as it
    // is now says (the host's strays it knows from its listing, made once the plan is synced).
    in.namespaces = plumbing_.existing;
    if (c.active && decideMetadata(v, in).plan.synced) {
      EXPECT_EQ(r_->debugJson()["decisions"], decisionsToJson(decideMetadata(v, in).namespaces));
    }
  }
}

}  // namespace
}  // namespace okna::metadata
