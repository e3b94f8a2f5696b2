// Availability zones as aggregates (issue #29 § 2) against Nova's OWN compute API (Debian
// python3-nova on sqlite, tests/fixtures/nova/start-nova-api.sh: os-aggregates answered by Nova's
// code, the compute hosts registered by hand) and the real Placement. Nova runs --unmirrored here
// (its own mirroring of aggregates into Placement finds no provider), so that what Placement shows
// is the agent's doing.

#include "placement/zones.h"
#include "placement/nova_client.h"
#include "tests/integration/placement/placement_it.h"

namespace okna::placement {
namespace {

inline bool novaInstalled() {
  return std::filesystem::exists("/usr/lib/python3/dist-packages/nova/api/openstack/compute");
}

constexpr int kHosts = 6;

class ZonesIT : public PlacementIT {
 protected:
  static void SetUpTestSuite() {
    PlacementIT::SetUpTestSuite();
    if (dir_ == nullptr || !novaInstalled()) return;
    hosts_ = new std::vector<std::pair<std::string, std::string>>();
    std::string args;
    for (int i = 0; i < kHosts; ++i) {
      hosts_->emplace_back("zt-" + testing::randomUuid().substr(0, 8), testing::randomUuid());
      args += " " + hosts_->back().first + "=" + hosts_->back().second;
    }
    if (!testing::runScript(std::string(::okna::testing::kSourceDir) +
                                "/tests/fixtures/nova/start-nova-api.sh --unmirrored " + *dir_ +
                                "/nova " + *url_ + args,
                            *dir_ + "/nova.out"))
      std::cerr << "start-nova-api.sh failed:\n" << testing::readFile(*dir_ + "/nova.out") << "\n";
    nova_ = new std::string(testing::readFile(*dir_ + "/nova/url"));
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr && nova_ != nullptr)
      testing::runScript(testing::kFixtures + "/stop.sh " + *dir_ + "/nova", *dir_ + "/stop.out");
    delete nova_;
    delete hosts_;
    nova_ = nullptr;
    hosts_ = nullptr;
    PlacementIT::TearDownTestSuite();
  }
  void SetUp() override {
    PlacementIT::SetUp();
    if (IsSkipped()) return;
    if (!novaInstalled())
      GTEST_SKIP() << "Debian's python3-nova is not installed (packaging/install-deps.sh)";
    ASSERT_TRUE(nova_ != nullptr && !nova_->empty()) << "the Nova fixture did not start";
    ASSERT_LT(next_, kHosts) << "more tests than registered compute hosts";
    // A compute host Nova knows: the node's name is the host, its uid the root provider.
    std::tie(name_, uid_) = (*hosts_)[next_++];
    node_ = makeNode(name_, uid_);
    config_.availabilityZones.computeEndpointOverride = *nova_;
    zone_ = "z" + testing::randomUuid().substr(0, 6);
  }
  testing::Operator::Reply nova(const std::string& method, const std::string& path,
                                const json& body = nullptr) {
    testing::Operator op(io_, http_, *nova_, "admin:admin");
    return op.call(method, path, body, kNovaMicroversion, "compute");
  }
  std::optional<json> aggregate(const std::string& name) {
    const json all = nova("GET", "/os-aggregates").body;
    for (const auto& a : all["aggregates"])
      if (a["name"] == name) return a;
    return std::nullopt;
  }
  // Empty while the root does not exist yet.
  std::set<std::string> rootAggregates() {
    const json body =
        op_.call("GET", "/resource_providers/" + uid_ + "/aggregates", nullptr, "1.19").body;
    if (!body.is_object() || !body.contains("aggregates") || !body["aggregates"].is_array())
      return {};
    return body["aggregates"].get<std::set<std::string>>();
  }
  bool hostIn(const std::string& aggregateName) {
    auto a = aggregate(aggregateName);
    if (!a) return false;
    for (const auto& h : (*a)["hosts"])
      if (h == name_) return true;
    return false;
  }

