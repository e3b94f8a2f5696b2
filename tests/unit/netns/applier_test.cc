// NamespaceApplier over the stateful fake kernel: create, adopt with zero ops, repair, remove,
// and partial failures that report the failing op and keep what succeeded.

#include "netns/applier.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/fakes/fake_netlink.h"

namespace okna::netns {
namespace {

using K = NsOpKind;
using okna::testing::FakeNetlink;

DesiredNamespace desired() {
  auto d = metadataNamespaceFor("0123456789abcdef", "fa:16:3e:00:00:01",
                                {"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"});
  return *d;
}

// What Neutron's agent leaves: ip netns add, lo up, veth with the peer in the namespace, MAC,
// addresses, both ends up (offloads off here: Neutron uses a CHECKSUM rule instead, see below).
void neutronMade(FakeNetlink& fake, const DesiredNamespace& d, bool offloadsOff) {
  fake.namespaces[d.name].loopbackUp = true;
  fake.addVeth(d.hostIface, d.name, d.innerIface);
  auto* in = fake.link(d.name, d.innerIface);
  in->mac = d.mac;
  in->up = true;
  in->addresses = d.addresses;
  in->addresses.push_back(eui64LinkLocal(d.mac));
  in->offloadsOff = offloadsOff;
  fake.link("", d.hostIface)->up = true;
}

TEST(NamespaceApplier, CreatesEverythingThenIsIdempotent) {
  FakeNetlink fake;
  NamespaceApplier applier(fake);
  const auto d = desired();
  EnsureReport report;
  auto st = applier.ensure(d, &report);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(report.created());
  EXPECT_EQ(report.applied.size(), 9u);
  EXPECT_EQ(report.summary(d), "created (9 ops)");
  const auto* in = fake.link(d.name, d.innerIface);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->mac, d.mac);
  EXPECT_TRUE(in->up && in->offloadsOff);
  EXPECT_TRUE(fake.link("", d.hostIface)->up);

  fake.applied.clear();
  ASSERT_TRUE(applier.ensure(d, &report).ok());
  EXPECT_TRUE(report.unchanged());
  EXPECT_EQ(report.summary(d), "adopted unchanged");
  EXPECT_TRUE(fake.applied.empty());
}

std::vector<K> kinds(const std::vector<NsOp>& ops) {
  std::vector<K> k;
  for (const auto& op : ops) k.push_back(op.kind);
  return k;
}

TEST(NamespaceApplier, PrepareDoesOnlyTheHostVisiblePartAndEnsureTheRest) {
  FakeNetlink fake;
  NamespaceApplier applier(fake);
  const auto d = desired();
  EnsureReport prepared;
  ASSERT_TRUE(applier.prepare(d, &prepared).ok());
  EXPECT_EQ(kinds(prepared.applied),
            (std::vector<K>{K::CreateNamespace, K::CreateVeth, K::InnerLinkUp, K::HostLinkUp}));
  EXPECT_TRUE(fake.link("", d.hostIface)->up);
  const auto& inner = fake.link(d.name, d.innerIface)->addresses;
  EXPECT_EQ(std::count(inner.begin(), inner.end(), "10.0.0.2/24"), 0) << "addresses are inside";
  EnsureReport rest;
  ASSERT_TRUE(applier.ensure(d, &rest).ok());
  EXPECT_EQ(kinds(rest.applied), (std::vector<K>{K::LoopbackUp, K::AddAddress, K::AddAddress,
                                                 K::AddAddress, K::DisableOffloads}));
  EXPECT_EQ(prepared.applied.size() + rest.applied.size(), 9u) << "as many ops as one ensure";
  EnsureReport again;
  ASSERT_TRUE(applier.prepare(d, &again).ok());
  EXPECT_TRUE(again.applied.empty());
}

TEST(NamespaceApplier, PrepareFailureNamesTheOpAndKeepsWhatSucceeded) {
  FakeNetlink fake;
  fake.failures[K::HostLinkUp] = EPERM;
  NamespaceApplier applier(fake);
  const auto d = desired();
  EnsureReport prepared;
  auto st = applier.prepare(d, &prepared);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("HostLinkUp " + d.hostIface), std::string::npos)
      << st.error().message;
  EXPECT_EQ(prepared.applied.size(), 3u);
}

