#include "agent/metadata_service.h"

#include <unistd.h>

#include "agent/heap_release.h"

#include <boost/asio/post.hpp>

#include "core/beast_http_client.h"
#include "core/logging.h"
#include "metadata/sb_participant.h"
#include "netns/enter.h"

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
                                 core::MetricsRegistry& metrics, core::HealthRegistry& health)
    : config_(config),
      novaHttp_(plainHttpNovaClient(io, config_)),
      applier_(netlink_),
      worker_(&health),
      server_(io, novaHttp_ ? *novaHttp_ : http, config_, *this, metrics),
      reconciler_(
          io, clock, optionsFrom(config_), *this,
          [this](std::function<void()> job) { worker_.post(std::move(job)); }, *this,
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
  if (stopped_) return;
  stopped_ = true;
  mailbox_->alive = false;
  reconciler_.stop();
  worker_.stop();
  // Listeners close with the process; namespaces, veths and OVS ports stay for the next one.
  server_.stop();
}

void MetadataService::submitPorts(std::shared_ptr<const ovsdb::DesiredMetadataOvs> desired) {
  if (stopped_ || (submitted_ && *submitted_ == *desired)) return;
  submitted_ = desired;
  southbound_->submit(std::move(desired), ++submittedGeneration_);
}

void MetadataService::onView(const metadata::SouthboundView& view) {
  if (stopped_) return;
  reconciler_.update(view.sb, view.bridge, view.bridgePorts, view.createdPorts, view.vmIfaceIds);
}

core::Result<metadata::Plumbing::Ensured> MetadataService::ensure(
    const metadata::NetworkPlan& network) {
  auto desired = netns::metadataNamespaceFor(network.networkId, network.mac, network.addresses);
  if (!desired) return desired.error();
  netns::EnsureReport report;
  const auto st = applier_.ensure(*desired, &report);
  // What prepare() did for it counts as this ensure's work: "created", listeners to open.
  if (auto it = prepared_.find(desired->name); it != prepared_.end()) {
    report.applied.insert(report.applied.begin(), it->second.applied.begin(),
                          it->second.applied.end());
    prepared_.erase(it);
  }
  if (!st) return st.error();
  Ensured e;
  // A new namespace, or a new veth in an old one (`ip link delete` of either end), leaves the
  // listeners bound to a dead namespace or a dead interface (the IPv6 one names its ifindex).
  e.namespaceCreated =
      report.created() ||
      std::any_of(report.applied.begin(), report.applied.end(),
                  [](const netns::NsOp& op) { return op.kind == netns::NsOpKind::CreateVeth; });
  if (!report.unchanged()) e.changes = report.summary(*desired);
  e.ipv6Unavailable = report.ipv6Unavailable;
  return e;
}

void MetadataService::prepare(
    const std::vector<std::shared_ptr<const metadata::NetworkPlan>>& networks) {
  std::size_t prepared = 0;
  for (const auto& network : networks) {
    auto desired =
        netns::metadataNamespaceFor(network->networkId, network->mac, network->addresses);
    // Namespaces that exist are left to ensure(): adopting them needs no host-visible change.
    if (!desired ||
        ::access((std::string(netns::kNetnsRunDir) + "/" + desired->name).c_str(), F_OK) == 0)
      continue;
    netns::EnsureReport& report = prepared_[desired->name];
    if (auto s = applier_.prepare(*desired, &report); !s) {
      core::logger("metadata")
          ->debug("prepare {}: {} (left to its ensure)", desired->name, s.error().message);
    }
    ++prepared;
  }
  if (prepared > 0)
    core::logger("metadata")->debug("prepared {} new namespaces' host side at once", prepared);
}

core::Status MetadataService::remove(const std::string& namespaceName) {
  prepared_.erase(namespaceName);
  return applier_.remove(namespaceName);
}

core::Result<std::vector<std::string>> MetadataService::list() {
  return applier_.listMetadataNamespaces();
}

core::Result<int> MetadataService::listen(const metadata::NetworkPlan& network,
                                          const std::string& address, int port) {
  // SO_REUSEPORT: a restarted agent binds while the old process still serves.
  return netns::openListener(network.namespaceName, address, static_cast<uint16_t>(port), 1024,
                             true);
}

core::Status MetadataService::addListener(const std::string& networkId, int fd) {
  return server_.addListener(networkId, fd);
}

void MetadataService::removeNetwork(const std::string& networkId) {
  server_.removeNetwork(networkId);
}

metadata::LookupResult MetadataService::lookup(const std::string& networkId,
                                               const std::string& clientIp) const {
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