  static inline std::string* nova_ = nullptr;
  static inline std::vector<std::pair<std::string, std::string>>* hosts_ = nullptr;
  static inline int next_ = 0;
  std::string zone_;
};

// The label comes: az-<zone> is created in Nova with availability_zone=<zone>, the host joins it,
// and the root provider joins the same aggregate in Placement, next to an operator's aggregate.
TEST_F(ZonesIT, LabelJoinsTheZoneInNovaAndPlacementAndForeignAggregatesStay) {
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(pushed(*r, 1));
  // An operator's (or a shared disk's) aggregate on the root.
  const std::string foreign = testing::randomUuid();
  const auto gen = op_.call("GET", "/resource_providers/" + uid_ + "/aggregates", nullptr, "1.19")
                       .body["resource_provider_generation"];
  ASSERT_EQ(op_.call("PUT", "/resource_providers/" + uid_ + "/aggregates",
                     {{"aggregates", {foreign}}, {"resource_provider_generation", gen}}, "1.19")
                .status,
            200);
  // And an isolation aggregate in Nova holding the host.
  const auto iso = nova("POST", "/os-aggregates", {{"aggregate", {{"name", "iso-" + name_}}}});
  ASSERT_EQ(iso.status, 200) << iso.body.dump();
  ASSERT_EQ(
      nova("POST",
           "/os-aggregates/" + std::to_string(iso.body["aggregate"]["id"].get<int>()) + "/action",
           {{"add_host", {{"host", name_}}}})
          .status,
      200);

  node_.labels[kZoneLabel] = zone_;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return hostIn("az-" + zone_); }))
      << nova("GET", "/os-aggregates").body.dump();
  const json az = *aggregate("az-" + zone_);
  EXPECT_EQ(az["metadata"]["availability_zone"], zone_);
  EXPECT_EQ(az["availability_zone"], zone_);
  ASSERT_TRUE(testing::runUntil(io_, [&] { return rootAggregates().size() == 2; }));
  EXPECT_EQ(rootAggregates(), (std::set<std::string>{foreign, az["uuid"].get<std::string>()}));
  EXPECT_TRUE(hostIn("iso-" + name_));
  // For the record (issue #29's closing note): the membership in Nova's and Placement's views.
  std::cout
      << "nova os-aggregates: " << nova("GET", "/os-aggregates").body.dump() << "\n"
      << "placement aggregates of " << uid_ << ": "
      << op_.call("GET", "/resource_providers/" + uid_ + "/aggregates", nullptr, "1.19").body.dump()
      << "\n";
  EXPECT_TRUE(health_.ready());
  EXPECT_EQ(placementDetail(health_).find("availability zone"), std::string::npos)
      << placementDetail(health_);

  // Steady state: nothing more is sent, to Nova or Placement.
  const size_t before = counting_.size();
  for (int i = 0; i < 5; ++i) okna::testing::planAndUpdate(*r, node_, {});
  testing::runFor(io_, 500ms);
  EXPECT_EQ(counting_.size(), before);
}

// The label changes: the host leaves the old zone's aggregate (which stays, with its other hosts'
// membership untouched) and joins the new one; the label goes: it leaves. Foreign aggregates
// stay in both views all along.
TEST_F(ZonesIT, LabelMovesAndGoes) {
  node_.labels[kZoneLabel] = zone_;
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return rootAggregates().size() == 1; }));
  const std::string first = (*aggregate("az-" + zone_))["uuid"];
  const std::string foreign = testing::randomUuid();
  const auto gen = op_.call("GET", "/resource_providers/" + uid_ + "/aggregates", nullptr, "1.19")
                       .body["resource_provider_generation"];
  ASSERT_EQ(
      op_.call("PUT", "/resource_providers/" + uid_ + "/aggregates",
               {{"aggregates", {foreign, first}}, {"resource_provider_generation", gen}}, "1.19")
          .status,
      200);

  const std::string second = zone_ + "b";
  node_.labels[kZoneLabel] = second;
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return hostIn("az-" + second); }));
  EXPECT_FALSE(hostIn("az-" + zone_));
  EXPECT_TRUE(aggregate("az-" + zone_).has_value()) << "the aggregate itself stays";
  ASSERT_TRUE(testing::runUntil(io_, [&] { return !rootAggregates().count(first); }));
  EXPECT_EQ(rootAggregates(),
            (std::set<std::string>{foreign, (*aggregate("az-" + second))["uuid"]}));

  node_.labels.erase(kZoneLabel);
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return !hostIn("az-" + second); }));
  ASSERT_TRUE(testing::runUntil(io_, [&] { return rootAggregates().size() == 1; }));
  EXPECT_EQ(rootAggregates(), std::set<std::string>{foreign});
  EXPECT_EQ(r->failedPasses(), 0u);
}

