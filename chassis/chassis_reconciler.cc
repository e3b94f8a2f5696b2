#include "chassis/chassis_reconciler.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "chassis/ownership.h"
#include "core/health.h"
#include "core/logging.h"
#include "core/loop_thread.h"
#include "core/metrics.h"
#include "k8s/events.h"

namespace okna::ovsdb {

namespace {

constexpr const char* kComponent = "ovsdb";
constexpr const char* kTxnMetric = "okna_ovsdb_transactions_total";
constexpr const char* kTxnHelp = "OVSDB transactions of the chassis configuration, by result";
constexpr const char* kReconnectsMetric = "okna_ovsdb_reconnects_total";
constexpr const char* kReconnectsHelp =
    "Connections re-established after a loss, by database (db: Open_vSwitch, the local OVSDB; "
    "OVN_Southbound)";
constexpr const char* kLossesMetric = "okna_ovsdb_connection_losses_total";
constexpr const char* kLossesHelp =
    "Connections lost (each outage once, however many reconnection attempts fail), by database "
    "(db: Open_vSwitch, the local OVSDB; OVN_Southbound)";
constexpr const char* kLocalDb = "Open_vSwitch";
constexpr const char* kSouthboundDb = "OVN_Southbound";

std::string join(const std::vector<std::string>& items, const std::string& separator = ",") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : separator) + i;
  return out;
}

// What the agent owns: the IDL thread's knowledge, else the record in the snapshot (none when
// absent or unreadable).
std::optional<OwnershipRecord> ownershipRecord(const Snapshot& s) {
  if (s.ownership) return s.ownership;
  const auto it = s.ovs->externalIds.find(kOwnershipKey);
  if (it == s.ovs->externalIds.end()) return std::nullopt;
  auto record = parseOwnership(it->second);
  if (!record) return std::nullopt;
  return std::move(*record);
}

}  // namespace

ChassisObserved observedChassisOf(const Snapshot& s) {
  ChassisObserved out;
  out.hasRoot = s.ovs->hasRoot;
  out.systemId = s.systemId;
  out.ownership = ownershipRecord(s);
  out.sbSynced = s.sb.synced;
  out.gatewayPorts = s.sb.gatewayPorts;
  return out;
}

namespace {

bool isSsl(const std::string& remote) {
  return remote.rfind("ssl:", 0) == 0 || remote.find(",ssl:") != std::string::npos;
}

// Why a connection fails, with what to check when it is TLS.
std::string connectionProblem(const std::string& remote, const std::string& error,
                              const std::string& tlsError, bool sslConfigured) {
  std::string out = error.empty() ? std::string("connecting") : error;
  if (!isSsl(remote)) return out;
  if (!sslConfigured) return out + "; TLS: ovs.ssl is not configured";
  if (!tlsError.empty()) return out + "; TLS: " + tlsError;
  return out +
         "; TLS: check that ovs.ssl.caCertFile is the CA that signed the server's certificate, "
         "that the server trusts ovs.ssl.certificateFile, and the agent's log (component ovs)";
}

}  // namespace

