#pragma once
// Keeps the node's resource provider in Placement current: owns the triggers (the plan's
// Placement section from the agent, a periodic resync), the debounce of pod-driven reservations,
// the reservation step, retries with backoff while Placement or Keystone is down, readiness
// ("placement") and metrics. The planner (desired.h) decides what, run once per change by the
// agent (agent/plan.h); the Syncer (sync.h) applies it. One event-loop thread; all waiting goes
// through a core::Clock, so that tests drive time.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/applier.h"
#include "core/backoff.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/http_client.h"
#include "core/metrics.h"
#include "placement/config.h"
#include "placement/desired.h"
#include "placement/nova_client.h"
#include "placement/sync.h"
#include "placement/zone_sync.h"

namespace okna::placement {

class Authenticator;

/** The Placement applier's section: the node, whether its pods are known, and the plan's
 *  Placement section (nullopt: the node has no compute role, or Placement is off). Before the pods
 *  are known there is no section, and the applier keeps its previous state (a reservation from
 *  half the pods would be too small; a role taken away is acted on once the pods are known). */
struct PlacementSection {
  const std::string& nodeName;
  const std::string& nodeUid;
  bool podsKnown = false;
  const std::optional<DesiredProviderTree>& desired;
};

class Reconciler : public core::Applier<PlacementSection> {
 public:
  /** Production: credentials from config (clouds.yaml or inline), HTTP through `http`. `clock`
   *  (the agent's core::AsioClock; tests a ManualClock) drives the debounce, backoff and resync. */
  Reconciler(boost::asio::io_context& io, core::Clock& clock, core::HttpClient& http,
             PlacementConfig config, core::MetricsRegistry& metrics, core::HealthRegistry& health);
  /** Tests: an Api of the caller's (a fake Placement). */
  Reconciler(boost::asio::io_context& io, core::Clock& clock, Api& api, PlacementConfig config,
             core::MetricsRegistry& metrics, core::HealthRegistry& health, NovaApi* nova = nullptr);
  ~Reconciler() override;
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  /** The node this agent runs for (closing needs it even without a Placement plan). */
  void setNode(const std::string& name, const std::string& uid);
  /**
   * The plan's Placement section, from the node and ALL its pods (call after every change;
   * bursts are cheap). The agent hands it only once the pods have synced: a reservation computed
   * from half the pods would be too small. Pod-driven reservation moves are debounced.
   */
  void update(const DesiredProviderTree& desired);
  /**
   * Whether the node has the compute role. true: manage the provider. false (also the first call
   * on a node that never had the role): the node is not a hypervisor, so its provider, when it
   * has one, gets COMPUTE_STATUS_DISABLED and nothing else changes (the provider, its inventories
   * and the VMs' allocations stay). Each change starts from a fresh read of the server.
   */
  void setActive(bool computeRole);
  const PlacementConfig& config() const { return config_; }
  /** Stops pushing for good; the provider is left as it is. */
  void stop() override;

  // core::Applier: apply() is setNode(), then, once the pods are known, update() and
  // setActive(); describe() is debugJson(); health() the "placement" readiness component (there
  // while the node has the compute role).
  void apply(const PlacementSection& section) override;
  std::optional<core::HealthRegistry::Check> health() const override {
    return health_.component("placement");
  }
  nlohmann::json describe() const override { return debugJson(); }
  /** Closing: the provider is known closed. Managing: the last tree was pushed and nothing is
   *  pending. Without credentials, or before a section: nothing it can do, so settled. */
  bool settled() const override;
  /**
   * Where conditions an operator must act on go as Node Events (type "Warning", a reason, a
   * message), once per distinct condition: a child Placement refuses to delete, a provider with
   * the node's name and another uuid. The agent passes its k8s::EventRecorder::record.
   */
  using EventSink =
      std::function<void(const std::string& type, const std::string& reason, const std::string&)>;
  void setEventSink(EventSink sink) { events_ = std::move(sink); }

  // Introspection (tests, bench, admin).
  bool active() const { return mode_ == Mode::Manage; }
  /** True once the provider is known to be closed (role gone) or to need no closing. */
  bool closed() const { return mode_ == Mode::Close && closedOk_; }
  /** The tree of the last successful pass. */
  const std::optional<DesiredProviderTree>& lastPushed() const { return lastPushed_; }
  unsigned successfulPasses() const { return okPasses_; }
  unsigned failedPasses() const { return failedPasses_; }
  const SyncCounters& counters() const;
  /** The availability-zone applier (null without a Nova API). */
  const ZoneSyncer* zones() const { return zones_.get(); }
  /** True while a pass is pending or running. */
  bool busy() const { return pending_ || running_; }
  /** What this applier does about the plan, for /debug/plan: {"mode", "pending", "dueInMs",
   *  "heldBackByStep", "heldBack": {class: {"wanted", "sent"}}, "lastSent": {class: reserved},
   *  "lastError"}. */
  nlohmann::json debugJson() const;