TEST(NamespaceApplier, AdoptsNeutronNamespaceWithoutTouchingIt) {
  FakeNetlink fake;
  const auto d = desired();
  neutronMade(fake, d, /*offloadsOff=*/true);
  NamespaceApplier applier(fake);
  EnsureReport report;
  ASSERT_TRUE(applier.ensure(d, &report).ok());
  EXPECT_TRUE(report.unchanged()) << report.summary(d);
  EXPECT_TRUE(fake.applied.empty());
}

TEST(NamespaceApplier, NeutronNamespaceWithOffloadsOnGetsOnlyTheOffloadOp) {
  FakeNetlink fake;
  const auto d = desired();
  neutronMade(fake, d, /*offloadsOff=*/false);
  NamespaceApplier applier(fake);
  EnsureReport report;
  ASSERT_TRUE(applier.ensure(d, &report).ok());
  EXPECT_EQ(report.applied, (std::vector<NsOp>{NsOp{K::DisableOffloads, "", false}}));
  EXPECT_EQ(report.summary(d), "repaired: DisableOffloads tap01234567891");
}

TEST(NamespaceApplier, RepairsMacAndAddressesLive) {
  FakeNetlink fake;
  const auto d = desired();
  neutronMade(fake, d, true);
  auto changed = *metadataNamespaceFor("0123456789abcdef", "fa:16:3e:00:00:02",
                                       {"10.0.1.2/24", "169.254.169.254/32"});
  NamespaceApplier applier(fake);
  EnsureReport report;
  ASSERT_TRUE(applier.ensure(changed, &report).ok());
  EXPECT_FALSE(report.created());
  const auto* in = fake.link(d.name, d.innerIface);
  EXPECT_EQ(in->mac, "fa:16:3e:00:00:02");
  EXPECT_EQ(in->addresses, (std::vector<std::string>{"169.254.169.254/32", "10.0.1.2/24"}));
  // The veth was not recreated.
  for (const auto& op : report.applied) EXPECT_NE(op.kind, K::CreateVeth);
}

TEST(NamespaceApplier, PartialFailureReportsTheOpAndKeepsWhatSucceeded) {
  FakeNetlink fake;
  fake.failures[K::AddAddress] = EPERM;
  NamespaceApplier applier(fake);
  const auto d = desired();
  EnsureReport report;
  auto st = applier.ensure(d, &report);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, EPERM);
  EXPECT_NE(st.error().message.find("namespace " + d.name), std::string::npos);
  EXPECT_NE(st.error().message.find("AddAddress 10.0.0.2/24 tap01234567891"), std::string::npos)
      << st.error().message;
  ASSERT_EQ(report.failed.size(), 1u);
  EXPECT_EQ(report.failed[0].kind, K::AddAddress);
  EXPECT_EQ(report.applied.size(), 5u);  // namespace, lo, veth (with its MAC), inner up, host up
  EXPECT_NE(fake.link("", d.hostIface), nullptr);

  // The next attempt does only what is left.
  fake.failures.clear();
  ASSERT_TRUE(applier.ensure(d, &report).ok());
  EXPECT_EQ(report.applied.size(), 4u);  // three addresses and the offloads
  EXPECT_FALSE(report.created());
}

TEST(NamespaceApplier, AKernelWithIpv6OffKeepsTheIpv4PartAndSaysWhy) {
  // ipv6.disable=1: rtnetlink has no AF_INET6 address handler (EOPNOTSUPP); disable_ipv6 on
  // the link: EACCES. Before, the whole namespace failed and IPv4 metadata with it.
  for (const int code : {EOPNOTSUPP, EAFNOSUPPORT, EACCES}) {
    FakeNetlink fake;
    fake.ipv6AddressFailure = code;
    NamespaceApplier applier(fake);
    const auto d = desired();
    EnsureReport report;
    const auto st = applier.ensure(d, &report);
    ASSERT_TRUE(st.ok()) << code << ": " << st.error().message;
    EXPECT_NE(report.ipv6Unavailable.find("AddAddress fe80::a9fe:a9fe/64"), std::string::npos)
        << report.ipv6Unavailable;
    EXPECT_TRUE(report.failed.empty());
    EXPECT_TRUE(report.created());
    const auto* in = fake.link(d.name, d.innerIface);
    ASSERT_NE(in, nullptr);
    for (const std::string a : {"10.0.0.2/24", "169.254.169.254/32"})
      EXPECT_NE(std::find(in->addresses.begin(), in->addresses.end(), a), in->addresses.end()) << a;
    EXPECT_EQ(std::find(in->addresses.begin(), in->addresses.end(), "fe80::a9fe:a9fe/64"),
              in->addresses.end());
    EXPECT_TRUE(in->offloadsOff) << "the ops after the refused one are applied";

    // Every later check: the same answer, nothing changed, no error.
    EnsureReport again;
    ASSERT_TRUE(applier.ensure(d, &again).ok());
    EXPECT_FALSE(again.ipv6Unavailable.empty());
    EXPECT_TRUE(again.applied.empty());
  }
}

