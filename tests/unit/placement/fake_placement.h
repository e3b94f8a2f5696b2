#pragma once
// A stateful in-memory Placement behind placement::Api: providers with generations, inventories,
// traits, usages, and the rules measured on Placement 8.0 (every PUT bumps the generation, a stale
// generation is a 409 placement.concurrent_update, total >= 1, reserved <= total). Faults can be
// injected: down (transport errors), a concurrent writer, an old server. Calls are counted.

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "placement/client.h"

namespace okna::testing {

class FakePlacement final : public placement::Api {
 public:
  struct Entry {
    placement::Provider provider;
    placement::Inventories inventories;
    placement::Traits traits;
    placement::Usages usages;
    std::set<std::string> aggregates;
  };

  std::map<std::string, Entry> providers;
  placement::Traits catalog{"COMPUTE_NODE",     "COMPUTE_STATUS_DISABLED",
                            "HW_CPU_X86_AVX",   "HW_CPU_X86_AESNI",
                            "HW_CPU_X86_SSE42", "COMPUTE_NET_VIRTIO_PACKED"};
  std::string version = "1.39";
  // Every call fails as if the connection was refused.
  bool down = false;
  // The next N writes (PUT inventories/traits) find the generation moved by someone else.
  int concurrentWriters = 0;
  // The next N calls of that name fail with HTTP 500 / throw (a server answer of a shape the
  // client did not expect).
  std::map<std::string, int> failNext;
  std::map<std::string, int> throwNext;
  // Providers that hold allocations: DELETE is refused (409 resource_provider.inuse).
  std::set<std::string> inUse;
  // Calls by name ("putInventories", ...).
  std::map<std::string, int> calls;
  // Run once, when the call of that name is made: what happens on the agent's side while that
  // request is in flight (a role change, a resync).
  std::map<std::string, std::function<void()>> during;

  int total() const {
    int n = 0;
    for (const auto& [k, v] : calls) n += v;
    return n;
  }
  int writes() const {
    auto get = [&](const char* k) {
      auto it = calls.find(k);
      return it == calls.end() ? 0 : it->second;
    };
    return get("createProvider") + get("deleteProvider") + get("renameProvider") +
           get("putInventories") + get("putProviderTraits") + get("createTrait") +
           get("createResourceClass");
  }
  /** What an allocation does: bumps the generation. */
  void allocate(const std::string& uuid, const std::string& rc, std::int64_t used) {
    auto& e = providers.at(uuid);
    e.usages[rc] += used;
    ++e.provider.generation;
  }

