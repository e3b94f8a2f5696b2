#include "metadata/reconciler.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/health.h"
#include "core/logging.h"
#include "core/loop_thread.h"
#include "core/metrics.h"

namespace okna::metadata {

namespace {

constexpr const char* kComponent = "metadata";

// The MAC behind an EUI-64 IPv6 link-local address (fe80::XXff:feXX:XXXX), "" otherwise.
std::string macOfLinkLocal(const std::string& ip) {
  in6_addr a{};
  const std::string bare = ip.substr(0, ip.find('%'));
  if (inet_pton(AF_INET6, bare.c_str(), &a) != 1) return "";
  const unsigned char* b = a.s6_addr;
  if (b[0] != 0xfe || (b[1] & 0xc0) != 0x80 || b[11] != 0xff || b[12] != 0xfe) return "";
  char mac[18];
  std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", b[8] ^ 0x02, b[9], b[10], b[13],
                b[14], b[15]);
  return mac;
}

}  // namespace

Reconciler::Reconciler(boost::asio::io_context& io, core::Clock& clock, ReconcilerOptions options,
                       Plumbing& plumbing, RunOnWorker runOnWorker, Listeners& listeners,
                       SubmitOvs submitOvs, core::MetricsRegistry& metrics,
                       core::HealthRegistry& health)
    : io_(io),
      clock_(clock),
      options_(options),
      retries_(clock_, core::BackoffConfig{options_.retryMin, options_.retryMax, 2.0, 0.0}),
      plumbing_(plumbing),
      runOnWorker_(std::move(runOnWorker)),
      listeners_(listeners),
      submitOvs_(std::move(submitOvs)),
      metrics_(metrics),
      health_(health),
      alive_(std::make_shared<bool>(true)),
      retryTimer_(clock.makeTimer()),
      verifyTimer_(clock.makeTimer()),
      outputTimer_(clock.makeTimer()) {
  for (const char* state : {"wanted", "ready"})
    metrics_.gauge("okna_metadata_namespaces", "Metadata namespaces, by state", {{"state", state}});
  for (const char* op : {"ensure", "remove"})
    for (const char* result : {"ok", "error"})
      metrics_.counter("okna_metadata_plumbing_total", "Namespace operations, by result",
                       {{"op", op}, {"result", result}});
  metrics_.counter("okna_metadata_repairs_total",
                   "Namespaces the periodic check found changed behind the agent's back");
}

Reconciler::~Reconciler() {
  stop();
}

void Reconciler::stop() {
  OKNA_ASSERT_ON_LOOP();
  *alive_ = false;
  retryTimer_->cancel();
  verifyTimer_->cancel();
  outputTimer_->cancel();
}

void Reconciler::setActive(bool active) {
  OKNA_ASSERT_ON_LOOP();
  if (active == active_) return;
  active_ = active;
  if (active) {
    health_.addComponent(kComponent);
    health_.setReady(kComponent, false, "waiting for the Southbound view");
  } else {
    health_.removeComponent(kComponent);
    if (!networks_.empty())
      core::logger(kComponent)
          ->info(
              "metadata is no longer active here: {} namespace(s) keep serving until their "
              "VMs leave; none is created",
              networks_.size());
  }
  markAll();
  portsDirty_ = healthDirty_ = true;
  reconcile();
}

void Reconciler::retire() {
  OKNA_ASSERT_ON_LOOP();
  if (retired_) return;
  retired_ = true;
  retireListed_ = false;
  // The listing that judges the strays runs again, now as a retired agent's.
  prunedThisSync_ = false;
  core::logger(kComponent)
      ->info(
          "no role of this node serves metadata any more: removing {} namespace(s) and "
          "every ovnmeta-* namespace left on the host",
          networks_.size());
  markAll();
  portsDirty_ = healthDirty_ = true;
  reconcile();
}

