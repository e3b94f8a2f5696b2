#include "placement/reconciler.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/logging.h"
#include "core/loop_thread.h"
#include "placement/clouds_yaml.h"
#include "placement/keystone.h"

namespace okna::placement {

namespace asio = boost::asio;

namespace {

auto log() {
  return core::logger("placement");
}

// Handlers and the worker may outlive the Reconciler (the worker's frame holds a copy of the
// flag): the flag, not the pointer, says whether `this` is still there.
bool stillAlive(const std::weak_ptr<bool>& alive) {
  auto p = alive.lock();
  return p && *p;
}

// The pods behind a class's reservation, largest first, for the over-commit warning.
std::string topPods(const DesiredProviderTree& t, const std::string& rc) {
  std::vector<PodLoad> pods = t.nonVmPods;
  const bool memory = rc == "MEMORY_MB";
  std::stable_sort(pods.begin(), pods.end(), [&](const PodLoad& a, const PodLoad& b) {
    return memory ? a.requests.memoryBytes > b.requests.memoryBytes
                  : a.requests.cpuMillis > b.requests.cpuMillis;
  });
  std::string out;
  for (size_t i = 0; i < pods.size() && i < 5; ++i) {
    out += (out.empty() ? "" : ", ") + pods[i].pod + " (" +
           (memory ? std::to_string(pods[i].requests.memoryBytes / (1024 * 1024)) + " MiB"
                   : std::to_string(pods[i].requests.cpuMillis) + "m") +
           ")";
  }
  return out.empty() ? "(none)" : out;
}

// A device pool's inventories without the reservation that follows the pods.
Inventories withoutPodReservation(const DesiredProvider& p) {
  Inventories out = p.inventories;
  if (auto it = out.find(p.reservedFromPods); it != out.end()) it->second.reserved = 0;
  return out;
}

// Everything but the pod-driven reservations (the root's VCPU and MEMORY_MB, the device pools'
// classes): what is sent at once.
bool sameShape(const DesiredProviderTree& a, const DesiredProviderTree& b) {
  if (a.root.uuid != b.root.uuid || a.root.name != b.root.name || a.root.traits != b.root.traits ||
      a.zone != b.zone)
    return false;
  if (a.nested.size() != b.nested.size() || a.formerChildren != b.formerChildren) return false;
  for (size_t i = 0; i < a.nested.size(); ++i)
    if (a.nested[i].uuid != b.nested[i].uuid || a.nested[i].name != b.nested[i].name ||
        a.nested[i].traits != b.nested[i].traits ||
        !sameInventories(withoutPodReservation(a.nested[i]), withoutPodReservation(b.nested[i])))
      return false;
  Inventories x = a.root.inventories;
  Inventories y = b.root.inventories;
  for (auto* inv : {&x, &y})
    for (const char* rc : {"VCPU", "MEMORY_MB"})
      if (auto it = inv->find(rc); it != inv->end()) it->second.reserved = 0;
  return sameInventories(x, y);
}

}  // namespace

Reconciler::Reconciler(asio::io_context& io, core::Clock& clock, PlacementConfig config,
                       core::MetricsRegistry& metrics, core::HealthRegistry& health)
    : io_(io),
      config_(std::move(config)),
      metrics_(metrics),
      health_(health),
      clock_(clock),
      owned_(config_.stateFile),
      wake_(io),
      dueTimer_(clock_.makeTimer()),
      resync_(clock_.makeTimer()),
      deletionRetry_(clock_.makeTimer()),
      deletionBackoff_(config_.backoff),
      restart_(clock_.makeTimer()),
      backoff_(config_.backoff) {
  enabled_ = config_.enabled;
  if (auto s = owned_.load(); !s) log()->warn("{}", s.error().message);
}

Reconciler::Reconciler(asio::io_context& io, core::Clock& clock, core::HttpClient& http,
                       PlacementConfig config, core::MetricsRegistry& metrics,
                       core::HealthRegistry& health)
    : Reconciler(io, clock, std::move(config), metrics, health) {
  auto resolved = resolveAuth(config_);
  if (!resolved) {
    configError_ = resolved.error();
    return;
  }
  if (resolved->tls.insecureSkipVerify)
    log()->warn("TLS verification of Keystone and Placement is off ({})", resolved->source);
  log()->info("credentials from {} (auth type {}, interface {}{}{})", resolved->source,
              resolved->auth.type, resolved->interface,
              resolved->regionName.empty() ? "" : ", region " + resolved->regionName,
              resolved->endpointOverride.empty() ? "" : ", endpoint " + resolved->endpointOverride);
  resolved->computeEndpointOverride = config_.availabilityZones.computeEndpointOverride;
  auth_ = makeAuthenticator(http, clock_, std::move(*resolved), config_.requestTimeout);
  ownedApi_ = std::make_unique<ApiImpl>(http, *auth_, config_.requestTimeout);
  api_ = ownedApi_.get();
  syncer_ = std::make_unique<Syncer>(*api_, owned_, config_.conflictRetries);
  ownedNova_ = std::make_unique<NovaApiImpl>(http, *auth_, config_.requestTimeout);
  zones_ = std::make_unique<ZoneSyncer>(*ownedNova_, *api_, owned_, config_.conflictRetries);
}

Reconciler::Reconciler(asio::io_context& io, core::Clock& clock, Api& api, PlacementConfig config,
                       core::MetricsRegistry& metrics, core::HealthRegistry& health, NovaApi* nova)
    : Reconciler(io, clock, std::move(config), metrics, health) {
  api_ = &api;
  syncer_ = std::make_unique<Syncer>(*api_, owned_, config_.conflictRetries);
  if (nova != nullptr)
    zones_ = std::make_unique<ZoneSyncer>(*nova, *api_, owned_, config_.conflictRetries);
}

const SyncCounters& Reconciler::counters() const {
  static const SyncCounters kNone;
  return syncer_ ? syncer_->counters() : kNone;
}

Reconciler::~Reconciler() {
  stop();
  // A suspended pass may still resume (a timer's abort, an HTTP answer): it checks this first.
  *alive_ = false;
}

void Reconciler::apply(const PlacementSection& section) {
  OKNA_ASSERT_ON_LOOP();
  setNode(section.nodeName, section.nodeUid);
  if (!section.podsKnown) return;
  if (section.desired) update(*section.desired);
  setActive(section.desired.has_value());
}

bool Reconciler::settled() const {
  if (configError_ || !enabled_ || stopped_) return true;
  switch (mode_) {
    case Mode::Close:
      return closedOk_;
    case Mode::Manage:
      return !busy() && lastPushed_.has_value();
    case Mode::Idle:
      return true;
  }
  return true;
}

void Reconciler::stop() {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_) return;
  stopped_ = true;
  if (mode_ == Mode::Manage) health_.removeComponent("placement");
  mode_ = Mode::Idle;
  pending_ = false;
  wake_.cancel();
  dueTimer_->cancel();
  resync_->cancel();
  deletionRetry_->cancel();
  restart_->cancel();
}