ChassisReconciler::ChassisReconciler(boost::asio::io_context& io, core::Clock& clock,
                                     OvsConfig config, core::MetricsRegistry& metrics,
                                     core::HealthRegistry& health, k8s::EventRecorder* events,
                                     OvsdbApplierFactory makeApplier)
    : io_(io),
      config_(std::move(config)),
      metrics_(metrics),
      health_(health),
      events_(events),
      alive_(std::make_shared<bool>(true)),
      clock_(clock),
      stateFile_(config_.stateFile),
      drainTimer_(clock_.makeTimer()),
      vswitchdTimer_(clock_.makeTimer()) {
  if (const std::string runDir = config_.vswitchdRunDir.value_or(""); !runDir.empty())
    vswitchdProbe_ = std::make_unique<UnixctlVswitchdProbe>(runDir);
  fileCopy_ = stateFile_.load();
  if (fileCopy_.state == OwnershipCopy::State::Unreadable)
    core::logger(kComponent)
        ->warn(
            "{} is unreadable ({}); the ownership record in OVSDB is the only copy until it is "
            "rewritten",
            fileCopy_.where, fileCopy_.error);
  if (fileCopy_.state == OwnershipCopy::State::Known) savedOwnership_ = fileCopy_.record;
  health_.addComponent(kComponent);
  health_.setReady(kComponent, false, "waiting for the Node");
  for (const char* result : {"success", "unchanged", "conflict", "error"})
    metrics_.counter(kTxnMetric, kTxnHelp, {{"result", result}});
  for (const char* db : {kLocalDb, kSouthboundDb}) {
    metrics_.counter(kReconnectsMetric, kReconnectsHelp, {{"db", db}});
    metrics_.counter(kLossesMetric, kLossesHelp, {{"db", db}});
  }
  metrics_.gauge("okna_ovsdb_failed_interfaces",
                 "Bridges and ports of the agent that ovs-vswitchd failed to create");
  metrics_.gauge("okna_ovsdb_ownership_lost",
                 "1 while the record of what the agent wrote to OVSDB is lost with no copy "
                 "(annotate the Node chassis.openkeel.io/adopt-ownership)");
  metrics_.gauge("okna_ovsdb_connected", "1 while connected to the local OVSDB");
  metrics_.gauge("okna_ovsdb_vswitchd_running",
                 "1 while ovs-vswitchd answers on its unixctl socket (absent: not checked)");
  metrics_.gauge("okna_ovsdb_gateway_draining", "1 while a planned gateway failover waits");
  metrics_.gauge("okna_ovsdb_gateway_ports",
                 "chassisredirect ports bound to this chassis in the Southbound DB");
  metrics_.histogram("okna_ovsdb_gateway_drain_seconds",
                     "How long planned gateway failovers waited for the gateways to move");
  OvsdbApplier::SnapshotCallback publish = [this,
                                            alive = alive_](std::shared_ptr<const Snapshot> s) {
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
  };
  thread_ = makeApplier ? makeApplier(std::move(publish))
                        : std::make_unique<ChassisTransportApplier>(config_, health_, clock_,
                                                                    std::move(publish));
}

ChassisReconciler::~ChassisReconciler() {
  stop();
}

void ChassisReconciler::stop() {
  OKNA_ASSERT_ON_LOOP();
  *alive_ = false;
  drainTimer_->cancel();
  vswitchdTimer_->cancel();
  thread_->stop();
}

void ChassisReconciler::update(const k8s::NodeInfo& node, const DesiredChassis& planned) {
  OKNA_ASSERT_ON_LOOP();
  if (!*alive_) return;
  nodeName_ = node.name;
  node_ = node;
  plan_ = planned;
  // The host's facts are read with each Node change (the Node names the NIC); the decision is
  // made again with each snapshot and drain deadline.
  const std::string nic = externalNicOf(node);
  nicFacts_ = nic.empty() ? NicFacts{} : hostNics_->facts(nic);
  decide();
  // The planner's warnings were logged with the plan; those of the host check are this
  // applier's own.
  const size_t fromPlan = decision_->planWarnings;
  if (planned_->warnings != reportedWarnings_) {
    for (size_t i = 0; i < planned_->warnings.size(); ++i) {
      const ChassisWarning& w = planned_->warnings[i];
      if (std::find(reportedWarnings_.begin(), reportedWarnings_.end(), w) !=
          reportedWarnings_.end())
        continue;
      if (i >= fromPlan) core::logger(kComponent)->warn("{}", w.message);
      event("Warning", w.reason, w.message);
    }
    reportedWarnings_ = planned_->warnings;
    updateHealth();
  }
  if (generation_ == 0 && !submitted_) {
    health_.setReady(kComponent, false, "connecting to " + config_.remote);
    thread_->start();
    checkVswitchd();
  }
  submit();
}

void ChassisReconciler::submit() {
  // Nothing is sent before the first replica: whether a drain is due depends on it.
  if (!decision_ || !decision_->submit) return;
  const DesiredChassis& effective = decision_->effective;
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
  reportFailedInterfaces();
  reportOwnership();
  mirrorOwnership();
  updateHealth();
  decide();
  submit();
}