void Reconciler::update(const ovsdb::SbMetadataView& view, const std::string& integrationBridge,
                        const core::SharedValue<std::set<std::string>>& bridgePorts,
                        const core::SharedValue<std::set<std::string>>& createdPorts,
                        const core::SharedValue<std::set<std::string>>& vmIfaceIds) {
  OKNA_ASSERT_ON_LOOP();
  if (!*alive_) return;
  const std::string bridge = integrationBridge.empty() ? "br-int" : integrationBridge;
  if (bridge != bridge_) {
    bridge_ = bridge;
    portsDirty_ = true;
  }
  // Most snapshots are ovn-controller's and ovs-vswitchd's own updates: same ports, no work.
  if (bridgePorts != bridgePorts_) {
    bridgePorts_ = bridgePorts;
    portsDirty_ = healthDirty_ = true;  // a network serves once its port is on the bridge
    // A port being re-plugged goes back in once ovs-vswitchd has dropped the old one.
    for (auto& [id, st] : networks_)
      if (st.replug && st.applied && !bridgePorts_->count(st.applied->hostIface)) st.replug = false;
  }
  if (createdPorts != createdPorts_) {
    createdPorts_ = createdPorts;
    healthDirty_ = true;
  }
  if (!verifyScheduled_) scheduleVerify();
  // A VM interface leaving br-int may be what proves a network gone (planner.h).
  const bool vmsChanged = vmIfaceIds != vmIfaceIds_;
  vmIfaceIds_ = vmIfaceIds;
  const bool synced = view.enabled && view.synced;
  if (view.version != viewVersion_ || synced != viewSynced_ || vmsChanged ||
      view.notSyncedReason != viewNotSyncedReason_) {
    viewVersion_ = view.version;
    viewSynced_ = synced;
    viewNotSyncedReason_ = view.notSyncedReason;
    MetadataPlan next = planMetadata(view, options_.ipv6, {vmIfaceIds_, &plan_, bridge_});
    // Strays are judged again once the plan is synced again (a reconnect, or the bindings back).
    if (next.synced && !plan_.synced) prunedThisSync_ = false;
    plan_ = std::move(next);
    // A network's plan unchanged since it was set up: keep the one object.
    for (auto& [id, planned] : plan_.networks)
      if (const auto it = networks_.find(id);
          it != networks_.end() && it->second.applied && *it->second.applied == *planned)
        planned = it->second.applied;
    markAll();
    portsDirty_ = healthDirty_ = true;
    if (plan_.warnings != reportedWarnings_) {
      for (const auto& w : plan_.warnings)
        if (std::find(reportedWarnings_.begin(), reportedWarnings_.end(), w) ==
            reportedWarnings_.end())
          core::logger(kComponent)->warn("{}", w);
      reportedWarnings_ = plan_.warnings;
    }
  }
  reconcile();
}

void Reconciler::reconcile() {
  if (!*alive_) return;
  std::optional<TimePoint> nextRetry;
  if (allDirty_) {
    allDirty_ = false;
    dirty_.clear();
    for (const auto& [id, network] : plan_.networks) reconcileNetwork(id, nextRetry);
    std::vector<std::string> gone;
    for (const auto& [id, st] : networks_)
      if (!st.busy && decide(id).action == NamespaceAction::Remove) gone.push_back(id);
    for (const auto& id : gone) startRemove(id, namespaceNameFor(id));
    if (!prunedThisSync_ && ((plan_.synced && active_) || retired_)) pruneStrays();
  } else {
    const std::set<std::string> ids = std::move(dirty_);
    dirty_.clear();
    for (const auto& id : ids) {
      if (plan_.networks.count(id)) {
        reconcileNetwork(id, nextRetry);
      } else if (const auto it = networks_.find(id); it != networks_.end() && !it->second.busy &&
                                                     decide(id).action == NamespaceAction::Remove) {
        startRemove(id, namespaceNameFor(id));
      }
    }
  }
  flushEnsures();
  if (nextRetry) scheduleRetry(*nextRetry);
  flushOutputs();
}

