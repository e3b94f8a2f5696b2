#pragma once
// The metadata service as the agent runs it, loop side: the reconciler that ties the Southbound
// view its participant on the OVSDB transport publishes (metadata/sb_participant.h) to the
// namespaces, the 169.254.169.254 proxy (metadata/server.h) and its listeners, and the client-IP
// lookup the proxy asks. Everything here runs on the loop thread (the participant's publish
// callback only hops to it); the blocking plumbing is the worker side's (metadata_plumbing.h),
// reached only by posting jobs to its thread, over the netns::Netlink the caller injects.

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <mutex>
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
namespace okna::metadata {
class SouthboundParticipant;
struct SouthboundView;
}  // namespace okna::metadata
namespace okna::netns {
class Netlink;
}

namespace okna::agent {

class MetadataService : public core::Applier<MetadataIntent>,
                        private metadata::Listeners,
                        private metadata::PortLookup {
 public:
  /** `netlink`: the kernel the worker side plumbs through (netns::NetlinkImpl; tests a fake);
   *  it must outlive the service. */
  MetadataService(boost::asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                  const metadata::MetadataConfig& config,
                  std::shared_ptr<metadata::SouthboundParticipant> southbound,
                  core::MetricsRegistry& metrics, core::HealthRegistry& health,
                  netns::Netlink& netlink);
  ~MetadataService() override;

  /** Active while the node has the compute or the network role (external ports). */
  void setActive(bool active) { reconciler_.setActive(active); }
  /** Every view its participant publishes (the Southbound view and the integration bridge), on
   *  the loop. */
  void onView(const metadata::SouthboundView& view);

  // core::Applier: apply() is setActive(intent.active); describe() the reconciler's
  // debugJson(); health() the "metadata" readiness component.
  void apply(const MetadataIntent& intent) override;
  void stop() override;
  std::optional<core::HealthRegistry::Check> health() const override;
  nlohmann::json describe() const override;
  /** Retired (MetadataIntent::retire) and everything removed, the marked ports included; an
   *  agent that is not retiring leaves its namespaces as they are, so it is settled. */
  bool settled() const override;

  const metadata::Reconciler& reconciler() const { return reconciler_; }
  /** Listeners the proxy serves for the network (tests). */
  std::size_t listenerCount(const std::string& networkId) const {
    return server_.listenerCount(networkId);
  }

 private:
  // The wanted metadata ports to the participant, when they changed.
  void submitPorts(std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired);
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
  // The last view's convergedGeneration: the submitted ports are on the bridge up to it.
  std::uint64_t convergedGeneration_ = 0;
  bool stopped_ = false;
};

}  // namespace okna::agent
