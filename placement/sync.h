#pragma once
// The apply layer: one pass makes Placement match a DesiredProviderTree, reading only what it
// does not already know and writing only what differs (every inventory PUT bumps the provider
// generation even when nothing changed, so an equal PUT is never sent). Writes carry the
// generation last seen; a 409 placement.concurrent_update re-reads and retries, bounded.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

  /**
   * One pass: the root first (inventories, traits), then the hugepage children, then the
   * deletion of children whose page size is gone, each on its own: a refused deletion (VMs still
   * use it) is recorded in refusedDeletions() and does not fail the pass. On error what is known
   * of the providers is dropped (the trait catalog is kept): the next pass re-reads them.
   */
  Task<core::Status> sync(const DesiredProviderTree& desired);
  /**
   * The node is no longer a hypervisor: COMPUTE_STATUS_DISABLED on its root provider (owned by
   * the agent when it adds it), nothing else changed. A node without a provider needs nothing.
   */
  Task<core::Status> close(const std::string& rootName, const std::string& rootUuid);
  /** Forget everything known of the server, the trait catalog included (periodic resync). */
  void invalidate();
  /** Forget what is known of the providers (after a failure, on a role change). */
  void forgetProviders();
  const SyncCounters& counters() const { return counters_; }
  /** Set by a pass that raised a reservation or lowered a total and found the node over-committed.
   */
  const std::vector<Overcommit>& overcommitted() const { return overcommitted_; }
  /** The root's generation after the last pass (for status). */
  std::int64_t rootGeneration() const;
  /** Children that should go but could not be deleted: name -> Placement's answer. */
  const std::map<std::string, std::string>& refusedDeletions() const { return refused_; }
  /**
   * What Placement refused and the agent works around until an operator or time fixes it, one
   * {Event reason, message} each: children it cannot delete (in use), cannot create (name
   * taken) or cannot rename back, classes kept closed on a provider while allocations use them.
   * Retried on their own backoff; none of them holds back the rest of a pass.
   */
  std::vector<std::pair<std::string, std::string>> notices() const;
  /** Set while a provider with the node's name but another uuid blocks the registration. */
  const std::optional<std::string>& staleProvider() const { return staleProvider_; }

 private:
  struct ProviderState {
    Provider provider;
    // What the server had at the given generation (each view keeps its own generation).
    std::optional<InventoriesView> inventories;
    std::optional<TraitsView> traits;
  };
  // What one provider should have. `inventories` null: leave them alone (closing).
  struct ProviderGoal {
    const Inventories* inventories = nullptr;
    // Classes whose allocation ratio is whatever the server has (no ratio configured).
    const std::set<std::string>* keepServerRatio = nullptr;
    // False for the children: their only class is the agent's.
    bool keepForeignClasses = false;
    Traits traits;
    // Traits are tracked in the owned-traits store (the root).
    bool ownership = false;
    // Closing: keep the agent's traits that are there and add `traits`.
    bool keepOwned = false;
  };

  Task<core::Status> syncOnce(const DesiredProviderTree& desired);
  Task<core::Status> closeOnce(const std::string& rootName, const std::string& rootUuid);
  Task<core::Status> prepare(bool needCatalog);
  Task<core::Status> ensureTree(const DesiredProviderTree& desired, bool create);
  Task<core::Status> ensureResourceClasses(const Inventories& inventories);
  /** Brings one provider to `goal`; the one place that handles 409 concurrent_update. */
  Task<core::Status> syncProvider(ProviderState& state, const ProviderGoal& goal);
  Inventories inventoriesWanted(const ProviderState& state, const ProviderGoal& goal) const;
  Traits traitsWanted(const ProviderState& state, const ProviderGoal& goal, Traits& nowOwned) const;
  Task<core::Result<Traits>> resolveTraits(const Traits& desired,
                                           const std::map<std::string, std::string>& alt);
  Task<void> deleteObsolete();
  /** An obsolete child Placement refuses to delete: its inventories lowered to what is used. */
  Task<std::string> shrinkToAllocations(const Provider& child);
  /** Classes kept closed on `state` (in use): their totals follow the usages, freed ones go. */
  Task<core::Status> refreshRetained(const ProviderState& state);
  /** After 409 inventory.inuse: the removed classes still in use are kept, closed. */
  Task<core::Status> retainInUse(const ProviderState& state, const Inventories& want);
  Task<core::Status> createChild(const DesiredProvider& child, const std::string& rootUuid);
  Task<std::string> staleProviderMessage(const std::string& name, const std::string& rootUuid,
                                         const Provider& holder);
  Task<core::Status> checkUsages(const ProviderState& root);

  Api& api_;
  OwnedTraitsStore& owned_;
  int conflictRetries_;
  bool versionChecked_ = false;
  // GET /traits, refreshed with every periodic resync (not after failures: it is ~9 KB).
  std::optional<Traits> catalog_;
  std::set<std::string> classesCreated_;
  bool treeKnown_ = false;
  std::string rootUuid_;
  // Our providers only (the root and the hugepage children), by uuid.
  std::map<std::string, ProviderState> providers_;
  // Our children whose page size is gone, to delete.
  std::vector<Provider> obsolete_;
  std::map<std::string, std::string> refused_;
  // Wanted children Placement would not create (child name -> why) or rename back (uuid -> why).
  std::map<std::string, std::string> creationRefused_;
  std::map<std::string, std::string> renameRefused_;
  // Classes the plan removed but allocations still use, kept closed: provider uuid -> class ->
  // the inventory sent (total = reserved = what is used); with the provider's name for messages.
  std::map<std::string, Inventories> retained_;
  std::map<std::string, std::string> retainedNames_;
  std::optional<std::string> staleProvider_;
  std::set<std::string> unknownTraitsReported_;
  SyncCounters counters_;
  std::vector<Overcommit> overcommitted_;
  bool checkUsages_ = false;
};

/** Equal for Placement's purposes (allocation ratios are stored as floats). */
bool sameInventories(const Inventories& a, const Inventories& b);

}  // namespace okna::placement
