#include "placement/reconciler.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>

#include "core/logging.h"
#include "placement/clouds_yaml.h"
#include "placement/keystone.h"

namespace okna::placement {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

auto log() {
  return core::logger("placement");
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

// Everything but the reservations of the root's VCPU and MEMORY_MB: what is sent at once.
bool sameShape(const DesiredProviderTree& a, const DesiredProviderTree& b) {
  if (a.root.uuid != b.root.uuid || a.root.name != b.root.name || a.root.traits != b.root.traits)
    return false;
  if (a.nested.size() != b.nested.size()) return false;
  for (size_t i = 0; i < a.nested.size(); ++i)
    if (a.nested[i].uuid != b.nested[i].uuid || a.nested[i].traits != b.nested[i].traits ||
        !sameInventories(a.nested[i].inventories, b.nested[i].inventories))
      return false;
  Inventories x = a.root.inventories;
  Inventories y = b.root.inventories;
  for (auto* inv : {&x, &y})
    for (const char* rc : {"VCPU", "MEMORY_MB"})
      if (auto it = inv->find(rc); it != inv->end()) it->second.reserved = 0;
  return sameInventories(x, y);
}

}  // namespace

Reconciler::Reconciler(asio::io_context& io, PlacementConfig config, core::MetricsRegistry& metrics,
                       core::HealthRegistry& health)
    : io_(io),
      config_(std::move(config)),
      metrics_(metrics),
      health_(health),
      owned_(config_.stateFile),
      wake_(io),
      resync_(io),
      backoff_(config_.backoff) {
  enabled_ = config_.enabled;
  if (auto s = owned_.load(); !s) log()->warn("{}", s.error().message);
}

Reconciler::Reconciler(asio::io_context& io, core::HttpClient& http, PlacementConfig config,
                       core::MetricsRegistry& metrics, core::HealthRegistry& health)
    : Reconciler(io, std::move(config), metrics, health) {
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
  auth_ = makeAuthenticator(http, std::move(*resolved), config_.requestTimeout);
  ownedApi_ = std::make_unique<ApiImpl>(http, *auth_, config_.requestTimeout);
  api_ = ownedApi_.get();
  syncer_ = std::make_unique<Syncer>(*api_, owned_, config_.conflictRetries);
}

Reconciler::Reconciler(asio::io_context& io, Api& api, PlacementConfig config,
                       core::MetricsRegistry& metrics, core::HealthRegistry& health)
    : Reconciler(io, std::move(config), metrics, health) {
  api_ = &api;
  syncer_ = std::make_unique<Syncer>(*api_, owned_, config_.conflictRetries);
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

void Reconciler::stop() {
  if (stopped_) return;
  stopped_ = true;
  setActive(false);
  wake_.cancel();
  resync_.cancel();
}

void Reconciler::setActive(bool computeRole) {
  const bool want = computeRole && enabled_ && !stopped_;
  if (want == active_) return;
  if (want && configError_) {
    log()->error("not managing the node's resource provider: {}", configError_->message);
    health_.addComponent("placement");
    health_.setReady("placement", false, configError_->message);
    return;
  }
  active_ = want;
  if (active_) {
    log()->info("compute role: managing the node's resource provider in Placement");
    health_.addComponent("placement");
    start();
    if (desired_) trigger(std::chrono::milliseconds(0));
  } else {
    // The provider and its inventories stay: deleting them would orphan the VMs' allocations.
    log()->info(
        "no compute role (or stopping): no longer updating Placement; the provider is left as it "
        "is");
    health_.removeComponent("placement");
    pending_ = false;
    resync_.cancel();
  }
}

void Reconciler::start() {
  if (loopRunning_) return;
  loopRunning_ = true;
  asio::co_spawn(io_, run(alive_), asio::detached);
  scheduleResync();
}

void Reconciler::update(const k8s::NodeInfo& node, const std::vector<k8s::PodInfo>& pods,
                        bool podsSynced) {
  if (stopped_) return;
  DesiredProviderTree next = planPlacement(config_, node, pods);
  if (next.warnings != lastWarnings_) {
    for (const auto& w : next.warnings) log()->warn("{}", w);
    lastWarnings_ = next.warnings;
  }
  if (!podsSynced) return;
  const bool first = !desired_;
  const bool reservedMoved =
      !first && !sameInventories(next.root.inventories, desired_->root.inventories);
  const bool shapeChanged = first || !sameShape(next, lastPushed_ ? *lastPushed_ : *desired_);
  desired_ = std::move(next);
  if (!active_) return;
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
  const auto at = std::max(Clock::now() + delay, notBefore_);
  if (!pending_ || at < due_) due_ = at;
  pending_ = true;
  wake_.cancel();
}

void Reconciler::scheduleResync() {
  if (config_.resyncInterval.count() == 0) return;
  resync_.expires_after(config_.resyncInterval);
  resync_.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (ec || !alive.lock() || !active_) return;
        // Repairs what was changed behind the agent's back (an inventory deleted by hand).
        syncer_->invalidate();
        trigger(std::chrono::milliseconds(0));
        scheduleResync();
      });
}