void ChassisReconciler::reportFailedInterfaces() {
  // What ovs-vswitchd made of the bridges and ports the agent asked for (Interface.error,
  // ofport -1): a broken br-ex is not a ready gateway.
  const std::vector<std::string> failed =
      submitted_ ? failedInterfaces(*submitted_, *snapshot_->ovs) : std::vector<std::string>{};
  metrics_.gauge("okna_ovsdb_failed_interfaces", "").set(static_cast<double>(failed.size()));
  for (const auto& f : failed) {
    if (std::find(failedInterfaces_.begin(), failedInterfaces_.end(), f) != failedInterfaces_.end())
      continue;
    const std::string message = "ovs-vswitchd failed to create " + f;
    core::logger(kComponent)->warn("{}", message);
    event("Warning", "OvsInterfaceFailed", message);
  }
  failedInterfaces_ = failed;
}

void ChassisReconciler::mirrorOwnership() {
  // The copy follows what the agent owns; a write error is logged once per error and retried
  // with the next change.
  if (!snapshot_->ownership || snapshot_->ownership == savedOwnership_) return;
  if (const auto saved = stateFile_.save(*snapshot_->ownership); !saved) {
    if (saved.error().message != stateFileError_)
      core::logger(kComponent)
          ->warn("cannot keep the ownership record's copy: {} (errno {})", saved.error().message,
                 saved.error().code);
    stateFileError_ = saved.error().message;
    return;
  }
  stateFileError_.clear();
  savedOwnership_ = snapshot_->ownership;
}

void ChassisReconciler::reportOwnership() {
  using Kind = OwnershipOutcome::Kind;
  const Snapshot& s = *snapshot_;
  auto log = core::logger(kComponent);
  if (s.ownershipEvents != reportedOwnershipEvents_) {
    reportedOwnershipEvents_ = s.ownershipEvents;
    const OwnershipOutcome& e = s.lastOwnershipEvent;
    if (e.kind == Kind::Recovered) {
      // Whatever removed the record may have removed the copy too: rewrite it.
      savedOwnership_.reset();
      log->warn("{}", e.message);
      event("Warning", "OwnershipRecovered", e.message);
    } else {
      log->info("{}; the annotation {} can be removed", e.message, kAdoptOwnershipKey);
      event("Normal", "OwnershipAdopted", e.message);
    }
  }
  const bool lost = s.ownershipOutcome.kind == Kind::Lost;
  metrics_.gauge("okna_ovsdb_ownership_lost", "").set(lost ? 1 : 0);
  if (lost && !reportedLost_) {
    log->error("{}", s.ownershipOutcome.message);
    event("Warning", "OwnershipLost", s.ownershipOutcome.message);
  }
  reportedLost_ = lost;
}

void ChassisReconciler::checkVswitchd() {
  if (!vswitchdProbe_ || !*alive_) return;
  VswitchdStatus now = vswitchdProbe_->check();
  auto log = core::logger(kComponent);
  if (!now.running && (!vswitchd_ || vswitchd_->running))
    log->error(
        "ovs-vswitchd is not running ({}): the datapath does not follow OVSDB, whose ports and "
        "ofport values are stale; not ready until it answers",
        now.detail);
  else if (now.running && vswitchd_ && !vswitchd_->running)
    log->info("ovs-vswitchd is running again ({})", now.detail);
  metrics_.gauge("okna_ovsdb_vswitchd_running", "").set(now.running ? 1 : 0);
  const bool changed = !vswitchd_ || *vswitchd_ != now;
  vswitchd_ = std::move(now);
  if (changed) updateHealth();
  vswitchdTimer_->waitUntil(clock_.now() + config_.vswitchdCheckInterval, [this, alive = alive_] {
    if (*alive) checkVswitchd();
  });
}

