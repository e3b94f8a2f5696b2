#pragma once
// The availability-zone applier (issue #29 § 2): makes the node's host a member of Nova's
// aggregate az-<zone> (created when missing) and the root provider a member of the same
// aggregate in Placement, following the zone label; leaves only what it joined. Nothing is sent
// while the zone and what is known stay the same (steady state: 0 requests); a periodic resync
// forgets and reads again.

#include <optional>
#include <string>
#include <vector>

#include "placement/client.h"
#include "placement/nova_client.h"
#include "placement/owned_traits.h"
#include "placement/zones.h"

namespace okna::placement {

class ZoneSyncer {
 public:
  ZoneSyncer(NovaApi& nova, Api& placement, OwnedTraitsStore& store, int conflictRetries)
      : nova_(nova), placement_(placement), store_(store), conflictRetries_(conflictRetries) {}

  /**
   * One pass for `host` (the compute service's host: the node's name) and its root provider.
   * An error (Nova unreachable, 403, a zone name Nova refuses, a problem of ZonePlan) is for the
   * reconciler to report; inventories and traits do not wait on it.
   */
  Task<core::Status> sync(const std::optional<std::string>& zone, const std::string& host,
                          const std::string& rootUuid);
  /** Read everything again at the next pass (periodic resync, role change, failure). */
  void forget() { settled_ = false; }
  /** Requests sent to Nova / Placement that changed something (bench, tests). */
  unsigned novaWrites() const { return novaWrites_; }
  unsigned placementWrites() const { return placementWrites_; }

 private:
  Task<core::Status> mirror(const std::string& rootUuid, const std::optional<std::string>& before,
                            const std::optional<std::string>& after);

  NovaApi& nova_;
  Api& placement_;
  OwnedTraitsStore& store_;
  int conflictRetries_;
  bool settled_ = false;
  std::optional<std::string> settledZone_;
  std::string settledRoot_;
  unsigned novaWrites_ = 0;
  unsigned placementWrites_ = 0;
};

}  // namespace okna::placement
