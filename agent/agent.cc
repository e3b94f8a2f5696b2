#include "agent/agent.h"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "agent/metadata_service.h"
#include "agent/plan_appliers.h"
#include "chassis/chassis_participant.h"
#include "chassis/chassis_reconciler.h"
#include "core/logging.h"
#include "k8s/objects.h"
#include "metadata/sb_participant.h"
#include "ovsdb/idl_thread.h"
#include "placement/reconciler.h"

namespace okna::agent {

using nlohmann::json;

namespace {
constexpr auto kHeartbeatPeriod = std::chrono::seconds(1);
constexpr auto kLoopMaxSilence = std::chrono::seconds(10);
}  // namespace

Agent::Agent(boost::asio::io_context& io, AgentConfig config, core::HttpClient& http,
             k8s::ClusterConfig cluster)
    : io_(io),
      clock_(io),
      config_(std::move(config)),
      api_(http, std::move(cluster)),
      healthServer_(io, clock_, health_, metrics_, nullptr,
                    {HealthServerOptions::Endpoints::Probes, config_.health.maxConnections}),
      adminServer_(io, clock_, health_, metrics_, [this] { return debugPlan(); },
                   {HealthServerOptions::Endpoints::Admin, config_.health.maxConnections}),
      events_(api_, clock_, k8s::EventTarget{config_.nodeName, "", "openkeel-node-agent"}),
      heartbeat_(clock_.makeTimer()) {
  if (config_.ovs.enabled) {
    // One transport, two participants: the chassis' (its ops first in the transaction) and the
    // metadata service's. The chassis reconciler starts it with the first Node.
    ovsdb_ = std::make_unique<ovsdb::IdlThread>(config_.ovs, health_, clock_);
    chassis_ = std::make_unique<ovsdb::ChassisReconciler>(
        io_, clock_, config_.ovs, metrics_, health_, &events_,
        [this](ovsdb::OvsdbApplier::SnapshotCallback publish) {
          return std::make_unique<ovsdb::ChassisTransportApplier>(*ovsdb_, std::move(publish));
        });
    if (config_.metadata.enabled) {
      auto southbound =
          std::make_shared<metadata::SouthboundParticipant>(config_.ovs.livenessDelayMax);
      ovsdb_->add(southbound);
      metadata_ = std::make_unique<MetadataService>(
          io_, clock_, http, config_.metadata, std::move(southbound), metrics_, health_, netlink_);
    }
  }
  const auto informerConfig = [&](std::string resource, std::string path, std::string selector) {
    k8s::InformerConfig c;
    c.resource = std::move(resource);
    c.path = std::move(path);
    c.fieldSelector = std::move(selector);
    c.watchTimeoutMin = config_.kubernetes.watchTimeoutMin;
    c.watchTimeoutMax = config_.kubernetes.watchTimeoutMax;
    c.backoff = config_.kubernetes.backoff;
    c.failingAfter = config_.kubernetes.failingAfter;
    return c;
  };
  // Before the first sync, /readyz?verbose says why an informer is stuck (RBAC, credentials).
  const auto notReady = [this](const std::string&) { updateInformerReadiness(); };
  nodeInformer_ = std::make_unique<k8s::Informer>(
      clock_, api_, informerConfig("nodes", "/api/v1/nodes", "metadata.name=" + config_.nodeName),
      metrics_,
      k8s::Informer::Handler{[this](auto type, const json& o) { onNodeEvent(type, o); },
                             [this] {
                               // Synced but empty: the name is wrong or the Node is gone.
                               if (!node_) {
                                 nodeAbsent_ = "Node " + config_.nodeName + " not found";
                                 core::logger("agent")->warn(
                                     "Node {} does not exist; waiting for it to appear",
                                     config_.nodeName);
                               }
                               updateInformerReadiness();
                               replan("node-sync");
                             },
                             notReady});
  // The node's Pods feed Placement's `reserved` only: an agent with Placement off (a gateway's, a
  // network-only DaemonSet's) does not watch them, and its service account needs no pods access.
  // Of each Pod the store keeps the fields the agent reads: a pod's author (whoever may schedule
  // pods onto the node) decides the rest of its size.
  auto podsConfig = informerConfig("pods", "/api/v1/pods", "spec.nodeName=" + config_.nodeName);
  podsConfig.keep = k8s::trimPod;
  if (config_.placement.enabled)
    podInformer_ = std::make_unique<k8s::Informer>(
        clock_, api_, std::move(podsConfig), metrics_,
        k8s::Informer::Handler{[this](auto type, const json& o) { onPodEvent(type, o); },
                               [this] {
                                 updateInformerReadiness();
                                 replan("pod-sync");
                               },
                               notReady});
  placement_ = std::make_unique<placement::Reconciler>(io_, clock_, http, config_.placement,
                                                       metrics_, health_);
  placement_->setEventSink(
      [this](const std::string& type, const std::string& reason, const std::string& message) {
        events_.record(type, reason, message);
      });
  // Every series the README lists exists from the start, at 0.
  for (const auto& role : roleNames())
    metrics_.gauge("okna_agent_role", "1 when the node has the role", {{"role", role}});
  for (const char* trigger : {"node-sync", "pod-sync", "node", "pod"})
    metrics_.counter("okna_agent_reconcile_total", "Plans computed, by trigger",
                     {{"trigger", trigger}});
  metrics_.histogram("okna_agent_reconcile_duration_seconds",
                     "Time to compute a plan and hand it to the appliers");
  metrics_.counter("okna_agent_loop_exceptions_total", "Exceptions caught at the event loop");
}

Agent::~Agent() {
  stop();
}

core::Status Agent::start() {
  if (auto s = listenHealth(); !s) return s;
  health_.addComponent("node-informer");
  if (podInformer_) health_.addComponent("pod-informer");
  health_.addHeartbeat("event-loop", kLoopMaxSilence);
  beat();
  if (podInformer_)
    core::logger("agent")->info(
        "node {}: watching its Node (fieldSelector metadata.name={}) and its Pods "
        "(fieldSelector spec.nodeName={}) at {} ({})",
        config_.nodeName, config_.nodeName, config_.nodeName, api_.config().server,
        api_.config().source);
  else
    core::logger("agent")->info(
        "node {}: watching its Node (fieldSelector metadata.name={}) at {} ({}); not its Pods "
        "(placement.enabled is false)",
        config_.nodeName, config_.nodeName, api_.config().server, api_.config().source);
  nodeInformer_->start();
  if (podInformer_) podInformer_->start();
  return {};
}

core::Status Agent::listenHealth() {
  if (auto s = checkHealthListeners(config_.health); !s) return s;
  const auto probes = parseListenAddress(config_.health.listen, "health.listen");
  if (auto s = healthServer_.listen(probes->first, probes->second); !s) return s;
  if (config_.health.adminListen.empty()) {
    core::logger("health")->info("/metrics and /debug/plan are off (health.adminListen is empty)");
    return {};
  }
  const auto admin = parseListenAddress(config_.health.adminListen, "health.adminListen");
  return adminServer_.listen(admin->first, admin->second);
}

nlohmann::json Agent::debugPlan() const {
  if (!tracker_.current()) return nlohmann::json::object();
  nlohmann::json out = planToJson(*tracker_.current());
  out["appliers"] = appliersJson({chassis_.get(), placement_.get(), metadata_.get()}, podsKnown());
  return out;
}

void Agent::stop() {
  if (departureTimer_) departureTimer_->cancel();
  if (nodeRead_) nodeRead_->cancel();
  nodeInformer_->stop();
  if (podInformer_) podInformer_->stop();
  placement_->stop();
  healthServer_.stop();
  adminServer_.stop();
  heartbeat_->cancel();
  if (metadata_) metadata_->stop();
  if (chassis_) chassis_->stop();
  if (ovsdb_) ovsdb_->stop();
}

void Agent::updateInformerReadiness() {
  const auto check = [](k8s::Informer& informer) -> std::pair<bool, std::string> {
    const k8s::Informer::Health h = informer.health();
    if (!informer.hasSynced())
      return {false, informer.lastError().empty() ? "not synced yet" : informer.lastError()};
    if (!h.ok) return {false, h.detail};
    return {true, "synced"};
  };
  auto [nodeOk, nodeDetail] = check(*nodeInformer_);
  if (nodeOk && !node_) {
    nodeOk = false;
    nodeDetail = nodeAbsent_;
  }
  health_.setReady("node-informer", nodeOk, nodeDetail);
  if (!podInformer_) return;
  const auto [podOk, podDetail] = check(*podInformer_);
  health_.setReady("pod-informer", podOk, podDetail);
}

bool Agent::podsKnown() const {
  // Without a pod informer (Placement off) there is nothing to wait for.
  return !podInformer_ || podInformer_->hasSynced();
}

void Agent::beat() {
  health_.beat("event-loop");
  updateInformerReadiness();
  heartbeat_->waitUntil(clock_.now() + kHeartbeatPeriod, [this] { beat(); });
}

void Agent::onNodeEvent(k8s::Informer::EventType type, const json& object) {
  if (type == k8s::Informer::EventType::Deleted) {
    // Keep the last plan: a deleted Node is an operator's business; tearing down the
    // dataplane under running VMs would be worse than standing still.
    core::logger("agent")->error(
        "Node {} was deleted; keeping the last known state until it returns", config_.nodeName);
    node_.reset();
    nodeAbsent_ = "Node " + config_.nodeName + " was deleted";
    updateInformerReadiness();
    return;
  }
  auto node = k8s::parseNode(object, "Node " + config_.nodeName);
  if (!node) {
    core::logger("agent")->error("{}; ignoring this version", node.error().message);
    return;
  }
  node_ = std::move(*node);
  events_.setNodeUid(node_->uid);
  if (nodeInformer_->hasSynced()) {
    updateInformerReadiness();
    replan("node");
  }
}

void Agent::onPodEvent(k8s::Informer::EventType type, const json& object) {
  const std::string key = k8s::objectKey(object);
  if (type == k8s::Informer::EventType::Deleted) {
    pods_.erase(key);
  } else {
    auto pod = k8s::parsePod(object, "Pod " + key);
    if (!pod) {
      core::logger("agent")->warn("{}; ignoring this version", pod.error().message);
      return;
    }
    pods_[key] = std::move(*pod);
  }
  if (podInformer_ && podInformer_->hasSynced()) replan("pod");
}

void Agent::replan(const char* trigger) {
  if (!node_) return;
  const auto started = clock_.now();
  PlanInputs inputs{*node_, std::nullopt};
  if (podInformer_ && podInformer_->hasSynced()) {
    inputs.pods.emplace();
    for (const auto& [key, pod] : pods_) inputs.pods->push_back(pod);
  }
  // Once per input change: the planners run here only, and each warning is logged here only.
  const Plan& tracked = tracker_.update(inputs);
  // A leaving agent retires the metadata namespaces no role of the node serves any more.
  std::optional<Plan> leaving;
  if (departure_ && departure_->retireMetadata) {
    leaving = tracked;
    leaving->metadata.retire = true;
  }
  const Plan& plan = leaving ? *leaving : tracked;
  if (tracker_.rolesChanged())
    for (const auto& role : roleNames())
      metrics_.gauge("okna_agent_role", "1 when the node has the role", {{"role", role}})
          .set(plan.roles.roles.count(role) ? 1 : 0);
  for (const auto& listener : listeners_) listener(plan);
  // Leaving, the pods no longer matter: a Placement section is there only for a compute role.
  handPlan(plan, *node_, podsKnown() || departure_.has_value(),
           {chassis_.get(), placement_.get(), metadata_.get()});
  const double seconds = std::chrono::duration<double>(clock_.now() - started).count();
  metrics_
      .counter("okna_agent_reconcile_total", "Plans computed, by trigger", {{"trigger", trigger}})
      .inc();
  metrics_
      .histogram("okna_agent_reconcile_duration_seconds",
                 "Time to compute a plan and hand it to the appliers")
      .observe(seconds);
}

}  // namespace okna::agent
