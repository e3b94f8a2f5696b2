// bench_label_to_ovsdb [iterations]: the time from a Node label PATCH at the (fake) API server
// to the Open_vSwitch external_ids write made by the real agent, as seen by an OVSDB monitor.
//
// t0: just before the PATCH is sent (kubectl's view of "the label changed").
// t1: the moment an independent IDL monitor on the same ovsdb-server sees
//     ovn-cms-options=enable-chassis-as-gw,availability-zones=<new zone>.
// The path measured: fake API server watch event -> agent informer -> roles + chassis planner
// -> post to the IDL thread -> diff -> OVSDB transaction -> commit -> monitor update.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ovsdb/ovs_idl_glue.h"
#include "tests/fakes/agent_process.h"
#include "tests/fakes/fake_apiserver_fixture.h"
#include "tests/fixtures/ovs/ovsdb_server_fixture.h"
#include "tests/support/test_paths.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string cmsOptions(okna_ovs_idl* idl) {
  std::map<std::string, std::string> ids;
  okna_ovs_idl_foreach_external_id(
      idl,
      [](void* ctx, const char* k, const char* v) {
        (*static_cast<std::map<std::string, std::string>*>(ctx))[k] = v;
      },
      &ids);
  return ids["ovn-cms-options"];
}

// Runs the monitor until ovn-cms-options == want; false after 10 s.
bool waitFor(okna_ovs_idl* idl, const std::string& want) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    okna_ovs_idl_run(idl);
    if (cmsOptions(idl) == want) return true;
    okna_ovs_idl_wait_change(idl, okna_ovs_idl_seqno(idl), 100);
  }
  return false;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  using okna::testing::OvsdbServer;
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 50;
  if (!OvsdbServer::missing_tools(OvsdbServer::Kind::OpenVSwitch).empty()) {
    std::fprintf(stderr, "ovsdb-server / ovs-vsctl not installed\n");
    return 2;
  }
  OvsdbServer ovs(OvsdbServer::Kind::OpenVSwitch);
  ovs.vsctl({"add-br", "br-int"});
  okna::testing::FakeApiServer server(
      {std::string(::okna::testing::kTestDataDir) + "/lab-1.node.yaml"});
  okna::testing::AgentProcess agent(server.dir(),
                                    "logging: {level: info}\novs: {drainTimeoutSeconds: 0, "
                                    "stateFile: \"\"}\nplacement: {enabled: false}\n",
                                    {"--node-name", "lab-1", "--kubeconfig", server.kubeconfig(),
                                     "--context", "node-agent", "--ovsdb", ovs.remote()});
  okna_ovsdb_set_log_level(2);
  okna_ovs_idl* idl = okna_ovs_idl_open(ovs.remote().c_str());
  if (okna_ovs_idl_wait_synced(idl, 10000) != OKNA_OVSDB_OK ||
      !waitFor(idl, "enable-chassis-as-gw,availability-zones=lab")) {
    std::fprintf(stderr, "the agent did not configure OVSDB:\n%s\n", agent.log().c_str());
    return 1;
  }
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    const std::string zone = "zone-" + std::to_string(i);
    const auto t0 = Clock::now();
    const auto r = server.admin(
        "PATCH", "/api/v1/nodes/lab-1",
        R"({"metadata":{"labels":{"topology.kubernetes.io/zone":")" + zone + R"("}}})");
    if (r.status != 200 || !waitFor(idl, "enable-chassis-as-gw,availability-zones=" + zone)) {
      std::fprintf(stderr, "iteration %d failed (HTTP %ld)\n%s\n", i, static_cast<long>(r.status),
                   agent.log().c_str());
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  okna_ovs_idl_close(idl);
  double sum = 0;
  for (double v : ms) sum += v;
  std::printf(
      "label change -> external_ids write, %d iterations (ms): min %.1f  p50 %.1f  "
      "p90 %.1f  p99 %.1f  max %.1f  mean %.1f\n",
      iterations, percentile(ms, 0), percentile(ms, 0.5), percentile(ms, 0.9), percentile(ms, 0.99),
      *std::max_element(ms.begin(), ms.end()), sum / static_cast<double>(ms.size()));
  return 0;
}