void Reconciler::reconcileNetwork(const std::string& id, std::optional<TimePoint>& nextRetry) {
  const auto& planned = plan_.networks.at(id);
  const NetworkPlan& network = *planned;
  const auto it = networks_.find(id);
  // Inactive: keep what exists, create nothing new (namespace_decision.h).
  const NamespaceAction action = decide(id).action;
  if (action == NamespaceAction::Hold) return;
  if (action == NamespaceAction::Remove) {
    if (it != networks_.end() && !it->second.busy && retries_.due(id))
      startRemove(id, namespaceNameFor(id));
    return;
  }
  NetworkState& st = it != networks_.end() ? it->second : networks_[id];
  if (st.busy) return;
  const bool current =
      st.applied && *st.applied == network && st.listening && !st.removing && !st.verify;
  if (current) return;
  if (!retries_.due(id)) {
    const TimePoint retryAt = *retries_.dueAt(id);
    nextRetry = nextRetry ? std::min(*nextRetry, retryAt) : retryAt;
    return;
  }
  healthDirty_ = true;
  startEnsure(planned);
}

void Reconciler::flushOutputs() {
  const auto now = clock_.now();
  const auto interval = options_.outputInterval;
  // Each output has its own window, opened only when it really handed something on: a
  // readiness update must not hold back the OVS port of the network that just came up.
  const auto due = [&](const std::optional<TimePoint>& last, std::chrono::milliseconds window) {
    return !last || now - *last >= window;
  };
  // The ports' window doubles after each hand-over that had to wait for it (a burst) and is
  // back at the minimum after one that did not (one network after any pause goes at once).
  if (portsDirty_ && due(lastPortsOutput_, portsInterval_)) {
    portsDirty_ = false;
    if (submitPorts()) {
      lastPortsOutput_ = now;
      portsInterval_ = portsWaited_ ? std::min(std::max(portsInterval_ * 2, interval),
                                               std::max(options_.outputIntervalMax, interval))
                                    : interval;
      portsWaited_ = false;
    }
  } else if (portsDirty_) {
    portsWaited_ = true;
  }
  if (healthDirty_ && due(lastHealthOutput_, interval)) {
    healthDirty_ = false;
    updateHealth();
    lastHealthOutput_ = now;
  }
  if ((!portsDirty_ && !healthDirty_) || outputTimerArmed_) return;
  TimePoint at = TimePoint::max();
  if (portsDirty_) at = std::min(at, lastPortsOutput_.value_or(now) + portsInterval_);
  if (healthDirty_) at = std::min(at, lastHealthOutput_.value_or(now) + interval);
  outputTimerArmed_ = true;
  outputTimer_->waitUntil(at, [this, alive = alive_] {
    if (!*alive) return;
    outputTimerArmed_ = false;
    flushOutputs();
  });
}

void Reconciler::requestReconcile() {
  if (reconcilePending_) return;
  reconcilePending_ = true;
  boost::asio::post(io_, [this, alive = alive_] {
    if (!*alive) return;
    reconcilePending_ = false;
    reconcile();
  });
}

void Reconciler::startEnsure(const std::shared_ptr<const NetworkPlan>& planned) {
  const NetworkPlan& network = *planned;
  NetworkState& st = networks_[network.networkId];
  st.busy = true;
  const bool listening = st.listening;
  std::vector<std::string> addresses{kMetadataIpv4};
  if (options_.ipv6) addresses.push_back(std::string(kMetadataIpv6) + "%" + network.innerIface);
  if (!listening) pendingNew_.push_back(planned);
  pendingEnsures_.emplace_back([this, alive = alive_, planned, listening, addresses] {
    auto ensured = plumbing_.ensure(*planned);
    std::vector<core::Result<int>> fds;
    if (ensured && (!listening || ensured->namespaceCreated))
      for (const auto& address : addresses) {
        // No IPv6 in this kernel (or on this link): the IPv4 listener alone.
        if (!ensured->ipv6Unavailable.empty() && address.find(':') != std::string::npos) continue;
        fds.push_back(plumbing_.listen(*planned, address, options_.port));
      }
    boost::asio::post(
        io_, [this, alive, planned, ensured = std::move(ensured), fds = std::move(fds)]() mutable {
          if (*alive) {
            onEnsured(planned, std::move(ensured), std::move(fds));
          } else {
            for (auto& fd : fds)
              if (fd) ::close(*fd);
          }
        });
  });
}

