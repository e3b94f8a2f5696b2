#include "placement/sync.h"

#include <cmath>
#include <iterator>

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

// A hugepage child the agent made for a page size the node no longer names at all: found by
// its name, and only when its uuid is the one the agent derives from that name.
bool isFormerHugepageChild(const Provider& p, const std::string& rootName,
                           const std::string& rootUuid) {
  const std::string prefix = rootName + ":hugepages-";
  return p.parentUuid == rootUuid && p.name.starts_with(prefix) &&
         p.uuid == childUuid(rootUuid, p.name.substr(rootName.size() + 1));
}

// A class kept while allocations use it: total lowered to the usage and all of it reserved, so
// that Placement places nothing new there (capacity (total - reserved) x ratio = 0).
Inventory closedInventory(Inventory inv, std::int64_t used) {
  inv.total = used;
  inv.reserved = used;
  inv.minUnit = 1;
  inv.maxUnit = used;
  inv.stepSize = 1;
  return inv;
}

bool isProviderInUse(const core::Error& e) {
  return e.code == 409 &&
         e.message.find("[placement.resource_provider.inuse]") != std::string::npos;
}

std::string describe(const Usages& used) {
  std::string out;
  for (const auto& [rc, n] : used)
    if (n > 0) out += (out.empty() ? "" : ", ") + rc + " " + std::to_string(n);
  return out;
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
  // The root first: its reservations and cordon state must never wait on a child. A refusal
  // (a 4xx) of one provider does not hold back the others; an outage ends the pass.
  core::Status first;
  const auto keep = [&](core::Status s) {
    if (!s && first) first = std::move(s);
  };
  if (auto s = co_await ensureResourceClasses(desired.root.inventories); !s) co_return s;
  auto rootTraits = co_await resolveTraits(desired.root.traits, desired.traitAlternatives);
  if (!rootTraits) co_return rootTraits.error();
  ProviderGoal rootGoal{&desired.root.inventories,
                        &desired.root.ratioFromServer,
                        true,
                        std::move(*rootTraits),
                        true,
                        false};
  if (auto s = co_await syncProvider(providers_.at(desired.root.uuid), rootGoal); !s) {
    if (isTransient(s.error())) co_return s;
    keep(std::move(s));
  }
  for (const auto& child : desired.nested) {
    auto state = providers_.find(child.uuid);
    if (state == providers_.end()) continue;  // its creation was refused (reported)
    if (auto s = co_await ensureResourceClasses(child.inventories); !s) co_return s;
    auto traits = co_await resolveTraits(child.traits, {});
    if (!traits) co_return traits.error();
    ProviderGoal goal{
        &child.inventories, &child.ratioFromServer, false, std::move(*traits), false, false};
    if (auto s = co_await syncProvider(state->second, goal); !s) {
      if (isTransient(s.error())) co_return s;
      keep(std::move(s));
    }
  }
  // Last and on their own: a child still in use must not hold the rest back.
  co_await deleteObsolete();
  if (!first) co_return first;
  if (checkUsages_) co_return co_await checkUsages(providers_.at(desired.root.uuid));
  co_return core::Status{};
}