void Reconciler::setActive(bool computeRole) {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_ || !enabled_) return;
  if (configError_) {
    // Without credentials nothing can be managed nor closed. Said once per role change, and
    // the readiness entry exists only while the role does.
    if (configErrorRole_ == computeRole) return;
    configErrorRole_ = computeRole;
    if (computeRole) {
      log()->error("not managing the node's resource provider: {}", configError_->message);
      health_.setReady("placement", false, configError_->message);
    } else {
      log()->info("no compute role: Placement is not needed ({})", configError_->message);
      health_.removeComponent("placement");
    }
    return;
  }
  const Mode want = computeRole ? Mode::Manage : Mode::Close;
  if (want == mode_) return;
  const bool wasManaging = mode_ == Mode::Manage;
  mode_ = want;
  // A role change starts from a fresh read: the server may have changed while we looked away.
  forgetProviders(false);
  closedOk_ = false;
  if (mode_ == Mode::Manage) {
    log()->info("compute role: managing the node's resource provider in Placement");
    readyInThisRole_ = false;
    health_.addComponent("placement");
  } else {
    log()->info(
        "no compute role: the node's resource provider, if any, gets {} (it stays, with its "
        "inventories and the VMs' allocations)",
        kDisabledTrait);
    if (wasManaging) health_.removeComponent("placement");
  }
  start();
  trigger(std::chrono::milliseconds(0));
}

void Reconciler::start() {
  scheduleResync();
  if (loopRunning_) return;
  loopRunning_ = true;
  asio::co_spawn(io_, run(alive_),
                 [this, alive = std::weak_ptr<bool>(alive_)](std::exception_ptr error) {
                   if (stillAlive(alive)) onWorkerEnded(error);
                 });
}

