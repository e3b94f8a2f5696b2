// openListener: a TCP listening socket created inside a network namespace.

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "netns/enter.h"
#include "netns/netlink.h"

namespace okna::netns {
namespace {

core::Error sysError(const std::string& what, int err) {
  return core::makeError(what + ": " + std::strerror(err), err);
}

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_UNSPEC;
};

// Runs inside the target namespace: the scope interface is looked up there.
core::Result<SocketAddress> resolve(const ListenerOptions& o, const std::string& what) {
  std::string ip = o.address;
  std::string scope = o.scopeIface;
  if (const auto percent = ip.find('%'); percent != std::string::npos) {
    scope = ip.substr(percent + 1);
    ip = ip.substr(0, percent);
  }
  SocketAddress out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(o.port);
    out.length = sizeof(sockaddr_in);
    out.family = AF_INET;
    return out;
  }
  if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) != 1) {
    return core::makeError(what + ": '" + o.address + "' is not an IP address", EINVAL);
  }
  v6->sin6_family = AF_INET6;
  v6->sin6_port = htons(o.port);
  if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr)) {
    if (scope.empty()) {
      return core::makeError(what + ": link-local " + ip + " needs a scope interface", EINVAL);
    }
    v6->sin6_scope_id = if_nametoindex(scope.c_str());
    if (v6->sin6_scope_id == 0) return sysError(what + ": scope interface " + scope, errno);
  }
  out.length = sizeof(sockaddr_in6);
  out.family = AF_INET6;
  return out;
}

core::Status listenHere(const ListenerOptions& o, const std::string& what, int* fdOut) {
  auto address = resolve(o, what);
  if (!address) return address.error();
  const int fd = ::socket(address->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sysError(what + ": socket", errno);
  const int one = 1;
  const auto fail = [&](const std::string& step) {
    const int err = errno;
    ::close(fd);
    return sysError(what + ": " + step, err);
  };
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEADDR");
  }
  if (o.reusePort && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return fail("SO_REUSEPORT");
  }
  // "::" must not also take the IPv4 port: an IPv4 listener may be opened beside it.
  if (address->family == AF_INET6 &&
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
    return fail("IPV6_V6ONLY");
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address->storage), address->length) != 0) {
    return fail("bind");
  }
  if (::listen(fd, o.backlog) != 0) return fail("listen");
  *fdOut = fd;
  return {};
}

}  // namespace

core::Result<int> NetlinkImpl::openListener(const std::string& name,
                                            const ListenerOptions& options) {
  const std::string what = "listener " + options.address + " port " + std::to_string(options.port) +
                           (name.empty() ? "" : " in namespace " + name);
  int fd = -1;
  auto st = runInNamespace(name, [&] { return listenHere(options, what, &fd); });
  if (!st) return st.error();
  return fd;
}

core::Result<int> openListener(const std::string& namespaceName, const std::string& address,
                               uint16_t port, int backlog, bool reusePort,
                               const std::string& scopeIface) {
  NetlinkImpl impl;
  return impl.openListener(namespaceName,
                           ListenerOptions{address, port, backlog, reusePort, scopeIface});
}

}  // namespace okna::netns
