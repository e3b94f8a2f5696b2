// libFuzzer target: the Southbound values a tenant controls, from where they enter the agent
// (ovsdb/idl_thread.cc readMetadataView: sbPortProblem on each Port_Binding) through the
// metadata planner (planMetadata: namespaces and interfaces to create) to the request the proxy
// would send Nova for a port (buildNovaRequest).
//
// Input: fields separated by NUL (an OVSDB string reaches the agent as a C string, so it never
// holds one). Missing fields are empty.
//   field 0        header: byte 0 = number of ports (mod 9), byte 1 = flags (bit 0: not synced,
//                  bit 1: IPv6 off, bit 2: metadata not enabled)
//   7 per port     control, logical_port, type, mac[0], neutron:cidrs, neutron:device_id,
//                  neutron:project_id. Control byte 0: bit 0 bound here (chassis), bit 1
//                  additional_chassis, bits 2-4 the datapath: 0-3 dp0..dp3, 4 none, 5-7 "dp9"
//                  (no Datapath_Binding), bit 5 neutron:device_owner is not network:distributed
//                  (an ovn-octavia health-monitor localport)
//   then up to 4   the external_ids:name of dp0, dp1, dp2, dp3 (a datapath whose field is
//                  missing has no name)
// tests/fuzz/make_corpus.py writes inputs in this layout.
//
// Invariants (any broken one aborts):
//   - a port without a problem has only printable ASCII in its values (no space in the ids),
//     within their length limits; a VIF of it with a device_id has a UUID device_id and a token
//     project id;
//   - every planned network id passes isSafeNetworkId and comes from a hosted datapath's name;
//     the namespace name is ovnmeta-<id>, a single file name under /run/netns (no '/', not "."
//     or "..", no control character, at most NAME_MAX bytes); the two interface names are what
//     Linux accepts (dev_valid_name: 1 to IFNAMSIZ-1 = 15 bytes, no '/', ':' or whitespace,
//     not "." or ".."), and differ; the MAC and addresses are well-formed;
//   - the index only points at the plan's own rows, VIFs bound here, of planned networks;
//   - the warnings hold no control character or non-ASCII byte (they go to the log);
//   - for every port without a problem that is a VIF with a device_id, and for every client the
//     index resolves to exactly one servable port, the request to Nova passes
//     core::requestFramingProblem and carries the port's device_id and project id verbatim
//     (a device_id "<uuid>\r\n\r\nGET / HTTP/1.1" must have been refused by sbPortProblem).

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/http_fields.h"
#include "core/shared_value.h"
#include "metadata/config.h"
#include "metadata/metadata_ports.h"
#include "metadata/planner.h"
#include "metadata/proxy.h"
#include "metadata/sb_values.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using okna::fuzz::quoted;
using okna::ovsdb::SbPort;

constexpr std::size_t kMaxPorts = 8;
constexpr std::size_t kDatapaths = 4;
constexpr std::size_t kIfNameMax = 15;  // IFNAMSIZ - 1
constexpr std::size_t kNameMax = 255;   // NAME_MAX: a file under /run/netns

constexpr std::string_view kSignature =
    "2f1b5c3e9a0d4e6f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f";

const okna::metadata::NovaEndpoint& nova() {
  static const okna::metadata::NovaEndpoint endpoint =
      okna::metadata::makeNovaEndpoint(okna::metadata::NovaConfig{});
  return endpoint;
}

bool isVif(const SbPort& p) {
  return p.type.empty() || p.type == "external";
}

bool printableAscii(std::string_view s, bool spaces) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || (c == ' ' && !spaces)) return false;
  }
  return true;
}

// Linux's dev_valid_name (net/core/dev.c).
bool isValidIfName(std::string_view name) {
  if (name.empty() || name.size() > kIfNameMax || name == "." || name == "..") return false;
  for (const char c : name)
    if (c == '/' || c == ':' || c == ' ' || (c >= '\t' && c <= '\r')) return false;
  return true;
}

bool isMac(std::string_view s) {
  if (s.size() != 17) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (i % 3 == 2 ? c != ':' : !hex) return false;
  }
  return true;
}

// "a.b.c.d/len" with len 0 to 32, or one of the two metadata addresses.
bool isPlannedAddress(const std::string& address, bool ipv6) {
  if (address == std::string(okna::metadata::kMetadataIpv4) + "/32") return true;
  if (address == std::string(okna::metadata::kMetadataIpv6) + "/64") return ipv6;
  const auto slash = address.find('/');
  if (slash == std::string::npos) return false;
  in_addr a{};
  if (inet_pton(AF_INET, address.substr(0, slash).c_str(), &a) != 1) return false;
  const std::string len = address.substr(slash + 1);
  if (len.empty() || len.size() > 2 || len.find_first_not_of("0123456789") != std::string::npos)
    return false;
  return std::stoi(len) <= 32;
}