void Reconciler::flushEnsures() {
  if (pendingNew_.size() >= 2) {
    runOnWorker_([this, batch = std::move(pendingNew_)] { plumbing_.prepare(batch); });
  }
  pendingNew_.clear();
  for (auto& task : pendingEnsures_) runOnWorker_(std::move(task));
  pendingEnsures_.clear();
}

void Reconciler::onEnsured(const std::shared_ptr<const NetworkPlan>& planned,
                           core::Result<Plumbing::Ensured> ensured,
                           std::vector<core::Result<int>> fds) {
  const NetworkPlan& network = *planned;
  auto log = core::logger(kComponent);
  NetworkState& st = networks_[network.networkId];
  st.busy = false;
  markDirty(network.networkId);
  portsDirty_ = healthDirty_ = true;
  const auto fail = [&](const std::string& error) {
    for (auto& fd : fds)
      if (fd) ::close(*fd);
    st.lastError = error;
    const auto delay = retries_.failed(network.networkId);
    log->error("network {}: {}; retrying in {} ms", network.networkId, error, delay.count());
    metrics_
        .counter("okna_metadata_plumbing_total", "Namespace operations, by result",
                 {{"op", "ensure"}, {"result", "error"}})
        .inc();
  };
  // A failed check stays a check (st.verify): retried with backoff, not ready meanwhile.
  if (!ensured) return fail(ensured.error().message), requestReconcile();
  // Said once per agent: on a kernel booted with ipv6.disable=1 every namespace would say it.
  if (!ensured->ipv6Unavailable.empty() && ipv6UnavailableReported_.empty()) {
    ipv6UnavailableReported_ = ensured->ipv6Unavailable;
    log->warn(
        "IPv6 is off in this kernel or namespace (ipv6.disable=1 or disable_ipv6): {}; every "
        "network is served on {} only, not on {} (reported once)",
        ensured->ipv6Unavailable, kMetadataIpv4, kMetadataIpv6);
  }
  if (!fds.empty()) {
    if (!fds[0])
      return fail("listening on " + std::string(kMetadataIpv4) + ":" +
                  std::to_string(options_.port) + " in " + network.namespaceName + ": " +
                  fds[0].error().message),
             requestReconcile();
    // A re-created namespace took the old listeners' sockets with it.
    if (st.listening) listeners_.removeNetwork(network.networkId);
    st.listening = false;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i]) {
        log->warn("network {}: IPv6 metadata not served: {}", network.networkId,
                  fds[i].error().message);
        continue;
      }
      if (auto s = listeners_.addListener(network.networkId, *fds[i]); !s) {
        for (std::size_t j = i + 1; j < fds.size(); ++j)
          if (fds[j]) ::close(*fds[j]);
        listeners_.removeNetwork(network.networkId);
        return fail("serving " + network.namespaceName + ": " + s.error().message),
               requestReconcile();
      }
    }
    st.listening = true;
  }
  const bool first = !st.applied;
  if (first) ++setUpSinceSettled_;
  const bool verification = st.verify;
  st.verify = false;
  // Only once the port can really be removed (the view synced: pruning allowed).
  if (ensured->namespaceCreated && bridgePorts_->count(network.hostIface) && plan_.synced)
    st.replug = true;
  st.applied = planned;
  st.lastError.clear();
  retries_.forget(network.networkId);
  metrics_
      .counter("okna_metadata_plumbing_total", "Namespace operations, by result",
               {{"op", "ensure"}, {"result", "ok"}})
      .inc();
  if (ensured->changes.empty() && verification) {
    log->debug("network {}: {} checked, as it should be", network.networkId, network.namespaceName);
  } else if (ensured->changes.empty()) {
    log->info("network {}: {} adopted as it was; serving metadata", network.networkId,
              network.namespaceName);
  } else if (verification) {
    // Someone changed it behind the agent's back (ip netns delete, ip link delete, ip addr ...).
    log->warn("network {}: {} was broken and is repaired ({}); serving metadata", network.networkId,
              network.namespaceName, ensured->changes);
    metrics_
        .counter("okna_metadata_repairs_total",
                 "Namespaces the periodic check found changed behind the agent's back")
        .inc();
  } else {
    log->info("network {}: {} {} ({}); serving metadata", network.networkId, network.namespaceName,
              first ? "set up" : "repaired", ensured->changes);
  }
  requestReconcile();
}