void Reconciler::onWorkerEnded(std::exception_ptr error) {
  loopRunning_ = false;
  if (!error || stopped_) return;
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  ++workerCrashes_;
  metrics_.counter("okna_placement_worker_restarts_total", "Placement worker restarts").inc();
  if (workerCrashes_ > 5) {
    // It keeps dying: let /healthz fail so that the kubelet restarts the agent.
    log()->error("the Placement worker failed {} times in a row ({}); giving up", workerCrashes_,
                 what);
    health_.addHeartbeat("placement-worker", std::chrono::seconds(0));
    return;
  }
  const auto delay = backoff_.next();
  log()->error("the Placement worker failed ({}); restarting it in {} ms", what, delay.count());
  restart_->waitUntil(clock_.now() + delay, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (stillAlive(alive) && !stopped_) start();
  });
}

void Reconciler::setNode(const std::string& name, const std::string& uid) {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_) return;
  const bool nodeChanged = uid != nodeUid_ || name != nodeName_;
  nodeName_ = name;
  nodeUid_ = uid;
  if (mode_ == Mode::Close && nodeChanged && syncer_) {
    forgetProviders(false);
    trigger(std::chrono::milliseconds(0));
  }
}

void Reconciler::update(const DesiredProviderTree& desired) {
  OKNA_ASSERT_ON_LOOP();
  if (stopped_) return;
  setNode(desired.root.name, desired.root.uuid);
  DesiredProviderTree next = desired;
  const bool first = !desired_;
  bool reservedMoved =
      !first && !sameInventories(next.root.inventories, desired_->root.inventories);
  if (!first && next.nested.size() == desired_->nested.size())
    for (size_t i = 0; i < next.nested.size(); ++i)
      reservedMoved = reservedMoved ||
                      !sameInventories(next.nested[i].inventories, desired_->nested[i].inventories);
  const bool shapeChanged = first || !sameShape(next, lastPushed_ ? *lastPushed_ : *desired_);
  desired_ = std::move(next);
  if (mode_ != Mode::Manage) return;
  if (!lastPushed_ || shapeChanged) {
    // Node changes (allocatable, labels, cordon) go out at once, without the step.
    trigger(std::chrono::milliseconds(0));
  } else if (reservedMoved) {
    metrics_
        .counter("okna_placement_changes_skipped_total", "Changes not sent at once",
                 {{"reason", "debounced"}})
        .inc();
    // The window opens with the first change and is not extended by later ones.
    if (!pending_) trigger(config_.debounce);
  }
}

void Reconciler::trigger(std::chrono::milliseconds delay) {
  const auto at = std::max(clock_.now() + delay, notBefore_);
  if (!pending_ || at < due_) due_ = at;
  pending_ = true;
  wake_.cancel();
}

void Reconciler::scheduleResync() {
  if (config_.resyncInterval.count() == 0 || resyncArmed_ || stopped_) return;
  resyncArmed_ = true;
  resync_->waitUntil(clock_.now() + config_.resyncInterval,
                     [this, alive = std::weak_ptr<bool>(alive_)] {
                       if (!stillAlive(alive)) return;
                       resyncArmed_ = false;
                       if (stopped_ || mode_ == Mode::Idle) return;
                       // Repairs what was changed behind the agent's back (an inventory deleted by
                       // hand).
                       forgetProviders(true);
                       trigger(std::chrono::milliseconds(0));
                       scheduleResync();
                     });
}

void Reconciler::forgetProviders(bool catalog) {
  if (running_) {
    forgetAfterPass_ = true;
    invalidateAfterPass_ = invalidateAfterPass_ || catalog;
    return;
  }
  if (catalog)
    syncer_->invalidate();
  else
    syncer_->forgetProviders();
  if (zones_) zones_->forget();
}

void Reconciler::event(const std::string& reason, const std::string& message) {
  if (events_ && eventsSent_.insert(reason + "\n" + message).second)
    events_("Warning", reason, message);
}

void Reconciler::scheduleDeletionRetry() {
  if (syncer_->notices().empty() && zoneError_.empty()) {
    deletionBackoff_.reset();
    return;
  }
  if (deletionRetryArmed_) return;
  deletionRetryArmed_ = true;
  deletionRetry_->waitUntil(clock_.now() + deletionBackoff_.next(),
                            [this, alive = std::weak_ptr<bool>(alive_)] {
                              if (!stillAlive(alive)) return;
                              deletionRetryArmed_ = false;
                              if (mode_ == Mode::Manage) trigger(std::chrono::milliseconds(0));
                            });
}

