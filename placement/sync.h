#pragma once
// The apply layer: one pass makes Placement match a DesiredProviderTree, reading only what it
// does not already know and writing only what differs (every inventory PUT bumps the provider
// generation even when nothing changed, so an equal PUT is never sent). Writes carry the
// generation last seen; a 409 placement.concurrent_update re-reads and retries, bounded.

#include <map>
#include <optional>
#include <set>
#include <string>

#include "placement/client.h"
#include "placement/desired.h"
#include "placement/owned_traits.h"

namespace okna::placement {

/** A class whose reservation plus allocations exceed what it can offer. */
struct Overcommit {
  std::string resourceClass;
  std::int64_t total = 0;
  std::int64_t reserved = 0;
  std::int64_t used = 0;
  double allocationRatio = 1.0;
};

struct SyncCounters {
  unsigned providerWrites = 0;   // creations and deletions
  unsigned inventoryWrites = 0;  // inventory PUTs that succeeded
  unsigned traitWrites = 0;      // trait PUTs (provider traits and new custom traits)
  unsigned conflicts = 0;        // 409 placement.concurrent_update answers
};

class Syncer {
 public:
  Syncer(Api& api, OwnedTraitsStore& owned, int conflictRetries)
      : api_(api), owned_(owned), conflictRetries_(conflictRetries) {}

  /** One pass. On error the cache is dropped: the next pass re-reads the tree. */
  Task<core::Status> sync(const DesiredProviderTree& desired);
  /** Forget what is known of the server (periodic resync, Placement restarted). */
  void invalidate();
  const SyncCounters& counters() const { return counters_; }
  /** Set by a pass that raised a reservation or lowered a total and found the node over-committed.
   */
  const std::vector<Overcommit>& overcommitted() const { return overcommitted_; }
  /** The root's generation after the last pass (for status). */
  std::int64_t rootGeneration() const;

 private:
  struct ProviderState {
    Provider provider;
    // What the server had at the given generation (each view keeps its own generation).
    std::optional<InventoriesView> inventories;
    std::optional<TraitsView> traits;
  };

  Task<core::Status> pass(const DesiredProviderTree& desired);
  Task<core::Status> ensureTree(const DesiredProviderTree& desired);
  Task<core::Status> ensureResourceClasses(const Inventories& inventories);
  /** PUT `desired` for the classes `managed` accepts (others on the provider are kept). */
  Task<core::Status> syncInventories(ProviderState& state, const Inventories& desired,
                                     bool managesAllClasses);
  Task<core::Status> syncTraits(ProviderState& state, const Traits& desired, bool rootOwnership);
  Task<core::Result<Traits>> resolveTraits(const Traits& desired,
                                           const std::map<std::string, std::string>& alt);
  Task<core::Status> checkUsages(const ProviderState& root);

  Api& api_;
  OwnedTraitsStore& owned_;
  int conflictRetries_;
  bool versionChecked_ = false;
  // GET /traits, refreshed with every full re-read.
  std::optional<Traits> catalog_;
  std::set<std::string> classesCreated_;
  bool treeKnown_ = false;
  std::string rootUuid_;
  // Our providers only (the root and the hugepage children), by uuid.
  std::map<std::string, ProviderState> providers_;
  std::set<std::string> unknownTraitsReported_;
  SyncCounters counters_;
  std::vector<Overcommit> overcommitted_;
  bool checkUsages_ = false;
};

/** Equal for Placement's purposes (allocation ratios are stored as floats). */
bool sameInventories(const Inventories& a, const Inventories& b);

}  // namespace okna::placement
