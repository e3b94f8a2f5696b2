#include "agent/metadata_service.h"

#include <nlohmann/json.hpp>

#include "agent/heap_release.h"

#include <boost/asio/post.hpp>

#include "core/beast_http_client.h"
#include "core/health.h"
#include "core/logging.h"
#include "core/loop_thread.h"
#include "metadata/sb_participant.h"

namespace okna::agent {

namespace {

metadata::ReconcilerOptions optionsFrom(const metadata::MetadataConfig& config) {
  metadata::ReconcilerOptions o;
  o.ipv6 = config.ipv6;
  o.verifyInterval = config.verifyInterval;
  return o;
}

std::unique_ptr<core::HttpClient> plainHttpNovaClient(boost::asio::io_context& io,
                                                      const metadata::MetadataConfig& config) {
  if (config.nova.protocol != "http") return nullptr;
  return std::make_unique<core::BeastHttpClient>(io, "openkeel-node-agent");
}

}  // namespace

MetadataService::MetadataService(boost::asio::io_context& io, core::Clock& clock,
                                 core::HttpClient& http, const metadata::MetadataConfig& config,
                                 std::shared_ptr<metadata::SouthboundParticipant> southbound,
                                 core::MetricsRegistry& metrics, core::HealthRegistry& health,
                                 netns::Netlink& netlink)
    : config_(config),
      novaHttp_(plainHttpNovaClient(io, config_)),
      health_(health),
      plumbing_(netlink, health),
      server_(io, clock, novaHttp_ ? *novaHttp_ : http, config_, *this, metrics),
      reconciler_(
          io, clock, optionsFrom(config_), plumbing_,
          [this](std::function<void()> job) { plumbing_.post(std::move(job)); }, *this,
          [this](std::shared_ptr<const ovsdb::DesiredMetadataOvs> d) { submitPorts(std::move(d)); },
          metrics, health),
      southbound_(std::move(southbound)) {
  // Called on the transport's thread: hop to the loop. While a hop is pending a newer view
  // replaces the pending one instead of queueing behind it (a cold start publishes thousands).
  southbound_->setPublish(
      [this, &io, mailbox = mailbox_](std::shared_ptr<const metadata::SouthboundView> view) {
        {
          const std::lock_guard lock(mailbox->mutex);
          const bool hopPending = mailbox->latest != nullptr;
          mailbox->latest = std::move(view);
          if (hopPending) return;
        }
        boost::asio::post(io, [this, mailbox] {
          std::shared_ptr<const metadata::SouthboundView> newest;
          {
            const std::lock_guard lock(mailbox->mutex);
            newest.swap(mailbox->latest);
          }
          if (mailbox->alive && newest) onView(*newest);
        });
      });
  reconciler_.setOnSettled([](std::size_t networks) {
    core::logger("metadata")
        ->info("{} networks set up and serving; freed heap returned: {}", networks,
               releaseFreedHeap());
  });
}

MetadataService::~MetadataService() {
  stop();
}

void MetadataService::stop() {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_) return;
  stopped_ = true;
  mailbox_->alive = false;
  reconciler_.stop();
  plumbing_.stop();
  // Listeners close with the process; namespaces, veths and OVS ports stay for the next one.
  server_.stop();
}

void MetadataService::submitPorts(std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired) {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_ || (submitted_ && *submitted_ == *desired)) return;
  submitted_ = desired;
  southbound_->submit(std::move(desired), ++submittedGeneration_);
}

void MetadataService::apply(const MetadataIntent& intent) {
  OKNA_ASSERT_ON_LOOP();
  setActive(intent.active);
  if (intent.retire) reconciler_.retire();
}

bool MetadataService::settled() const {
  if (!reconciler_.retired()) return true;
  return reconciler_.retirementDone() && convergedGeneration_ == submittedGeneration_;
}

void MetadataService::onView(const metadata::SouthboundView& view) {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_) return;
  convergedGeneration_ = view.convergedGeneration;
  reconciler_.update(view.sb, view.bridge, view.bridgePorts, view.createdPorts, view.vmIfaceIds);
}

std::optional<core::HealthRegistry::Check> MetadataService::health() const {
  return health_.component("metadata");
}

nlohmann::json MetadataService::describe() const {
  return reconciler_.debugJson();
}

core::Status MetadataService::addListener(const std::string& networkId, int fd) {
  OKNA_ASSERT_ON_LOOP();
  return server_.addListener(networkId, fd);
}

void MetadataService::removeNetwork(const std::string& networkId) {
  OKNA_ASSERT_ON_LOOP();
  server_.removeNetwork(networkId);
}

metadata::LookupResult MetadataService::lookup(const std::string& networkId,
                                               const std::string& clientIp) const {
  OKNA_ASSERT_ON_LOOP();
  const auto ports = reconciler_.lookup(networkId, clientIp);
  metadata::LookupResult r;
  r.matches = static_cast<int>(ports.size());
  if (ports.size() == 1) {
    r.port = {ports[0]->logicalPort, ports[0]->deviceId, ports[0]->projectId, ports[0]->problem};
    return r;
  }
  for (const ovsdb::SbPort* p : ports) r.portUuids += (r.portUuids.empty() ? "" : ", ") + p->uuid;
  return r;
}

}  // namespace okna::agent
