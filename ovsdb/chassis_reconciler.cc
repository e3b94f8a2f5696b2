#include "ovsdb/chassis_reconciler.h"

#include <boost/asio/post.hpp>
#include <chrono>

#include "core/health.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "k8s/events.h"
#include "ovsdb/ownership.h"

namespace okna::ovsdb {

namespace {

constexpr const char* kComponent = "ovsdb";
constexpr const char* kTxnMetric = "okna_ovsdb_transactions_total";
constexpr const char* kTxnHelp = "OVSDB transactions of the chassis configuration, by result";

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// The ownership record says the agent put enable-chassis-as-gw there: clearing it is the agent's
// job, and the drain's.
bool ownsGatewayItem(const Snapshot& s) {
  const auto it = s.ovs.externalIds.find(kOwnershipKey);
  if (it == s.ovs.externalIds.end()) return false;
  auto record = parseOwnership(it->second);
  if (!record) return false;
  for (const auto& item : record->cmsItems)
    if (item == kGatewayItem) return true;
  return false;
}

}  // namespace

ChassisReconciler::ChassisReconciler(boost::asio::io_context& io, OvsConfig config,
                                     core::MetricsRegistry& metrics, core::HealthRegistry& health,
                                     k8s::EventRecorder* events)
    : io_(io),
      config_(std::move(config)),
      metrics_(metrics),
      health_(health),
      events_(events),
      alive_(std::make_shared<bool>(true)),
      drainTimer_(io) {
  health_.addComponent(kComponent);
  health_.setReady(kComponent, false, "waiting for the Node");
  for (const char* result : {"success", "unchanged", "conflict", "error"})
    metrics_.counter(kTxnMetric, kTxnHelp, {{"result", result}});
  metrics_.counter("okna_ovsdb_reconnects_total", "Reconnections to the local OVSDB");
  metrics_.gauge("okna_ovsdb_connected", "1 while connected to the local OVSDB");
  metrics_.gauge("okna_ovsdb_gateway_draining", "1 while a planned gateway failover waits");
  metrics_.gauge("okna_ovsdb_gateway_ports",
                 "chassisredirect ports bound to this chassis in the Southbound DB");
  metrics_.histogram("okna_ovsdb_gateway_drain_seconds",
                     "How long planned gateway failovers waited for the gateways to move");
  thread_ = std::make_unique<IdlThread>(config_, health_,
                                        [this, alive = alive_](std::shared_ptr<const Snapshot> s) {
                                          // Called on the IDL thread: hop to the loop; `alive`
                                          // guards against a late post. Only the newest snapshot
                                          // matters (its counters are cumulative): while a hop is
                                          // pending, a newer one replaces it instead of queueing
                                          // behind it. A busy ovs-vswitchd (1,000 new ports)
                                          // publishes faster than the loop could process each one.
                                          {
                                            const std::lock_guard lock(latestMutex_);
                                            const bool hopPending = latest_ != nullptr;
                                            latest_ = std::move(s);
                                            if (hopPending) return;
                                          }
                                          boost::asio::post(io_, [this, alive] {
                                            if (!*alive) return;
                                            std::shared_ptr<const Snapshot> newest;
                                            {
                                              const std::lock_guard lock(latestMutex_);
                                              newest.swap(latest_);
                                            }
                                            if (newest) onSnapshot(std::move(newest));
                                          });
                                        });
}

ChassisReconciler::~ChassisReconciler() {
  stop();
}

void ChassisReconciler::stop() {
  *alive_ = false;
  drainTimer_.cancel();
  thread_->stop();
}

void ChassisReconciler::update(const k8s::NodeInfo& node, const std::set<std::string>& roles) {
  if (!*alive_) return;
  nodeName_ = node.name;
  planned_ = planChassis(config_, node, roles);
  if (planned_->warnings != reportedWarnings_) {
    for (const auto& w : planned_->warnings) {
      bool known = false;
      for (const auto& r : reportedWarnings_) known = known || r == w;
      if (known) continue;
      core::logger(kComponent)->warn("{}", w.message);
      event("Warning", w.reason, w.message);
    }
    reportedWarnings_ = planned_->warnings;
  }
  if (generation_ == 0 && !submitted_) {
    health_.setReady(kComponent, false, "connecting to " + config_.remote);
    thread_->start();
  }
  evaluateDrain();
  submit();
}

void ChassisReconciler::submit() {
  // Nothing is sent before the first replica: whether a drain is due depends on it.
  if (!planned_ || !snapshot_ || !snapshot_->ovs.hasRoot) return;
  DesiredChassis effective = *planned_;
  effective.gateway = planned_->gateway || drainStarted_.has_value();
  if (submitted_ && *submitted_ == effective) return;
  submitted_ = effective;
  thread_->submit(effective, ++generation_);
}

void ChassisReconciler::onSnapshot(std::shared_ptr<const Snapshot> snapshot) {
  // The previous snapshot by reference count, not by copy: a copy is O(ports) allocations.
  static const Snapshot kNone;
  const std::shared_ptr<const Snapshot> previous = std::move(snapshot_);
  snapshot_ = std::move(snapshot);
  const Snapshot& s = *snapshot_;
  updateMetrics(previous ? *previous : kNone, s);
  if (s.connected && generation_ > 0 && s.convergedGeneration == generation_ && !ready_) {
    ready_ = true;
    core::logger(kComponent)->info("chassis configuration applied to {}", config_.remote);
  }
  if (!s.connected) {
    health_.setReady(kComponent, false,
                     "not connected to " + config_.remote +
                         (s.lastError.empty() ? "" : " (" + s.lastError + ")"));
  } else if (!s.ovs.hasRoot) {
    health_.setReady(kComponent, false, "the Open_vSwitch table has no row (ovs-vsctl init)");
  } else if (!ready_) {
    health_.setReady(kComponent, false,
                     "applying the first desired state" +
                         (s.lastError.empty() ? std::string() : ": " + s.lastError));
  } else {
    health_.setReady(kComponent, true, "connected to " + config_.remote);
  }
  evaluateDrain();
  submit();
  if (listener_) listener_(s);
}

std::uint64_t ChassisReconciler::submitMetadata(const DesiredMetadataOvs& desired) {
  if (!*alive_) return metadataGeneration_;
  if (submittedMetadata_ && *submittedMetadata_ == desired) return metadataGeneration_;
  submittedMetadata_ = desired;
  thread_->submitMetadata(desired, ++metadataGeneration_);
  return metadataGeneration_;
}

void ChassisReconciler::evaluateDrain() {
  if (!planned_ || !snapshot_) return;
  if (planned_->gateway) {
    if (drainStarted_) cancelDrain();
    drainDone_ = false;
    return;
  }
  const Snapshot& s = *snapshot_;
  if (drainStarted_) {
    if (s.systemId.empty()) {
      finishDrain("this node no longer has a chassis name (external_ids:system-id)", false);
    } else if (s.sb.synced && s.sb.gatewayPorts.empty()) {
      finishDrain("no chassisredirect port is bound to chassis " + s.systemId + " any more", false);
    } else if (s.sb.gatewayPorts != reportedGatewayPorts_) {
      reportedGatewayPorts_ = s.sb.gatewayPorts;
      core::logger(kComponent)
          ->info("gateway drain of node {}: still bound to chassis {}: {}", nodeName_, s.systemId,
                 reportedGatewayPorts_.empty() ? "(Southbound DB not synced)"
                                               : join(reportedGatewayPorts_));
    }
    return;
  }
  if (drainDone_ || !ownsGatewayItem(s)) return;
  startDrain();
}

void ChassisReconciler::startDrain() {
  const Snapshot& s = *snapshot_;
  auto log = core::logger(kComponent);
  if (config_.drainTimeout.count() == 0 || s.systemId.empty() ||
      (s.sb.synced && s.sb.gatewayPorts.empty())) {
    log->info("network role removed from node {}: clearing {} now ({})", nodeName_, kGatewayItem,
              config_.drainTimeout.count() == 0 ? "drainTimeoutSeconds is 0"
              : s.systemId.empty()              ? "no chassis name"
                                                : "no router gateway is bound to this chassis");
    drainDone_ = true;
    return;
  }
  drainStarted_ = std::chrono::steady_clock::now();
  reportedGatewayPorts_ = s.sb.gatewayPorts;
  metrics_.gauge("okna_ovsdb_gateway_draining", "").set(1);
  const std::string why = s.sb.synced ? std::to_string(s.sb.gatewayPorts.size()) +
                                            " chassisredirect port(s) are bound to chassis " +
                                            s.systemId + " (" + join(s.sb.gatewayPorts) + ")"
                                      : "the Southbound DB" +
                                            (s.sb.remote.empty() ? std::string(" (no ovn-remote)")
                                                                 : " at " + s.sb.remote) +
                                            " is not synced, so where the gateways are is unknown";
  const std::string message = "network role removed while " + why + ": keeping " + kGatewayItem +
                              " until they move, at most " +
                              std::to_string(config_.drainTimeout.count()) + "s";
  log->info("gateway drain of node {} started: {}", nodeName_, message);
  event("Normal", "GatewayDrainStarted", message);
  drainTimer_.expires_after(config_.drainTimeout);
  drainTimer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || !drainStarted_) return;
    const auto& ports = snapshot_->sb.gatewayPorts;
    finishDrain("timed out after " + std::to_string(config_.drainTimeout.count()) + "s" +
                    (ports.empty() ? std::string() : " with " + join(ports) + " still bound"),
                true);
  });
}

