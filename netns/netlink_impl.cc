// NetlinkImpl: libnl-route-3 for links and addresses, netns/namespace_fs for /run/netns,
// netns/ethtool for offloads. Netlink sockets are bound to the namespace they are created in, so
// a socket for the namespace is created inside it (runInNamespace) and used there.

// glibc's <net/if.h> before the kernel's <linux/if.h>, which then leaves out what glibc defined
// (linux/libc-compat.h); the other order fails to compile when a unity file puts a file that
// includes <net/if.h> (Asio does) after this one.
#include <net/if.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <netlink/addr.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/veth.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "netns/enter.h"
#include "netns/ethtool.h"
#include "netns/namespace_fs.h"
#include "netns/netlink.h"

namespace okna::netns {
namespace {

struct SockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct LinkPut {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrPut {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct NlAddrPut {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct CacheFree {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using Sock = std::unique_ptr<nl_sock, SockFree>;
using Link = std::unique_ptr<rtnl_link, LinkPut>;
using Addr = std::unique_ptr<rtnl_addr, AddrPut>;
using NlAddr = std::unique_ptr<nl_addr, NlAddrPut>;
using Cache = std::unique_ptr<nl_cache, CacheFree>;

// libnl reports its own NLE_* codes; callers get the closest errno.
int errnoOf(int nlError) {
  switch (nlError < 0 ? -nlError : nlError) {
    case NLE_EXIST:
      return EEXIST;
    case NLE_OBJ_NOTFOUND:
    case NLE_NODEV:
      return ENODEV;
    case NLE_PERM:
      return EPERM;
    // EACCES: e.g. an IPv6 address on a link with disable_ipv6 (the applier serves IPv4 then).
    case NLE_NOACCESS:
      return EACCES;
    case NLE_AF_NOSUPPORT:
      return EAFNOSUPPORT;
    case NLE_BUSY:
      return EBUSY;
    case NLE_INVAL:
      return EINVAL;
    case NLE_NOADDR:
      return EADDRNOTAVAIL;
    case NLE_NOMEM:
      return ENOMEM;
    case NLE_AGAIN:
      return EAGAIN;
    case NLE_OPNOTSUPP:
      return EOPNOTSUPP;
    case NLE_RANGE:
      return ERANGE;
    default:
      return EIO;
  }
}

core::Error nlError(const std::string& what, int err) {
  return core::makeError(what + ": " + nl_geterror(err), errnoOf(err));
}

bool isNotFound(int err) {
  return err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV;
}

// A route netlink socket in the calling thread's namespace.
core::Result<Sock> connectRoute() {
  Sock sock(nl_socket_alloc());
  if (!sock) return core::makeError("netlink socket: out of memory", ENOMEM);
  if (int err = nl_connect(sock.get(), NETLINK_ROUTE); err < 0) {
    return nlError("netlink connect", err);
  }
  return sock;
}

// The link named `name`, or null when there is none.
core::Result<Link> getLink(nl_sock* sock, const std::string& name) {
  rtnl_link* link = nullptr;
  const int err = rtnl_link_get_kernel(sock, 0, name.c_str(), &link);
  if (isNotFound(err)) return Link();
  if (err < 0) return nlError("get link " + name, err);
  return Link(link);
}

bool isVeth(rtnl_link* link) {
  const char* type = rtnl_link_get_type(link);
  return type != nullptr && std::strcmp(type, "veth") == 0;
}

std::string macOf(rtnl_link* link) {
  nl_addr* addr = rtnl_link_get_addr(link);
  if (addr == nullptr) return "";
  char buf[64];
  nl_addr2str(addr, buf, sizeof(buf));
  auto canonical = canonicalMac(buf);
  return canonical ? *canonical : buf;
}

core::Status changeLink(nl_sock* sock, const std::string& name, const std::string& what,
                        const std::function<void(rtnl_link*)>& setChanges) {
  auto link = getLink(sock, name);
  if (!link) return link.error();
  if (!*link) return core::makeError(what + ": no interface " + name, ENODEV);
  Link changes(rtnl_link_alloc());
  setChanges(changes.get());
  if (int err = rtnl_link_change(sock, link->get(), changes.get(), 0); err < 0) {
    return nlError(what, err);
  }
  return {};
}

core::Status setUp(nl_sock* sock, const std::string& name, bool up) {
  return changeLink(sock, name, std::string(up ? "set up " : "set down ") + name,
                    [up](rtnl_link* c) {
                      if (up) {
                        rtnl_link_set_flags(c, IFF_UP);
                      } else {
                        rtnl_link_unset_flags(c, IFF_UP);
                      }
                    });
}

core::Status deleteLink(nl_sock* sock, const std::string& name) {
  auto link = getLink(sock, name);
  if (!link) return link.error();
  if (!*link) return {};
  if (int err = rtnl_link_delete(sock, link->get()); err < 0 && !isNotFound(err)) {
    return nlError("delete link " + name, err);
  }
  return {};
}

std::string cidrOf(rtnl_addr* a) {
  nl_addr* local = rtnl_addr_get_local(a);
  if (local == nullptr) return "";
  char text[INET6_ADDRSTRLEN] = "";
  inet_ntop(nl_addr_get_family(local), nl_addr_get_binary_addr(local), text, sizeof(text));
  return std::string(text) + "/" + std::to_string(rtnl_addr_get_prefixlen(a));
}

core::Result<std::vector<std::string>> addressesOf(nl_sock* sock, int ifindex) {
  nl_cache* raw = nullptr;
  if (int err = rtnl_addr_alloc_cache(sock, &raw); err < 0) return nlError("list addresses", err);
  Cache cache(raw);
  std::vector<std::string> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(a) == ifindex) out.push_back(cidrOf(a));
  }
  return out;
}

// An rtnl_addr for `cidr` on `ifindex`; IPv4 gets its broadcast address as Neutron sets it.
core::Result<Addr> makeAddr(int ifindex, const std::string& cidr) {
  nl_addr* rawLocal = nullptr;
  if (int err = nl_addr_parse(cidr.c_str(), AF_UNSPEC, &rawLocal); err < 0) {
    return nlError("address " + cidr, err);
  }
  NlAddr local(rawLocal);
  Addr addr(rtnl_addr_alloc());
  const unsigned prefix = nl_addr_get_prefixlen(local.get());
  rtnl_addr_set_ifindex(addr.get(), ifindex);
  rtnl_addr_set_family(addr.get(), nl_addr_get_family(local.get()));
  rtnl_addr_set_local(addr.get(), local.get());
  rtnl_addr_set_prefixlen(addr.get(), static_cast<int>(prefix));
  if (nl_addr_get_family(local.get()) == AF_INET && prefix < 31) {
    uint32_t ip = 0;
    std::memcpy(&ip, nl_addr_get_binary_addr(local.get()), 4);
    const uint32_t host = prefix == 0 ? 0xffffffffu : (0xffffffffu >> prefix);
    const uint32_t brd = htonl(ntohl(ip) | host);
    NlAddr broadcast(nl_addr_build(AF_INET, &brd, 4));
    rtnl_addr_set_broadcast(addr.get(), broadcast.get());
  }
  return addr;
}

core::Status changeAddress(nl_sock* sock, const std::string& iface, const std::string& cidr,
                           bool add) {
  const std::string what = std::string(add ? "add address " : "delete address ") + cidr +
                           (add ? " to " : " from ") + iface;
  auto link = getLink(sock, iface);
  if (!link) return link.error();
  if (!*link) return core::makeError(what + ": no interface " + iface, ENODEV);
  auto addr = makeAddr(rtnl_link_get_ifindex(link->get()), cidr);
  if (!addr) return addr.error();
  int err = 0;
  if (add) {
    // Ours on a point-to-point port: no duplicate detection, so the proxy can bind at once.
    if (rtnl_addr_get_family(addr->get()) == AF_INET6) {
      rtnl_addr_set_flags(addr->get(), IFA_F_NODAD);
    }
    err = rtnl_addr_add(sock, addr->get(), 0);
    if (err == -NLE_EXIST) err = 0;
  } else {
    err = rtnl_addr_delete(sock, addr->get(), 0);
    if (err == -NLE_NOADDR || err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) err = 0;
  }
  if (err < 0) return nlError(what, err);
  return {};
}

core::Status setMac(nl_sock* sock, const std::string& iface, const std::string& mac) {
  nl_addr* raw = nullptr;
  if (int err = nl_addr_parse(mac.c_str(), AF_LLC, &raw); err < 0) {
    return nlError("mac " + mac, err);
  }
  NlAddr lladdr(raw);
  const std::string what = "set mac " + mac + " on " + iface;
  auto st =
      changeLink(sock, iface, what, [&](rtnl_link* c) { rtnl_link_set_addr(c, lladdr.get()); });
  if (st || st.error().code != EBUSY) return st;
  // A driver that refuses a live change: down, change, up.
  if (auto down = setUp(sock, iface, false); !down) return down;
  st = changeLink(sock, iface, what, [&](rtnl_link* c) { rtnl_link_set_addr(c, lladdr.get()); });
  auto up = setUp(sock, iface, true);
  return st ? up : st;
}

// The host end is an OVS port and carries no host traffic: it gets no IPv6 at all.
// disable_ipv6, written while the link is still down, is the cheapest way there: going up then
// adds no fe80:: address, no fe80::/64 route (the host's fe80::/64 routes form one list the
// kernel walks on every insertion: O(N^2) at 1,000 namespaces) and no ff00::/8 route (each one
// more for ovs-vswitchd, which re-reads every route of the host after every link change, and a
// route notification that makes it do so once more). It is a file write, not a netlink change of
// the link that ovs-vswitchd would see. (os-vif does the same for the veths it plugs.)
// Written before up, it finds no route of the link to remove (it walks the host's IPv6 routes
// once, fib6_clean_all, cheap while they are few). Best effort: where the sysctl is missing
// (no IPv6 in the kernel) address generation "none" is asked instead, and the link works either
// way. The calling thread is in the host namespace (/proc/sys/net is per namespace).
void noIpv6OnHostEnd(nl_sock* hostSock, const std::string& iface) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + iface + "/disable_ipv6";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    const bool written = ::write(fd, "1", 1) == 1;
    ::close(fd);
    if (written) return;
  }
  (void)changeLink(hostSock, iface, "addrgenmode none on " + iface, [](rtnl_link* c) {
    rtnl_link_inet6_set_addr_gen_mode(c, IN6_ADDR_GEN_MODE_NONE);
  });
}

core::Status createVeth(nl_sock* hostSock, const DesiredNamespace& d) {
  const std::string what = "create veth " + d.hostIface + "/" + d.innerIface + " in " + d.name;
  nl_addr* rawMac = nullptr;
  if (!d.mac.empty()) {
    if (int err = nl_addr_parse(d.mac.c_str(), AF_LLC, &rawMac); err < 0) {
      return nlError(what + ": mac " + d.mac, err);
    }
  }
  NlAddr innerMac(rawMac);
  auto nsFd = openNamespaceFd(d.name);
  if (!nsFd) return nsFd.error();
  Link veth(rtnl_link_veth_alloc());
  if (!veth) {
    ::close(*nsFd);
    return core::makeError(what + ": out of memory", ENOMEM);
  }
  rtnl_link_set_name(veth.get(), d.hostIface.c_str());
  {
    Link peer(rtnl_link_veth_get_peer(veth.get()));
    rtnl_link_set_name(peer.get(), d.innerIface.c_str());
    // Created directly inside the namespace, as `ip link add ... peer name X netns NS` does,
    // with its MAC: one change fewer, one turn fewer of the RTNL lock that ovs-vswitchd's dumps
    // contend for. (Asking for it up in the same message failed here: NLE_FAILURE.)
    rtnl_link_set_ns_fd(peer.get(), *nsFd);
    if (innerMac) rtnl_link_set_addr(peer.get(), innerMac.get());
  }
  const int err = rtnl_link_add(hostSock, veth.get(), NLM_F_CREATE | NLM_F_EXCL);
  ::close(*nsFd);
  if (err < 0) return nlError(what, err);
  noIpv6OnHostEnd(hostSock, d.hostIface);
  return {};
}

core::Status moveInner(nl_sock* hostSock, const DesiredNamespace& d) {
  auto nsFd = openNamespaceFd(d.name);
  if (!nsFd) return nsFd.error();
  auto st = changeLink(hostSock, d.innerIface, "move " + d.innerIface + " into " + d.name,
                       [&](rtnl_link* c) { rtnl_link_set_ns_fd(c, *nsFd); });
  ::close(*nsFd);
  return st;
}

// Observes what lives inside the namespace (runs there).
core::Status observeInside(const DesiredNamespace& d, int hostIfindex, ObservedNamespace* o) {
  auto sock = connectRoute();
  if (!sock) return sock.error();
  auto lo = getLink(sock->get(), "lo");
  if (!lo) return lo.error();
  o->loopbackUp = *lo && (rtnl_link_get_flags(lo->get()) & IFF_UP) != 0;
  auto inner = getLink(sock->get(), d.innerIface);
  if (!inner) return inner.error();
  if (!*inner) return {};
  rtnl_link* link = inner->get();
  o->innerIfaceExists = true;
  o->innerIfaceInNamespace = true;
  o->innerMac = macOf(link);
  o->innerIfaceUp = (rtnl_link_get_flags(link) & IFF_UP) != 0;
  o->vethPeered = hostIfindex > 0 && isVeth(link) && rtnl_link_get_link(link) == hostIfindex;
  auto addresses = addressesOf(sock->get(), rtnl_link_get_ifindex(link));
  if (!addresses) return addresses.error();
  o->innerAddresses = *addresses;
  auto off = detail::offloadsOff(d.innerIface);
  if (!off) return off.error();
  o->offloadsOff = *off;
  return {};
}

// Runs `fn` with a route socket of namespace `name` (created inside it).
core::Status withNamespaceSock(const std::string& name,
                               const std::function<core::Status(nl_sock*)>& fn) {
  return runInNamespace(name, [&]() -> core::Status {
    auto sock = connectRoute();
    if (!sock) return sock.error();
    return fn(sock->get());
  });
}

}  // namespace

core::Result<ObservedNamespace> NetlinkImpl::observe(const DesiredNamespace& d) {
  ObservedNamespace o;
  auto host = connectRoute();
  if (!host) return host.error();
  auto hostLink = getLink(host->get(), d.hostIface);
  if (!hostLink) return hostLink.error();
  int hostIfindex = 0;
  if (*hostLink) {
    o.hostIfaceExists = true;
    o.hostIfaceUp = (rtnl_link_get_flags(hostLink->get()) & IFF_UP) != 0;
    if (isVeth(hostLink->get())) hostIfindex = rtnl_link_get_ifindex(hostLink->get());
  }
  auto innerInHost = getLink(host->get(), d.innerIface);
  if (!innerInHost) return innerInHost.error();
  if (*innerInHost) {
    rtnl_link* link = innerInHost->get();
    o.innerIfaceExists = true;
    o.innerMac = macOf(link);
    o.innerIfaceUp = (rtnl_link_get_flags(link) & IFF_UP) != 0;
    o.vethPeered = hostIfindex > 0 && isVeth(link) && rtnl_link_get_link(link) == hostIfindex;
    auto off = detail::offloadsOff(d.innerIface);
    if (!off) return off.error();
    o.offloadsOff = *off;
  }
  auto nsFd = openNamespaceFd(d.name);
  if (!nsFd) {
    if (nsFd.error().code == ENOENT) return o;
    return nsFd.error();
  }
  ::close(*nsFd);
  o.exists = true;
  ObservedNamespace inside = o;
  auto st = runInNamespace(d.name, [&] { return observeInside(d, hostIfindex, &inside); });
  if (!st) return st.error();
  // An inner end in the host namespace wins over nothing inside; one inside wins over it.
  return inside;
}

namespace {

// Ops that change the inside of the namespace run there, with a socket made there.
bool runsInside(const NsOp& op) {
  switch (op.kind) {
    case NsOpKind::LoopbackUp:
    case NsOpKind::SetMac:
    case NsOpKind::InnerLinkUp:
    case NsOpKind::DelAddress:
    case NsOpKind::AddAddress:
    case NsOpKind::DisableOffloads:
      return true;
    case NsOpKind::DeleteInnerIface:
      return !op.inHost;
    case NsOpKind::CreateNamespace:
    case NsOpKind::DeleteHostIface:
    case NsOpKind::CreateVeth:
    case NsOpKind::MoveInner:
    case NsOpKind::HostLinkUp:
      return false;
  }
  return false;
}

// `s` is a socket of the namespace the calling thread is in (runsInside(op)).
core::Status applyInside(nl_sock* s, const NsOp& op, const DesiredNamespace& d) {
  switch (op.kind) {
    case NsOpKind::LoopbackUp:
      return setUp(s, "lo", true);
    case NsOpKind::DeleteInnerIface:
      return deleteLink(s, d.innerIface);
    case NsOpKind::SetMac:
      return setMac(s, d.innerIface, d.mac);
    case NsOpKind::InnerLinkUp:
      return setUp(s, d.innerIface, true);
    case NsOpKind::DelAddress:
    case NsOpKind::AddAddress:
      return changeAddress(s, d.innerIface, op.address, op.kind == NsOpKind::AddAddress);
    case NsOpKind::DisableOffloads:
      return disableOffloads("", d.innerIface);
    default:
      return core::makeError(std::string("not an op inside the namespace: ") + toString(op.kind),
                             EINVAL);
  }
}

// `hs` is a socket of the host namespace (the calling thread's).
core::Status applyOnHost(nl_sock* hs, const NsOp& op, const DesiredNamespace& d) {
  switch (op.kind) {
    case NsOpKind::CreateNamespace:
      return detail::createNamedNamespace(d.name);
    case NsOpKind::DeleteHostIface:
      return deleteLink(hs, d.hostIface);
    case NsOpKind::DeleteInnerIface:
      return deleteLink(hs, d.innerIface);
    case NsOpKind::CreateVeth:
      return createVeth(hs, d);
    case NsOpKind::MoveInner:
      return moveInner(hs, d);
    case NsOpKind::HostLinkUp:
      return setUp(hs, d.hostIface, true);
    default:
      return core::makeError(std::string("not an op on the host: ") + toString(op.kind), EINVAL);
  }
}

}  // namespace

core::Status NetlinkImpl::apply(const NsOp& op, const DesiredNamespace& d) {
  std::size_t done = 0;
  return applyAll({op}, d, &done);
}

core::Status NetlinkImpl::applyAll(const std::vector<NsOp>& ops, const DesiredNamespace& d,
                                   std::size_t* done) {
  *done = 0;
  Sock host;
  std::size_t i = 0;
  while (i < ops.size()) {
    if (!runsInside(ops[i])) {
      if (!host) {
        auto sock = connectRoute();
        if (!sock) return sock.error();
        host = std::move(*sock);
      }
      if (auto st = applyOnHost(host.get(), ops[i], d); !st) return st;
      ++*done;
      ++i;
      continue;
    }
    // A run of ops inside: one setns there and back, one socket.
    auto st = runInNamespace(d.name, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock) return sock.error();
      for (; i < ops.size() && runsInside(ops[i]); ++i) {
        if (auto s = applyInside(sock->get(), ops[i], d); !s) return s;
        ++*done;
      }
      return {};
    });
    if (!st) return st;
  }
  return {};
}

