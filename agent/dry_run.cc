#include "agent/dry_run.h"

#include <ostream>

#include "agent/plan.h"
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
  PlanInputs inputs{std::move(*node), std::nullopt};
  if (!options.podsFile.empty()) {
    auto pods = loadPods(options.podsFile);
    if (!pods) {
      err << "error: " << pods.error().message << "\n";
      return 1;
    }
    inputs.pods = std::move(*pods);
  }
  const Plan plan = computePlan(config, inputs);
  if (options.output == "json") {
    out << planToJson(plan).dump(2) << "\n";
  } else {
    out << planToText(plan);
  }
  return 0;
}

}  // namespace okna::agent
