#pragma once
// What the agent has written to the local Open_vSwitch database, kept in that database itself
// (external_ids:openkeel-node-agent, compact JSON), so that it survives agent restarts and is
// updated in the same OVSDB transaction as the changes it records: when an input goes away the
// agent removes exactly what it added, and never what an operator or another tool set before it.
//
//   {"v":1,"cms":["enable-chassis-as-gw"],"mappings":["physnet1:br-ex"],
//    "keys":["ovn-cms-options"],"bridges":["br-ex"],"ports":[["br-ex","bond1"]],"drain":1700000000}
//
// The record is precious: without it the agent cannot tell its items from an operator's, so
// removing the network role would leave the node a gateway for ever. A second copy lives outside
// OVSDB (OwnershipCopy: the IDL thread's memory while the agent runs, the state file of
// ownership_state_file.h across restarts); chassis_diff recovers from it when the record is
// deleted or garbled, and marks the ownership "lost" ("lost":true) when no copy is left, until
// the operator adopts (AdoptOwnership).

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
  // The record was found deleted or unreadable with no copy left: what the agent owned before is
  // unknown (only what it added since is listed). Kept, and reported, until the operator adopts.
  bool lost = false;

  bool empty() const {
    return cmsItems.empty() && mappings.empty() && createdKeys.empty() && bridges.empty() &&
           ports.empty() && drainSince == 0 && !lost;
  }
  bool operator==(const OwnershipRecord&) const = default;
};

/** The agent's own copy of the record, outside OVSDB. */
struct OwnershipCopy {
  enum class State {
    // No copy: the agent's first start on this host, or the state file was removed.
    None,
    // `record` is what the agent owned (possibly nothing) when the copy was taken.
    Known,
    // The copy exists but cannot be read (`error`).
    Unreadable,
  };
  State state = State::None;
  OwnershipRecord record;
  // Where the copy is, for messages: "the agent's memory", "state file /var/lib/...".
  std::string where;
  std::string error;
  bool operator==(const OwnershipCopy&) const = default;
};

/** The operator's answer to a lost ownership (Node annotation kAdoptOwnershipKey). */
enum class AdoptOwnership {
  No,
  // "true": the items the Node asks for that are present become the agent's.
  Adopt,
  // "none": they stay someone else's; the agent owns only what it added since the loss.
  Disown,
};

std::string formatOwnership(const OwnershipRecord& record);
/** The error names what is wrong; an unknown newer "v" is an error (owning nothing is safe). */
core::Result<OwnershipRecord> parseOwnership(const std::string& text);

}  // namespace okna::ovsdb