void ChassisReconciler::updateHealth() {
  if (!snapshot_) return;
  const Snapshot& s = *snapshot_;
  // Malformed Node inputs keep what is applied (the node still works, so it stays ready) but
  // /readyz?verbose says what is wrong.
  std::string problems;
  if (planned_)
    for (const auto& w : planned_->warnings)
      problems += (problems.empty() ? "" : "; ") + w.reason + ": " + w.message;
  // A lost ownership record: the node works, but removing a role would leave its items behind.
  if (s.ownershipOutcome.kind == OwnershipOutcome::Kind::Lost)
    problems += (problems.empty() ? "" : "; ") + std::string("OwnershipLost: ") +
                s.ownershipOutcome.message;
  if (!s.sb.remote.empty() && !s.sb.connected && !s.sb.connectionError.empty())
    problems +=
        (problems.empty() ? "" : "; ") + std::string("Southbound DB ") + s.sb.remote + ": " +
        connectionProblem(s.sb.remote, s.sb.connectionError, s.tlsError, config_.ssl.configured());
  if (!s.connected) {
    const std::string why = s.connectionError.empty() ? s.lastError : s.connectionError;
    health_.setReady(
        kComponent, false,
        "not connected to " + config_.remote + " (" +
            connectionProblem(config_.remote, why, s.tlsError, config_.ssl.configured()) + ")");
  } else if (!s.ovs->hasRoot) {
    health_.setReady(kComponent, false, "the Open_vSwitch table has no row (ovs-vsctl init)");
  } else if (vswitchd_ && !vswitchd_->running) {
    health_.setReady(kComponent, false,
                     "ovs-vswitchd is not running (" + vswitchd_->detail +
                         "): the datapath does not follow OVSDB");
  } else if (!ready_) {
    health_.setReady(kComponent, false,
                     "applying the first desired state" +
                         (s.lastError.empty() ? std::string() : ": " + s.lastError));
  } else if (!failedInterfaces_.empty()) {
    health_.setReady(kComponent, false,
                     "ovs-vswitchd failed to create " + join(failedInterfaces_, "; ") +
                         (problems.empty() ? std::string() : "; Node inputs: " + problems));
  } else {
    health_.setReady(kComponent, true,
                     "connected to " + config_.remote +
                         (problems.empty() ? std::string() : "; Node inputs: " + problems));
  }
}

void ChassisReconciler::decide() {
  if (!plan_ || !node_) return;
  ChassisDecisionInputs in;
  in.externalNic = nicFacts_;
  if (snapshot_) in.observed = observedChassisOf(*snapshot_);
  in.drain = drain_;
  in.gatewayFlagInFlight = submitted_ && submitted_->gateway && snapshot_ &&
                           snapshot_->convergedGeneration < generation_;
  in.ownershipCopy = fileCopy_;
  in.now = core::unixSeconds(clock_);
  in.drainTimeout = config_.drainTimeout;
  decision_ = decideChassis(*plan_, *node_, in);
  planned_ = decision_->checked;
  refusedNic_ = decision_->refusedNic;
  if (!decision_->submit) return;  // no replica yet: no drain step
  const std::int64_t sinceBefore = drain_.since;
  drain_ = decision_->drain.state;
  reportDrain(decision_->drain, *snapshot_);
  if (drain_.since != sinceBefore) armDrainTimer(in.now);
}

void ChassisReconciler::armDrainTimer(std::int64_t now) {
  drainTimer_->cancel();
  if (drain_.since == 0) return;
  const std::int64_t left =
      std::max<std::int64_t>(0, drain_.since + config_.drainTimeout.count() - now);
  // The step compares whole seconds: 100 ms past the deadline it has surely passed.
  drainTimer_->waitUntil(clock_.now() + std::chrono::seconds(left) + std::chrono::milliseconds(100),
                         [this, alive = alive_] {
                           if (!*alive || drain_.since == 0) return;
                           decide();
                           if (drain_.since != 0) armDrainTimer(core::unixSeconds(clock_));
                           submit();
                         });
}

std::optional<core::HealthRegistry::Check> ChassisReconciler::health() const {
  return health_.component(kComponent);
}

