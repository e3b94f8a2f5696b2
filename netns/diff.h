#pragma once
// The pure planner: what to do to turn an ObservedNamespace into a DesiredNamespace. Only the ops
// that are needed: a namespace that is already right (made by Neutron's Python agent or by an
// earlier run) yields no op at all, so adopting it never disturbs the VMs' metadata traffic.

#include <string>
#include <vector>

#include "netns/types.h"

namespace okna::netns {

enum class NsOpKind {
  CreateNamespace,   // /run/netns/<name>, as `ip netns add` makes it
  LoopbackUp,        // lo inside the namespace
  DeleteHostIface,   // a host-side interface with the host end's name that is not our veth
  DeleteInnerIface,  // an interface with the inner end's name that is not our veth's peer
  CreateVeth,        // host end in the host namespace, inner end created inside it with its MAC
  MoveInner,         // the inner end is still in the host namespace (an interrupted creation)
  SetMac,            // inner end's MAC
  InnerLinkUp,
  HostLinkUp,
  DelAddress,       // `address` from the inner end
  AddAddress,       // `address` to the inner end
  DisableOffloads,  // tx checksumming, TSO, GSO off on the inner end (OVS userspace datapath)
};

struct NsOp {
  NsOpKind kind;
  // For AddAddress / DelAddress: a canonical CIDR.
  std::string address;
  // For DeleteInnerIface: whether the stray inner end is in the host namespace.
  bool inHost = false;

  bool operator==(const NsOp&) const = default;
};

const char* toString(NsOpKind kind);
/** "SetMac tapabc1 fa:16:3e:00:00:01", naming the object the op touches. */
std::string describe(const NsOp& op, const DesiredNamespace& desired);

/**
 * The ops, in the order they must run. Addresses are compared as canonical CIDRs; the kernel's
 * EUI-64 link-local address of the desired MAC is left alone even when not desired, any other
 * address that is not desired is removed.
 */
std::vector<NsOp> diffNamespace(const ObservedNamespace& observed, const DesiredNamespace& desired);

}  // namespace okna::netns