void Reconciler::startRemove(const std::string& networkId, const std::string& namespaceName) {
  NetworkState& st = networks_[networkId];
  st.busy = true;
  st.removing = true;
  if (st.listening) listeners_.removeNetwork(networkId);
  st.listening = false;
  st.applied.reset();
  portsDirty_ = healthDirty_ = true;
  if (retired_)
    core::logger(kComponent)->info("network {}: removing {}", networkId, namespaceName);
  else
    core::logger(kComponent)
        ->info("network {}: no VM port bound here any more, nor on {}; removing {}", networkId,
               bridge_, namespaceName);
  runOnWorker_([this, alive = alive_, networkId, namespaceName] {
    auto status = plumbing_.remove(namespaceName);
    boost::asio::post(io_, [this, alive, networkId, namespaceName, status]() {
      if (!*alive) return;
      NetworkState& state = networks_[networkId];
      state.busy = false;
      markDirty(networkId);
      portsDirty_ = healthDirty_ = true;
      const char* result = status ? "ok" : "error";
      metrics_
          .counter("okna_metadata_plumbing_total", "Namespace operations, by result",
                   {{"op", "remove"}, {"result", result}})
          .inc();
      if (status) {
        networks_.erase(networkId);
        listed_.erase(namespaceName);
        retries_.forget(networkId);
      } else {
        state.lastError = status.error().message;
        const auto delay = retries_.failed(networkId);
        core::logger(kComponent)
            ->error("removing {}: {}; retrying in {} ms", namespaceName, state.lastError,
                    delay.count());
        scheduleRetry(*retries_.dueAt(networkId));
      }
      requestReconcile();
    });
  });
}

void Reconciler::pruneStrays() {
  prunedThisSync_ = true;
  runOnWorker_([this, alive = alive_] {
    auto found = plumbing_.list();
    boost::asio::post(io_, [this, alive, found = std::move(found)]() {
      if (!*alive) return;
      if (!found) {
        core::logger(kComponent)
            ->error("listing the ovnmeta namespaces: {}", found.error().message);
        prunedThisSync_ = false;
        return;
      }
      // The plan may have moved on since the listing: judge with the current one, and only
      // while it is synced (a retired agent removes them all, synced or not).
      if (!plan_.synced && !retired_) {
        prunedThisSync_ = false;
        return;
      }
      static const std::string kPrefix = "ovnmeta-";
      listed_.clear();
      for (const auto& ns : *found) {
        if (ns.rfind(kPrefix, 0) != 0) continue;
        listed_.insert(ns);
        const std::string id = ns.substr(kPrefix.size());
        // Those in hand are judged by reconcile().
        if (networks_.count(id)) continue;
        if (decideNamespace(plan_, active_, id, {true, false}, retired_).action ==
            NamespaceAction::Remove) {
          listed_.erase(ns);
          startRemove(id, ns);
        }
      }
      retireListed_ = retired_;
      flushOutputs();
    });
  });
}