TEST(NamespaceApplier, OtherAddressFailuresStayErrors) {
  FakeNetlink fake;
  fake.ipv6AddressFailure = EPERM;  // not "IPv6 is off": a real failure
  NamespaceApplier applier(fake);
  EnsureReport report;
  const auto st = applier.ensure(desired(), &report);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, EPERM);
  EXPECT_TRUE(report.ipv6Unavailable.empty());

  FakeNetlink v4;
  v4.failures[K::AddAddress] = EACCES;  // an IPv4 address refused: never taken for IPv6 off
  NamespaceApplier applier4(v4);
  EXPECT_FALSE(applier4.ensure(desired(), &report).ok());
  EXPECT_TRUE(report.ipv6Unavailable.empty());
}

TEST(NamespaceApplier, ObserveFailureIsReported) {
  struct Broken : FakeNetlink {
    core::Result<ObservedNamespace> observe(const DesiredNamespace&) override {
      return core::makeError("netlink connect: boom", EACCES);
    }
  } fake;
  NamespaceApplier applier(fake);
  auto st = applier.ensure(desired());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, EACCES);
  EXPECT_NE(st.error().message.find("observe"), std::string::npos);
}

TEST(NamespaceApplier, DivergingKernelIsAnErrorNotALoop) {
  // A kernel that accepts every op but never changes: the applier gives up after its rounds.
  struct Stubborn : FakeNetlink {
    core::Status apply(const NsOp&, const DesiredNamespace&) override { return {}; }
  } fake;
  NamespaceApplier applier(fake);
  auto st = applier.ensure(desired());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("still differs"), std::string::npos) << st.error().message;
  EXPECT_EQ(fake.observeCalls, 4);
}

TEST(NamespaceApplier, RemoveIsIdempotentAndTakesTheVethPair) {
  FakeNetlink fake;
  NamespaceApplier applier(fake);
  const auto d = desired();
  ASSERT_TRUE(applier.ensure(d).ok());
  ASSERT_TRUE(applier.remove(d.name).ok());
  EXPECT_EQ(fake.namespaces.count(d.name), 0u);
  EXPECT_EQ(fake.link("", d.hostIface), nullptr);
  EXPECT_TRUE(applier.remove(d.name).ok());
}

TEST(NamespaceApplier, RemoveRefusesForeignNames) {
  FakeNetlink fake;
  fake.namespaces["qrouter-1"] = {};
  NamespaceApplier applier(fake);
  auto st = applier.remove("qrouter-1");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, EINVAL);
  EXPECT_EQ(fake.namespaces.count("qrouter-1"), 1u);
}

TEST(NamespaceApplier, RemoveFailureNamesTheNamespace) {
  FakeNetlink fake;
  fake.failRemove = EBUSY;
  NamespaceApplier applier(fake);
  auto st = applier.remove("ovnmeta-x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, EBUSY);
  EXPECT_NE(st.error().message.find("ovnmeta-x"), std::string::npos);
}

TEST(NamespaceApplier, ListsOnlyMetadataNamespaces) {
  FakeNetlink fake;
  fake.namespaces["ovnmeta-b"] = {};
  fake.namespaces["ovnmeta-a"] = {};
  fake.namespaces["qrouter-1"] = {};
  NamespaceApplier applier(fake);
  auto list = applier.listMetadataNamespaces();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<std::string>{"ovnmeta-a", "ovnmeta-b"}));
}

}  // namespace
}  // namespace okna::netns
