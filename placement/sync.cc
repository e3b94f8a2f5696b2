#include "placement/sync.h"

#include <cmath>

#include "core/logging.h"

namespace okna::placement {

namespace {

auto log() {
  return core::logger("placement");
}

// The classes the agent owns on the root; anything else there (set by another tool) is kept.
bool managedOnRoot(const std::string& rc) {
  return rc == "VCPU" || rc == "PCPU" || rc == "MEMORY_MB" || rc.starts_with("CUSTOM_HUGEPAGES_");
}

// A child the agent made: named "<node>:hugepages-<size>" with the uuid derived from both.
bool isOurChild(const Provider& p, const std::string& rootName, const std::string& rootUuid) {
  const std::string prefix = rootName + ":hugepages-";
  return p.parentUuid == rootUuid && p.name.starts_with(prefix) &&
         p.uuid == uuid5(rootUuid + "/" + p.name.substr(rootName.size() + 1));
}

}  // namespace

bool sameInventories(const Inventories& a, const Inventories& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    const Inventory& x = ia->second;
    const Inventory& y = ib->second;
    if (ia->first != ib->first || x.total != y.total || x.reserved != y.reserved ||
        x.minUnit != y.minUnit || x.maxUnit != y.maxUnit || x.stepSize != y.stepSize)
      return false;
    if (std::fabs(x.allocationRatio - y.allocationRatio) >
        1e-6 * std::max(1.0, std::fabs(y.allocationRatio)))
      return false;
  }
  return true;
}

void Syncer::invalidate() {
  forgetProviders();
  catalog_.reset();
}

void Syncer::forgetProviders() {
  treeKnown_ = false;
  providers_.clear();
  obsolete_.clear();
}

std::int64_t Syncer::rootGeneration() const {
  auto it = providers_.find(rootUuid_);
  if (it == providers_.end()) return -1;
  std::int64_t g = -1;
  if (it->second.inventories) g = std::max(g, it->second.inventories->generation);
  if (it->second.traits) g = std::max(g, it->second.traits->generation);
  return g;
}

Task<core::Status> Syncer::prepare(bool needCatalog) {
  if (!versionChecked_) {
    auto v = co_await api_.maxMicroversion();
    if (!v) co_return v.error();
    if (!microversionAtLeast(*v, kRequiredMicroversion))
      co_return core::makeError("Placement supports microversions up to " + *v +
                                "; the agent needs " + kRequiredMicroversion +
                                " (Placement from OpenStack Rocky on)");
    versionChecked_ = true;
  }
  if (needCatalog && !catalog_) {
    auto t = co_await api_.allTraits();
    if (!t) co_return t.error();
    catalog_ = std::move(*t);
  }
  co_return core::Status{};
}

Task<core::Status> Syncer::sync(const DesiredProviderTree& desired) {
  overcommitted_.clear();
  checkUsages_ = false;
  core::Status status = co_await syncOnce(desired);
  if (!status) forgetProviders();
  co_return status;
}

Task<core::Status> Syncer::syncOnce(const DesiredProviderTree& desired) {
  if (desired.root.uuid.empty())
    co_return core::makeError("node " + desired.root.name + " has no uid");
  if (auto s = co_await prepare(true); !s) co_return s;
  if (auto s = co_await ensureTree(desired, true); !s) co_return s;
  // The root first: its reservations and cordon state must never wait on a child.
  if (auto s = co_await ensureResourceClasses(desired.root.inventories); !s) co_return s;
  auto rootTraits = co_await resolveTraits(desired.root.traits, desired.traitAlternatives);
  if (!rootTraits) co_return rootTraits.error();
  ProviderGoal rootGoal{&desired.root.inventories,
                        &desired.root.ratioFromServer,
                        true,
                        std::move(*rootTraits),
                        true,
                        false};
  if (auto s = co_await syncProvider(providers_.at(desired.root.uuid), rootGoal); !s) co_return s;
  for (const auto& child : desired.nested) {
    auto traits = co_await resolveTraits(child.traits, {});
    if (!traits) co_return traits.error();
    ProviderGoal goal{
        &child.inventories, &child.ratioFromServer, false, std::move(*traits), false, false};
    if (auto s = co_await syncProvider(providers_.at(child.uuid), goal); !s) co_return s;
  }
  // Last and on their own: a child still in use must not hold the rest back.
  co_await deleteObsolete();
  if (checkUsages_) co_return co_await checkUsages(providers_.at(desired.root.uuid));
  co_return core::Status{};
}