bool Reconciler::submitPorts() {
  ovsdb::DesiredMetadataOvs desired;
  // Retired: the marked ports are read and pruned until the agent exits.
  desired.enabled = wantsSouthbound() || retired_;
  desired.bridge = bridge_;
  for (const auto& [id, st] : networks_) {
    if (st.removing || st.replug) continue;
    const auto planned = plan_.networks.find(id);
    // A port is plugged once its veth exists, and kept while it is being re-ensured: a restart
    // must not unplug and re-plug a working namespace.
    const NetworkPlan* network = st.applied.get();
    if (!network && planned != plan_.networks.end() &&
        bridgePorts_->count(planned->second->hostIface))
      network = planned->second.get();
    if (network) desired.ports[network->hostIface] = network->metadataPort;
  }
  desired.prune = plan_.synced || retired_;
  if (submitted_ && *submitted_ == desired) return false;
  submitted_ = std::make_shared<const ovsdb::DesiredMetadataOvs>(std::move(desired));
  submitOvs_(submitted_);
  return true;
}

void Reconciler::verifyAll() {
  OKNA_ASSERT_ON_LOOP();
  if (!*alive_) return;
  for (auto& [id, st] : networks_)
    if (st.applied && st.listening && !st.removing) st.verify = true;
  markAll();
  reconcile();
}

void Reconciler::scheduleVerify() {
  if (options_.verifyInterval.count() <= 0) return;
  verifyScheduled_ = true;
  verifyTimer_->waitUntil(clock_.now() + options_.verifyInterval, [this, alive = alive_] {
    if (!*alive) return;
    verifyAll();
    scheduleVerify();
  });
}

NamespaceDecision Reconciler::decide(const std::string& networkId) const {
  const bool managed = networks_.count(networkId) != 0;
  return decideNamespace(plan_, active_, networkId,
                         {managed || listed_.count(namespaceNameFor(networkId)) != 0, managed},
                         retired_);
}

std::vector<NamespaceDecision> Reconciler::decisions() const {
  std::set<std::string> present(listed_), managed;
  for (const auto& [id, st] : networks_) {
    managed.insert(id);
    present.insert(namespaceNameFor(id));
  }
  return decideNamespaces(plan_, active_, present, managed, retired_);
}

nlohmann::json Reconciler::debugJson() const {
  nlohmann::json out;
  out["southbound"] = plan_.synced ? "synced" : plan_.notSyncedReason;
  out["decisions"] = decisionsToJson(decisions());
  if (!ipv6UnavailableReported_.empty()) out["ipv6Unavailable"] = ipv6UnavailableReported_;
  out["networks"] = nlohmann::json::array();
  for (const auto& [id, state] : networks_) {
    const auto planned = plan_.networks.find(id);
    std::string what = "setting up";
    if (state.removing || planned == plan_.networks.end())
      what = "removing";
    else if (isServing(*planned->second, state))
      what = "serving";
    else if (isSetUp(*planned->second, state))
      what = "plugging";
    else if (!state.lastError.empty())
      what = "error";
    std::size_t vms = 0;
    if (const auto it = plan_.index.find(id); it != plan_.index.end())
      for (const auto& [key, ports] : it->second) vms += key.rfind("mac/", 0) == 0 ? 0 : 1;
    out["networks"].push_back({{"network", id},
                               {"namespace", namespaceNameFor(id)},
                               {"state", what},
                               {"error", state.lastError},
                               {"vmAddresses", vms}});
    if (const auto lost = plan_.lost.find(id); lost != plan_.lost.end())
      out["networks"].back()["lost"] = lost->second;
  }
  for (const auto& [id, network] : plan_.networks)
    if (!networks_.count(id))
      out["networks"].push_back({{"network", id},
                                 {"namespace", network->namespaceName},
                                 {"state", "setting up"},
                                 {"error", ""},
                                 {"vmAddresses", 0}});
  return out;
}