  // placement::Api
  placement::Task<core::Result<std::string>> maxMicroversion() override {
    if (auto e = fail("maxMicroversion")) co_return *e;
    co_return version;
  }
  placement::Task<core::Result<std::vector<placement::Provider>>> providersInTree(
      const std::string& root) override {
    if (auto e = fail("providersInTree")) co_return *e;
    std::vector<placement::Provider> out;
    for (const auto& [uuid, e] : providers)
      if (e.provider.rootUuid == root) out.push_back(e.provider);
    co_return out;
  }
  placement::Task<core::Result<std::optional<placement::Provider>>> providerByName(
      const std::string& name) override {
    if (auto e = fail("providerByName")) co_return *e;
    for (const auto& [uuid, e] : providers)
      if (e.provider.name == name) co_return std::optional(e.provider);
    co_return std::optional<placement::Provider>();
  }
  placement::Task<core::Result<placement::Provider>> createProvider(
      const std::string& name, const std::string& uuid, const std::string& parent) override {
    if (auto e = fail("createProvider")) co_return *e;
    for (const auto& [u, e] : providers)
      if (u == uuid || e.provider.name == name)
        co_return core::makeError("409 [placement.duplicate_name]", 409);
    placement::Provider p{uuid, name, parent,
                          parent.empty() ? uuid : providers.at(parent).provider.rootUuid, 0};
    providers[uuid].provider = p;
    co_return p;
  }
  placement::Task<core::Status> deleteProvider(const std::string& uuid) override {
    if (auto e = fail("deleteProvider")) co_return *e;
    if (inUse.count(uuid))
      co_return core::makeError("HTTP 409 [placement.resource_provider.inuse] in use", 409);
    providers.erase(uuid);
    co_return core::Status{};
  }
  placement::Task<core::Result<placement::Provider>> renameProvider(
      const std::string& uuid, const std::string& name, const std::string& parent) override {
    if (auto e = fail("renameProvider")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    for (const auto& [u, e] : providers)
      if (u != uuid && e.provider.name == name)
        co_return core::makeError("HTTP 409 [placement.duplicate_name] name taken", 409);
    auto& p = providers[uuid].provider;
    p.name = name;
    p.parentUuid = parent;
    co_return p;
  }
  placement::Task<core::Result<placement::InventoriesView>> inventories(
      const std::string& uuid) override {
    if (auto e = fail("inventories")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    co_return placement::InventoriesView{providers[uuid].provider.generation,
                                         providers[uuid].inventories};
  }
  placement::Task<core::Result<std::int64_t>> putInventories(
      const std::string& uuid, std::int64_t gen, const placement::Inventories& inv) override {
    if (auto e = fail("putInventories")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    auto& e = providers[uuid];
    if (auto c = conflict(e, gen)) co_return *c;
    for (const auto& [rc, i] : inv)
      if (i.total < 1 || i.reserved > i.total)
        co_return core::makeError("400 bad inventory " + rc, 400);
    // Placement 8: a class with allocations cannot leave the inventory.
    for (const auto& [rc, used] : e.usages)
      if (used > 0 && e.inventories.count(rc) && !inv.count(rc))
        co_return core::makeError(
            "HTTP 409 [placement.inventory.inuse] update conflict: inventory in use " + rc, 409);
    e.inventories = inv;
    co_return ++e.provider.generation;
  }
  placement::Task<core::Result<placement::TraitsView>> providerTraits(
      const std::string& uuid) override {
    if (auto e = fail("providerTraits")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    co_return placement::TraitsView{providers[uuid].provider.generation, providers[uuid].traits};
  }
  placement::Task<core::Result<std::int64_t>> putProviderTraits(
      const std::string& uuid, std::int64_t gen, const placement::Traits& traits) override {
    if (auto e = fail("putProviderTraits")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    auto& e = providers[uuid];
    if (auto c = conflict(e, gen)) co_return *c;
    for (const auto& t : traits)
      if (!catalog.count(t)) co_return core::makeError("400 unknown trait " + t, 400);
    e.traits = traits;
    co_return ++e.provider.generation;
  }
  placement::Task<core::Result<placement::Traits>> allTraits() override {
    if (auto e = fail("allTraits")) co_return *e;
    co_return catalog;
  }
  placement::Task<core::Status> createTrait(const std::string& name) override {
    if (auto e = fail("createTrait")) co_return *e;
    catalog.insert(name);
    co_return core::Status{};
  }
  placement::Task<core::Status> createResourceClass(const std::string&) override {
    if (auto e = fail("createResourceClass")) co_return *e;
    co_return core::Status{};
  }
  placement::Task<core::Result<placement::AggregatesView>> providerAggregates(
      const std::string& uuid) override {
    if (auto e = fail("providerAggregates")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    co_return placement::AggregatesView{providers[uuid].provider.generation,
                                        providers[uuid].aggregates};
  }
  placement::Task<core::Result<std::int64_t>> putProviderAggregates(
      const std::string& uuid, std::int64_t gen, const std::set<std::string>& aggs) override {
    if (auto e = fail("putProviderAggregates")) co_return *e;
    if (!providers.count(uuid)) co_return core::makeError("404", 404);
    auto& e = providers[uuid];
    if (auto c = conflict(e, gen)) co_return *c;
    e.aggregates = aggs;
    co_return ++e.provider.generation;
  }
  placement::Task<core::Result<placement::Usages>> usages(const std::string& uuid) override {
    if (auto e = fail("usages")) co_return *e;
    co_return providers.at(uuid).usages;
  }

 private:
  std::optional<core::Error> fail(const char* call) {
    ++calls[call];
    if (auto d = during.find(call); d != during.end()) {
      auto hook = std::move(d->second);
      during.erase(d);
      hook();
    }
    if (down) return core::makeError(std::string(call) + ": connection refused", 7);
    if (auto t = throwNext.find(call); t != throwNext.end() && t->second > 0) {
      --t->second;
      throw std::runtime_error(std::string(call) + ": [json.exception.type_error.302]");
    }
    if (auto f = failNext.find(call); f != failNext.end() && f->second > 0) {
      --f->second;
      return core::makeError(std::string(call) + ": HTTP 500", 500);
    }
    return std::nullopt;
  }
  std::optional<core::Error> conflict(Entry& e, std::int64_t gen) {
    if (concurrentWriters > 0) {
      --concurrentWriters;
      ++e.provider.generation;
    }
    if (gen != e.provider.generation)
      return core::makeError("HTTP 409 [placement.concurrent_update] generation conflict", 409);
    return std::nullopt;
  }
};

}  // namespace okna::testing