Task<core::Status> Syncer::close(const std::string& rootName, const std::string& rootUuid) {
  core::Status status = co_await closeOnce(rootName, rootUuid);
  if (!status) forgetProviders();
  co_return status;
}

Task<core::Status> Syncer::closeOnce(const std::string& rootName, const std::string& rootUuid) {
  if (rootUuid.empty()) co_return core::Status{};
  // COMPUTE_STATUS_DISABLED is a standard trait: no need for the catalog.
  if (auto s = co_await prepare(false); !s) co_return s;
  DesiredProviderTree tree;
  tree.root.name = rootName;
  tree.root.uuid = rootUuid;
  if (auto s = co_await ensureTree(tree, false); !s) co_return s;
  auto root = providers_.find(rootUuid);
  // Never registered (or deleted by the operator): nothing to close.
  if (root == providers_.end()) co_return core::Status{};
  ProviderGoal goal;
  goal.traits = {kDisabledTrait};
  goal.ownership = true;
  goal.keepOwned = true;
  co_return co_await syncProvider(root->second, goal);
}

Task<core::Status> Syncer::ensureTree(const DesiredProviderTree& d, bool create) {
  if (treeKnown_ && rootUuid_ == d.root.uuid) {
    bool complete = true;
    for (const auto& child : d.nested) complete = complete && providers_.count(child.uuid) > 0;
    if (!create || (complete && providers_.size() == d.nested.size() + 1)) co_return core::Status{};
  }
  providers_.clear();
  obsolete_.clear();
  rootUuid_ = d.root.uuid;
  auto tree = co_await api_.providersInTree(d.root.uuid);
  if (!tree) co_return tree.error();
  bool haveRoot = false;
  for (const auto& p : *tree) {
    if (p.uuid == d.root.uuid) {
      haveRoot = true;
      providers_[p.uuid].provider = p;
    } else if (isOurChild(p, d.root.name, d.root.uuid)) {
      bool wanted = false;
      for (const auto& child : d.nested) wanted = wanted || child.uuid == p.uuid;
      if (wanted) {
        providers_[p.uuid].provider = p;
      } else if (create) {
        obsolete_.push_back(p);
      }
    }
  }
  if (haveRoot) staleProvider_.reset();
  if (!haveRoot && create) {
    // A provider with the node's name but another uuid is a previous incarnation of the node
    // (deleted and re-joined): it may still hold allocations of VMs, so it is neither adopted
    // nor deleted. An operator decides.
    auto byName = co_await api_.providerByName(d.root.name);
    if (!byName) co_return byName.error();
    if (*byName) {
      staleProvider_ =
          "a resource provider named " + d.root.name + " already exists with uuid " +
          (*byName)->uuid + ", but Node " + d.root.name + " has uid " + d.root.uuid +
          " (the Node was re-created?). The agent neither adopts nor deletes it: move or "
          "delete its allocations, then `openstack resource provider delete " +
          (*byName)->uuid + "`, and the agent registers the node again";
      co_return core::makeError(*staleProvider_, 409);
    }
    staleProvider_.reset();
    auto created = co_await api_.createProvider(d.root.name, d.root.uuid, "");
    if (!created) co_return created.error();
    ++counters_.providerWrites;
    log()->info("created resource provider {} (uuid {})", d.root.name, d.root.uuid);
    // A new provider has nothing: no read is needed before the first writes.
    providers_[d.root.uuid] = {*created, InventoriesView{created->generation, {}},
                               TraitsView{created->generation, {}}};
  }
  if (create) {
    for (const auto& child : d.nested) {
      if (providers_.count(child.uuid)) continue;
      auto created = co_await api_.createProvider(child.name, child.uuid, d.root.uuid);
      if (!created) co_return created.error();
      ++counters_.providerWrites;
      log()->info("created nested resource provider {} (uuid {})", child.name, child.uuid);
      providers_[child.uuid] = {*created, InventoriesView{created->generation, {}},
                                TraitsView{created->generation, {}}};
    }
  }
  treeKnown_ = true;
  co_return core::Status{};
}

