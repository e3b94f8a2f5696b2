#pragma once
// What the agent has written to the local Open_vSwitch database, kept in that database itself
// (external_ids:openkeel-node-agent, compact JSON), so that it survives agent restarts and is
// updated in the same OVSDB transaction as the changes it records: when an input goes away the
// agent removes exactly what it added, and never what an operator or another tool set before it.
//
//   {"v":1,"cms":["enable-chassis-as-gw"],"mappings":["physnet1:br-ex"],
//    "keys":["ovn-cms-options"],"bridges":["br-ex"],"ports":[["br-ex","bond1"]],"drain":1700000000}

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace okna::ovsdb {

inline constexpr const char* kOwnershipKey = "openkeel-node-agent";

struct OwnershipRecord {
  // ovn-cms-options items the agent added (it found them absent).
  std::vector<std::string> cmsItems;
  // ovn-bridge-mappings items ("physnet:bridge") the agent added.
  std::vector<std::string> mappings;
  // external_ids keys that did not exist before the agent wrote them: deleted, rather than left
  // empty, when the agent's last item goes.
  std::vector<std::string> createdKeys;
  // Bridges the agent created (only these are ever deleted).
  std::vector<std::string> bridges;
  // {bridge, port} the agent added (only these are ever removed).
  std::vector<std::pair<std::string, std::string>> ports;
  // When the running planned gateway failover started (unix seconds; 0: none), so that a new
  // agent process continues it (gateway_drain.h).
  std::int64_t drainSince = 0;

  bool empty() const {
    return cmsItems.empty() && mappings.empty() && createdKeys.empty() && bridges.empty() &&
           ports.empty() && drainSince == 0;
  }
  bool operator==(const OwnershipRecord&) const = default;
};

std::string formatOwnership(const OwnershipRecord& record);
/** The error names what is wrong; an unknown newer "v" is an error (owning nothing is safe). */
core::Result<OwnershipRecord> parseOwnership(const std::string& text);

}  // namespace okna::ovsdb