std::vector<std::pair<std::string, std::string>> Syncer::notices() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, why] : refused_)
    out.emplace_back("PlacementProviderInUse", "cannot delete " + name + " (retried): " + why);
  for (const auto& [name, why] : creationRefused_)
    out.emplace_back("PlacementProviderNameTaken", "cannot create " + name + " (retried): " + why);
  for (const auto& [uuid, why] : renameRefused_) out.emplace_back("PlacementProviderRenamed", why);
  for (const auto& [uuid, classes] : retained_) {
    if (classes.empty()) continue;
    std::string list;
    for (const auto& [rc, inv] : classes)
      list += (list.empty() ? "" : ", ") + rc + " (" + std::to_string(inv.total) + " in use)";
    auto name = retainedNames_.find(uuid);
    out.emplace_back("PlacementClassInUse",
                     "keeping " + list + " on " +
                         (name == retainedNames_.end() ? uuid : name->second) +
                         " closed (total lowered to what is used, all of it reserved) until the "
                         "VMs using it are gone (retried)");
  }
  return out;
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
    // A child named by someone else is retried (re-read) until it is named back.
    if (!create || (complete && providers_.size() == d.nested.size() + 1 && renameRefused_.empty()))
      co_return core::Status{};
  }
  providers_.clear();
  obsolete_.clear();
  rootUuid_ = d.root.uuid;
  auto tree = co_await api_.providersInTree(d.root.uuid);
  if (!tree) co_return tree.error();
  std::map<std::string, const DesiredProvider*> wanted;
  for (const auto& child : d.nested) wanted[child.uuid] = &child;
  bool haveRoot = false;
  std::vector<std::pair<Provider, const DesiredProvider*>> renamed;
  for (const auto& p : *tree) {
    if (p.uuid == d.root.uuid) {
      haveRoot = true;
      providers_[p.uuid].provider = p;
      continue;
    }
    // The agent's children are recognised by uuid (derived from the node's uid and what the
    // child stands for), never by name alone: an operator may have renamed one.
    if (p.parentUuid != d.root.uuid) continue;
    if (auto w = wanted.find(p.uuid); w != wanted.end()) {
      providers_[p.uuid].provider = p;
      if (create && p.name != w->second->name) renamed.emplace_back(p, w->second);
    } else if (create && (d.formerChildren.count(p.uuid) ||
                          isFormerHugepageChild(p, d.root.name, d.root.uuid))) {
      obsolete_.push_back(p);
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
      staleProvider_ = co_await staleProviderMessage(d.root.name, d.root.uuid, **byName);
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
    // Put back the name of a child an operator renamed; refused (the name is someone else's
    // now): reported, and the child is kept up to date under its other name.
    std::set<std::string> stillRenamed;
    for (const auto& [p, child] : renamed) {
      auto done = co_await api_.renameProvider(p.uuid, child->name, d.root.uuid);
      if (done) {
        ++counters_.providerWrites;
        log()->info("nested resource provider {} was renamed {}; named {} again", p.uuid, p.name,
                    child->name);
        providers_[p.uuid].provider = *done;
        continue;
      }
      if (isTransient(done.error())) co_return done.error();
      stillRenamed.insert(p.uuid);
      auto& reported = renameRefused_[p.uuid];
      const std::string why = "nested resource provider " + p.uuid + " (" + child->source +
                              ") is named " + p.name + ", not " + child->name +
                              ", and cannot be renamed back (retried): " + done.error().message;
      if (reported != why) log()->warn("{}", why);
      reported = why;
    }
    for (auto it = renameRefused_.begin(); it != renameRefused_.end();)
      it = stillRenamed.count(it->first) ? std::next(it) : renameRefused_.erase(it);
    std::set<std::string> stillRefused;
    for (const auto& child : d.nested) {
      if (providers_.count(child.uuid)) continue;
      auto s = co_await createChild(child, d.root.uuid);
      if (!s) {
        if (isTransient(s.error())) co_return s;
        stillRefused.insert(child.name);
      }
    }
    for (auto it = creationRefused_.begin(); it != creationRefused_.end();)
      it = stillRefused.count(it->first) ? std::next(it) : creationRefused_.erase(it);
    // Refused deletions of children that are gone or wanted again are history.
    for (auto it = refused_.begin(); it != refused_.end();) {
      bool pending = false;
      for (const auto& p : obsolete_) pending = pending || p.name == it->first;
      it = pending ? std::next(it) : refused_.erase(it);
    }
  }
  treeKnown_ = true;
  co_return core::Status{};
}

Task<core::Status> Syncer::createChild(const DesiredProvider& child, const std::string& rootUuid) {
  auto created = co_await api_.createProvider(child.name, child.uuid, rootUuid);
  if (created) {
    ++counters_.providerWrites;
    log()->info("created nested resource provider {} (uuid {})", child.name, child.uuid);
    providers_[child.uuid] = {*created, InventoriesView{created->generation, {}},
                              TraitsView{created->generation, {}}};
    co_return core::Status{};
  }
  if (isTransient(created.error())) co_return created.error();
  // Most often the name is taken (an operator's provider, a leftover of a re-created Node):
  // say by whom, so that the operator knows what to rename or delete.
  std::string why = created.error().message;
  auto holder = co_await api_.providerByName(child.name);
  if (holder && *holder && (*holder)->uuid != child.uuid)
    why = "the name is taken by resource provider " + (*holder)->uuid +
          ((*holder)->parentUuid.empty() ? std::string(" (a root)")
                                         : " (a child of " + (*holder)->parentUuid + ")") +
          ", not this node's " + child.uuid + ": rename or delete it (" + why + ")";
  auto& reported = creationRefused_[child.name];
  if (reported != why)
    log()->warn("cannot create nested resource provider {} for {} (retried): {}", child.name,
                child.source, why);
  reported = why;
  co_return created.error();
}

