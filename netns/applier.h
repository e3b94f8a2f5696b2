#pragma once
// Makes a metadata namespace what a DesiredNamespace says: observe, diff, apply only the needed
// ops, re-observe to verify. Runs on the netns worker thread (netns/worker.h), never on the
// event loop: every call may enter namespaces with setns.

#include <string>
#include <vector>

#include "core/result.h"
#include "netns/diff.h"
#include "netns/netlink.h"
#include "netns/types.h"

namespace okna::netns {

struct EnsureReport {
  // The ops that succeeded, in order. Empty: the namespace was adopted unchanged.
  std::vector<NsOp> applied;
  // The op that failed, if any (the ops before it stay done).
  std::vector<NsOp> failed;
  // Non-empty when the kernel refused the IPv6 addresses because IPv6 is off (ipv6.disable=1:
  // EOPNOTSUPP/EAFNOSUPPORT; disable_ipv6 on the link: EACCES): the kernel's reason. The
  // namespace is then brought in line without them (IPv4 serves); the caller reports it.
  std::string ipv6Unavailable;
  bool created() const;
  bool unchanged() const { return applied.empty() && failed.empty(); }
  /** "adopted unchanged", "created (12 ops)" or "repaired: SetMac tapX1 fa:16:..., ...". */
  std::string summary(const DesiredNamespace& desired) const;
};

class NamespaceApplier {
 public:
  explicit NamespaceApplier(Netlink& netlink) : netlink_(netlink) {}

  /**
   * Brings the namespace in line. On error the message names the namespace and the failing op
   * (its object) and the code is the errno; `report` (optional) lists what was done either way.
   * An IPv6 address the kernel refuses because IPv6 is off is no error: it is left out and
   * `report->ipv6Unavailable` says why.
   */
  core::Status ensure(const DesiredNamespace& desired, EnsureReport* report = nullptr);
  /**
   * Only the part of ensure() that the host namespace sees: the namespace, the veth pair, both
   * ends up (no addresses, loopback or offloads, which happen inside). Run over many new
   * namespaces before their ensure(), it gathers the link changes that make ovs-vswitchd re-read
   * every link of the host into one short burst instead of one per namespace all along the
   * start. Best effort: what fails here ensure() redoes and reports. `report` lists what it did.
   */
  core::Status prepare(const DesiredNamespace& desired, EnsureReport* report);
  /** Deletes an `ovnmeta-` namespace and its veth pair; absent is fine. Other names: EINVAL. */
  core::Status remove(const std::string& name);
  /** The `ovnmeta-` namespaces under /run/netns, sorted. */
  core::Result<std::vector<std::string>> listMetadataNamespaces();

 private:
  // Applies `ops` in order, appends the ones that succeeded to `report` and the failing one to
  // its `failed`; the error names the namespace and that op.
  core::Status applyRecorded(const std::vector<NsOp>& ops, const DesiredNamespace& desired,
                             EnsureReport& report);

  Netlink& netlink_;
};

}  // namespace okna::netns