namespace {

// Everything the record lists is wanted still: what is no longer wanted has gone (a bridge the
// agent created goes only once ovn-controller removed its patch port from it, seconds after the
// mapping went).
bool ownsOnlyWhatIsWanted(const OwnershipRecord& owned, const DesiredChassis& wanted) {
  const auto in = [](const auto& items, const auto& item) {
    return std::find(items.begin(), items.end(), item) != items.end();
  };
  std::vector<std::string> mappings, bridges;
  std::vector<std::pair<std::string, std::string>> ports;
  for (const auto& m : wanted.bridgeMappings) mappings.push_back(m.item());
  for (const auto& b : wanted.bridges) {
    bridges.push_back(b.name);
    for (const auto& p : b.ports) ports.emplace_back(b.name, p);
  }
  const auto cms = wanted.cmsItems();
  return owned.drainSince == 0 &&
         std::all_of(owned.cmsItems.begin(), owned.cmsItems.end(),
                     [&](const auto& i) { return in(cms, i); }) &&
         std::all_of(owned.mappings.begin(), owned.mappings.end(),
                     [&](const auto& i) { return in(mappings, i); }) &&
         std::all_of(owned.bridges.begin(), owned.bridges.end(),
                     [&](const auto& i) { return in(bridges, i); }) &&
         std::all_of(owned.ports.begin(), owned.ports.end(),
                     [&](const auto& i) { return in(ports, i); });
}

}  // namespace

bool ChassisReconciler::settled() const {
  if (!snapshot_ || !snapshot_->connected || generation_ == 0 ||
      snapshot_->convergedGeneration != generation_ || draining() || !decision_)
    return false;
  return !snapshot_->ownership || ownsOnlyWhatIsWanted(*snapshot_->ownership, decision_->effective);
}

nlohmann::json ChassisReconciler::debugJson() const {
  nlohmann::json out;
  out["connected"] = snapshot_ && snapshot_->connected;
  out["ready"] = ready_;
  nlohmann::json drain = {{"inProgress", drain_.since != 0}};
  if (drain_.since != 0) {
    drain["since"] = isoTime(drain_.since);
    drain["deadline"] = isoTime(drain_.since + config_.drainTimeout.count());
    drain["resumed"] = drain_.resumed;
    drain["gatewayPorts"] = snapshot_ ? snapshot_->sb.gatewayPorts : std::vector<std::string>{};
    drain["holding"] = heldNetwork();
  }
  out["drain"] = std::move(drain);
  out["externalNicRefused"] =
      refusedNic_.empty() ? nlohmann::json(nullptr) : nlohmann::json(refusedNic_);
  out["failedInterfaces"] = failedInterfaces_;
  out["vswitchd"] =
      vswitchd_ ? nlohmann::json{{"running", vswitchd_->running}, {"detail", vswitchd_->detail}}
                : nlohmann::json(nullptr);
  out["decision"] = decision_ ? decisionToJson(*decision_) : nlohmann::json(nullptr);
  out["submittedGeneration"] = generation_;
  out["convergedGeneration"] = snapshot_ ? snapshot_->convergedGeneration : 0;
  return out;
}