 private:
  Reconciler(boost::asio::io_context& io, core::Clock& clock, PlacementConfig config,
             core::MetricsRegistry& metrics, core::HealthRegistry& health);
  void start();
  void trigger(std::chrono::milliseconds delay);
  Task<void> run(std::shared_ptr<bool> alive);
  /** `desired` with reservations that moved less than the step held at the last sent value. */
  DesiredProviderTree applyStep(const DesiredProviderTree& desired);
  /** The same, without counting; the classes held back go to `heldClasses`. */
  DesiredProviderTree stepped(const DesiredProviderTree& desired,
                              std::vector<std::string>* heldClasses) const;
  enum class Mode { Idle, Manage, Close };
  void afterPass(Mode mode, const core::Status& status, const DesiredProviderTree& sent);
  void afterManagePass(const DesiredProviderTree& sent);
  void onWorkerEnded(std::exception_ptr error);
  void scheduleResync();
  /** The syncer's view of the providers (and with `catalog`, the trait catalog too) is dropped:
   *  now, or, while a pass is running, when it ends. A pass holds references into that view
   *  across its awaits: dropping it under a suspended pass is a use after free. */
  void forgetProviders(bool catalog);
  void scheduleDeletionRetry();
  void event(const std::string& reason, const std::string& message);

  boost::asio::io_context& io_;
  PlacementConfig config_;
  core::MetricsRegistry& metrics_;
  core::HealthRegistry& health_;
  core::Clock& clock_;
  // Production wiring (empty in tests).
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<Api> ownedApi_;
  Api* api_ = nullptr;
  OwnedTraitsStore owned_;
  // Made once the Api is known (absent when the credentials could not be resolved).
  std::unique_ptr<Syncer> syncer_;
  std::unique_ptr<NovaApi> ownedNova_;
  std::unique_ptr<ZoneSyncer> zones_;
  // The last availability-zone pass's error ("" when it succeeded): reported, retried.
  std::string zoneError_;
  // Set when credentials could not be resolved: never active.
  std::optional<core::Error> configError_;

  bool enabled_ = true;
  Mode mode_ = Mode::Idle;
  bool stopped_ = false;
  // The compute role as last reported while the credentials are missing (logged once per change).
  std::optional<bool> configErrorRole_;
  // Ready since the role last came (the readiness entry is dropped when it goes).
  bool readyInThisRole_ = false;
  bool closedOk_ = false;
  // The node, for closing (known before the pods have synced).
  std::string nodeName_;
  std::string nodeUid_;
  std::optional<DesiredProviderTree> desired_;
  std::optional<DesiredProviderTree> lastPushed_;
  std::string lastError_;
  EventSink events_;
  // Conditions already reported as Events (reason + message).
  std::set<std::string> eventsSent_;

  // The worker: one coroutine, woken through `wake_` (an event: it never expires by itself);
  // `pending_` + `due_` say when to run, and `dueTimer_` wakes it then.
  boost::asio::steady_timer wake_;
  std::unique_ptr<core::Timer> dueTimer_;
  std::unique_ptr<core::Timer> resync_;
  bool resyncArmed_ = false;
  // Retries of refused child deletions, on their own backoff.
  std::unique_ptr<core::Timer> deletionRetry_;
  core::Backoff deletionBackoff_;
  bool deletionRetryArmed_ = false;
  // Restarts the worker after an exception escaped it.
  std::unique_ptr<core::Timer> restart_;
  unsigned workerCrashes_ = 0;
  bool loopRunning_ = false;
  bool pending_ = false;
  bool running_ = false;
  // Set by forgetProviders() during a pass; applied when the pass ends.
  bool forgetAfterPass_ = false;
  bool invalidateAfterPass_ = false;
  std::chrono::steady_clock::time_point due_{};
  // No pass before this (backoff after a failure).
  std::chrono::steady_clock::time_point notBefore_{};
  core::Backoff backoff_;
  unsigned okPasses_ = 0;
  unsigned failedPasses_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace okna::placement
