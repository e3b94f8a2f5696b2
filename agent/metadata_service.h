#pragma once
// The metadata service as the agent runs it, loop side: the reconciler that ties the Southbound
// view the IDL thread publishes to the namespaces, the 169.254.169.254 proxy (metadata/server.h)
// and its listeners, and the client-IP lookup the proxy asks. Everything here runs on the loop
// thread; the blocking plumbing is the worker side's (metadata_plumbing.h), reached only by
// posting jobs to its thread, over the netns::Netlink the caller injects.

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/metadata_plumbing.h"
#include "agent/plan.h"
#include "core/applier.h"
#include "metadata/config.h"
#include "metadata/lookup.h"
#include "metadata/reconciler.h"
#include "metadata/server.h"

namespace okna::core {
class HealthRegistry;
class HttpClient;
class MetricsRegistry;
}  // namespace okna::core
namespace okna::netns {
class Netlink;
}
namespace okna::ovsdb {
class ChassisReconciler;
struct Snapshot;
}  // namespace okna::ovsdb

namespace okna::agent {

class MetadataService : public core::Applier<MetadataIntent>,
                        private metadata::Listeners,
                        private metadata::PortLookup {
 public:
  /** `netlink`: the kernel the worker side plumbs through (netns::NetlinkImpl; tests a fake);
   *  it must outlive the service. */
  MetadataService(boost::asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                  const metadata::MetadataConfig& config, ovsdb::ChassisReconciler& chassis,
                  core::MetricsRegistry& metrics, core::HealthRegistry& health,
                  netns::Netlink& netlink);
  ~MetadataService() override;

  /** Active while the node has the compute or the network role (external ports). */
  void setActive(bool active) { reconciler_.setActive(active); }
  /** Every IDL snapshot (the Southbound view and the integration bridge). */
  void onSnapshot(const ovsdb::Snapshot& snapshot);

  // core::Applier: apply() is setActive(intent.active); describe() the reconciler's
  // debugJson(); health() the "metadata" readiness component.
  void apply(const MetadataIntent& intent) override { setActive(intent.active); }
  void stop() override;
  std::optional<core::HealthRegistry::Check> health() const override;
  nlohmann::json describe() const override;

  const metadata::Reconciler& reconciler() const { return reconciler_; }
  /** Listeners the proxy serves for the network (tests). */
  std::size_t listenerCount(const std::string& networkId) const {
    return server_.listenerCount(networkId);
  }

 private:
  // metadata::Listeners, on the loop.
  core::Status addListener(const std::string& networkId, int fd) override;
  void removeNetwork(const std::string& networkId) override;
  // metadata::PortLookup, on the loop.
  metadata::LookupResult lookup(const std::string& networkId,
                                const std::string& clientIp) const override;

  metadata::MetadataConfig config_;
  // Plain-http Nova goes through a pooled Beast client (1.7x curl's throughput in
  // bench/metadata); https keeps the agent's curl client (CA, client certificates).
  std::unique_ptr<core::HttpClient> novaHttp_;
  core::HealthRegistry& health_;
  // The worker side: the namespace worker thread and the plumbing it runs.
  MetadataPlumbing plumbing_;
  metadata::MetadataServer server_;
  metadata::Reconciler reconciler_;
  // The OVS replica the bridge's ports were last taken from (shared: unchanged = same value).
  core::SharedValue<ovsdb::ObservedOvs> lastOvs_;
  std::string bridge_;
  // The integration bridge's ports in the database, and those of them ovs-vswitchd has created.
  core::SharedValue<std::set<std::string>> bridgePorts_;
  core::SharedValue<std::set<std::string>> createdPorts_;
  bool stopped_ = false;
};

}  // namespace okna::agent
