#pragma once
// The primitives the applier needs, behind an interface: NetlinkImpl talks to the kernel
// (libnl-route-3, setns, mount, the ethtool ioctl); tests/fakes/fake_netlink.h is a stateful fake.
//
// Threading: every NetlinkImpl call may switch the calling thread into another network namespace
// with setns(CLONE_NEWNET) and back before it returns. Call it from a dedicated worker thread
// (netns/worker.h), never from the event loop thread. The "host" namespace is the namespace of
// the calling thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "netns/diff.h"
#include "netns/types.h"

namespace okna::netns {

struct ListenerOptions {
  // "169.254.169.254", "0.0.0.0", "fe80::a9fe:a9fe", "fe80::a9fe:a9fe%tapabc1", "::".
  std::string address;
  uint16_t port = 0;
  int backlog = 128;
  // SO_REUSEPORT, so a restarted agent can bind while the old process still listens.
  bool reusePort = false;
  // Scope of an IPv6 link-local address when `address` has no "%iface" suffix.
  std::string scopeIface;
};

class Netlink {
 public:
  virtual ~Netlink() = default;

  virtual core::Result<ObservedNamespace> observe(const DesiredNamespace& desired) = 0;
  /** One op of diffNamespace(); the error names the object and carries errno. */
  virtual core::Status apply(const NsOp& op, const DesiredNamespace& desired) = 0;
  /**
   * The ops in order, stopping at the first error; `*done` counts those applied. The kernel
   * implementation enters the namespace once per run of consecutive ops inside it, with one
   * socket per namespace (a set-up is a dozen ops: per-op setns and sockets were a measurable
   * part of a cold start with 1,000 namespaces).
   */
  virtual core::Status applyAll(const std::vector<NsOp>& ops, const DesiredNamespace& desired,
                                std::size_t* done) {
    *done = 0;
    for (const auto& op : ops) {
      if (auto st = apply(op, desired); !st) return st;
      ++*done;
    }
    return {};
  }
  /** Names under /run/netns starting with `prefix`, sorted; none when /run/netns is absent. */
  virtual core::Result<std::vector<std::string>> listNamespaces(const std::string& prefix) = 0;
  /**
   * Deletes the namespace: the interfaces inside (so its veth pairs go even if a process still
   * holds the namespace), `hostIface` if still present (skipped when empty), then unmounts and
   * unlinks /run/netns/<name>. Whatever is already gone is not an error.
   */
  virtual core::Status removeNamespace(const std::string& name, const std::string& hostIface) = 0;
  /**
   * A listening TCP socket inside namespace `name` (non-blocking, CLOEXEC, SO_REUSEADDR). The
   * caller owns the fd; it stays in that namespace.
   */
  virtual core::Result<int> openListener(const std::string& name,
                                         const ListenerOptions& options) = 0;
};

/** The kernel. Holds no state besides the host namespace it was created in. */
class NetlinkImpl : public Netlink {
 public:
  core::Result<ObservedNamespace> observe(const DesiredNamespace& desired) override;
  core::Status apply(const NsOp& op, const DesiredNamespace& desired) override;
  core::Status applyAll(const std::vector<NsOp>& ops, const DesiredNamespace& desired,
                        std::size_t* done) override;
  core::Result<std::vector<std::string>> listNamespaces(const std::string& prefix) override;
  core::Status removeNamespace(const std::string& name, const std::string& hostIface) override;
  core::Result<int> openListener(const std::string& name, const ListenerOptions& options) override;
};

/** openListener on the kernel, as a free function (the same code as NetlinkImpl's). */
core::Result<int> openListener(const std::string& namespaceName, const std::string& address,
                               uint16_t port, int backlog, bool reusePort,
                               const std::string& scopeIface = "");

/**
 * Turns tx checksumming, TSO and GSO off on `iface` in namespace `namespaceName` ("" = the
 * calling thread's), so TCP sends full checksums through OVS's userspace datapath. Tests' "VM"
 * namespaces need it too.
 */
core::Status disableOffloads(const std::string& namespaceName, const std::string& iface);

}  // namespace okna::netns
