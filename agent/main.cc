// openkeel-node-agent: parses flags and config, builds the objects, runs the event loop.

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/dry_run.h"
#include "agent/heap_release.h"
#include "core/curl_http_client.h"
#include "core/listener_guard.h"
#include "core/logging.h"
#include "core/run_loop.h"
#include "core/yaml_field.h"
#include "k8s/credentials.h"

namespace {

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// Every listener's connection cap assumes the hard limit, not the soft one (often 1024): raised
// once, before any descriptor is opened for a client. Not fatal: the caps still hold below it.
void raiseFileLimit() {
  const auto log = okna::core::logger("agent");
  auto limit = okna::core::raiseFileLimit();
  if (!limit) {
    log->warn("cannot raise the open files limit: {}", limit.error().message);
    return;
  }
  log->info("open files limit (RLIMIT_NOFILE): soft {} -> {} (hard {})", limit->before, limit->soft,
            limit->hard);
}

// Runs the loop until `stopped` is called; exceptions that reach the loop are counted.
void runUntilStopped(boost::asio::io_context& io, okna::agent::Agent& agent) {
  okna::core::runLoop(io, [&](const std::string&) {
    agent.metrics()
        .counter("okna_agent_loop_exceptions_total", "Exceptions caught at the event loop")
        .inc();
  });
}

int runAgent(okna::agent::AgentConfig config, okna::k8s::ClusterConfig cluster) {
  using namespace okna;
  if (cluster.tls.insecureSkipVerify)
    core::logger("agent")->warn(
        "TLS verification of the API server is off (insecure-skip-tls-verify)");
  raiseFileLimit();
  boost::asio::io_context io;
  core::CurlHttpClient http(io, "openkeel-node-agent/0.1.0");
  agent::Agent agent(io, std::move(config), http, std::move(cluster));
  if (auto s = agent.start(); !s) {
    core::logger("agent")->critical("{}", s.error().message);
    return 1;
  }
  // The first SIGTERM/SIGINT: Agent::shutdown decides whether the node lost the role this pod
  // runs for and finishes that removal first (departure.h); a second one stops at once.
  int exitCode = 0;
  bool stopping = false;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  std::function<void(const boost::system::error_code&, int)> onSignal =
      [&](const boost::system::error_code& ec, int signo) {
        if (ec) return;
        const auto log = core::logger("agent");
        if (stopping) {
          log->warn("signal {} again: stopping now, whatever is left unfinished", signo);
          agent.stop();
          io.stop();
          return;
        }
        stopping = true;
        log->info("signal {}", signo);
        signals.async_wait(onSignal);
        agent.shutdown([&](int code) {
          exitCode = code;
          io.stop();
        });
      };
  signals.async_wait(onSignal);
  runUntilStopped(io, agent);
  core::logger("agent")->info("stopped");
  return exitCode;
}

// --cleanup: the Node from --node-file, else read from the API server once; with neither, the
// name alone (the provider, whose uuid is the Node's uid, is then left as it is).
int runCleanup(okna::agent::AgentConfig config,
               okna::core::Result<okna::k8s::ClusterConfig> cluster, const std::string& nodeFile) {
  using namespace okna;
  std::optional<k8s::NodeInfo> node;
  if (!nodeFile.empty()) {
    auto doc = core::loadJsonOrYaml(nodeFile);
    auto parsed = doc ? k8s::parseNode(*doc, nodeFile) : core::Result<k8s::NodeInfo>(doc.error());
    if (!parsed) {
      std::cerr << "error: " << parsed.error().message << "\n";
      return 2;
    }
    node = std::move(*parsed);
  }
  if (!cluster)
    core::logger("agent")->warn("no Kubernetes credentials ({}): cleaning without the Node",
                                cluster.error().message);
  boost::asio::io_context io;
  core::CurlHttpClient http(io, "openkeel-node-agent/0.1.0");
  const std::string name = config.nodeName;
  agent::Agent agent(io, std::move(config), http,
                     cluster ? std::move(*cluster) : k8s::ClusterConfig{});
  int exitCode = 0;
  agent.cleanup(std::move(node), [&](int code) {
    exitCode = code;
    io.stop();
  });
  runUntilStopped(io, agent);
  core::logger("agent")->info("cleanup of node {}: {}", name,
                              exitCode == 0 ? "done" : "incomplete");
  return exitCode;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace okna;
  // Before any thread exists (see heap_release.h).
  agent::useOneMallocArena();
  CLI::App app{
      "openkeel-node-agent: makes this node an OpenKeel node of its roles (OVN chassis, Placement "
      "provider, metadata service)"};
  std::string configPath, nodeName, kubeconfig, kubeContext, healthListen, logFormat, logLevel;
  agent::DryRunOptions dry;
  std::string osCloud;
  bool dryRun = false;
  bool cleanup = false;
  app.add_option("--config", configPath, "YAML configuration file")->check(CLI::ExistingFile);
  app.add_option("--node-name", nodeName, "This node's name (default: $NODE_NAME)");
  app.add_option("--kubeconfig", kubeconfig,
                 "kubeconfig for development (default: $KUBECONFIG, else in-cluster)");
  app.add_option("--context", kubeContext, "kubeconfig context (default: current-context)");
  app.add_option("--health-listen", healthListen,
                 "host:port of /healthz /livez /readyz (default 0.0.0.0:19874)");
  std::string adminListen;
  // Given or not, rather than empty or not: an empty value turns the listener off.
  auto* adminListenOption =
      app.add_option("--admin-listen", adminListen,
                     "host:port of /metrics /debug/plan (default 127.0.0.1:19875; \"\": off)");
  app.add_option("--log-format", logFormat, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--log-level", logLevel, "trace, debug, info, warn, error");
  app.add_option("--os-cloud", osCloud,
                 "clouds.yaml cloud of the Placement credentials (default: $OS_CLOUD)");
  app.add_flag("--dry-run", dryRun,
               "Print the plan computed from --node-file (and --pods-file); touch nothing");
  app.add_option("--node-file", dry.nodeFile,
                 "With --dry-run: `kubectl get node NAME -o json|yaml` output");
  app.add_option(
      "--pods-file", dry.podsFile,
      "With --dry-run: `kubectl get pods -A --field-selector spec.nodeName=NAME -o json`");
  app.add_flag("--cleanup", cleanup,
               "Remove what the agent set up on this node: the planned gateway failover, owned "
               "external_ids, bridges and ports, the ovnmeta namespaces; close the Placement "
               "provider; remove the state files. With --dry-run (and --node-file): print it");
  app.add_option("--output", dry.output, "With --dry-run: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  std::string ovsdbRemote;
  app.add_option("--ovsdb", ovsdbRemote,
                 "Local OVSDB remote (unix:PATH, tcp:IP:PORT); enables the OVN chassis "
                 "configuration. With --dry-run: also print the diff against it");
  app.set_version_flag("--version", "openkeel-node-agent 0.1.0");
  CLI11_PARSE(app, argc, argv);

  auto loaded = configPath.empty() ? core::Result<agent::AgentConfig>(agent::AgentConfig{})
                                   : agent::loadConfig(configPath);
  if (!loaded) {
    std::cerr << "config error: " << loaded.error().message << "\n";
    return 2;
  }
  agent::AgentConfig config = std::move(*loaded);
  if (!logFormat.empty()) config.logging.format = logFormat;
  if (!logLevel.empty()) config.logging.level = logLevel;
  if (!healthListen.empty()) config.health.listen = healthListen;
  if (adminListenOption->count() > 0) config.health.adminListen = adminListen;
  if (!kubeconfig.empty()) config.kubernetes.kubeconfig = kubeconfig;
  if (!kubeContext.empty()) config.kubernetes.context = kubeContext;
  if (!osCloud.empty()) config.placement.cloud = osCloud;
  if (!ovsdbRemote.empty()) {
    config.ovs.enabled = true;
    config.ovs.remote = ovsdbRemote;
  }
  // ovs-vswitchd's run directory: next to the (final) unix: remote unless ovs.vswitchdRunDir says.
  config.ovs.vswitchdRunDir = ovsdb::resolveVswitchdRunDir(config.ovs);
  if (auto s = core::setupLogging(config.logging); !s) {
    std::cerr << "config error: " << s.error().message << "\n";
    return 2;
  }
  if (auto s = agent::checkHealthListeners(config.health); !s) {
    std::cerr << "config error: " << s.error().message << "\n";
    return 2;
  }

  if (dryRun) {
    dry.cleanup = cleanup;
    if (dry.nodeFile.empty()) {
      std::cerr << "--dry-run needs --node-file\n";
      return 2;
    }
    return agent::runDryRun(config, dry, ovsdbRemote, std::cout, std::cerr);
  }

  config.nodeName = !nodeName.empty()          ? nodeName
                    : !config.nodeName.empty() ? config.nodeName
                                               : envOr("NODE_NAME", "");
  if (config.nodeName.empty()) {
    std::cerr << "config error: the node name is unknown: pass --node-name, set nodeName in the "
                 "config, or set NODE_NAME (downward API spec.nodeName)\n";
    return 2;
  }
  if (config.kubernetes.kubeconfig.empty()) config.kubernetes.kubeconfig = envOr("KUBECONFIG", "");
  auto cluster =
      config.kubernetes.kubeconfig.empty()
          ? k8s::inClusterConfig()
          : k8s::kubeconfigConfig(config.kubernetes.kubeconfig, config.kubernetes.context);
  if (cleanup) return runCleanup(std::move(config), std::move(cluster), dry.nodeFile);
  if (!cluster) {
    std::cerr << "config error: " << cluster.error().message << "\n";
    return 2;
  }
  return runAgent(std::move(config), std::move(*cluster));
}
