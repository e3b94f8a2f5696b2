#pragma once
// The composition root: builds the informers, computes the plan once whenever an input changes
// (PlanTracker), and hands each applier its section (plan_appliers.h). Everything here runs on
// the one event-loop thread.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/config.h"
#include "agent/departure.h"
#include "agent/health_server.h"
#include "agent/plan.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/http_client.h"
#include "core/metrics.h"
#include "k8s/api_client.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "netns/netlink.h"

// The appliers are held by pointer: their headers (Asio, the IDL thread, the coroutine
// machinery of the Placement client) stay out of this one, which main.cc includes.
namespace boost::asio {
class io_context;
}
namespace okna::ovsdb {
class ChassisReconciler;
class IdlThread;
}  // namespace okna::ovsdb
namespace okna::placement {
class Reconciler;
}

namespace okna::agent {

class MetadataService;

class Agent {
 public:
  /** Receives every new plan (appliers of later components). */
  using PlanListener = std::function<void(const Plan& plan)>;

  Agent(boost::asio::io_context& io, AgentConfig config, core::HttpClient& http,
        k8s::ClusterConfig cluster);
  ~Agent();

  /** Opens the health and admin endpoints and starts the informers. */
  core::Status start();
  /** Stops watches and closes the listeners; host state (OVS, namespaces) stays as it is. */
  void stop();
  /** SIGTERM: reads the Node once and decides (departure.h) whether the pod leaves because the
   *  node lost its role; then either stops at once, the host as it is, or first finishes that
   *  role's removal (at most departure.timeout). `done` gets the exit code: 0, or 1 when the
   *  removal did not finish in time. */
  void shutdown(std::function<void(int exitCode)> done);
  /** --cleanup: the node as if it had no role and no annotation (the planned gateway failover,
   *  the owned external_ids, bridges and ports, every metadata namespace, the provider closed),
   *  then the state files removed. The Node (its uid names the provider) is `node`, else read
   *  once from the API server, else the name alone. No informer and no listener runs. */
  void cleanup(std::optional<k8s::NodeInfo> node, std::function<void(int exitCode)> done);

  void addPlanListener(PlanListener listener) { listeners_.push_back(std::move(listener)); }
  const std::optional<Plan>& plan() const { return tracker_.current(); }
  core::HealthRegistry& health() { return health_; }
  core::MetricsRegistry& metrics() { return metrics_; }
  unsigned short healthPort() const { return healthServer_.port(); }
  /** 0 when health.adminListen is empty. */
  unsigned short adminPort() const { return adminServer_.port(); }

 private:
  void onNodeEvent(k8s::Informer::EventType type, const nlohmann::json& object);
  void onPodEvent(k8s::Informer::EventType type, const nlohmann::json& object);
  void replan(const char* trigger);
  // /debug/plan: the last plan (what --dry-run prints for the same inputs), plus "appliers":
  // what each applier is doing about its section.
  nlohmann::json debugPlan() const;
  void beat();
  // /readyz for the informers, from their state: on every change and every heartbeat.
  void updateInformerReadiness();
  /** The node's Pods are synced, or not watched at all (Placement off). */
  bool podsKnown() const;
  // The probes' listener and, unless health.adminListen is empty, the admin one.
  core::Status listenHealth();
  // Departure (agent_departure.cc): the Node at SIGTERM, and the wait for the appliers.
  void readNodeAtStop(std::function<void(RolesAtStop, std::optional<k8s::NodeInfo>)> then);
  void finishDeparture(const k8s::NodeInfo& node, std::function<void(int)> done);
  void cleanNode(const k8s::NodeInfo& node, std::function<void(int)> done);
  void awaitSettled(std::function<void(int)> done);
  std::string unsettled() const;
  void removeStateFiles();

  boost::asio::io_context& io_;
  // Every timer and time read of the agent (informers, appliers, servers).
  core::AsioClock clock_;
  AgentConfig config_;
  core::MetricsRegistry metrics_;
  core::HealthRegistry health_;
  k8s::ApiClient api_;
  // /healthz /livez /readyz.
  HealthServer healthServer_;
  // /metrics /debug/plan.
  HealthServer adminServer_;
  std::unique_ptr<k8s::Informer> nodeInformer_;
  std::unique_ptr<k8s::Informer> podInformer_;
  std::unique_ptr<placement::Reconciler> placement_;
  // Node Events (invalid labels, gateway drain).
  k8s::EventRecorder events_;
  // The OVSDB transport its participants (the chassis', the metadata service's) share; null
  // unless config.ovs.enabled. Declared before them: it outlives them.
  std::unique_ptr<ovsdb::IdlThread> ovsdb_;
  // The OVN chassis configuration; null unless config.ovs.enabled.
  std::unique_ptr<ovsdb::ChassisReconciler> chassis_;
  // The kernel the metadata service plumbs its namespaces through (its worker thread only).
  netns::NetlinkImpl netlink_;
  // The metadata service; null unless config.ovs.enabled and config.metadata.enabled.
  std::unique_ptr<MetadataService> metadata_;
  std::unique_ptr<core::Timer> heartbeat_;
  std::optional<k8s::NodeInfo> node_;
  // Why the node informer is not ready although synced (the Node is missing).
  std::string nodeAbsent_;
  std::map<std::string, k8s::PodInfo> pods_;
  PlanTracker tracker_{config_};
  std::vector<PlanListener> listeners_;
  // Set once the agent leaves its node (departure.h) or cleans it (--cleanup): every plan from
  // then on is handed with the metadata namespaces retired when it says so.
  std::optional<DepartureDecision> departure_;
  bool shuttingDown_ = false;
  bool cleaning_ = false;
  core::Clock::TimePoint departureDeadline_{};
  core::Clock::TimePoint departureStarted_{};
  std::unique_ptr<core::Timer> departureTimer_;
  core::HttpRequestHandlePtr nodeRead_;
};

}  // namespace okna::agent
