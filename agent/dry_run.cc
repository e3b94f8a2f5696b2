#include "agent/dry_run.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "agent/dry_run_metadata.h"
#include "agent/plan.h"
#include "chassis/live_read.h"
#include "core/yaml_field.h"

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
  if (options.podsFile.empty()) {
    plan.podCount = -1;
    if (plan.placement)
      plan.warnings.push_back(
          {"placement", "reserved is computed without the node's pods (no --pods-file)"});
  }
  nlohmann::json diff;
  if (!ovsdb.empty()) {
    auto observed = ovsdb::readObservedOnce(ovsdb, std::chrono::seconds(10));
    if (!observed) {
      err << "error: " << observed.error().message << "\n";
      return 1;
    }
    diff = ovsdb::diffToJson(ovsdb::diffChassis(plan.chassis, *observed));
  }
  // With a live OVSDB, what the metadata service would do on this host (only when it would run).
  nlohmann::json metadataPlan;
  if (!ovsdb.empty() && plan.metadata.active) {
    auto read = readMetadataPlanOnce(config.ovs, config.metadata, std::chrono::seconds(10));
    if (!read) {
      err << "error: " << read.error().message << "\n";
      return 1;
    }
    metadataPlan = std::move(*read);
  }
  if (options.output == "json") {
    nlohmann::json j = planToJson(plan);
    if (!diff.is_null()) j["ovs"]["diff"] = diff;
    if (!metadataPlan.is_null()) j["metadata"].update(metadataPlan);
    out << j.dump(2) << "\n";
  } else {
    out << planToText(plan);
    if (!diff.is_null()) {
      out << "ovs diff against " << ovsdb << ":";
      if (diff["ops"].empty()) out << " (nothing to change)";
      out << "\n";
      for (const auto& op : diff["ops"]) out << "  " << op.get<std::string>() << "\n";
      for (const auto& n : diff["notes"]) out << "  note: " << n.get<std::string>() << "\n";
    }
    if (!metadataPlan.is_null()) out << metadataPlanToText(metadataPlan);
  }
  return 0;
}

}  // namespace okna::agent