void ChassisReconciler::reportDrain(const GatewayDrainStep& step, const Snapshot& s) {
  using What = GatewayDrainStep::What;
  auto log = core::logger(kComponent);
  const std::string timeout = std::to_string(config_.drainTimeout.count()) + "s";
  const std::string held = heldNetwork();
  const std::string resumed = step.state.resumed
                                  ? " (continuing the drain an earlier agent process started " +
                                        std::to_string(step.elapsed) + "s ago)"
                                  : "";
  switch (step.what) {
    case What::None:
      break;
    case What::NotNeeded:
      log->info(
          "network role removed from node {}: {} cleared, and the network it owns goes now "
          "({})",
          nodeName_, kGatewayItem, step.why);
      break;
    case What::Waiting:
      metrics_.gauge("okna_ovsdb_gateway_draining", "").set(1);
      reportedGatewayPorts_.clear();
      log->info(
          "gateway drain of node {}: {} cleared so that Neutron moves the router gateways; "
          "the Southbound DB{} is not synced, so keeping {} until it shows no gateway bound "
          "to chassis {}, at most {}{}",
          nodeName_, kGatewayItem,
          s.sb.remote.empty() ? std::string(" (no ovn-remote)") : " at " + s.sb.remote, held,
          s.systemId, timeout, resumed);
      break;
    case What::Started: {
      metrics_.gauge("okna_ovsdb_gateway_draining", "").set(1);
      reportedGatewayPorts_ = s.sb.gatewayPorts;
      const std::string message = "network role removed while " +
                                  std::to_string(s.sb.gatewayPorts.size()) +
                                  " chassisredirect port(s) are bound to chassis " + s.systemId +
                                  " (" + join(s.sb.gatewayPorts) + "): " + kGatewayItem +
                                  " cleared so that Neutron moves them; keeping " + held +
                                  " until they leave, at most " + timeout + resumed;
      log->info("gateway drain of node {} started: {}", nodeName_, message);
      event("Normal", "GatewayDrainStarted", message);
      break;
    }
    case What::Drained:
    case What::TimedOut: {
      metrics_.gauge("okna_ovsdb_gateway_draining", "").set(0);
      const bool timedOut = step.what == What::TimedOut;
      const std::string how = timedOut
                                  ? "timed out after " + timeout +
                                        (s.sb.gatewayPorts.empty()
                                             ? std::string()
                                             : " with " + join(s.sb.gatewayPorts) + " still bound")
                                  : step.why;
      const std::string message = fmt::format(
          "gateway drain finished after {}s: {}; removing the bridge mappings, bridges and NIC "
          "the Node no longer asks for",
          step.elapsed, how);
      if (timedOut || step.wasAnnounced)
        metrics_.histogram("okna_ovsdb_gateway_drain_seconds", "")
            .observe(static_cast<double>(step.elapsed));
      if (timedOut) {
        log->warn("node {}: {}", nodeName_, message);
        event("Warning", "GatewayDrainTimedOut", message);
      } else {
        log->info("node {}: {}", nodeName_, message);
        if (step.wasAnnounced) event("Normal", "GatewayDrained", message);
      }
      break;
    }
    case What::Cancelled:
      metrics_.gauge("okna_ovsdb_gateway_draining", "").set(0);
      log->info("node {}: network role is back; gateway drain cancelled", nodeName_);
      break;
  }
  if (step.state.since != 0 && step.what == What::None && s.sb.synced &&
      s.sb.gatewayPorts != reportedGatewayPorts_) {
    reportedGatewayPorts_ = s.sb.gatewayPorts;
    log->info("gateway drain of node {}: still bound to chassis {}: {}", nodeName_, s.systemId,
              join(reportedGatewayPorts_));
  }
}

std::string ChassisReconciler::heldNetwork() const {
  if (!snapshot_) return "the network";
  const auto record = ownershipRecord(*snapshot_);
  if (!record || (record->mappings.empty() && record->bridges.empty() && record->ports.empty()))
    return "the network (the agent owns no mapping, bridge or port)";
  std::vector<std::string> parts;
  if (!record->mappings.empty()) parts.push_back("bridge mappings " + join(record->mappings));
  if (!record->bridges.empty()) parts.push_back("bridges " + join(record->bridges));
  std::vector<std::string> ports;
  for (const auto& [bridge, port] : record->ports) ports.push_back(bridge + "/" + port);
  if (!ports.empty()) parts.push_back("ports " + join(ports));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
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
  const auto count = [&](const char* metric, const char* help, const char* db, std::uint64_t before,
                         std::uint64_t now) {
    if (now > before)
      metrics_.counter(metric, help, {{"db", db}}).inc(static_cast<double>(now - before));
  };
  count(kReconnectsMetric, kReconnectsHelp, kLocalDb, previous.stats.reconnects,
        s.stats.reconnects);
  count(kLossesMetric, kLossesHelp, kLocalDb, previous.stats.losses, s.stats.losses);
  count(kReconnectsMetric, kReconnectsHelp, kSouthboundDb, previous.stats.sbReconnects,
        s.stats.sbReconnects);
  count(kLossesMetric, kLossesHelp, kSouthboundDb, previous.stats.sbLosses, s.stats.sbLosses);
  metrics_.gauge("okna_ovsdb_ownership_lost",
                 "1 while the record of what the agent wrote to OVSDB is lost with no copy "
                 "(annotate the Node chassis.openkeel.io/adopt-ownership)");
  metrics_.gauge("okna_ovsdb_connected", "").set(s.connected ? 1 : 0);
  metrics_.gauge("okna_ovsdb_gateway_ports", "").set(static_cast<double>(s.sb.gatewayPorts.size()));
}

void ChassisReconciler::event(const std::string& type, const std::string& reason,
                              const std::string& message) {
  if (events_) events_->record(type, reason, message);
}

}  // namespace okna::ovsdb
