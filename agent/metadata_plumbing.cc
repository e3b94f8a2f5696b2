#include "agent/metadata_plumbing.h"

#include <algorithm>
#include <set>

#include "core/health.h"
#include "core/logging.h"

namespace okna::agent {

MetadataPlumbing::MetadataPlumbing(netns::Netlink& netlink, core::HealthRegistry& health)
    : netlink_(netlink), applier_(netlink_), worker_(&health) {}

MetadataPlumbing::~MetadataPlumbing() {
  stop();
}

void MetadataPlumbing::post(std::function<void()> job) {
  worker_.post(std::move(job));
}

void MetadataPlumbing::stop() {
  worker_.stop();
}

core::Result<metadata::Plumbing::Ensured> MetadataPlumbing::ensure(
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

void MetadataPlumbing::prepare(
    const std::vector<std::shared_ptr<const metadata::NetworkPlan>>& networks) {
  // Namespaces that exist are left to ensure(): adopting them needs no host-visible change. One
  // listing for the pass (through the injected kernel), not one lookup per network.
  const auto listed = applier_.listMetadataNamespaces();
  if (!listed) {
    core::logger("metadata")->debug("prepare: {} (left to each ensure)", listed.error().message);
    return;
  }
  const std::set<std::string> existing(listed->begin(), listed->end());
  std::size_t prepared = 0;
  for (const auto& network : networks) {
    auto desired =
        netns::metadataNamespaceFor(network->networkId, network->mac, network->addresses);
    if (!desired || existing.count(desired->name)) continue;
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

core::Status MetadataPlumbing::remove(const std::string& namespaceName) {
  prepared_.erase(namespaceName);
  return applier_.remove(namespaceName);
}

core::Result<std::vector<std::string>> MetadataPlumbing::list() {
  return applier_.listMetadataNamespaces();
}

core::Result<int> MetadataPlumbing::listen(const metadata::NetworkPlan& network,
                                           const std::string& address, int port) {
  // SO_REUSEPORT: a restarted agent binds while the old process still serves.
  return netlink_.openListener(network.namespaceName,
                               {address, static_cast<uint16_t>(port), 1024, true, ""});
}

}  // namespace okna::agent
