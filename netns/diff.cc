#include "netns/diff.h"

#include <algorithm>

namespace okna::netns {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string canonicalOrSame(const std::string& cidr) {
  auto c = canonicalCidr(cidr);
  return c ? *c : cidr;
}

std::string lower(std::string s) {
  auto c = canonicalMac(s);
  return c ? *c : s;
}

}  // namespace

const char* toString(NsOpKind kind) {
  switch (kind) {
    case NsOpKind::CreateNamespace:
      return "CreateNamespace";
    case NsOpKind::LoopbackUp:
      return "LoopbackUp";
    case NsOpKind::DeleteHostIface:
      return "DeleteHostIface";
    case NsOpKind::DeleteInnerIface:
      return "DeleteInnerIface";
    case NsOpKind::CreateVeth:
      return "CreateVeth";
    case NsOpKind::MoveInner:
      return "MoveInner";
    case NsOpKind::SetMac:
      return "SetMac";
    case NsOpKind::InnerLinkUp:
      return "InnerLinkUp";
    case NsOpKind::HostLinkUp:
      return "HostLinkUp";
    case NsOpKind::DelAddress:
      return "DelAddress";
    case NsOpKind::AddAddress:
      return "AddAddress";
    case NsOpKind::DisableOffloads:
      return "DisableOffloads";
  }
  return "?";
}

std::string describe(const NsOp& op, const DesiredNamespace& d) {
  std::string s = toString(op.kind);
  switch (op.kind) {
    case NsOpKind::CreateNamespace:
    case NsOpKind::LoopbackUp:
      return s + " " + d.name;
    case NsOpKind::DeleteHostIface:
    case NsOpKind::HostLinkUp:
      return s + " " + d.hostIface;
    case NsOpKind::DeleteInnerIface:
      return s + " " + d.innerIface + (op.inHost ? " (host)" : "");
    case NsOpKind::CreateVeth:
      return s + " " + d.hostIface + "/" + d.innerIface;
    case NsOpKind::MoveInner:
      return s + " " + d.innerIface + " -> " + d.name;
    case NsOpKind::SetMac:
      return s + " " + d.innerIface + " " + d.mac;
    case NsOpKind::InnerLinkUp:
    case NsOpKind::DisableOffloads:
      return s + " " + d.innerIface;
    case NsOpKind::AddAddress:
    case NsOpKind::DelAddress:
      return s + " " + op.address + " " + d.innerIface;
  }
  return s;
}

std::vector<NsOp> diffNamespace(const ObservedNamespace& observed,
                                const DesiredNamespace& desired) {
  std::vector<NsOp> ops;
  const auto add = [&](NsOpKind kind, std::string address = "") {
    ops.push_back(NsOp{kind, std::move(address), false});
  };
  ObservedNamespace o = observed;
  if (!o.exists) {
    add(NsOpKind::CreateNamespace);
    // A fresh namespace holds only a down loopback; whatever the observer saw inside is gone.
    o.loopbackUp = false;
    if (o.innerIfaceInNamespace) o.innerIfaceExists = false;
    o.innerIfaceInNamespace = false;
    o.vethPeered = o.vethPeered && o.innerIfaceExists;
  }
  if (!o.loopbackUp) add(NsOpKind::LoopbackUp);

  const bool pairUsable = o.hostIfaceExists && o.innerIfaceExists && o.vethPeered;
  bool freshVeth = false;
  if (!pairUsable) {
    // Deleting one end of a veth deletes both: a peered pair goes with DeleteHostIface.
    if (o.hostIfaceExists) add(NsOpKind::DeleteHostIface);
    if (o.innerIfaceExists && !(o.hostIfaceExists && o.vethPeered)) {
      ops.push_back(NsOp{NsOpKind::DeleteInnerIface, "", !o.innerIfaceInNamespace});
    }
    add(NsOpKind::CreateVeth);
    freshVeth = true;
  }

  // After a creation the inner end is down, without addresses, with the desired MAC (CreateVeth
  // sets it); after a move it is down, without addresses, with its old MAC. Offloads are device
  // properties and survive a move.
  bool innerUp = o.innerIfaceUp;
  std::vector<std::string> have;
  for (const auto& a : o.innerAddresses) have.push_back(canonicalOrSame(a));
  std::string mac = lower(o.innerMac);
  bool offloadsOff = o.offloadsOff;
  bool hostUp = o.hostIfaceUp;
  if (freshVeth) {
    innerUp = false;
    hostUp = false;
    have.clear();
    mac = lower(desired.mac);
    offloadsOff = false;
  } else if (!o.innerIfaceInNamespace) {
    add(NsOpKind::MoveInner);
    innerUp = false;
    have.clear();
  }

  const std::string desiredMac = lower(desired.mac);
  if (mac != desiredMac) add(NsOpKind::SetMac);
  if (!innerUp) add(NsOpKind::InnerLinkUp);
  if (!hostUp) add(NsOpKind::HostLinkUp);

  std::vector<std::string> want;
  for (const auto& a : desired.addresses) want.push_back(canonicalOrSame(a));
  const std::string kernelLinkLocal = eui64LinkLocal(desiredMac);
  for (const auto& a : have) {
    if (!contains(want, a) && a != kernelLinkLocal) add(NsOpKind::DelAddress, a);
  }
  for (const auto& a : want) {
    if (!contains(have, a)) add(NsOpKind::AddAddress, a);
  }
  if (!offloadsOff) add(NsOpKind::DisableOffloads);
  return ops;
}

}  // namespace okna::netns
