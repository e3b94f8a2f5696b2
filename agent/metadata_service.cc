#include "agent/metadata_service.h"

#include <unistd.h>

#include "agent/heap_release.h"

#include "chassis/chassis_reconciler.h"
#include "core/beast_http_client.h"
#include "core/logging.h"
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
                                 ovsdb::ChassisReconciler& chassis, core::MetricsRegistry& metrics,
                                 core::HealthRegistry& health)
    : config_(config),
      novaHttp_(plainHttpNovaClient(io, config_)),
      applier_(netlink_),
      worker_(&health),
      server_(io, novaHttp_ ? *novaHttp_ : http, config_, *this, metrics),
      reconciler_(
          io, clock, optionsFrom(config_), *this,
          [this](std::function<void()> job) { worker_.post(std::move(job)); }, *this,
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
  if (stopped_) return;
  stopped_ = true;
  reconciler_.stop();
  worker_.stop();
  // Listeners close with the process; namespaces, veths and OVS ports stay for the next one.
  server_.stop();
}

void MetadataService::onSnapshot(const ovsdb::Snapshot& snapshot) {
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