// The request to Nova for `port` as server.cc builds it, and what must hold of it.
void checkNovaRequest(const SbPort& port) {
  const okna::metadata::InstancePort instance{port.logicalPort, port.deviceId, port.projectId,
                                              port.problem};
  const auto built = okna::metadata::buildNovaRequest(
      nova(), "GET", "/openstack/latest/meta_data.json", "", "10.0.0.5", instance, kSignature);
  const std::string problem = okna::core::requestFramingProblem(built);
  FUZZ_CHECK(problem.empty(), "a served port's request to Nova is refused: " + problem +
                                  "; device_id " + quoted(port.deviceId) + " project_id " +
                                  quoted(port.projectId));
  FUZZ_CHECK(built.headers.at("X-Instance-ID") == port.deviceId, "X-Instance-ID changed");
  FUZZ_CHECK(built.headers.at("X-Tenant-ID") == port.projectId, "X-Tenant-ID changed");
}

void checkPort(const SbPort& port) {
  FUZZ_CHECK(port.problem == okna::ovsdb::sbPortProblem(port), "sbPortProblem is not stable");
  if (!port.problem.empty()) return;
  const std::string who = "port " + quoted(port.logicalPort, 60) + " has no problem but ";
  FUZZ_CHECK(printableAscii(port.logicalPort, false) && port.logicalPort.size() <= 255,
             who + "logical_port " + quoted(port.logicalPort));
  FUZZ_CHECK(printableAscii(port.type, false) && port.type.size() <= 255,
             who + "type " + quoted(port.type));
  FUZZ_CHECK(printableAscii(port.deviceId, false) && port.deviceId.size() <= 255,
             who + "device_id " + quoted(port.deviceId));
  FUZZ_CHECK(printableAscii(port.projectId, false) && port.projectId.size() <= 255,
             who + "project_id " + quoted(port.projectId));
  FUZZ_CHECK(printableAscii(port.mac0, true) && port.mac0.size() <= 8192,
             who + "mac " + quoted(port.mac0));
  FUZZ_CHECK(printableAscii(port.cidrs, true) && port.cidrs.size() <= 8192,
             who + "cidrs " + quoted(port.cidrs));
  if (isVif(port) && !port.deviceId.empty()) {
    FUZZ_CHECK(okna::ovsdb::isUuid(port.deviceId), who + "device_id " + quoted(port.deviceId));
    FUZZ_CHECK(okna::ovsdb::isProjectId(port.projectId) && !port.projectId.empty(),
               who + "project_id " + quoted(port.projectId));
    checkNovaRequest(port);
  }
}