Task<void> Syncer::deleteObsolete() {
  for (auto it = obsolete_.begin(); it != obsolete_.end();) {
    // A page size the node no longer offers. Refused (409 resource_provider.inuse) while VMs
    // still use it: recorded, reported once, and retried by later passes.
    auto s = co_await api_.deleteProvider(it->uuid);
    if (s) {
      ++counters_.providerWrites;
      log()->info("deleted nested resource provider {} (uuid {}): the node no longer offers it",
                  it->name, it->uuid);
      refused_.erase(it->name);
      it = obsolete_.erase(it);
      continue;
    }
    auto& reported = refused_[it->name];
    if (reported != s.error().message)
      log()->warn(
          "cannot delete nested resource provider {} (the node no longer has that page size; "
          "retried): {}",
          it->name, s.error().message);
    reported = s.error().message;
    ++it;
  }
}

Task<core::Status> Syncer::ensureResourceClasses(const Inventories& inventories) {
  for (const auto& [rc, inv] : inventories) {
    if (!rc.starts_with("CUSTOM_") || classesCreated_.count(rc)) continue;
    if (auto s = co_await api_.createResourceClass(rc); !s) co_return s;
    classesCreated_.insert(rc);
  }
  co_return core::Status{};
}

Inventories Syncer::inventoriesWanted(const ProviderState& state, const ProviderGoal& goal) const {
  const Inventories& have = state.inventories->inventories;
  Inventories want;
  if (goal.keepForeignClasses)
    for (const auto& [rc, inv] : have)
      if (!managedOnRoot(rc)) want[rc] = inv;
  for (const auto& [rc, inv] : *goal.inventories) {
    Inventory w = inv;
    auto old = have.find(rc);
    if (old != have.end()) {
      if (goal.keepServerRatio && goal.keepServerRatio->count(rc)) {
        w.allocationRatio = old->second.allocationRatio;
      } else if (std::fabs(old->second.allocationRatio - w.allocationRatio) >
                 1e-6 * std::max(1.0, w.allocationRatio)) {
        log()->info("{} allocation_ratio on {} is {} in Placement; setting the configured {}", rc,
                    state.provider.name, old->second.allocationRatio, w.allocationRatio);
      }
    }
    want[rc] = w;
  }
  return want;
}

Traits Syncer::traitsWanted(const ProviderState& state, const ProviderGoal& goal,
                            Traits& nowOwned) const {
  const Traits& have = state.traits->traits;
  // Remove only what the agent itself added and no longer wants; add what is missing. A trait
  // someone else set stays, and is not ours even when we want it too.
  const Traits owned = goal.ownership ? owned_.owned(state.provider.uuid) : Traits{};
  Traits desired = goal.traits;
  if (goal.keepOwned)
    for (const auto& t : owned)
      if (have.count(t)) desired.insert(t);
  Traits want = have;
  for (const auto& t : owned)
    if (!desired.count(t)) want.erase(t);
  nowOwned.clear();
  for (const auto& t : desired) {
    want.insert(t);
    if (owned.count(t) || !have.count(t)) nowOwned.insert(t);
  }
  return want;
}

