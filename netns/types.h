#pragma once
// What a metadata namespace should look like (DesiredNamespace) and what the kernel has
// (ObservedNamespace). Names follow Neutron's ML2/OVN metadata agent exactly, so that a host set
// up by Neutron's Python agent, or by an earlier run of this agent, is adopted as it is.

#include <string>
#include <vector>

#include "core/result.h"

namespace okna::netns {

/** Prefix of every namespace the metadata service owns; only these are ever listed or pruned. */
inline constexpr const char* kMetadataPrefix = "ovnmeta-";

struct DesiredNamespace {
  // Network namespace name (a file under /run/netns).
  std::string name;
  // Veth end that stays in the host namespace (OVS plugs it into br-int).
  std::string hostIface;
  // Veth end inside the namespace, carrying the metadata port's MAC and addresses.
  std::string innerIface;
  // Lower-case "aa:bb:cc:dd:ee:ff".
  std::string mac;
  // Canonical CIDRs ("10.0.0.2/24", "fe80::a9fe:a9fe/64"): exactly these on the inner end.
  std::vector<std::string> addresses;
};

struct ObservedNamespace {
  // /run/netns/<name> is a mounted network namespace.
  bool exists = false;
  bool loopbackUp = false;
  bool hostIfaceExists = false;
  bool hostIfaceUp = false;
  // The inner end exists, in the namespace or (a half-done creation) in the host namespace.
  bool innerIfaceExists = false;
  bool innerIfaceInNamespace = false;
  // The host end and the inner end are the two ends of one veth pair.
  bool vethPeered = false;
  // Of the inner end, wherever it is; lower-case.
  std::string innerMac;
  bool innerIfaceUp = false;
  // Canonical CIDRs on the inner end inside the namespace (including the kernel's link-local).
  std::vector<std::string> innerAddresses;
  // tx checksumming, TSO and GSO are all off on the inner end.
  bool offloadsOff = false;
};

/**
 * The namespace Neutron's ML2/OVN metadata agent provisions for `networkId`: `ovnmeta-<id>`,
 * veth `tap<id[0:10]>0` (host) / `tap<id[0:10]>1` (inner). Validates the network id (non-empty,
 * no '/', no NUL, at most 200 characters), the MAC and each address; the error names the field.
 */
core::Result<DesiredNamespace> metadataNamespaceFor(const std::string& networkId,
                                                    const std::string& mac,
                                                    const std::vector<std::string>& addresses);

/** "10.0.0.2/24" -> canonical text (inet_ntop form, prefix required and in range). */
core::Result<std::string> canonicalCidr(const std::string& cidr);

/** "AA:bb:..." -> "aa:bb:...", or an error when not six hex octets separated by ':'. */
core::Result<std::string> canonicalMac(const std::string& mac);

/** The kernel's EUI-64 IPv6 link-local address for `mac`, as a canonical CIDR ("fe80::.../64"). */
std::string eui64LinkLocal(const std::string& mac);

/** The host veth end the agent creates for namespace `name` ("" if not an ovnmeta- name). */
std::string hostIfaceForNamespace(const std::string& name);

}  // namespace okna::netns