core::Result<std::vector<std::string>> NetlinkImpl::listNamespaces(const std::string& prefix) {
  return detail::listNamedNamespaces(prefix);
}

core::Status NetlinkImpl::removeNamespace(const std::string& name, const std::string& hostIface) {
  auto nsFd = openNamespaceFd(name);
  if (nsFd) {
    ::close(*nsFd);
    // Delete the veths inside, so their host ends go now even if a process holds the namespace.
    auto st = withNamespaceSock(name, [&](nl_sock* s) -> core::Status {
      nl_cache* raw = nullptr;
      if (int err = rtnl_link_alloc_cache(s, AF_UNSPEC, &raw); err < 0) {
        return nlError("namespace " + name + ": list links", err);
      }
      Cache cache(raw);
      std::vector<std::string> veths;
      for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
        auto* link = reinterpret_cast<rtnl_link*>(o);
        if (isVeth(link)) veths.emplace_back(rtnl_link_get_name(link));
      }
      for (const auto& v : veths) {
        if (auto del = deleteLink(s, v); !del) return del;
      }
      return {};
    });
    if (!st)
      return core::makeError("namespace " + name + ": " + st.error().message, st.error().code);
  }
  if (!hostIface.empty()) {
    auto host = connectRoute();
    if (!host) return host.error();
    auto link = getLink(host->get(), hostIface);
    if (!link) return link.error();
    if (*link && isVeth(link->get())) {
      if (auto del = deleteLink(host->get(), hostIface); !del) return del;
    }
  }
  return detail::removeNamedNamespace(name);
}

}  // namespace okna::netns