// Another agent created the zone's aggregate already (hundreds start at once): joined, not
// duplicated.
TEST_F(ZonesIT, AnExistingZoneAggregateIsJoined) {
  const auto made = nova("POST", "/os-aggregates",
                         {{"aggregate", {{"name", "az-" + zone_}, {"availability_zone", zone_}}}});
  ASSERT_EQ(made.status, 200) << made.body.dump();
  node_.labels[kZoneLabel] = zone_;
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return hostIn("az-" + zone_); }));
  int named = 0;
  const json all = nova("GET", "/os-aggregates").body;
  for (const auto& a : all["aggregates"]) named += a["name"] == "az-" + zone_ ? 1 : 0;
  EXPECT_EQ(named, 1);
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return rootAggregates() == std::set<std::string>{made.body["aggregate"]["uuid"]};
  }));
}

// The host is in another zone through an aggregate the agent did not join: Nova would refuse a
// second zone, so nothing is done, the operator is told, and inventories and traits flow.
TEST_F(ZonesIT, HostInAZoneTheAgentDidNotJoinIsReported) {
  const auto manual =
      nova("POST", "/os-aggregates",
           {{"aggregate", {{"name", "manual-" + name_}, {"availability_zone", zone_ + "m"}}}});
  ASSERT_EQ(manual.status, 200);
  ASSERT_EQ(nova("POST",
                 "/os-aggregates/" + std::to_string(manual.body["aggregate"]["id"].get<int>()) +
                     "/action",
                 {{"add_host", {{"host", name_}}}})
                .status,
            200);
  node_.labels[kZoneLabel] = zone_;
  node_.unschedulable = true;
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 1; }));
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return placementDetail(health_).find("remove it from manual-" + name_) != std::string::npos;
  })) << placementDetail(health_);
  EXPECT_TRUE(health_.ready());
  EXPECT_FALSE(aggregate("az-" + zone_).has_value());
  EXPECT_TRUE(hostIn("manual-" + name_));
  bool evented = false;
  for (const auto& [reason, message] : events_)
    evented = evented || reason == "AvailabilityZoneNotApplied";
  EXPECT_TRUE(evented);
}

// Nova unreachable: a warning, readiness detail and an Event; inventories and traits flow; the
// zone is applied once Nova answers (here: the endpoint fixed by a restart of the agent).
TEST_F(ZonesIT, NovaUnreachableHoldsNothingBack) {
  config_.availabilityZones.computeEndpointOverride = "http://127.0.0.1:9/v2.1";
  node_.labels[kZoneLabel] = zone_;
  node_.unschedulable = true;
  auto r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(
      testing::runUntil(io_, [&] { return traits(uid_).count("COMPUTE_STATUS_DISABLED") == 1; }));
  ASSERT_TRUE(testing::runUntil(io_, [&] {
    return placementDetail(health_).find(
               "availability zone not applied (retried): nova GET "
               "/os-aggregates") != std::string::npos;
  })) << placementDetail(health_);
  EXPECT_TRUE(health_.ready());
  EXPECT_EQ(r->failedPasses(), 0u);
  r.reset();
  config_.availabilityZones.computeEndpointOverride = *nova_;
  r = agent();
  okna::testing::planAndUpdate(*r, node_, {});
  ASSERT_TRUE(testing::runUntil(io_, [&] { return hostIn("az-" + zone_); }));
}

}  // namespace
}  // namespace okna::placement
