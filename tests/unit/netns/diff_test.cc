// diffNamespace: a correct namespace yields no op; each wrong field yields exactly its fixing ops.

#include "netns/diff.h"

#include <gtest/gtest.h>

#include <functional>

namespace okna::netns {
namespace {

using K = NsOpKind;

DesiredNamespace desired() {
  return DesiredNamespace{"ovnmeta-net1",
                          "tapnet10",
                          "tapnet11",
                          "fa:16:3e:00:00:01",
                          {"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64"}};
}

ObservedNamespace correct() {
  ObservedNamespace o;
  o.exists = true;
  o.loopbackUp = true;
  o.hostIfaceExists = true;
  o.hostIfaceUp = true;
  o.innerIfaceExists = true;
  o.innerIfaceInNamespace = true;
  o.vethPeered = true;
  o.innerMac = "fa:16:3e:00:00:01";
  o.innerIfaceUp = true;
  o.innerAddresses = {"10.0.0.2/24", "169.254.169.254/32", "fe80::a9fe:a9fe/64",
                      eui64LinkLocal("fa:16:3e:00:00:01")};
  o.offloadsOff = true;
  return o;
}

NsOp op(K kind, std::string address = "") {
  return NsOp{kind, std::move(address), false};
}

// CreateVeth gives the inner end its MAC: no SetMac after it.
std::vector<NsOp> freshVethOps() {
  return {op(K::CreateVeth),
          op(K::InnerLinkUp),
          op(K::HostLinkUp),
          op(K::AddAddress, "10.0.0.2/24"),
          op(K::AddAddress, "169.254.169.254/32"),
          op(K::AddAddress, "fe80::a9fe:a9fe/64"),
          op(K::DisableOffloads)};
}

std::vector<NsOp> concat(std::vector<NsOp> a, const std::vector<NsOp>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string show(const std::vector<NsOp>& ops) {
  std::string s;
  for (const auto& o : ops) s += describe(o, desired()) + "; ";
  return s;
}

TEST(DiffNamespace, CorrectNamespaceNeedsNoOp) {
  EXPECT_TRUE(diffNamespace(correct(), desired()).empty());
}

TEST(DiffNamespace, CorrectWithoutKernelLinkLocalNeedsNoOp) {
  auto o = correct();
  o.innerAddresses.pop_back();
  EXPECT_TRUE(diffNamespace(o, desired()).empty());
}

TEST(DiffNamespace, ComparesCanonicalForms) {
  auto o = correct();
  o.innerMac = "FA:16:3E:00:00:01";
  o.innerAddresses = {"10.0.0.2/24", "169.254.169.254/32", "fe80:0:0::a9fe:a9fe/64"};
  auto d = desired();
  d.mac = "fa:16:3e:00:00:01";
  d.addresses = {"10.0.0.2/24", "169.254.169.254/32", "FE80::A9FE:A9FE/64"};
  EXPECT_TRUE(diffNamespace(o, d).empty()) << show(diffNamespace(o, d));
}

struct SingleFault {
  std::string name;
  std::function<void(ObservedNamespace&)> breakIt;
  std::vector<NsOp> expected;
};

class DiffSingleFault : public ::testing::TestWithParam<SingleFault> {};

TEST_P(DiffSingleFault, YieldsExactlyTheFix) {
  auto o = correct();
  GetParam().breakIt(o);
  const auto ops = diffNamespace(o, desired());
  EXPECT_EQ(ops, GetParam().expected) << "got: " << show(ops);
}

INSTANTIATE_TEST_SUITE_P(
    EachField, DiffSingleFault,
    ::testing::Values(
        SingleFault{"LoopbackDown", [](auto& o) { o.loopbackUp = false; }, {op(K::LoopbackUp)}},
        SingleFault{"HostDown", [](auto& o) { o.hostIfaceUp = false; }, {op(K::HostLinkUp)}},
        SingleFault{"InnerDown", [](auto& o) { o.innerIfaceUp = false; }, {op(K::InnerLinkUp)}},
        SingleFault{"WrongMac",
                    [](auto& o) {
                      o.innerMac = "fa:16:3e:00:00:02";
                      o.innerAddresses.back() = eui64LinkLocal("fa:16:3e:00:00:02");
                    },
                    {op(K::SetMac), op(K::DelAddress, eui64LinkLocal("fa:16:3e:00:00:02"))}},
        SingleFault{"EmptyMac", [](auto& o) { o.innerMac.clear(); }, {op(K::SetMac)}},
        SingleFault{"OffloadsOn", [](auto& o) { o.offloadsOff = false; }, {op(K::DisableOffloads)}},
        SingleFault{"MissingIpv4",
                    [](auto& o) { o.innerAddresses.erase(o.innerAddresses.begin()); },
                    {op(K::AddAddress, "10.0.0.2/24")}},
        SingleFault{"MissingIpv6",
                    [](auto& o) { o.innerAddresses.erase(o.innerAddresses.begin() + 2); },
                    {op(K::AddAddress, "fe80::a9fe:a9fe/64")}},
        SingleFault{"ExtraIpv4",
                    [](auto& o) { o.innerAddresses.push_back("10.0.0.3/24"); },
                    {op(K::DelAddress, "10.0.0.3/24")}},
        SingleFault{"WrongPrefix",
                    [](auto& o) { o.innerAddresses[0] = "10.0.0.2/16"; },
                    {op(K::DelAddress, "10.0.0.2/16"), op(K::AddAddress, "10.0.0.2/24")}},
        SingleFault{"ExtraIpv6",
                    [](auto& o) { o.innerAddresses.push_back("2001:db8::5/64"); },
                    {op(K::DelAddress, "2001:db8::5/64")}},
        SingleFault{
            "InnerLeftInHost",
            [](auto& o) {
              o.innerIfaceInNamespace = false;
              o.innerIfaceUp = false;
              o.innerAddresses.clear();
            },
            {op(K::MoveInner), op(K::InnerLinkUp), op(K::AddAddress, "10.0.0.2/24"),
             op(K::AddAddress, "169.254.169.254/32"), op(K::AddAddress, "fe80::a9fe:a9fe/64")}},
        SingleFault{"HostIfaceMissing",
                    [](auto& o) {
                      o.hostIfaceExists = false;
                      o.hostIfaceUp = false;
                      o.vethPeered = false;
                    },
                    concat({NsOp{K::DeleteInnerIface, "", false}}, freshVethOps())},
        SingleFault{"InnerMissing",
                    [](auto& o) {
                      o.innerIfaceExists = false;
                      o.innerIfaceInNamespace = false;
                      o.innerIfaceUp = false;
                      o.innerMac.clear();
                      o.innerAddresses.clear();
                      o.offloadsOff = false;
                      o.vethPeered = false;
                    },
                    concat({op(K::DeleteHostIface)}, freshVethOps())},
        SingleFault{"NotPeers", [](auto& o) { o.vethPeered = false; },
                    concat({op(K::DeleteHostIface), NsOp{K::DeleteInnerIface, "", false}},
                           freshVethOps())}),
    [](const auto& testInfo) { return testInfo.param.name; });

TEST(DiffNamespace, NothingThereCreatesEverythingInOrder) {
  const auto ops = diffNamespace(ObservedNamespace{}, desired());
  EXPECT_EQ(ops, concat({op(K::CreateNamespace), op(K::LoopbackUp)}, freshVethOps())) << show(ops);
}

TEST(DiffNamespace, StaleHostIfaceWithoutNamespaceIsReplaced) {
  ObservedNamespace o;
  o.hostIfaceExists = true;
  o.hostIfaceUp = true;
  const auto ops = diffNamespace(o, desired());
  EXPECT_EQ(ops, concat({op(K::CreateNamespace), op(K::LoopbackUp), op(K::DeleteHostIface)},
                        freshVethOps()))
      << show(ops);
}

TEST(DiffNamespace, InterruptedCreationInHostIsMovedNotRecreated) {
  // The veth was made with both ends in the host namespace, the namespace is missing.
  ObservedNamespace o;
  o.hostIfaceExists = true;
  o.innerIfaceExists = true;
  o.vethPeered = true;
  o.innerMac = "fa:16:3e:00:00:01";
  o.offloadsOff = true;
  const auto ops = diffNamespace(o, desired());
  EXPECT_EQ(ops,
            (std::vector<NsOp>{
                op(K::CreateNamespace), op(K::LoopbackUp), op(K::MoveInner), op(K::InnerLinkUp),
                op(K::HostLinkUp), op(K::AddAddress, "10.0.0.2/24"),
                op(K::AddAddress, "169.254.169.254/32"), op(K::AddAddress, "fe80::a9fe:a9fe/64")}))
      << show(ops);
}

TEST(DiffNamespace, StrayInnerInHostWithoutPeerIsDeleted) {
  auto o = correct();
  o.innerIfaceInNamespace = false;
  o.vethPeered = false;
  o.hostIfaceExists = false;
  o.hostIfaceUp = false;
  o.innerAddresses.clear();
  const auto ops = diffNamespace(o, desired());
  EXPECT_EQ(ops, concat({NsOp{K::DeleteInnerIface, "", true}}, freshVethOps())) << show(ops);
}

TEST(DiffNamespace, SeveralFaultsGiveTheUnionInOrder) {
  auto o = correct();
  o.loopbackUp = false;
  o.hostIfaceUp = false;
  o.innerMac = "fa:16:3e:99:99:99";
  o.innerAddresses = {"10.9.9.9/8"};
  o.offloadsOff = false;
  const auto ops = diffNamespace(o, desired());
  EXPECT_EQ(ops,
            (std::vector<NsOp>{op(K::LoopbackUp), op(K::SetMac), op(K::HostLinkUp),
                               op(K::DelAddress, "10.9.9.9/8"), op(K::AddAddress, "10.0.0.2/24"),
                               op(K::AddAddress, "169.254.169.254/32"),
                               op(K::AddAddress, "fe80::a9fe:a9fe/64"), op(K::DisableOffloads)}))
      << show(ops);
}

TEST(DiffNamespace, EmptyAddressListRemovesAllButKernelLinkLocal) {
  auto d = desired();
  d.addresses.clear();
  const auto ops = diffNamespace(correct(), d);
  EXPECT_EQ(ops, (std::vector<NsOp>{op(K::DelAddress, "10.0.0.2/24"),
                                    op(K::DelAddress, "169.254.169.254/32"),
                                    op(K::DelAddress, "fe80::a9fe:a9fe/64")}))
      << show(ops);
}

TEST(DiffNamespace, DescribeNamesTheObject) {
  const auto d = desired();
  EXPECT_EQ(describe(op(K::SetMac), d), "SetMac tapnet11 fa:16:3e:00:00:01");
  EXPECT_EQ(describe(op(K::AddAddress, "10.0.0.2/24"), d), "AddAddress 10.0.0.2/24 tapnet11");
  EXPECT_EQ(describe(op(K::CreateVeth), d), "CreateVeth tapnet10/tapnet11");
  EXPECT_EQ(describe(op(K::CreateNamespace), d), "CreateNamespace ovnmeta-net1");
  EXPECT_EQ(describe(op(K::HostLinkUp), d), "HostLinkUp tapnet10");
}

}  // namespace
}  // namespace okna::netns
