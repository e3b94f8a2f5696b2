#pragma once
// Nova's compute API, the part availability zones need: os-aggregates (list, create with a zone,
// add and remove a host). `NovaApi` is what the zone applier depends on; NovaApiImpl speaks HTTP
// with the same Authenticator as Placement (endpoint: the catalog's "compute" service, or
// availabilityZones.computeEndpointOverride). Microversion 2.41: aggregates carry their uuid,
// which is the aggregate's uuid in Placement too.

#include <string>
#include <vector>

#include "placement/async_http.h"
#include "placement/zones.h"

namespace okna::placement {

class Authenticator;

inline constexpr const char* kNovaMicroversion = "2.41";

class NovaApi {
 public:
  virtual ~NovaApi() = default;
  virtual Task<core::Result<std::vector<NovaAggregate>>> aggregates() = 0;
  /** POST /os-aggregates with availability_zone; a taken name is an error coded 409. */
  virtual Task<core::Result<NovaAggregate>> createAggregate(const std::string& name,
                                                            const std::string& zone) = 0;
  /** add_host; "already in the aggregate" (409 AggregateHostExists) is an error coded 409. */
  virtual Task<core::Result<NovaAggregate>> addHost(int id, const std::string& host) = 0;
  /** remove_host; a host no longer there (404) is a success. */
  virtual Task<core::Status> removeHost(int id, const std::string& host) = 0;
};

class NovaApiImpl final : public NovaApi {
 public:
  NovaApiImpl(core::HttpClient& http, Authenticator& auth, std::chrono::milliseconds timeout)
      : http_(http), auth_(auth), timeout_(timeout) {}
  ~NovaApiImpl() override;
  NovaApiImpl(const NovaApiImpl&) = delete;
  NovaApiImpl& operator=(const NovaApiImpl&) = delete;

  unsigned requestsSent() const { return requests_; }

  Task<core::Result<std::vector<NovaAggregate>>> aggregates() override;
  Task<core::Result<NovaAggregate>> createAggregate(const std::string& name,
                                                    const std::string& zone) override;
  Task<core::Result<NovaAggregate>> addHost(int id, const std::string& host) override;
  Task<core::Status> removeHost(int id, const std::string& host) override;

 private:
  /** One request (a 401 renews the token once); any status but `accepted` is an error with
   *  Nova's message ({"conflictingRequest": {"message": ...}}) and the status as code. */
  Task<core::Result<nlohmann::json>> exchange(std::string method, std::string path,
                                              std::string body, long accepted);

  core::HttpClient& http_;
  Authenticator& auth_;
  std::chrono::milliseconds timeout_;
  unsigned requests_ = 0;
  core::HttpRequestHandlePtr inFlight_;
};

/** An aggregate of an os-aggregates answer. */
NovaAggregate novaAggregateFromJson(const nlohmann::json& j);

}  // namespace okna::placement