Task<std::string> Syncer::staleProviderMessage(const std::string& name, const std::string& rootUuid,
                                               const Provider& holder) {
  std::string msg = "a resource provider named " + name + " already exists with uuid " +
                    holder.uuid + ", but Node " + name + " has uid " + rootUuid +
                    " (the Node was re-created?). The agent neither adopts nor deletes it: move "
                    "or delete its allocations, then ";
  // Placement refuses to delete a root that has children: name them, to be deleted first.
  std::vector<Provider> children;
  if (auto tree = co_await api_.providersInTree(holder.uuid))
    for (const auto& p : *tree)
      if (p.uuid != holder.uuid) children.push_back(p);
  if (!children.empty()) {
    msg += "delete its children first (";
    for (size_t i = 0; i < children.size(); ++i)
      msg += (i ? ", " : "") + children[i].name + " " + children[i].uuid;
    msg += ": `openstack resource provider delete <uuid>` each), then ";
  }
  msg += "`openstack resource provider delete " + holder.uuid +
         "`, and the agent registers the node again";
  co_return msg;
}

Task<void> Syncer::deleteObsolete() {
  for (auto it = obsolete_.begin(); it != obsolete_.end();) {
    // A page size or device pool the node no longer offers. Refused (409 resource_provider.inuse)
    // while VMs still use it: its inventories go down to what is used (nothing new lands
    // there), it is reported, and later passes retry on their own backoff.
    auto s = co_await api_.deleteProvider(it->uuid);
    if (s) {
      ++counters_.providerWrites;
      log()->info("deleted nested resource provider {} (uuid {}): the node no longer offers it",
                  it->name, it->uuid);
      refused_.erase(it->name);
      it = obsolete_.erase(it);
      continue;
    }
    std::string why = s.error().message;
    if (isProviderInUse(s.error())) {
      const std::string shrunk = co_await shrinkToAllocations(*it);
      if (!shrunk.empty()) why = shrunk;
    }
    auto& reported = refused_[it->name];
    if (reported != why)
      log()->warn(
          "cannot delete nested resource provider {} (the node no longer offers it; retried): {}",
          it->name, why);
    reported = why;
    ++it;
  }
}

Task<std::string> Syncer::shrinkToAllocations(const Provider& child) {
  auto used = co_await api_.usages(child.uuid);
  if (!used) co_return std::string();
  auto have = co_await api_.inventories(child.uuid);
  if (!have) co_return std::string();
  Inventories want;
  for (const auto& [rc, inv] : have->inventories) {
    auto u = used->find(rc);
    if (u != used->end() && u->second > 0) want[rc] = closedInventory(inv, u->second);
  }
  // Placement's own answer says enough when no usage shows (an allocation that just went).
  if (want.empty()) co_return std::string();
  const std::string what = "in use (" + describe(*used) + ")";
  if (sameInventories(want, have->inventories)) co_return what + "; its inventory is down to that";
  auto written = co_await api_.putInventories(child.uuid, have->generation, want);
  if (!written) co_return what + "; lowering its inventory failed: " + written.error().message;
  ++counters_.inventoryWrites;
  log()->info("nested resource provider {}: inventory lowered to what is allocated ({})",
              child.name, describe(*used));
  co_return what + "; its inventory is down to that";
}

Task<core::Status> Syncer::refreshRetained(const ProviderState& state) {
  auto r = retained_.find(state.provider.uuid);
  if (r == retained_.end()) co_return core::Status{};
  auto used = co_await api_.usages(state.provider.uuid);
  if (!used) co_return used.error();
  for (auto it = r->second.begin(); it != r->second.end();) {
    auto u = used->find(it->first);
    if (u == used->end() || u->second <= 0) {
      log()->info("{} on {} is no longer used: removed", it->first, state.provider.name);
      it = r->second.erase(it);
      continue;
    }
    it->second = closedInventory(it->second, u->second);
    ++it;
  }
  if (r->second.empty()) retained_.erase(r);
  co_return core::Status{};
}

