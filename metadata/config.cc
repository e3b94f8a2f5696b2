#include "metadata/config.h"

#include <cmath>

#include "core/yaml_field.h"

namespace okna::metadata {

using core::YamlField;

namespace {

std::chrono::milliseconds seconds(const YamlField& f, double min, double max) {
  return std::chrono::milliseconds(std::llround(f.asDouble(min, max) * 1000.0));
}

NovaConfig parseNova(const YamlField& f) {
  f.expectKeys({"host", "port", "protocol", "caFile", "insecure", "clientCertFile", "clientKeyFile",
                "connectTimeoutSeconds", "timeoutSeconds"});
  NovaConfig n;
  if (auto v = f.get("host")) {
    n.host = v->asString();
    if (n.host.empty()) v->fail("must not be empty");
    // An IPv6 literal is given bare; the URL gets the brackets.
    if (n.host.front() == '[') v->fail("give an IPv6 address without brackets");
  }
  if (auto v = f.get("port")) n.port = static_cast<int>(v->asInt(1, 65535));
  if (auto v = f.get("protocol")) n.protocol = v->asEnum({"http", "https"});
  if (auto v = f.get("caFile")) n.caFile = v->asString();
  if (auto v = f.get("insecure")) n.insecure = v->asBool();
  if (auto v = f.get("clientCertFile")) n.clientCertFile = v->asString();
  if (auto v = f.get("clientKeyFile")) n.clientKeyFile = v->asString();
  if (auto v = f.get("connectTimeoutSeconds")) n.connectTimeout = seconds(*v, 0.001, 600);
  if (auto v = f.get("timeoutSeconds")) n.timeout = seconds(*v, 0.001, 3600);
  // Neutron uses the client certificate only when both halves are set; a half is a mistake.
  if (n.clientCertFile.empty() != n.clientKeyFile.empty())
    f.fail("clientCertFile and clientKeyFile go together");
  return n;
}

MetadataLimits parseLimits(const YamlField& f) {
  f.expectKeys({"maxConnectionsPerNamespace", "maxRequestHeaderBytes", "maxBodyBytes",
                "maxInFlightPerNamespace", "requestDeadlineSeconds", "headerTimeoutSeconds",
                "idleTimeoutSeconds", "maxConnectionsPerClient", "maxInFlightPerClient",
                "busyIdleTimeoutSeconds", "maxConnectionsTotal", "projectShare",
                "memoryBudgetBytes", "memoryBudgetFraction"});
  MetadataLimits l;
  if (auto v = f.get("maxConnectionsPerNamespace"))
    l.maxConnectionsPerNamespace = v->asInt(1, 100000);
  // Below ~512 bytes a normal cloud-init request no longer fits.
  if (auto v = f.get("maxRequestHeaderBytes")) l.maxRequestHeaderBytes = v->asInt(512, 1 << 20);
  if (auto v = f.get("maxBodyBytes")) l.maxBodyBytes = v->asInt(0, 64 << 20);
  if (auto v = f.get("maxInFlightPerNamespace")) l.maxInFlightPerNamespace = v->asInt(1, 100000);
  if (auto v = f.get("requestDeadlineSeconds")) l.requestDeadline = seconds(*v, 0.001, 3600);
  if (auto v = f.get("headerTimeoutSeconds")) l.headerTimeout = seconds(*v, 0.001, 3600);
  if (auto v = f.get("idleTimeoutSeconds")) l.idleTimeout = seconds(*v, 0.001, 86400);
  if (auto v = f.get("maxConnectionsPerClient")) l.maxConnectionsPerClient = v->asInt(1, 100000);
  if (auto v = f.get("maxInFlightPerClient")) l.maxInFlightPerClient = v->asInt(1, 100000);
  if (auto v = f.get("busyIdleTimeoutSeconds")) l.busyIdleTimeout = seconds(*v, 0.001, 86400);
  if (auto v = f.get("maxConnectionsTotal")) l.maxConnectionsTotal = v->asInt(0, 10000000);
  if (auto v = f.get("projectShare")) l.projectShare = v->asDouble(0.01, 1);
  if (auto v = f.get("memoryBudgetBytes")) {
    l.memoryBudgetBytes = v->asInt(0, std::int64_t{1} << 40);
    // Below that the connections' own charge (~130 KiB each) leaves no room for an answer.
    if (l.memoryBudgetBytes != 0 && l.memoryBudgetBytes < (1 << 20))
      v->fail("must be 0 (from the cgroup's memory limit) or at least 1048576 (1 MiB)");
  }
  if (auto v = f.get("memoryBudgetFraction")) l.memoryBudgetFraction = v->asDouble(0.05, 0.9);
  return l;
}

}  // namespace

MetadataConfig parseMetadataConfig(const YamlField& f) {
  f.expectKeys({"enabled", "sharedSecretFile", "nova", "limits", "ipv6", "verifyIntervalSeconds"});
  MetadataConfig c;
  if (auto v = f.get("enabled")) c.enabled = v->asBool();
  if (auto v = f.get("sharedSecretFile")) c.sharedSecretFile = v->asString();
  if (auto v = f.get("nova")) c.nova = parseNova(*v);
  if (auto v = f.get("limits")) c.limits = parseLimits(*v);
  if (auto v = f.get("ipv6")) c.ipv6 = v->asBool();
  if (auto v = f.get("verifyIntervalSeconds")) c.verifyInterval = seconds(*v, 0, 86400);
  return c;
}

}  // namespace okna::metadata
