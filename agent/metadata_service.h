#pragma once
// The metadata service as the agent runs it: the namespace worker thread and the kernel plumbing
// (netns/), the 169.254.169.254 proxy (metadata/server.h), the reconciler that ties them to the
// Southbound view the IDL thread publishes, and the client-IP lookup the proxy asks. Everything
// here lives on the loop thread except what the worker runs.

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "metadata/config.h"
#include "metadata/lookup.h"
#include "metadata/reconciler.h"
#include "metadata/server.h"
#include "netns/applier.h"
#include "netns/netlink.h"
#include "netns/worker.h"

namespace okna::core {
class HealthRegistry;
class HttpClient;
class MetricsRegistry;
}  // namespace okna::core
namespace okna::ovsdb {
class ChassisReconciler;
struct Snapshot;
}  // namespace okna::ovsdb

namespace okna::agent {

class MetadataService : private metadata::Plumbing,
                        private metadata::Listeners,
                        private metadata::PortLookup {
 public:
  MetadataService(boost::asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                  const metadata::MetadataConfig& config, ovsdb::ChassisReconciler& chassis,
                  core::MetricsRegistry& metrics, core::HealthRegistry& health);
  ~MetadataService() override;

  /** Active while the node has the compute or the network role (external ports). */
  void setActive(bool active) { reconciler_.setActive(active); }
  /** Every IDL snapshot (the Southbound view and the integration bridge). */
  void onSnapshot(const ovsdb::Snapshot& snapshot);
  void stop();

  const metadata::Reconciler& reconciler() const { return reconciler_; }

 private:
  // metadata::Plumbing, on the worker thread.
  core::Result<Ensured> ensure(const metadata::NetworkPlan& network) override;
  void prepare(const std::vector<std::shared_ptr<const metadata::NetworkPlan>>& networks) override;
  core::Status remove(const std::string& namespaceName) override;
  core::Result<std::vector<std::string>> list() override;
  core::Result<int> listen(const metadata::NetworkPlan& network, const std::string& address,
                           int port) override;
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
  netns::NetlinkImpl netlink_;
  netns::NamespaceApplier applier_;
  // What prepare() did per namespace, until its ensure() reports it (worker thread only).
  std::map<std::string, netns::EnsureReport> prepared_;
  netns::Worker worker_;
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