void ChassisReconciler::finishDrain(const std::string& how, bool timedOut) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - *drainStarted_).count();
  drainStarted_.reset();
  drainDone_ = true;
  drainTimer_.cancel();
  metrics_.gauge("okna_ovsdb_gateway_draining", "").set(0);
  metrics_.histogram("okna_ovsdb_gateway_drain_seconds", "").observe(seconds);
  const std::string message = fmt::format("gateway drain finished after {:.1f}s: {}; clearing {}",
                                          seconds, how, kGatewayItem);
  if (timedOut) {
    core::logger(kComponent)->warn("node {}: {}", nodeName_, message);
  } else {
    core::logger(kComponent)->info("node {}: {}", nodeName_, message);
  }
  event(timedOut ? "Warning" : "Normal", timedOut ? "GatewayDrainTimedOut" : "GatewayDrained",
        message);
  submit();
}

void ChassisReconciler::cancelDrain() {
  drainStarted_.reset();
  drainTimer_.cancel();
  metrics_.gauge("okna_ovsdb_gateway_draining", "").set(0);
  core::logger(kComponent)
      ->info("node {}: network role is back; gateway drain cancelled", nodeName_);
}

void ChassisReconciler::updateMetrics(const Snapshot& previous, const Snapshot& s) {
  const auto add = [&](const char* result, std::uint64_t before, std::uint64_t now) {
    if (now > before)
      metrics_.counter(kTxnMetric, kTxnHelp, {{"result", result}})
          .inc(static_cast<double>(now - before));
  };
  add("success", previous.stats.success, s.stats.success);
  add("unchanged", previous.stats.unchanged, s.stats.unchanged);
  add("conflict", previous.stats.conflicts, s.stats.conflicts);
  add("error", previous.stats.errors, s.stats.errors);
  if (s.stats.reconnects > previous.stats.reconnects)
    metrics_.counter("okna_ovsdb_reconnects_total", "")
        .inc(static_cast<double>(s.stats.reconnects - previous.stats.reconnects));
  metrics_.gauge("okna_ovsdb_connected", "").set(s.connected ? 1 : 0);
  metrics_.gauge("okna_ovsdb_gateway_ports", "").set(static_cast<double>(s.sb.gatewayPorts.size()));
}

void ChassisReconciler::event(const std::string& type, const std::string& reason,
                              const std::string& message) {
  if (events_) events_->record(type, reason, message);
}

}  // namespace okna::ovsdb
