#pragma once
// Who is asking: the VIF port of a network that owns a client IP. The agent implements this from
// its OVN Southbound index (Port_Binding mac[0] addresses of the network's datapath); the proxy
// only consumes it. Lookups run on the event loop and must not block or scan.
//
// An InstancePort views the lookup's own rows (no copy per request): valid until the event loop
// runs another handler. The proxy copies what it keeps beyond the handler that looked it up.

#include <string>
#include <string_view>

namespace okna::metadata {

struct InstancePort {
  // Port_Binding.logical_port (the Neutron port id), for logs.
  std::string_view logicalPort;
  // external_ids:neutron:device_id: the Nova instance uuid (X-Instance-ID).
  std::string_view deviceId;
  // external_ids:neutron:project_id (X-Tenant-ID).
  std::string_view projectId;
  // Why the port must not be served (metadata/sb_values.h): its VM gets 404 and the log names the
  // port. Empty when its values passed the checks; only then are they fit for a header.
  std::string_view problem;
};

struct LookupResult {
  // How many bound VIF ports of the network list the IP: only 1 identifies an instance; 0 or
  // more than 1 are answered 404 (and logged as Neutron logs them).
  int matches = 0;
  // The port when matches == 1.
  InstancePort port;
  // When matches > 1: the matching Port_Binding uuids, joined by ", " (Neutron logs them).
  std::string portUuids;
};

class PortLookup {
 public:
  virtual ~PortLookup() = default;
  virtual LookupResult lookup(const std::string& networkId, const std::string& clientIp) const = 0;
};

}  // namespace okna::metadata