Task<core::Status> Syncer::retainInUse(const ProviderState& state, const Inventories& want) {
  auto used = co_await api_.usages(state.provider.uuid);
  if (!used) co_return used.error();
  bool added = false;
  for (const auto& [rc, inv] : state.inventories->inventories) {
    if (want.count(rc)) continue;
    auto u = used->find(rc);
    if (u == used->end() || u->second <= 0) continue;
    retained_[state.provider.uuid][rc] = closedInventory(inv, u->second);
    retainedNames_[state.provider.uuid] = state.provider.name;
    added = true;
    log()->warn(
        "{} cannot leave {}: allocations use {} of it; kept with its total lowered to that and "
        "closed to new ones until they are gone",
        rc, state.provider.name, u->second);
  }
  if (!added)
    co_return core::makeError(state.provider.name +
                                  ": Placement says a class in use would go, but none the agent "
                                  "removes is used (" +
                                  describe(*used) + ")",
                              409);
  co_return core::Status{};
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
  if (auto r = retained_.find(state.provider.uuid); r != retained_.end())
    for (const auto& [rc, inv] : r->second)
      if (!want.count(rc)) want[rc] = inv;
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
  // A class the plan wants again is no longer merely retained.
  if (auto r = retained_.find(uuid); r != retained_.end() && goal.inventories) {
    for (auto it = r->second.begin(); it != r->second.end();)
      it = goal.inventories->count(it->first) ? r->second.erase(it) : std::next(it);
    if (r->second.empty()) retained_.erase(r);
  }
  if (goal.inventories)
    if (auto s = co_await refreshRetained(state); !s) co_return s;
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
    bool conflict = false;
    // Inventories and traits are written independently: a refused inventory (a class in use, a
    // value Placement rejects) must not keep a cordon's COMPUTE_STATUS_DISABLED out.
    core::Status inventoryStatus;
    if (goal.inventories) {
      Inventories want = inventoriesWanted(state, goal);
      const Inventories& have = state.inventories->inventories;
      if (!sameInventories(want, have)) {
        const std::int64_t before = state.inventories->generation;
        auto written = co_await api_.putInventories(uuid, before, want);
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
        } else if (isConcurrentUpdate(written.error())) {
          conflict = true;
        } else if (isInventoryInUse(written.error())) {
          // A class leaving while VMs use it: kept closed, and written again at once.
          auto s = co_await retainInUse(state, want);
          if (s) continue;
          if (isTransient(s.error())) co_return s;
          inventoryStatus = s;
        } else {
          if (isTransient(written.error())) co_return written.error();
          inventoryStatus = written.error();
        }
      }
    }
    if (!conflict) {
      core::Status traitStatus;
      Traits nowOwned;
      Traits want = traitsWanted(state, goal, nowOwned);
      const Traits& have = state.traits->traits;
      if (want != have) {
        const std::int64_t before = state.traits->generation;
        auto written = co_await api_.putProviderTraits(uuid, before, want);
        if (written) {
          ++counters_.traitWrites;
          log()->info("traits of {}: {} -> {} traits (generation {})", state.provider.name,
                      have.size(), want.size(), *written);
          state.traits = TraitsView{*written, std::move(want)};
          if (state.inventories && state.inventories->generation == before)
            state.inventories->generation = *written;
        } else if (isConcurrentUpdate(written.error())) {
          conflict = true;
        } else {
          if (isTransient(written.error())) co_return written.error();
          traitStatus = written.error();
        }
      }
      if (!conflict) {
        if (traitStatus && goal.ownership)
          if (auto s = owned_.set(uuid, nowOwned); !s)
            log()->warn("cannot remember owned traits: {}", s.error().message);
        co_return !inventoryStatus ? inventoryStatus : traitStatus;
      }
    }
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
  const auto retained = retained_.find(root.provider.uuid);
  for (const auto& [rc, inv] : root.inventories->inventories) {
    // Kept closed on purpose while VMs use it (reported as such, not as an over-commit).
    if (retained != retained_.end() && retained->second.count(rc)) continue;
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
