#include "agent/dry_run.h"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "agent/dry_run_metadata.h"
#include "agent/plan.h"
#include "chassis/chassis_decision.h"
#include "chassis/chassis_participant.h"
#include "chassis/chassis_reconciler.h"
#include "chassis/diff_json.h"
#include "chassis/host_nics.h"
#include "chassis/ownership_state_file.h"
#include "core/clock.h"
#include "core/yaml_field.h"
#include "metadata/sb_participant.h"

namespace okna::agent {

namespace {

core::Result<std::vector<k8s::PodInfo>> loadPods(const std::string& path) {
  auto doc = core::loadJsonOrYaml(path);
  if (!doc) return doc.error();
  const nlohmann::json& list = *doc;
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array())
    return core::makeError(path +
                           ": expected a PodList (kubectl get pods -o json), with an items array");
  std::vector<k8s::PodInfo> pods;
  for (size_t i = 0; i < list["items"].size(); ++i) {
    auto pod = k8s::parsePod(list["items"][i], path + ": items[" + std::to_string(i) + "]");
    if (!pod) return pod.error();
    pods.push_back(std::move(*pod));
  }
  return pods;
}

// What --cleanup does beyond the plan of a node with no role: the provider closed, the files.
nlohmann::json cleanupToJson(const AgentConfig& config, const Plan& plan) {
  nlohmann::json out;
  out["placement"] = !config.placement.enabled ? "placement.enabled is false: nothing"
                     : plan.nodeUid.empty()
                         ? "the Node has no uid: the provider is left as it is"
                         : "the provider " + plan.nodeUid +
                               " gets COMPUTE_STATUS_DISABLED (it stays, with its "
                               "inventories and allocations: deleting it is Nova's)";
  out["stateFiles"] = nlohmann::json::array();
  for (const std::string& path : {config.ovs.stateFile, config.placement.stateFile})
    if (!path.empty()) out["stateFiles"].push_back(path);
  return out;
}

std::string cleanupToText(const nlohmann::json& cleanup) {
  std::string out = "cleanup: placement: " + cleanup["placement"].get<std::string>() + "\n";
  for (const auto& f : cleanup["stateFiles"])
    out += "cleanup: removes the state file " + f.get<std::string>() + "\n";
  out +=
      "cleanup: the OVS changes above run in the live order (the gateway flag first, the rest "
      "once the router gateways left this chassis, at most ovs.drainTimeoutSeconds)\n";
  return out;
}

}  // namespace

int runDryRun(const AgentConfig& config, const DryRunOptions& options, std::ostream& out,
              std::ostream& err) {
  return runDryRun(config, options, "", out, err);
}