Task<core::Status> Syncer::syncProvider(ProviderState& state, const ProviderGoal& goal) {
  const std::string& uuid = state.provider.uuid;
  for (int attempt = 0; attempt <= conflictRetries_; ++attempt) {
    if (goal.inventories && !state.inventories) {
      auto v = co_await api_.inventories(uuid);
      if (!v) co_return v.error();
      state.inventories = std::move(*v);
    }
    if (!state.traits) {
      auto v = co_await api_.providerTraits(uuid);
      if (!v) co_return v.error();
      state.traits = std::move(*v);
    }
    core::Result<std::int64_t> written = std::int64_t{0};
    if (goal.inventories) {
      Inventories want = inventoriesWanted(state, goal);
      const Inventories& have = state.inventories->inventories;
      if (!sameInventories(want, have)) {
        const std::int64_t before = state.inventories->generation;
        written = co_await api_.putInventories(uuid, before, want);
        if (written) {
          ++counters_.inventoryWrites;
          // A larger reservation or a smaller total can leave allocations above capacity.
          for (const auto& [rc, inv] : want) {
            auto old = have.find(rc);
            if (goal.keepForeignClasses &&
                (old == have.end() || inv.reserved > old->second.reserved ||
                 inv.total < old->second.total))
              checkUsages_ = true;
          }
          log()->debug("PUT inventories of {} at generation {} -> {}", state.provider.name, before,
                       *written);
          state.inventories = InventoriesView{*written, std::move(want)};
          // Nothing else changed between `before` and our write: a traits view at `before` holds.
          if (state.traits->generation == before) state.traits->generation = *written;
        }
      }
    }
    if (written) {
      Traits nowOwned;
      Traits want = traitsWanted(state, goal, nowOwned);
      const Traits& have = state.traits->traits;
      if (want != have) {
        const std::int64_t before = state.traits->generation;
        written = co_await api_.putProviderTraits(uuid, before, want);
        if (written) {
          ++counters_.traitWrites;
          log()->info("traits of {}: {} -> {} traits (generation {})", state.provider.name,
                      have.size(), want.size(), *written);
          state.traits = TraitsView{*written, std::move(want)};
          if (state.inventories && state.inventories->generation == before)
            state.inventories->generation = *written;
        }
      }
      if (written) {
        if (goal.ownership)
          if (auto s = owned_.set(uuid, nowOwned); !s)
            log()->warn("cannot remember owned traits: {}", s.error().message);
        co_return core::Status{};
      }
    }
    if (!isConcurrentUpdate(written.error())) co_return written.error();
    // Routine (every allocation bumps the generation), but it also means this provider changed
    // in ways the agent did not see: forget all of it and re-read before writing again, as
    // Nova's report client does.
    ++counters_.conflicts;
    state.inventories.reset();
    state.traits.reset();
    log()->debug("{}: generation moved under us, re-reading inventories and traits",
                 state.provider.name);
  }
  co_return core::makeError(state.provider.name + ": still conflicting after " +
                                std::to_string(conflictRetries_) + " retries",
                            409);
}

Task<core::Result<Traits>> Syncer::resolveTraits(const Traits& desired,
                                                 const std::map<std::string, std::string>& alt) {
  Traits out;
  for (const auto& t : desired) {
    if (catalog_->count(t)) {
      out.insert(t);
    } else if (auto a = alt.find(t); a != alt.end() && catalog_->count(a->second)) {
      out.insert(a->second);
    } else if (isCustomTraitName(t)) {
      if (auto s = co_await api_.createTrait(t); !s) co_return s.error();
      ++counters_.traitWrites;
      catalog_->insert(t);
      out.insert(t);
    } else if (unknownTraitsReported_.insert(t).second) {
      log()->warn("trait {} is not known to this Placement (not in GET /traits): not set", t);
    }
  }
  co_return out;
}

Task<core::Status> Syncer::checkUsages(const ProviderState& root) {
  auto used = co_await api_.usages(root.provider.uuid);
  if (!used) co_return used.error();
  for (const auto& [rc, inv] : root.inventories->inventories) {
    auto u = used->find(rc);
    if (u == used->end() || u->second == 0) continue;
    // Placement's capacity: (total - reserved) * allocation_ratio.
    const double capacity = static_cast<double>(inv.total - inv.reserved) * inv.allocationRatio;
    if (static_cast<double>(u->second) > capacity)
      overcommitted_.push_back({rc, inv.total, inv.reserved, u->second, inv.allocationRatio});
  }
  co_return core::Status{};
}

}  // namespace okna::placement