void checkPlan(const okna::ovsdb::SbMetadataView& view, const okna::metadata::MetadataPlan& plan,
               bool ipv6) {
  const auto& rows = *plan.rows;
  FUZZ_CHECK(plan.rows.sameAs(view.rows), "the plan does not share the view's rows");
  FUZZ_CHECK(plan.synced == (view.enabled && view.synced), "synced differs from the view");

  for (const auto& [id, network] : plan.networks) {
    const auto& n = *network;
    const std::string what = "network " + quoted(id, 80) + ": ";
    FUZZ_CHECK(n.networkId == id, what + "keyed by another id " + quoted(n.networkId));
    FUZZ_CHECK(okna::ovsdb::isSafeNetworkId(id), what + "not a safe network id");
    const auto name = rows.datapathNames.find(n.datapath);
    FUZZ_CHECK(name != rows.datapathNames.end() &&
                   okna::metadata::networkIdFromDatapathName(name->second) == id,
               what + "not the name of its datapath " + quoted(n.datapath));

    FUZZ_CHECK(n.namespaceName == "ovnmeta-" + id, what + "namespace " + quoted(n.namespaceName));
    FUZZ_CHECK(n.namespaceName.size() <= kNameMax, what + "namespace name too long");
    FUZZ_CHECK(n.namespaceName.find('/') == std::string::npos, what + "'/' in the namespace name");
    FUZZ_CHECK(n.namespaceName.find("..") == std::string::npos, what + "\"..\" in the namespace");
    FUZZ_CHECK(printableAscii(n.namespaceName, false),
               what + "namespace " + quoted(n.namespaceName));
    for (const std::string* iface : {&n.hostIface, &n.innerIface}) {
      FUZZ_CHECK(isValidIfName(*iface), what + "interface name " + quoted(*iface));
      FUZZ_CHECK(iface->find("..") == std::string::npos && printableAscii(*iface, false),
                 what + "interface name " + quoted(*iface));
      FUZZ_CHECK(iface->starts_with("tap"), what + "interface name " + quoted(*iface));
    }
    FUZZ_CHECK(n.hostIface != n.innerIface, what + "both veth ends are " + quoted(n.hostIface));

    // The metadata port: a localport of the datapath owned by network:distributed (never an
    // ovn-octavia health-monitor port), without a problem.
    bool found = false;
    for (const auto& p : rows.ports)
      found = found || (p.type == "localport" && p.datapath == n.datapath &&
                        p.deviceOwner == okna::metadata::kMetadataPortOwner &&
                        p.logicalPort == n.metadataPort && p.problem.empty());
    FUZZ_CHECK(found, what + "metadata port " + quoted(n.metadataPort) + " is no clean localport");
    FUZZ_CHECK(isMac(n.mac), what + "MAC " + quoted(n.mac));
    FUZZ_CHECK(!n.addresses.empty(), what + "no address");
    for (const auto& address : n.addresses)
      FUZZ_CHECK(isPlannedAddress(address, ipv6), what + "address " + quoted(address));
  }

  for (const auto& [id, byKey] : plan.index) {
    FUZZ_CHECK(plan.networks.count(id) == 1, "index of an unplanned network " + quoted(id));
    for (const auto& [key, ports] : byKey) {
      FUZZ_CHECK(!ports.empty(), "an empty index entry " + quoted(key));
      for (const SbPort* p : ports) {
        FUZZ_CHECK(p >= rows.ports.data() && p < rows.ports.data() + rows.ports.size(),
                   "the index points outside the plan's rows");
        FUZZ_CHECK(isVif(*p) && (p->onChassis || p->onAdditional),
                   "the index lists a port that is no VIF bound here: " + quoted(p->logicalPort));
      }
      // agent/metadata_service.cc lookup + server.cc handleRequest: one match is served when it
      // has no problem and a device_id.
      if (ports.size() == 1 && ports[0]->problem.empty() && !ports[0]->deviceId.empty())
        checkNovaRequest(*ports[0]);
    }
  }

  for (const auto& warning : plan.warnings)
    FUZZ_CHECK(printableAscii(warning, true), "a warning for the log holds " + quoted(warning));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> fields;
  for (std::size_t at = 0; at <= input.size();) {
    const std::size_t end = std::min(input.find('\0', at), input.size());
    fields.push_back(input.substr(at, end - at));
    at = end + 1;
  }
  std::size_t next = 0;
  const auto field = [&]() -> std::string {
    return next < fields.size() ? std::string(fields[next++]) : std::string();
  };

  const std::string header = field();
  const std::size_t portCount =
      header.empty() ? 0 : static_cast<unsigned char>(header[0]) % (kMaxPorts + 1);
  const unsigned flags = header.size() > 1 ? static_cast<unsigned char>(header[1]) : 0;

  okna::ovsdb::SbRows rows;
  for (std::size_t i = 0; i < portCount; ++i) {
    const std::string control = field();
    const unsigned bits = control.empty() ? 0 : static_cast<unsigned char>(control[0]);
    SbPort port;
    // Sorted by uuid, as readMetadataView sorts them.
    port.uuid = "00000000-0000-4000-8000-00000000000" + std::to_string(i);
    port.onChassis = (bits & 1) != 0;
    port.onAdditional = (bits & 2) != 0;
    const unsigned dp = (bits >> 2) & 7;
    port.datapath = dp < kDatapaths ? "dp" + std::to_string(dp) : dp == 4 ? "" : "dp9";
    port.logicalPort = field();
    port.type = field();
    port.mac0 = field();
    port.cidrs = field();
    port.deviceId = field();
    port.projectId = field();
    port.deviceOwner = (bits & 32) != 0 ? "network:f5" : okna::metadata::kMetadataPortOwner;
    // Tenant values, checked where they enter the agent, as ovsdb/idl_thread.cc does.
    port.problem = okna::ovsdb::sbPortProblem(port);
    rows.ports.push_back(std::move(port));
  }
  for (std::size_t dp = 0; dp < kDatapaths && next < fields.size(); ++dp)
    rows.datapathNames["dp" + std::to_string(dp)] = field();

  for (const auto& port : rows.ports) checkPort(port);

  okna::ovsdb::SbMetadataView view;
  view.enabled = (flags & 4) == 0;
  view.synced = (flags & 1) == 0;
  view.notSyncedReason = view.synced ? "" : "waiting for the first Southbound contents";
  view.chassisUuid = "5b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3";
  view.rows = okna::core::SharedValue<okna::ovsdb::SbRows>(std::move(rows));
  view.version = 1;
  const bool ipv6 = (flags & 2) == 0;

  const auto plan = okna::metadata::planMetadata(view, ipv6);
  checkPlan(view, plan, ipv6);
  return 0;
}
