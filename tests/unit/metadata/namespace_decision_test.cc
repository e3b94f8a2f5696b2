// decideNamespace, table-driven over what it reads (the network planned, carried over from a
// Southbound loss or not planned; the plan synced; metadata active; the namespace present on the
// host; in the agent's hands), decideNamespaces over a host's namespaces, and decideMetadata
// from a Southbound view and the local evidence.
#include "metadata/namespace_decision.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/metadata/sb_ports.h"

namespace okna::metadata::decision_test {
namespace {

using A = NamespaceAction;

// "in": planned; "lost": planned, carried over (the Southbound lost its VMs, br-int has them);
// "out": not planned.
MetadataPlan plan(bool synced) {
  MetadataPlan p;
  p.synced = synced;
  p.notSyncedReason = synced ? "" : "waiting for the first Southbound contents";
  for (const char* id : {"in", "lost"}) {
    NetworkPlan n;
    n.networkId = id;
    n.namespaceName = namespaceNameFor(id);
    p.networks[id] = std::make_shared<const NetworkPlan>(n);
  }
  p.lost["lost"] = "kept ovnmeta-lost: VM port(s) vm-1 still on br-int but not in the Southbound";
  return p;
}

struct Case {
  const char* network;
  bool synced;
  bool active;
  bool present;
  bool managed;
  A expected;
  const char* reasonHas;
};

class DecideNamespace : public ::testing::TestWithParam<Case> {};

TEST_P(DecideNamespace, Decides) {
  const Case& c = GetParam();
  const MetadataPlan p = plan(c.synced);
  const NamespaceDecision d = decideNamespace(p, c.active, c.network, {c.present, c.managed});
  EXPECT_EQ(d.networkId, c.network);
  EXPECT_EQ(d.namespaceName, std::string("ovnmeta-") + c.network);
  EXPECT_EQ(actionName(d.action), std::string(actionName(c.expected))) << d.reason;
  EXPECT_NE(d.reason.find(c.reasonHas), std::string::npos) << d.reason;
}

// Every combination of the five inputs that can occur (a network in hand is present).
const Case kCases[] = {
    // Planned, active: create when absent, keep when there (adopted or in hand), synced or not.
    {"in", true, true, false, false, A::Create, "bound to this chassis"},
    {"in", false, true, false, false, A::Create, "bound to this chassis"},
    {"in", true, true, true, false, A::Keep, "bound to this chassis"},
    {"in", true, true, true, true, A::Keep, "bound to this chassis"},
    {"in", false, true, true, true, A::Keep, "bound to this chassis"},
    // Planned, inactive: what the agent has stays, nothing new is made.
    {"in", true, false, false, false, A::Hold, "no namespace is created"},
    {"in", true, false, true, false, A::Hold, "left as it is"},
    {"in", true, false, true, true, A::Keep, "still here"},
    {"in", false, false, true, true, A::Keep, "still here"},
    // Carried over: kept (or made again) with what the Southbound lost as the reason.
    {"lost", true, true, true, true, A::Keep, "not in the Southbound"},
    {"lost", true, true, true, false, A::Keep, "not in the Southbound"},
    {"lost", true, true, false, false, A::Create, "not in the Southbound"},
    {"lost", true, false, true, true, A::Keep, "still here"},
    // Not planned: removed only on a synced plan; strays only by an active agent.
    {"out", true, true, true, true, A::Remove, "any more"},
    {"out", true, false, true, true, A::Remove, "any more"},
    {"out", true, true, true, false, A::Remove, "earlier agent"},
    {"out", true, false, true, false, A::Hold, "did not set up"},
    {"out", false, true, true, true, A::Hold, "waiting for the first Southbound contents"},
    {"out", false, true, true, false, A::Hold, "nothing is removed"},
    {"out", false, false, true, false, A::Hold, "nothing is removed"},
    {"out", true, true, false, false, A::Hold, "none needed"},
};

INSTANTIATE_TEST_SUITE_P(Table, DecideNamespace, ::testing::ValuesIn(kCases));

// Retired (the agent leaves a node no role of which serves metadata): whatever exists goes,
// planned or not, synced or not, set up by this process or found on the host; nothing is made.
TEST(DecideNamespace, RetiredRemovesEveryNamespaceThatExistsAndCreatesNone) {
  for (const bool synced : {true, false})
    for (const bool active : {true, false})
      for (const char* network : {"in", "lost", "out"}) {
        const MetadataPlan p = plan(synced);
        SCOPED_TRACE(std::string(network) + (synced ? " synced" : " not synced") +
                     (active ? " active" : " inactive"));
        for (const NamespaceState state : {NamespaceState{true, true}, NamespaceState{true, false}})
          EXPECT_EQ(decideNamespace(p, active, network, state, true).action, A::Remove);
        const NamespaceDecision none = decideNamespace(p, active, network, {false, false}, true);
        EXPECT_EQ(none.action, A::Hold);
        EXPECT_EQ(none.reason, "no namespace, none needed");
      }
}

TEST(DecideNamespaces, RetiredRemovesTheStraysAndThePlannedButOnlyOvnmetaNames) {
  const auto d = decideNamespaces(plan(false), true, {"ovnmeta-stray", "ovnmeta-in", "not-ours"},
                                  {"gone"}, true);
  ASSERT_EQ(d.size(), 4u) << decisionsToJson(d).dump(2);
  EXPECT_EQ(d[0].namespaceName, "ovnmeta-gone");
  EXPECT_EQ(d[0].action, A::Remove);
  EXPECT_EQ(d[1].namespaceName, "ovnmeta-in");
  EXPECT_EQ(d[1].action, A::Remove);
  EXPECT_EQ(d[2].namespaceName, "ovnmeta-lost");
  EXPECT_EQ(d[2].action, A::Hold) << "planned but absent: nothing to remove, nothing made";
  EXPECT_EQ(d[3].namespaceName, "ovnmeta-stray");
  EXPECT_EQ(d[3].action, A::Remove);
  EXPECT_NE(d[3].reason.find("no role of this node serves metadata"), std::string::npos);
}

TEST(DecideNamespaces, EveryPlannedHostAndManagedNetworkOnceSortedByName) {
  const MetadataPlan p = plan(true);
  const auto d = decideNamespaces(p, true, {"ovnmeta-stray", "ovnmeta-in", "not-ours"}, {"gone"});
  ASSERT_EQ(d.size(), 4u) << decisionsToJson(d).dump(2);
  EXPECT_EQ(d[0].namespaceName, "ovnmeta-gone");
  EXPECT_EQ(d[0].action, A::Remove);
  EXPECT_EQ(d[1].namespaceName, "ovnmeta-in");
  EXPECT_EQ(d[1].action, A::Keep);
  EXPECT_EQ(d[2].namespaceName, "ovnmeta-lost");
  EXPECT_EQ(d[2].action, A::Create);
  EXPECT_EQ(d[3].namespaceName, "ovnmeta-stray");
  EXPECT_EQ(d[3].action, A::Remove);
  EXPECT_EQ(decisionsToJson({d[0]}),
            nlohmann::json::parse(R"([{"network":"gone","namespace":"ovnmeta-gone",
              "action":"remove","reason":"no VM port of the network is bound here any more"}])"));
}

ovsdb::SbPort vif(const std::string& name, const std::string& dp, const std::string& mac0) {
  ovsdb::SbPort p;
  p.uuid = "uuid-" + name;
  p.logicalPort = "lsp-" + name;
  p.datapath = dp;
  p.onChassis = true;
  p.mac0 = mac0;
  p.deviceId = "instance-" + name;
  p.projectId = "proj";
  return p;
}

ovsdb::SbMetadataView viewOf(bool withVm) {
  ovsdb::SbMetadataView v;
  v.enabled = true;
  v.synced = true;
  auto& rows = v.rows.mutableCopy();
  rows.datapathNames["dp-a"] = "neutron-net-a";
  rows.ports.push_back(sb_rows::localport("dp-a", "fa:16:3e:00:0a:02 10.0.0.2", "10.0.0.2/24"));
  if (withVm) rows.ports.push_back(vif("a1", "dp-a", "fa:16:3e:00:0a:11 10.0.0.11"));
  return v;
}

TEST(DecideMetadata, FromTheViewTheLocalEvidenceAndTheHostsNamespaces) {
  MetadataDecisionInputs in;
  in.active = true;
  in.namespaces = {"ovnmeta-old"};
  auto d = decideMetadata(viewOf(true), in);
  EXPECT_TRUE(d.plan.synced);
  ASSERT_EQ(d.namespaces.size(), 2u);
  EXPECT_EQ(d.namespaces[0],
            (NamespaceDecision{"net-a", "ovnmeta-net-a", A::Create,
                               "a VM port of the network is bound to this chassis"}));
  EXPECT_EQ(d.namespaces[1].action, A::Remove);

  // The Southbound has no VM bound here while br-int has VM interfaces (issue 27): the plan is
  // not synced, and nothing is removed.
  in.local.vmIfaceIds = std::set<std::string>{"lsp-a1"};
  in.namespaces = {"ovnmeta-net-a", "ovnmeta-old"};
  d = decideMetadata(viewOf(false), in);
  EXPECT_FALSE(d.plan.synced);
  ASSERT_EQ(d.namespaces.size(), 2u) << decisionsToJson(d.namespaces).dump(2);
  EXPECT_EQ(d.namespaces[0].action, A::Hold);
  EXPECT_EQ(d.namespaces[1].action, A::Hold);
  EXPECT_NE(d.namespaces[1].reason.find("VM interface(s) are on br-int"), std::string::npos)
      << d.namespaces[1].reason;

  // Inactive: nothing is created and no stray pruned.
  in = {};
  in.namespaces = {"ovnmeta-old"};
  d = decideMetadata(viewOf(true), in);
  ASSERT_EQ(d.namespaces.size(), 2u);
  EXPECT_EQ(d.namespaces[0].action, A::Hold);
  EXPECT_EQ(d.namespaces[1].action, A::Hold);
}

}  // namespace
}  // namespace okna::metadata::decision_test
