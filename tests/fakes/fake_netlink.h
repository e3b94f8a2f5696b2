#pragma once
// A stateful fake kernel for netns::NamespaceApplier tests: namespaces holding links, veth pairs
// that die together, a link-local address the "kernel" adds when a link goes up (as the real one
// does), and injectable failures per op kind.

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "netns/netlink.h"

namespace okna::testing {

class FakeNetlink : public netns::Netlink {
 public:
  struct FakeLink {
    bool up = false;
    bool veth = true;
    // The other end of the veth: its namespace ("" = host) and name.
    std::string peerNs;
    std::string peerName;
    std::string mac = "02:00:00:00:00:99";
    std::vector<std::string> addresses;
    bool offloadsOff = false;
  };
  struct FakeNs {
    bool loopbackUp = false;
    std::map<std::string, FakeLink> links;
  };

  // "" is the host namespace; it always exists.
  std::map<std::string, FakeNs> namespaces{{"", FakeNs{true, {}}}};
  std::vector<netns::NsOp> applied;
  int observeCalls = 0;
  std::map<netns::NsOpKind, int> failures;  // op kind -> errno to fail with
  // An IPv6 AddAddress fails with this errno (a kernel booted with ipv6.disable=1: EOPNOTSUPP).
  std::optional<int> ipv6AddressFailure;
  std::optional<int> failRemove;

  FakeNs& host() { return namespaces[""]; }
  FakeLink* link(const std::string& ns, const std::string& name) {
    auto n = namespaces.find(ns);
    if (n == namespaces.end()) return nullptr;
    auto l = n->second.links.find(name);
    return l == n->second.links.end() ? nullptr : &l->second;
  }

  /** A veth pair as `ip link add HOST type veth peer name INNER netns NS` makes it. */
  void addVeth(const std::string& hostName, const std::string& ns, const std::string& inner,
               const std::string& innerMac = "02:00:00:00:00:02") {
    namespaces[""].links[hostName] =
        FakeLink{false, true, ns, inner, "02:00:00:00:00:01", {}, false};
    namespaces[ns].links[inner] = FakeLink{false, true, "", hostName, innerMac, {}, false};
  }

  core::Result<netns::ObservedNamespace> observe(const netns::DesiredNamespace& d) override {
    ++observeCalls;
    netns::ObservedNamespace o;
    const FakeLink* h = link("", d.hostIface);
    o.hostIfaceExists = h != nullptr;
    o.hostIfaceUp = h != nullptr && h->up;
    const auto fill = [&](const FakeLink& in, const std::string& ns) {
      o.innerIfaceExists = true;
      o.innerMac = in.mac;
      o.innerIfaceUp = in.up;
      o.offloadsOff = in.offloadsOff;
      o.vethPeered = h != nullptr && h->veth && in.veth && in.peerNs == "" &&
                     in.peerName == d.hostIface && h->peerNs == ns && h->peerName == d.innerIface;
    };
    if (const FakeLink* in = link("", d.innerIface)) fill(*in, "");
    auto n = namespaces.find(d.name);
    if (d.name.empty() || n == namespaces.end()) return o;
    o.exists = true;
    o.loopbackUp = n->second.loopbackUp;
    if (const FakeLink* in = link(d.name, d.innerIface)) {
      fill(*in, d.name);
      o.innerIfaceInNamespace = true;
      o.innerAddresses = in->addresses;
    }
    return o;
  }

