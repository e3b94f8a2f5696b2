#pragma once
// The seam between the chassis reconciler (loop thread) and whatever writes OVSDB: in the agent
// the chassis participant on the transport (chassis_participant.h: ChassisTransportApplier); in
// unit tests a fake that records what was submitted and
// publishes the snapshots the test makes, so that the drain and readiness logic runs without an
// ovsdb-server.

#include <cstdint>
#include <functional>
#include <memory>

#include "chassis/chassis_diff.h"

namespace okna::ovsdb {

struct Snapshot;

class OvsdbApplier {
 public:
  /** Receives every new Snapshot, on any thread (the reconciler hops to its loop). */
  using SnapshotCallback = std::function<void(std::shared_ptr<const Snapshot>)>;

  virtual ~OvsdbApplier() = default;
  /** Connects; snapshots follow. */
  virtual void start() = 0;
  /** The new desired state and its generation (increasing). Never blocks long. */
  virtual void submit(const DesiredChassis& desired, std::uint64_t generation) = 0;
  /** Stops; no snapshot is published afterwards. OVSDB is left as it is. */
  virtual void stop() = 0;
};

/** Builds the applier that publishes to `onSnapshot`. */
using OvsdbApplierFactory =
    std::function<std::unique_ptr<OvsdbApplier>(OvsdbApplier::SnapshotCallback onSnapshot)>;

}  // namespace okna::ovsdb
