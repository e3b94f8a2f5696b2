#include "agent/metadata_service.h"

#include <nlohmann/json.hpp>

#include "agent/heap_release.h"
#include "core/beast_http_client.h"
#include "core/health.h"
#include "core/logging.h"
#include "core/loop_thread.h"
#include "ovsdb/chassis_reconciler.h"

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
                                 ovsdb::ChassisReconciler& chassis, core::MetricsRegistry& metrics,
                                 core::HealthRegistry& health, netns::Netlink& netlink)
    : config_(config),
      novaHttp_(plainHttpNovaClient(io, config_)),
      health_(health),
      plumbing_(netlink, health),
      server_(io, clock, novaHttp_ ? *novaHttp_ : http, config_, *this, metrics),
      reconciler_(
          io, clock, optionsFrom(config_), plumbing_,
          [this](std::function<void()> job) { plumbing_.post(std::move(job)); }, *this,
          [&chassis](std::shared_ptr<const ovsdb::DesiredMetadataOvs> d) {
            chassis.submitMetadata(std::move(d));
          },
          metrics, health) {
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
  reconciler_.stop();
  plumbing_.stop();
  // Listeners close with the process; namespaces, veths and OVS ports stay for the next one.
  server_.stop();
}

void MetadataService::onSnapshot(const ovsdb::Snapshot& snapshot) {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_) return;
  // The bridge's ports are looked at only when the OVS replica changed (most snapshots are
  // Southbound or connection changes; a cold start makes thousands), and handed on as the same
  // shared set while unchanged (ovs-vswitchd's and ovn-controller's own writes: ofport,
  // ovn-installed).
  if (!snapshot.ovs.sameAs(lastOvs_)) {
    lastOvs_ = snapshot.ovs;
    const auto it = snapshot.ovs->externalIds.find("ovn-bridge");
    bridge_ = it == snapshot.ovs->externalIds.end() ? "br-int" : it->second;
    const auto b = snapshot.ovs->bridges.find(bridge_);
    std::set<std::string> ports;
    std::set<std::string> created;
    if (b != snapshot.ovs->bridges.end()) {
      ports.insert(b->second.ports.begin(), b->second.ports.end());
      for (const auto& port : ports)
        if (!b->second.pendingPorts.count(port) && !b->second.failedPorts.count(port))
          created.insert(port);
    }
    bridgePorts_.set(std::move(ports));
    createdPorts_.set(std::move(created));
  }
  reconciler_.update(snapshot.sb.metadata, bridge_, bridgePorts_, createdPorts_,
                     snapshot.integrationVmIfaceIds);
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