  core::Status apply(const netns::NsOp& op, const netns::DesiredNamespace& d) override {
    using K = netns::NsOpKind;
    if (auto f = failures.find(op.kind); f != failures.end()) {
      return core::makeError("injected failure", f->second);
    }
    const auto needNs = [&]() -> FakeNs* {
      auto n = namespaces.find(d.name);
      return n == namespaces.end() ? nullptr : &n->second;
    };
    const auto noDev = [](const std::string& what) { return core::makeError(what, ENODEV); };
    switch (op.kind) {
      case K::CreateNamespace:
        if (needNs() != nullptr) return core::makeError("exists", EEXIST);
        namespaces[d.name] = FakeNs{};
        break;
      case K::LoopbackUp:
        if (needNs() == nullptr) return noDev(d.name);
        needNs()->loopbackUp = true;
        break;
      case K::DeleteHostIface:
        deleteLink("", d.hostIface);
        break;
      case K::DeleteInnerIface:
        deleteLink(op.inHost ? "" : d.name, d.innerIface);
        break;
      case K::CreateVeth:
        if (needNs() == nullptr) return noDev(d.name);
        if (link("", d.hostIface) != nullptr || link(d.name, d.innerIface) != nullptr) {
          return core::makeError("exists", EEXIST);
        }
        // As the kernel applier: the inner end is created with the desired MAC.
        addVeth(d.hostIface, d.name, d.innerIface, d.mac);
        break;
      case K::MoveInner: {
        FakeLink* in = link("", d.innerIface);
        if (in == nullptr || needNs() == nullptr) return noDev(d.innerIface);
        FakeLink moved = *in;
        moved.up = false;
        moved.addresses.clear();
        host().links.erase(d.innerIface);
        needNs()->links[d.innerIface] = moved;
        if (FakeLink* peer = link(moved.peerNs, moved.peerName)) peer->peerNs = d.name;
        break;
      }
      case K::SetMac:
        if (FakeLink* in = link(d.name, d.innerIface)) {
          in->mac = d.mac;
        } else {
          return noDev(d.innerIface);
        }
        break;
      case K::InnerLinkUp:
        if (FakeLink* in = link(d.name, d.innerIface)) {
          in->up = true;
          // The kernel's EUI-64 link-local address appears when a link goes up.
          const std::string ll = netns::eui64LinkLocal(in->mac);
          if (std::find(in->addresses.begin(), in->addresses.end(), ll) == in->addresses.end()) {
            in->addresses.push_back(ll);
          }
        } else {
          return noDev(d.innerIface);
        }
        break;
      case K::HostLinkUp:
        if (FakeLink* h = link("", d.hostIface)) {
          h->up = true;
        } else {
          return noDev(d.hostIface);
        }
        break;
      case K::AddAddress:
      case K::DelAddress: {
        if (op.kind == K::AddAddress && ipv6AddressFailure &&
            op.address.find(':') != std::string::npos)
          return core::makeError("Operation not supported", *ipv6AddressFailure);
        FakeLink* in = link(d.name, d.innerIface);
        if (in == nullptr) return noDev(d.innerIface);
        auto& a = in->addresses;
        a.erase(std::remove(a.begin(), a.end(), op.address), a.end());
        if (op.kind == K::AddAddress) a.push_back(op.address);
        break;
      }
      case K::DisableOffloads:
        if (FakeLink* in = link(d.name, d.innerIface)) {
          in->offloadsOff = true;
        } else {
          return noDev(d.innerIface);
        }
        break;
    }
    applied.push_back(op);
    return {};
  }

  core::Result<std::vector<std::string>> listNamespaces(const std::string& prefix) override {
    std::vector<std::string> out;
    for (const auto& [name, ns] : namespaces) {
      if (!name.empty() && name.compare(0, prefix.size(), prefix) == 0) out.push_back(name);
    }
    return out;
  }

  core::Status removeNamespace(const std::string& name, const std::string& hostIface) override {
    if (failRemove) return core::makeError("injected failure", *failRemove);
    auto n = namespaces.find(name);
    if (n != namespaces.end()) {
      std::vector<std::string> names;
      for (const auto& [linkName, l] : n->second.links) names.push_back(linkName);
      for (const auto& l : names) deleteLink(name, l);
      namespaces.erase(name);
    }
    if (!hostIface.empty()) deleteLink("", hostIface);
    return {};
  }

  core::Result<int> openListener(const std::string&, const netns::ListenerOptions&) override {
    return core::makeError("the fake has no sockets", ENOSYS);
  }

 private:
  void deleteLink(const std::string& ns, const std::string& name) {
    FakeLink* l = link(ns, name);
    if (l == nullptr) return;
    const FakeLink copy = *l;
    namespaces[ns].links.erase(name);
    // A veth's other end goes with it.
    if (copy.veth && link(copy.peerNs, copy.peerName) != nullptr) {
      namespaces[copy.peerNs].links.erase(copy.peerName);
    }
  }
};

}  // namespace okna::testing