Task<void> Reconciler::run(std::shared_ptr<bool> alive) {
  boost::system::error_code ec;
  for (;;) {
    if (!*alive || stopped_) co_return;
    if (!pending_ || !active_ || !desired_) {
      wake_.expires_at(Clock::time_point::max());
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (Clock::now() < due_) {
      wake_.expires_at(due_);
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    pending_ = false;
    running_ = true;
    const DesiredProviderTree sending = applyStep(*desired_);
    const unsigned conflictsBefore = syncer_->counters().conflicts;
    core::Status status = co_await syncer_->sync(sending);
    if (!*alive) co_return;
    running_ = false;
    metrics_
        .counter("okna_placement_conflicts_total",
                 "409 placement.concurrent_update answers, retried")
        .inc(syncer_->counters().conflicts - conflictsBefore);
    afterPass(status, sending);
  }
}

DesiredProviderTree Reconciler::applyStep(const DesiredProviderTree& desired) {
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
    if (std::llabs(now->second.reserved - sent->second.reserved) < step) {
      metrics_
          .counter("okna_placement_changes_skipped_total", "Changes not sent at once",
                   {{"reason", "below_step"}})
          .inc();
      log()->debug("{} reserved {} -> {}: below the step of {}, not sent", rc,
                   sent->second.reserved, now->second.reserved, step);
      now->second.reserved = sent->second.reserved;
    }
  }
  return out;
}

void Reconciler::afterPass(const core::Status& status, const DesiredProviderTree& sent) {
  if (!status) {
    ++failedPasses_;
    metrics_
        .counter("okna_placement_pushes_total", "Passes that brought Placement up to date",
                 {{"result", "error"}})
        .inc();
    const auto delay = backoff_.next();
    notBefore_ = Clock::now() + delay;
    // The desired state is kept; the next pass starts from a fresh read of the server.
    if (status.error().message != lastError_) {
      log()->warn("Placement update failed (retrying with backoff, next in {} ms): {}",
                  delay.count(), status.error().message);
      lastError_ = status.error().message;
    }
    if (okPasses_ == 0) health_.setReady("placement", false, status.error().message);
    trigger(std::chrono::milliseconds(0));
    return;
  }
  if (!lastError_.empty())
    log()->info("Placement reachable again; provider {} is up to date", sent.root.name);
  lastError_.clear();
  backoff_.reset();
  notBefore_ = {};
  ++okPasses_;
  metrics_
      .counter("okna_placement_pushes_total", "Passes that brought Placement up to date",
               {{"result", "ok"}})
      .inc();
  for (const auto& [rc, inv] : sent.root.inventories)
    metrics_
        .gauge("okna_placement_reserved", "Reserved units last sent, by resource class",
               {{"resource_class", rc}})
        .set(static_cast<double>(inv.reserved));
  metrics_.gauge("okna_placement_generation", "Root provider generation after the last pass")
      .set(static_cast<double>(syncer_->rootGeneration()));
  if (!lastPushed_)
    log()->info("provider {} (uuid {}) is up to date in Placement", sent.root.name, sent.root.uuid);
  lastPushed_ = sent;
  health_.setReady("placement", true, "provider " + sent.root.name + " up to date");
  for (const auto& o : syncer_->overcommitted())
    log()->warn(
        "{} over-committed on {}: reserved {} + used {} exceeds total {} (allocation ratio {}); "
        "Placement "
        "refuses new claims until it drains. Largest non-VM pods: {}",
        o.resourceClass, sent.root.name, o.reserved, o.used, o.total, o.allocationRatio,
        topPods(sent, o.resourceClass));
}

}  // namespace okna::placement
