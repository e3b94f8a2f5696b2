// The agent's last act on its node: at SIGTERM, whether the pod leaves because the node lost
// its role (departure.h) and, if so, that role's removal finished before exiting; and
// --cleanup, the same removal for every role. Both hand the appliers a plan as the live agent
// would (the planned gateway failover, closing the provider) and wait until each has settled.

#include <filesystem>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/metadata_service.h"
#include "agent/plan_appliers.h"
#include "chassis/chassis_reconciler.h"
#include "core/logging.h"
#include "core/loop_thread.h"
#include "placement/reconciler.h"

namespace okna::agent {

namespace {
constexpr auto kSettledCheckPeriod = std::chrono::milliseconds(100);

std::string seconds(std::chrono::steady_clock::duration d) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count());
}
}  // namespace

void Agent::shutdown(std::function<void(int)> done) {
  OKNA_ASSERT_ON_LOOP();
  if (shuttingDown_) return;
  shuttingDown_ = true;
  // No watch event decides from here on: the Node as the API server has it now does.
  nodeInformer_->stop();
  if (podInformer_) podInformer_->stop();
  const auto log = core::logger("agent");
  if (config_.departure.roles.empty()) {
    log->info("stopping (host state is left in place: departure.roles is empty)");
    stop();
    done(0);
    return;
  }
  readNodeAtStop([this, done, log](RolesAtStop roles, std::optional<k8s::NodeInfo> node) {
    const DepartureDecision decision = decideDeparture(config_.departure, roles);
    if (!decision.finish || !node) {
      log->info("stopping: {}", decision.reason);
      stop();
      done(0);
      return;
    }
    log->warn("leaving the node: {} (at most {} s)", decision.reason,
              config_.departure.timeout.count());
    departure_ = decision;
    finishDeparture(*node, std::move(done));
  });
}

void Agent::readNodeAtStop(std::function<void(RolesAtStop, std::optional<k8s::NodeInfo>)> then) {
  // The watched Node, when the API server cannot say: what the watch last delivered.
  auto fallback = [this](const std::string& why) {
    const std::string source = "the last watched Node; the API server: " + why;
    if (!node_) return std::make_pair(RolesAtStop{std::nullopt, source}, node_);
    return std::make_pair(RolesAtStop{planRoles(config_.nodeRoles, *node_).roles, source}, node_);
  };
  nodeRead_ = api_.get(
      "/api/v1/nodes/" + config_.nodeName,
      [then, fallback, this](core::Result<core::HttpResponse> r) {
        if (!r) {
          auto [roles, node] = fallback(r.error().message);
          return then(roles, node);
        }
        if (r->status == 404) return then({std::nullopt, "the Node is deleted"}, std::nullopt);
        if (r->status != 200) {
          auto [roles, node] = fallback("HTTP " + std::to_string(r->status));
          return then(roles, node);
        }
        auto node = k8s::parseNode(nlohmann::json::parse(r->body, nullptr, false),
                                   "Node " + config_.nodeName);
        if (!node) {
          auto [roles, last] = fallback(node.error().message);
          return then(roles, last);
        }
        then({planRoles(config_.nodeRoles, *node).roles, "the API server"}, *node);
      },
      config_.departure.readTimeout);
}

void Agent::finishDeparture(const k8s::NodeInfo& node, std::function<void(int)> done) {
  node_ = node;
  departureStarted_ = clock_.now();
  departureDeadline_ = departureStarted_ + config_.departure.timeout;
  departureTimer_ = clock_.makeTimer();
  health_.addComponent("departure");
  health_.setReady("departure", false, departure_->reason);
  replan(cleaning_ ? "cleanup" : "departure");
  awaitSettled(std::move(done));
}

std::string Agent::unsettled() const {
  std::string out;
  const auto add = [&](const char* name, const nlohmann::json& state) {
    out += (out.empty() ? "" : "; ") + std::string(name) + ": " + state.dump();
  };
  if (chassis_ && !chassis_->settled()) add("ovs", chassis_->describe());
  if (!placement_->settled()) add("placement", placement_->describe());
  if (metadata_ && !metadata_->settled()) add("metadata", metadata_->describe());
  return out;
}

void Agent::awaitSettled(std::function<void(int)> done) {
  const auto log = core::logger("agent");
  const std::string waiting = unsettled();
  const auto took = seconds(clock_.now() - departureStarted_);
  if (waiting.empty() || clock_.now() >= departureDeadline_) {
    stop();
    if (waiting.empty()) {
      // After stop(): the chassis applier mirrors its (now empty) record to its file until then.
      if (cleaning_) removeStateFiles();
      log->info("{} finished in {}", cleaning_ ? "cleanup" : "the role's removal", took);
    } else {
      log->error("{} did not finish in {}; left as it is: {}",
                 cleaning_ ? "cleanup" : "the role's removal", took, waiting);
    }
    done(waiting.empty() ? 0 : 1);
    return;
  }
  departureTimer_->waitUntil(clock_.now() + kSettledCheckPeriod,
                             [this, done = std::move(done)] { awaitSettled(done); });
}

void Agent::cleanup(std::optional<k8s::NodeInfo> node, std::function<void(int)> done) {
  OKNA_ASSERT_ON_LOOP();
  shuttingDown_ = cleaning_ = true;
  if (node) return cleanNode(*node, std::move(done));
  readNodeAtStop([this, done](const RolesAtStop& read, std::optional<k8s::NodeInfo> found) {
    if (!found) {
      core::logger("agent")->warn("the Node could not be read ({}): cleaning without it",
                                  read.source);
      found.emplace();
      found->name = config_.nodeName;
    }
    cleanNode(*found, done);
  });
}

void Agent::cleanNode(const k8s::NodeInfo& node, std::function<void(int)> done) {
  // No role, nothing the annotations ask for: what the agent owns goes, in the live order.
  k8s::NodeInfo bare;
  bare.name = node.name;
  bare.uid = node.uid;
  bare.internalIps = node.internalIps;
  departure_ = DepartureDecision{true, true, {}, "cleanup (--cleanup): every role goes"};
  core::logger("agent")->warn(
      "cleaning node {}: the planned gateway failover, the owned external_ids, bridges and "
      "ports, every ovnmeta namespace, {}the state files (at most {} s)",
      node.name, node.uid.empty() ? "" : "the Placement provider " + node.uid + " closed, ",
      config_.departure.timeout.count());
  finishDeparture(bare, std::move(done));
}

void Agent::removeStateFiles() {
  for (const std::string& path : {config_.ovs.stateFile, config_.placement.stateFile}) {
    if (path.empty()) continue;
    std::error_code ec;
    if (std::filesystem::remove(path, ec))
      core::logger("agent")->info("removed the state file {}", path);
    else if (ec)
      core::logger("agent")->error("cannot remove the state file {}: {}", path, ec.message());
  }
}

}  // namespace okna::agent