int runDryRun(const AgentConfig& config, const DryRunOptions& options, const std::string& ovsdb,
              std::ostream& out, std::ostream& err) {
  if (options.output != "text" && options.output != "json") {
    err << "--output " << options.output << ": must be text or json\n";
    return 2;
  }
  auto doc = core::loadJsonOrYaml(options.nodeFile);
  if (!doc) {
    err << "error: " << doc.error().message << "\n";
    return 1;
  }
  auto node = k8s::parseNode(*doc, options.nodeFile);
  if (!node) {
    err << "error: " << node.error().message << "\n";
    return 1;
  }
  if (options.cleanup) {
    node->labels.clear();
    node->annotations.clear();
  }
  // Without --pods-file Placement is planned as if the node had no pods, and the output says so.
  PlanInputs inputs{std::move(*node), std::vector<k8s::PodInfo>{}};
  if (!options.podsFile.empty()) {
    auto pods = loadPods(options.podsFile);
    if (!pods) {
      err << "error: " << pods.error().message << "\n";
      return 1;
    }
    inputs.pods = std::move(*pods);
  }
  Plan plan = computePlan(config, inputs);
  plan.metadata.retire = options.cleanup;
  if (options.podsFile.empty()) {
    plan.podCount = -1;
    if (plan.placement)
      plan.warnings.push_back(
          {"placement", "reserved is computed without the node's pods (no --pods-file)"});
  }
  // With a live OVSDB: observe once, then decide as the live agent does (the chassis decision
  // with the host's real NIC facts, and, where metadata runs, the namespaces') and diff.
  nlohmann::json decision;
  nlohmann::json diff;
  nlohmann::json metadataPlan;
  if (!ovsdb.empty()) {
    ovsdb::OvsConfig ovsConfig = config.ovs;
    ovsConfig.remote = ovsdb;
    const bool metadataRead = plan.metadata.active || plan.metadata.retire;
    auto observed = observeOnce(ovsConfig, metadataRead, std::chrono::seconds(10));
    if (!observed) {
      err << "error: " << observed.error().message << "\n";
      return 1;
    }
    const ovsdb::Snapshot& snapshot = *observed->chassis;
    ovsdb::ChassisDecisionInputs in;
    if (const std::string nic = ovsdb::externalNicOf(inputs.node); !nic.empty())
      in.externalNic = ovsdb::LinuxHostNics().facts(nic);  // read-only, as the live applier
    in.observed = ovsdb::observedChassisOf(snapshot);
    in.ownershipCopy = ovsdb::OwnershipStateFile(config.ovs.stateFile).load();
    boost::asio::io_context io;  // the real clock's timers need one; none is used
    const core::AsioClock clock(io);
    in.now = core::unixSeconds(clock);
    in.drainTimeout = config.ovs.drainTimeout;
    const ovsdb::ChassisDecision chassis = ovsdb::decideChassis(plan.chassis, inputs.node, in);
    decision = ovsdb::decisionToJson(chassis);
    // As the IDL thread diffs: the record it knows, else the state file's copy.
    const ovsdb::ChassisOps ops =
        snapshot.ownership ? ovsdb::diffChassis(chassis.effective, *snapshot.ovs,
                                                {ovsdb::OwnershipCopy::State::Known,
                                                 *snapshot.ownership, "the agent's memory", ""})
                           : ovsdb::diffChassis(chassis.effective, *snapshot.ovs);
    diff = ovsdb::diffToJson(ops);
    if (metadataRead) {
      auto namespaces = listMetadataNamespaces();
      if (!namespaces) {
        err << "error: " << namespaces.error().message << "\n";
        return 1;
      }
      metadataPlan = decideMetadataOnce(*observed->metadata, config.metadata, plan.metadata.active,
                                        *namespaces, plan.metadata.retire);
    }
  }
  const nlohmann::json cleanup = options.cleanup ? cleanupToJson(config, plan) : nlohmann::json();
  if (options.output == "json") {
    nlohmann::json j = planToJson(plan);
    if (!cleanup.is_null()) j["cleanup"] = cleanup;
    if (!decision.is_null()) j["ovs"]["decision"] = decision;
    if (!diff.is_null()) j["ovs"]["diff"] = diff;
    if (!metadataPlan.is_null()) j["metadata"].update(metadataPlan);
    out << j.dump(2) << "\n";
  } else {
    out << planToText(plan);
    if (!decision.is_null()) {
      out << "ovs decision on " << ovsdb << ":";
      if (decision["reasons"].empty()) out << " the plan as it is";
      out << "\n";
      for (const auto& r : decision["reasons"]) out << "  " << r.get<std::string>() << "\n";
    }
    if (!diff.is_null()) {
      out << "ovs diff against " << ovsdb << ":";
      if (diff["ops"].empty()) out << " (nothing to change)";
      out << "\n";
      for (const auto& op : diff["ops"]) out << "  " << op.get<std::string>() << "\n";
      for (const auto& n : diff["notes"]) out << "  note: " << n.get<std::string>() << "\n";
    }
    if (!metadataPlan.is_null()) out << metadataPlanToText(metadataPlan);
    if (!cleanup.is_null()) out << cleanupToText(cleanup);
  }
  return 0;
}

}  // namespace okna::agent