Task<void> Reconciler::run(std::shared_ptr<bool> alive) {
  boost::system::error_code ec;
  for (;;) {
    if (!*alive || stopped_) co_return;
    const bool runnable =
        (mode_ == Mode::Manage && desired_) || (mode_ == Mode::Close && !nodeUid_.empty());
    if (!pending_ || !runnable) {
      wake_.expires_at(std::chrono::steady_clock::time_point::max());
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (clock_.now() < due_) {
      // Woken by the clock at `due_`, or earlier by a trigger (which re-evaluates).
      dueTimer_->waitUntil(due_, [this] { wake_.cancel(); });
      wake_.expires_at(std::chrono::steady_clock::time_point::max());
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    pending_ = false;
    running_ = true;
    const Mode mode = mode_;
    const std::string name = nodeName_;
    const std::string uid = nodeUid_;
    DesiredProviderTree sending;
    const unsigned conflictsBefore = syncer_->counters().conflicts;
    core::Status status;
    // Whatever a pass throws (a server's JSON of an unexpected shape) fails that pass only.
    try {
      if (mode == Mode::Manage) {
        sending = applyStep(*desired_);
        status = co_await syncer_->sync(sending);
        // The zone after the provider (its Placement aggregates need the root), on its own: Nova
        // down or refusing never holds back inventories and traits.
        if (status && zones_ && config_.availabilityZones.enabled && *alive) {
          auto z = co_await zones_->sync(sending.zone, name, uid);
          if (!*alive) co_return;
          if (!z && z.error().message != zoneError_)
            log()->warn("availability zone not applied (retried with backoff): {}",
                        z.error().message);
          if (z && !zoneError_.empty())
            log()->info("availability zone applied again after: {}", zoneError_);
          zoneError_ = z ? "" : z.error().message;
          if (!z) zones_->forget();
        }
      } else {
        status = co_await syncer_->close(name, uid);
      }
    } catch (const std::exception& e) {
      status = core::makeError(std::string("internal error: ") + e.what());
    } catch (...) {
      status = core::makeError("internal error: unknown exception");
    }
    if (!*alive) co_return;
    running_ = false;
    if (forgetAfterPass_) {
      forgetAfterPass_ = false;
      forgetProviders(std::exchange(invalidateAfterPass_, false));
    }
    if (!status && status.error().message.starts_with("internal error: ")) {
      metrics_.counter("okna_placement_worker_errors_total", "Passes ended by an exception").inc();
      syncer_->invalidate();
    }
    metrics_
        .counter("okna_placement_conflicts_total",
                 "409 placement.concurrent_update answers, retried")
        .inc(syncer_->counters().conflicts - conflictsBefore);
    afterPass(mode, status, sending);
  }
}

DesiredProviderTree Reconciler::applyStep(const DesiredProviderTree& desired) {
  std::vector<std::string> held;
  DesiredProviderTree out = stepped(desired, &held);
  for (const auto& rc : held) {
    metrics_
        .counter("okna_placement_changes_skipped_total", "Changes not sent at once",
                 {{"reason", "below_step"}})
        .inc();
    log()->debug("{} reserved {} -> {}: below the step, not sent", rc,
                 out.root.inventories.at(rc).reserved, desired.root.inventories.at(rc).reserved);
  }
  return out;
}

DesiredProviderTree Reconciler::stepped(const DesiredProviderTree& desired,
                                        std::vector<std::string>* heldClasses) const {
  DesiredProviderTree out = desired;
  if (!lastPushed_) return out;
  for (const auto& [rc, step] :
       {std::pair<const char*, std::int64_t>{"VCPU", config_.reservedStep.vcpu},
        {"MEMORY_MB", config_.reservedStep.memoryMb}}) {
    auto now = out.root.inventories.find(rc);
    auto sent = lastPushed_->root.inventories.find(rc);
    if (now == out.root.inventories.end() || sent == lastPushed_->root.inventories.end()) continue;
    Inventory held = now->second;
    held.reserved = sent->second.reserved;
    // Only a pure reservation move is held back; a new total or ratio goes out as computed.
    if (!(held == sent->second) || now->second.reserved == sent->second.reserved) continue;
    // Seed 000 § 4.2: sent when it moved by *more than* the step.
    if (std::llabs(now->second.reserved - sent->second.reserved) <= step) {
      heldClasses->push_back(rc);
      now->second.reserved = sent->second.reserved;
    }
  }
  return out;
}

void Reconciler::afterPass(Mode mode, const core::Status& status, const DesiredProviderTree& sent) {
  const bool stillManaging = mode == Mode::Manage && mode_ == Mode::Manage;
  if (!status) {
    ++failedPasses_;
    metrics_
        .counter("okna_placement_pushes_total", "Passes that brought Placement up to date",
                 {{"result", "error"}})
        .inc();
    const auto delay = backoff_.next();
    notBefore_ = clock_.now() + delay;
    // The desired state is kept; the next pass starts from a fresh read of the server.
    if (status.error().message != lastError_) {
      log()->warn("Placement update failed (retrying with backoff, next in {} ms): {}",
                  delay.count(), status.error().message);
      lastError_ = status.error().message;
    }
    // Not ready until the first success in this role; a re-created Node blocks registration
    // for good, so it shows whenever it holds.
    if (syncer_->staleProvider()) event("PlacementProviderNameTaken", *syncer_->staleProvider());
    if (stillManaging && (!readyInThisRole_ || syncer_->staleProvider())) {
      health_.setReady("placement", false, status.error().message);
      readyInThisRole_ = false;
    }
    trigger(std::chrono::milliseconds(0));
    return;
  }
  if (!lastError_.empty()) log()->info("Placement update succeeded again after: {}", lastError_);
  lastError_.clear();
  backoff_.reset();
  workerCrashes_ = 0;
  notBefore_ = {};
  ++okPasses_;
  metrics_
      .counter("okna_placement_pushes_total", "Passes that brought Placement up to date",
               {{"result", "ok"}})
      .inc();
  if (mode == Mode::Close) {
    if (!closedOk_ && mode_ == Mode::Close) log()->info("node {}: closed in Placement", nodeName_);
    closedOk_ = mode_ == Mode::Close;
    return;
  }
  afterManagePass(sent);
  if (!stillManaging) return;
  readyInThisRole_ = true;
  std::string detail = "provider " + sent.root.name + " up to date";
  // What Placement refused and the agent works around: shown in /readyz?verbose (the check
  // stays ready), sent once each as a Node Event, retried on its own backoff.
  for (const auto& [reason, message] : syncer_->notices()) {
    detail += "; " + message;
    event(reason, message);
  }
  if (!zoneError_.empty()) {
    detail += "; availability zone not applied (retried): " + zoneError_;
    event("AvailabilityZoneNotApplied", zoneError_);
  }
  health_.setReady("placement", true, detail);
  scheduleDeletionRetry();
}

void Reconciler::afterManagePass(const DesiredProviderTree& sent) {
  for (const auto& [rc, inv] : sent.root.inventories)
    metrics_
        .gauge("okna_placement_reserved", "Reserved units last sent, by resource class",
               {{"resource_class", rc}})
        .set(static_cast<double>(inv.reserved));
  metrics_.gauge("okna_placement_generation", "Root provider generation after the last pass")
      .set(static_cast<double>(syncer_->rootGeneration()));
  metrics_
      .gauge("okna_placement_deletions_refused",
             "Nested providers that should go but Placement refuses to delete (in use)")
      .set(static_cast<double>(syncer_->refusedDeletions().size()));
  if (!lastPushed_)
    log()->info("provider {} (uuid {}) is up to date in Placement", sent.root.name, sent.root.uuid);
  lastPushed_ = sent;
  for (const auto& o : syncer_->overcommitted())
    log()->warn(
        "{} over-committed on {}: reserved {} + used {} exceeds total {} (allocation ratio {}); "
        "Placement "
        "refuses new claims until it drains. Largest non-VM pods: {}",
        o.resourceClass, sent.root.name, o.reserved, o.used, o.total, o.allocationRatio,
        topPods(sent, o.resourceClass));
}

}  // namespace okna::placement

namespace okna::placement {

nlohmann::json Reconciler::debugJson() const {
  nlohmann::json out;
  out["mode"] = mode_ == Mode::Manage ? "manage" : mode_ == Mode::Close ? "close" : "idle";
  if (configError_) out["configError"] = configError_->message;
  out["pending"] = pending_ || running_;
  if (pending_)
    out["dueInMs"] = std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(due_ - clock_.now()).count());
  // What the next pass would send instead of the plan: reservations held back by the step.
  std::vector<std::string> held;
  if (mode_ == Mode::Manage && desired_) {
    const DesiredProviderTree sending = stepped(*desired_, &held);
    nlohmann::json heldBack = nlohmann::json::object();
    for (const auto& rc : held)
      heldBack[rc] = {{"wanted", desired_->root.inventories.at(rc).reserved},
                      {"sent", sending.root.inventories.at(rc).reserved}};
    out["heldBack"] = std::move(heldBack);
  }
  out["heldBackByStep"] = !held.empty();
  nlohmann::json lastSent = nlohmann::json::object();
  if (lastPushed_)
    for (const auto& [rc, inv] : lastPushed_->root.inventories) lastSent[rc] = inv.reserved;
  out["lastSent"] = std::move(lastSent);
  out["lastError"] = lastError_.empty() ? nlohmann::json(nullptr) : nlohmann::json(lastError_);
  return out;
}

}  // namespace okna::placement
