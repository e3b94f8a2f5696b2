#pragma once
// The Placement API calls the agent makes. `Api` is the interface the reconciler depends on;
// ApiImpl speaks HTTP through core::HttpClient with a token from an Authenticator, and unit tests
// use a stateful fake. Errors carry the HTTP status as code (< 100: a transport error, the
// CURLcode) and Placement's error code (1.23+) in the message, e.g.
// "[placement.concurrent_update]".

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "placement/async_http.h"
#include "placement/types.h"

namespace okna::placement {

class Authenticator;

// Microversions: reads need 1.14 (nested providers: in_tree, parent_provider_uuid); writes use
// 1.26 (error codes since 1.23, reserved == total allowed since 1.26). Checked at start.
inline constexpr const char* kReadMicroversion = "1.14";
inline constexpr const char* kWriteMicroversion = "1.26";
inline constexpr const char* kRequiredMicroversion = "1.26";
// Provider aggregates with the generation (reads and writes).
inline constexpr const char* kAggregatesMicroversion = "1.19";

struct InventoriesView {
  std::int64_t generation = 0;
  Inventories inventories;
};

struct TraitsView {
  std::int64_t generation = 0;
  Traits traits;
};

using Usages = std::map<std::string, std::int64_t>;

struct AggregatesView {
  std::int64_t generation = 0;
  std::set<std::string> aggregates;
};

/** 409 with code placement.concurrent_update: the generation moved; re-read and retry. */
bool isConcurrentUpdate(const core::Error& e);
/** 409 placement.inventory.inuse: a class removed from an inventory still has allocations. */
bool isInventoryInUse(const core::Error& e);
/** Placement or the network is down, or it answered 5xx: back off and retry later. */
bool isTransient(const core::Error& e);
/** "1.39" >= "1.26". */
bool microversionAtLeast(const std::string& have, const std::string& need);

class Api {
 public:
  virtual ~Api() = default;
  /** GET /: the highest microversion the server supports ("1.39"). */
  virtual Task<core::Result<std::string>> maxMicroversion() = 0;
  /** GET /resource_providers?in_tree=: the tree (empty when the root does not exist). */
  virtual Task<core::Result<std::vector<Provider>>> providersInTree(
      const std::string& rootUuid) = 0;
  virtual Task<core::Result<std::optional<Provider>>> providerByName(const std::string& name) = 0;
  /** POST /resource_providers; parentUuid empty for a root. */
  virtual Task<core::Result<Provider>> createProvider(const std::string& name,
                                                      const std::string& uuid,
                                                      const std::string& parentUuid) = 0;
  /** DELETE; a provider already gone is a success. */
  virtual Task<core::Status> deleteProvider(const std::string& uuid) = 0;
  /** PUT /resource_providers/{uuid}: sets the name (and keeps the parent); the new view. */
  virtual Task<core::Result<Provider>> renameProvider(const std::string& uuid,
                                                      const std::string& name,
                                                      const std::string& parentUuid) = 0;
  virtual Task<core::Result<InventoriesView>> inventories(const std::string& uuid) = 0;
  /** PUT the whole inventory set at `generation`; returns the new generation. */
  virtual Task<core::Result<std::int64_t>> putInventories(const std::string& uuid,
                                                          std::int64_t generation,
                                                          const Inventories& inventories) = 0;
  virtual Task<core::Result<TraitsView>> providerTraits(const std::string& uuid) = 0;
  virtual Task<core::Result<std::int64_t>> putProviderTraits(const std::string& uuid,
                                                             std::int64_t generation,
                                                             const Traits& traits) = 0;
  /** GET /traits: every trait the server knows (standard and custom). */
  virtual Task<core::Result<Traits>> allTraits() = 0;
  /** PUT /traits/{name} (CUSTOM_ only); existing is a success. */
  virtual Task<core::Status> createTrait(const std::string& name) = 0;
  /** PUT /resource_classes/{name} (CUSTOM_ only); existing is a success. */
  virtual Task<core::Status> createResourceClass(const std::string& name) = 0;
  virtual Task<core::Result<Usages>> usages(const std::string& uuid) = 0;
  /** GET /resource_providers/{uuid}/aggregates (1.19: with the generation). */
  virtual Task<core::Result<AggregatesView>> providerAggregates(const std::string& uuid) = 0;
  /** PUT the whole aggregate set at `generation`; returns the new generation. */
  virtual Task<core::Result<std::int64_t>> putProviderAggregates(
      const std::string& uuid, std::int64_t generation,
      const std::set<std::string>& aggregates) = 0;
};

class ApiImpl final : public Api {
 public:
  ApiImpl(core::HttpClient& http, Authenticator& auth, std::chrono::milliseconds timeout)
      : http_(http), auth_(auth), timeout_(timeout) {}
  ~ApiImpl() override;
  ApiImpl(const ApiImpl&) = delete;
  ApiImpl& operator=(const ApiImpl&) = delete;

  /** HTTP requests sent so far, token requests excluded (bench). */
  unsigned requestsSent() const { return requests_; }

  // Api
  Task<core::Result<std::string>> maxMicroversion() override;
  Task<core::Result<std::vector<Provider>>> providersInTree(const std::string& rootUuid) override;
  Task<core::Result<std::optional<Provider>>> providerByName(const std::string& name) override;
  Task<core::Result<Provider>> createProvider(const std::string& name, const std::string& uuid,
                                              const std::string& parentUuid) override;
  Task<core::Status> deleteProvider(const std::string& uuid) override;
  Task<core::Result<Provider>> renameProvider(const std::string& uuid, const std::string& name,
                                              const std::string& parentUuid) override;
  Task<core::Result<InventoriesView>> inventories(const std::string& uuid) override;
  Task<core::Result<std::int64_t>> putInventories(const std::string& uuid, std::int64_t generation,
                                                  const Inventories& inventories) override;
  Task<core::Result<TraitsView>> providerTraits(const std::string& uuid) override;
  Task<core::Result<std::int64_t>> putProviderTraits(const std::string& uuid,
                                                     std::int64_t generation,
                                                     const Traits& traits) override;
  Task<core::Result<Traits>> allTraits() override;
  Task<core::Status> createTrait(const std::string& name) override;
  Task<core::Status> createResourceClass(const std::string& name) override;
  Task<core::Result<Usages>> usages(const std::string& uuid) override;
  Task<core::Result<AggregatesView>> providerAggregates(const std::string& uuid) override;
  Task<core::Result<std::int64_t>> putProviderAggregates(
      const std::string& uuid, std::int64_t generation,
      const std::set<std::string>& aggregates) override;

 private:
  Task<core::Result<core::HttpResponse>> call(std::string method, std::string path,
                                              const char* microversion, std::string body = "");
  /** One request: `call`, then any status other than `accepted` (or `alsoAccepted`) becomes an
   * error with Placement's code and detail, and a body is parsed as JSON (null when empty). */
  Task<core::Result<nlohmann::json>> exchange(std::string method, std::string path,
                                              const char* microversion, std::string body = "",
                                              long accepted = 200, long alsoAccepted = 0);

  core::HttpClient& http_;
  Authenticator& auth_;
  std::chrono::milliseconds timeout_;
  unsigned requests_ = 0;
  // The request in flight (one at a time): cancelled on destruction.
  core::HttpRequestHandlePtr inFlight_;
};

}  // namespace okna::placement
