#pragma once
// What must change in the local Open_vSwitch database to make it what DesiredChassis says,
// touching only what the ownership record (ownership.h) says the agent added. Pure.
//
// List-valued keys (ovn-cms-options, ovn-bridge-mappings) are comma-separated lists that other
// tools write too. The new value is computed from the OBSERVED value: foreign items stay byte for
// byte and in place, an owned item that changed (availability-zones=a -> =b) is replaced in
// place, new items are appended. A foreign item with the same key as ours (another
// availability-zones=, another bridge for the same physnet) is never overridden: the diff reports
// a conflict instead. The transaction verifies external_ids, so a concurrent writer makes it fail
// with TRY_AGAIN and the diff is recomputed from the new value.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "chassis/chassis_desired.h"
#include "chassis/ownership.h"
#include "ovsdb/ovs_ops.h"

namespace okna::ovsdb {

/** How the diff found what the agent owns (ownership.h). */
struct OwnershipOutcome {
  enum class Kind {
    // The record in OVSDB (or no record, and nothing suggests one was lost).
    Recorded,
    // The record was deleted or unreadable; the copy was used and the record is rewritten.
    Recovered,
    // Deleted or unreadable with no copy left (or marked lost): the agent owns only what it added
    // since; reported until the operator adopts.
    Lost,
    // The operator's annotation answered a loss.
    Adopted,
    Disowned,
  };
  Kind kind = Kind::Recorded;
  std::string message;
  bool operator==(const OwnershipOutcome&) const = default;
};

struct ChassisOps {
  // In application order (one OVSDB transaction): bridges, ports, keys, then removals, then
  // the ownership record.
  std::vector<OvsOp> ops;
  // The record after the ops (also written by them when it changed).
  OwnershipRecord owned;
  // Why something desired was not done or something owned not removed (yet): conflicts with
  // foreign state, a bridge that still has foreign ports, an unreadable ownership record.
  std::vector<std::string> notes;
  OwnershipOutcome ownership;
  // The transaction must verify these columns (a concurrent writer -> TRY_AGAIN -> recompute).
  bool verifyExternalIds = false;
  bool verifyBridges = false;

  bool empty() const { return ops.empty(); }
};

/** `copy`: the record's copy used when the one in OVSDB is missing or unreadable (the overload
 *  without it uses desired.ownershipCopy, the state file's). */
ChassisOps diffChassis(const DesiredChassis& desired, const ObservedOvs& observed,
                       const OwnershipCopy& copy);
ChassisOps diffChassis(const DesiredChassis& desired, const ObservedOvs& observed);

/** The bridges and ports the agent wants that ovs-vswitchd failed to create, one line each
 *  ("bridge br-ex port bond1: could not open network device bond1 (No such device)"). */
std::vector<std::string> failedInterfaces(const DesiredChassis& desired,
                                          const ObservedOvs& observed);

}  // namespace okna::ovsdb
