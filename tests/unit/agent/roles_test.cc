#include "agent/roles.h"

#include <gtest/gtest.h>

#include "agent/config.h"

namespace okna::agent {
namespace {

k8s::NodeInfo node(k8s::StringMap labels, std::string name = "n1") {
  k8s::NodeInfo n;
  n.name = std::move(name);
  n.labels = std::move(labels);
  return n;
}

RolesConfig configFrom(const std::string& yaml) {
  auto c = parseConfig(yaml, "test.yaml");
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? c->nodeRoles : RolesConfig{};
}

bool hasWarning(const RolesPlan& p, const std::string& part) {
  for (const auto& w : p.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

TEST(RolesTest, DefaultKeysOfEveryRole) {
  EXPECT_EQ(defaultRoleLabel(RoleProfile::Default, "controlPlane"),
            "node-role.openkeel.io/control-plane");
  EXPECT_EQ(defaultRoleLabel(RoleProfile::Hardened, "controlPlane"),
            "node-restriction.kubernetes.io/openkeel-control-plane");
  for (const auto& role : roleNames()) {
    auto p = planRoles({}, node({{defaultRoleLabel(RoleProfile::Default, role), ""}}));
    EXPECT_EQ(p.roles, std::set<std::string>{role}) << role;
    EXPECT_TRUE(p.warnings.empty());
  }
}

TEST(RolesTest, SeveralRolesAtOnce) {
  auto p = planRoles({}, node({{"node-role.openkeel.io/compute", ""},
                               {"node-role.openkeel.io/network", ""},
                               {"node-role.openkeel.io/storage", ""},
                               {"kubernetes.io/hostname", "n1"}}));
  EXPECT_EQ(p.roles, (std::set<std::string>{"compute", "network", "storage"}));
}

TEST(RolesTest, NonEmptyValueGrantsNothingAndSaysWhy) {
  auto p = planRoles({}, node({{"node-role.openkeel.io/compute", "true"}}));
  EXPECT_TRUE(p.roles.empty());
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_TRUE(hasWarning(p, "node-role.openkeel.io/compute=\"true\" grants no compute role"));
  EXPECT_TRUE(hasWarning(p, "kubectl label node n1 --overwrite node-role.openkeel.io/compute="));
}

// A typo in a role label grants nothing, silently before: the operator who meant the network
// role is told which label it is and what it probably meant.
TEST(RolesTest, AMistypedRoleLabelGrantsNothingAndSaysWhatItMeant) {
  auto p = planRoles(
      {}, node({{"node-role.openkeel.io/netwrok", ""}, {"node-role.openkeel.io/compute", ""}}));
  EXPECT_EQ(p.roles, std::set<std::string>{"compute"});
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_TRUE(hasWarning(p, "label node-role.openkeel.io/netwrok names no OpenKeel role"));
  EXPECT_TRUE(hasWarning(p, "did you mean node-role.openkeel.io/network?"));

  RolesConfig hardened;
  hardened.profile = RoleProfile::Hardened;
  p = planRoles(hardened, node({{"node-restriction.kubernetes.io/openkeel-controlplane", ""}}));
  EXPECT_TRUE(p.roles.empty());
  EXPECT_TRUE(hasWarning(p, "did you mean node-restriction.kubernetes.io/openkeel-control-plane?"));

  // Nothing close: the roles are listed instead.
  p = planRoles({}, node({{"node-role.openkeel.io/gpu", ""}}));
  EXPECT_TRUE(hasWarning(p,
                         "the roles' labels here are node-role.openkeel.io/<role> for "
                         "control-plane, compute, network, storage, containers, provisioning"));

  // Every role's own key, in either profile, is no typo; other prefixes are not the agent's.
  for (const auto& role : roleNames()) {
    EXPECT_TRUE(
        planRoles({}, node({{defaultRoleLabel(RoleProfile::Hardened, role), ""}})).warnings.empty())
        << role;
  }
  EXPECT_TRUE(planRoles({}, node({{"node-role.kubernetes.io/worker", ""},
                                  {"node-restriction.kubernetes.io/zone", "a"}}))
                  .warnings.empty());
  // A key the configuration names is a role's key wherever it is.
  RolesConfig custom;
  custom.roles["compute"].label = "node-role.openkeel.io/hypervisor";
  p = planRoles(custom, node({{"node-role.openkeel.io/hypervisor", ""}}));
  EXPECT_EQ(p.roles, std::set<std::string>{"compute"});
  EXPECT_TRUE(p.warnings.empty());
  // The protected prefix is shared (Placement's hardened traits): only a near miss is a typo.
  EXPECT_TRUE(planRoles(hardened,
                        node({{"node-restriction.kubernetes.io/openkeel-trait-CUSTOM_GPU_LAB", ""},
                              {"node-restriction.kubernetes.io/openkeel-compute", ""}}))
                  .warnings.empty());
}

TEST(RolesTest, HardenedProfileIgnoresKubeletSettableKeysWithWarning) {
  RolesConfig c;
  c.profile = RoleProfile::Hardened;
  auto p = planRoles(c, node({{"node-role.openkeel.io/control-plane", ""},
                              {"node-restriction.kubernetes.io/openkeel-network", ""}}));
  EXPECT_EQ(p.roles, std::set<std::string>{"network"});
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_TRUE(hasWarning(
      p, "node-role.openkeel.io/control-plane grants nothing under the hardened profile"));
}

TEST(RolesTest, HardenedSampleNode) {
  RolesConfig c;
  c.profile = RoleProfile::Hardened;
  auto p = planRoles(c, node({{"node-restriction.kubernetes.io/openkeel-network", ""},
                              {"network.openkeel.io/external-nic", "bond1"}},
                             "ok-net-2"));
  EXPECT_EQ(p.roles, std::set<std::string>{"network"});
  EXPECT_TRUE(p.warnings.empty());
}

TEST(RolesTest, ExplicitLabelOverridesProfile) {
  auto c = configFrom(R"(
nodeRoles:
  profile: hardened
  roles:
    compute: {label: example.com/hypervisor}
)");
  auto p = planRoles(c, node({{"example.com/hypervisor", ""},
                              {"node-restriction.kubernetes.io/openkeel-compute", ""}}));
  // compute comes only from its own label; the hardened key of compute is not consulted.
  EXPECT_EQ(p.roles, std::set<std::string>{"compute"});
  auto q = planRoles(c, node({{"node-restriction.kubernetes.io/openkeel-compute", ""}}));
  EXPECT_TRUE(q.roles.empty());
}

TEST(RolesTest, HardenedWarningAlsoWhenRoleUsesTerms) {
  auto c = configFrom(R"(
nodeRoles:
  profile: hardened
  roles:
    compute:
      nodeSelectorTerms:
      - matchExpressions: [{key: hw.example.com/class, operator: In, values: [hv]}]
)");
  auto p = planRoles(c, node({{"node-role.openkeel.io/compute", ""}}));
  EXPECT_TRUE(p.roles.empty());
  EXPECT_TRUE(hasWarning(p, "comes from its nodeSelectorTerms"));
}

struct TermCase {
  const char* name;
  const char* expression;  // YAML flow mapping of one requirement
  k8s::StringMap labels;
  bool matches;
};

void PrintTo(const TermCase& c, std::ostream* os) {
  *os << c.name;
}

class SelectorOperatorTest : public ::testing::TestWithParam<TermCase> {};

TEST_P(SelectorOperatorTest, EvaluatesLikeTheScheduler) {
  const TermCase& tc = GetParam();
  auto c = configFrom(std::string("nodeRoles:\n  roles:\n    storage:\n      nodeSelectorTerms:\n  "
                                  "    - matchExpressions: [") +
                      tc.expression + "]\n");
  auto p = planRoles(c, node(tc.labels));
  EXPECT_EQ(p.roles.count("storage") == 1, tc.matches);
}

INSTANTIATE_TEST_SUITE_P(
    Operators, SelectorOperatorTest,
    ::testing::Values(
        TermCase{
            "InHit", "{key: disk, operator: In, values: [ssd, nvme]}", {{"disk", "nvme"}}, true},
        TermCase{"InMiss", "{key: disk, operator: In, values: [ssd]}", {{"disk", "hdd"}}, false},
        TermCase{"InAbsent", "{key: disk, operator: In, values: [ssd]}", {}, false},
        TermCase{
            "NotInHit", "{key: disk, operator: NotIn, values: [hdd]}", {{"disk", "ssd"}}, true},
        TermCase{"NotInAbsentMatches", "{key: disk, operator: NotIn, values: [hdd]}", {}, true},
        TermCase{
            "NotInMiss", "{key: disk, operator: NotIn, values: [hdd]}", {{"disk", "hdd"}}, false},
        TermCase{"Exists", "{key: disk, operator: Exists}", {{"disk", ""}}, true},
        TermCase{"ExistsAbsent", "{key: disk, operator: Exists}", {}, false},
        TermCase{"DoesNotExist", "{key: disk, operator: DoesNotExist}", {}, true},
        TermCase{
            "DoesNotExistPresent", "{key: disk, operator: DoesNotExist}", {{"disk", "x"}}, false},
        TermCase{"Gt", "{key: disks, operator: Gt, values: ['3']}", {{"disks", "4"}}, true},
        TermCase{"GtEqual", "{key: disks, operator: Gt, values: ['3']}", {{"disks", "3"}}, false},
        TermCase{"GtNotANumber",
                 "{key: disks, operator: Gt, values: ['3']}",
                 {{"disks", "many"}},
                 false},
        TermCase{"GtAbsent", "{key: disks, operator: Gt, values: ['3']}", {}, false},
        TermCase{"Lt", "{key: disks, operator: Lt, values: ['3']}", {{"disks", "-1"}}, true},
        TermCase{"LtEqual", "{key: disks, operator: Lt, values: ['3']}", {{"disks", "3"}}, false}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(SelectorTest, TermsAreOredExpressionsAnded) {
  auto c = configFrom(R"(
nodeRoles:
  roles:
    network:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: a, operator: Exists}
        - {key: b, operator: In, values: ['1']}
      - matchFields:
        - {key: metadata.name, operator: In, values: [gw-9]}
)");
  EXPECT_TRUE(planRoles(c, node({{"a", ""}, {"b", "1"}})).roles.count("network"));
  EXPECT_FALSE(planRoles(c, node({{"a", ""}, {"b", "2"}})).roles.count("network"));
  EXPECT_FALSE(planRoles(c, node({{"b", "1"}})).roles.count("network"));
  EXPECT_TRUE(planRoles(c, node({}, "gw-9")).roles.count("network"));
}

TEST(SelectorTest, EmptyTermMatchesNothing) {
  std::vector<SelectorTerm> terms{SelectorTerm{}};
  EXPECT_FALSE(matchesSelectorTerms(terms, {{"a", ""}}, "n1"));
}

TEST(SelectorTest, LabelKeyValidation) {
  EXPECT_TRUE(isValidLabelKey("node-role.openkeel.io/compute"));
  EXPECT_TRUE(isValidLabelKey("plain"));
  EXPECT_FALSE(isValidLabelKey("Bad_Prefix.io/x"));
  EXPECT_FALSE(isValidLabelKey("a/"));
  EXPECT_FALSE(isValidLabelKey("-x"));
  EXPECT_FALSE(isValidLabelKey(std::string(64, 'a')));
}

struct BadConfigCase {
  const char* name;
  const char* yaml;
  const char* message;
};

void PrintTo(const BadConfigCase& c, std::ostream* os) {
  *os << c.name;
}

class BadRolesConfigTest : public ::testing::TestWithParam<BadConfigCase> {};

TEST_P(BadRolesConfigTest, RejectedNamingTheField) {
  auto c = parseConfig(GetParam().yaml, "agent.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find(GetParam().message), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.rfind("agent.yaml:", 0), 0u) << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, BadRolesConfigTest,
    ::testing::Values(
        BadConfigCase{"UnknownProfile", "nodeRoles: {profile: strict}",
                      "nodeRoles.profile: \"strict\" is not one of: default, hardened"},
        BadConfigCase{"UnknownRole", "nodeRoles: {roles: {gpu: {label: a}}}",
                      "nodeRoles.roles.gpu: unknown role"},
        BadConfigCase{"UnknownKey", "nodeRoles: {roles: {compute: {lable: a}}}",
                      "nodeRoles.roles.compute.lable: unknown key"},
        BadConfigCase{"BadLabel", "nodeRoles: {roles: {compute: {label: 'Not A Key'}}}",
                      "is not a valid label key"},
        BadConfigCase{"BothLabelAndTerms",
                      "nodeRoles: {roles: {compute: {label: a, nodeSelectorTerms: "
                      "[{matchExpressions: [{key: a, operator: Exists}]}]}}}",
                      "either label or nodeSelectorTerms"},
        BadConfigCase{
            "BadOperator",
            "nodeRoles: {roles: {compute: {nodeSelectorTerms: [{matchExpressions: [{key: a, "
            "operator: Like}]}]}}}",
            "nodeRoles.roles.compute.nodeSelectorTerms[0].matchExpressions[0].operator: \"Like\""},
        BadConfigCase{"InWithoutValues",
                      "nodeRoles: {roles: {compute: {nodeSelectorTerms: [{matchExpressions: [{key: "
                      "a, operator: In}]}]}}}",
                      "values: must be non-empty for In"},
        BadConfigCase{"ExistsWithValues",
                      "nodeRoles: {roles: {compute: {nodeSelectorTerms: [{matchExpressions: [{key: "
                      "a, operator: Exists, values: [x]}]}]}}}",
                      "values: must be empty for Exists"},
        BadConfigCase{"GtNotInteger",
                      "nodeRoles: {roles: {compute: {nodeSelectorTerms: [{matchExpressions: [{key: "
                      "a, operator: Gt, values: [x]}]}]}}}",
                      "values[0]: \"x\" is not an integer"},
        BadConfigCase{"GtTwoValues",
                      "nodeRoles: {roles: {compute: {nodeSelectorTerms: [{matchExpressions: [{key: "
                      "a, operator: Lt, values: ['1','2']}]}]}}}",
                      "exactly one value for Lt"},
        BadConfigCase{"FieldNotName",
                      "nodeRoles: {roles: {compute: {nodeSelectorTerms: [{matchFields: [{key: "
                      "metadata.uid, operator: In, values: [x]}]}]}}}",
                      "only metadata.name is supported"},
        BadConfigCase{"NoTerms", "nodeRoles: {roles: {compute: {nodeSelectorTerms: []}}}",
                      "at least one term"},
        BadConfigCase{"BadTaintEffect",
                      "nodeRoles: {roles: {compute: {taint: {key: a, effect: Sometimes}}}}",
                      "taint.effect"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(RolesConfigTest, ChartShapedConfigParses) {
  auto c = configFrom(R"(
nodeRoles:
  taints: false
  roles:
    controlPlane:
      label: node-restriction.kubernetes.io/openkeel-control-plane
      taint: {key: node-role.openkeel.io/control-plane, effect: NoSchedule}
    compute:
      label: node-restriction.kubernetes.io/openkeel-compute
      taint: {key: node-role.openkeel.io/compute, effect: NoSchedule}
)");
  ASSERT_TRUE(c.roles.count("compute"));
  EXPECT_EQ(*c.roles["compute"].label, "node-restriction.kubernetes.io/openkeel-compute");
  EXPECT_EQ(c.roles["compute"].taint->effect, "NoSchedule");
}

}  // namespace
}  // namespace okna::agent
