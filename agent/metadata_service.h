#pragma once
// The metadata service as the agent runs it: the namespace worker thread and the kernel plumbing
// (netns/), the 169.254.169.254 proxy (metadata/server.h), the reconciler that ties them to the
// Southbound view its participant on the OVSDB transport publishes (metadata/sb_participant.h),
// and the client-IP lookup the proxy asks. Everything here lives on the loop thread except what
// the worker runs.

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <mutex>
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
namespace okna::metadata {
class SouthboundParticipant;
struct SouthboundView;
}  // namespace okna::metadata

namespace okna::agent {

class MetadataService : private metadata::Plumbing,
                        private metadata::Listeners,
                        private metadata::PortLookup {
 public:
  MetadataService(boost::asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                  const metadata::MetadataConfig& config,
                  std::shared_ptr<metadata::SouthboundParticipant> southbound,
                  core::MetricsRegistry& metrics, core::HealthRegistry& health);
  ~MetadataService() override;

  /** Active while the node has the compute or the network role (external ports). */
  void setActive(bool active) { reconciler_.setActive(active); }
  /** Every view its participant publishes (the Southbound view and the integration bridge), on
   *  the loop. */
  void onView(const metadata::SouthboundView& view);
  void stop();

  const metadata::Reconciler& reconciler() const { return reconciler_; }

 private:
  // The wanted metadata ports to the participant, when they changed.
  void submitPorts(std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired);
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
  std::shared_ptr<metadata::SouthboundParticipant> southbound_;
  // Between the participant (transport's thread) and the loop: the newest view not yet taken
  // (only the newest matters), and whether this service still takes them. Shared: the
  // transport may outlive this object.
  struct Mailbox {
    std::mutex mutex;
    std::shared_ptr<const metadata::SouthboundView> latest;
    bool alive = true;  // loop thread only
  };
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();
  // What was last handed to the participant (the same ports are not sent twice).
  std::shared_ptr<const ovsdb::DesiredMetadataOvs> submitted_;
  std::uint64_t submittedGeneration_ = 0;
  bool stopped_ = false;
};

}  // namespace okna::agent