void Reconciler::updateHealth() {
  std::size_t ready = 0;
  std::vector<std::string> missing;
  for (const auto& [id, planned] : plan_.networks) {
    const NetworkPlan& network = *planned;
    const auto it = networks_.find(id);
    if (it != networks_.end() && isServing(network, it->second)) {
      ++ready;
    } else if (missing.size() < 5) {
      std::string why = " (setting up)";
      if (it != networks_.end() && isSetUp(network, it->second))
        why = " (" + network.hostIface +
              (bridgePorts_->count(network.hostIface)
                   ? " on " + bridge_ + ", not yet created by ovs-vswitchd)"
                   : " not yet on " + bridge_ + ")");
      else if (it != networks_.end() && !it->second.lastError.empty())
        why = " (" + it->second.lastError + ")";
      missing.push_back(network.namespaceName + why);
    }
  }
  metrics_.gauge("okna_metadata_namespaces", "Metadata namespaces, by state", {{"state", "wanted"}})
      .set(static_cast<double>(plan_.networks.size()));
  metrics_.gauge("okna_metadata_namespaces", "Metadata namespaces, by state", {{"state", "ready"}})
      .set(static_cast<double>(ready));
  if (!active_) return;
  if (!plan_.synced) {
    health_.setReady(kComponent, false, plan_.notSyncedReason);
  } else if (!plan_.lost.empty()) {
    // Kept and served from the last view, but the Southbound does not have them: not ok.
    std::string detail = "the Southbound lost VM ports that are still on " + bridge_ + ":";
    std::size_t shown = 0;
    for (const auto& [id, what] : plan_.lost) {
      if (shown++ == 5) {
        detail += " (" + std::to_string(plan_.lost.size() - 5) + " more)";
        break;
      }
      detail += " " + what + ";";
    }
    health_.setReady(kComponent, false, detail);
  } else if (ready < plan_.networks.size()) {
    std::string detail = std::to_string(ready) + "/" + std::to_string(plan_.networks.size()) +
                         " networks serving; not yet:";
    for (const auto& m : missing) detail += " " + m;
    health_.setReady(kComponent, false, detail);
  } else {
    health_.setReady(kComponent, true, std::to_string(ready) + " network(s) serving metadata");
    if (options_.settledAfter && setUpSinceSettled_ >= options_.settledAfter) {
      const std::size_t settled = std::exchange(setUpSinceSettled_, 0);
      if (onSettled_) onSettled_(settled);
    }
  }
}

void Reconciler::scheduleRetry(TimePoint at) {
  retryTimer_->waitUntil(at, [this, alive = alive_] {
    if (!*alive) return;
    markAll();
    reconcile();
  });
}

std::span<const ovsdb::SbPort* const> Reconciler::lookup(const std::string& networkId,
                                                         const std::string& clientIp) const {
  OKNA_ASSERT_ON_LOOP();
  const auto net = plan_.index.find(networkId);
  if (net == plan_.index.end()) return {};
  auto it = net->second.find(clientIp);
  if (it == net->second.end()) {
    const std::string mac = macOfLinkLocal(clientIp);
    if (!mac.empty()) it = net->second.find(macIndexKey(mac));
  }
  if (it == net->second.end()) return {};
  return it->second;
}

bool Reconciler::isSetUp(const NetworkPlan& planned, const NetworkState& st) const {
  return !st.removing && st.listening && st.applied && *st.applied == planned &&
         st.lastError.empty();
}

bool Reconciler::isServing(const NetworkPlan& planned, const NetworkState& st) const {
  // Listening is not enough: a VM reaches the namespace only through its port on the bridge,
  // once ovs-vswitchd has created it.
  return isSetUp(planned, st) && !st.replug && bridgePorts_->count(planned.hostIface) != 0 &&
         createdPorts_->count(planned.hostIface) != 0;
}

std::set<std::string> Reconciler::readyNetworks() const {
  std::set<std::string> out;
  for (const auto& [id, network] : plan_.networks)
    if (const auto it = networks_.find(id);
        it != networks_.end() && isServing(*network, it->second))
      out.insert(id);
  return out;
}

}  // namespace okna::metadata
