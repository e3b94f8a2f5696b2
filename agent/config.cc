#include "agent/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fstream>
#include <sstream>

#include "core/yaml_field.h"
#include "ovsdb/config.h"
#include "placement/config.h"

namespace okna::agent {

using core::YamlField;

namespace {

SelectorRequirement parseRequirement(const YamlField& f) {
  f.expectKeys({"key", "operator", "values"});
  SelectorRequirement r;
  auto key = f.get("key");
  auto op = f.get("operator");
  if (!key) f.fail("key is required");
  if (!op) f.fail("operator is required");
  r.key = key->asString();
  r.op = op->asString();
  if (auto values = f.get("values")) r.values = values->asStringList();
  return r;
}

std::vector<SelectorTerm> parseTerms(const YamlField& f) {
  std::vector<SelectorTerm> terms;
  for (const auto& item : f.items()) {
    item.expectKeys({"matchExpressions", "matchFields"});
    SelectorTerm term;
    if (auto e = item.get("matchExpressions"))
      for (const auto& r : e->items()) term.matchExpressions.push_back(parseRequirement(r));
    if (auto m = item.get("matchFields"))
      for (const auto& r : m->items()) term.matchFields.push_back(parseRequirement(r));
    terms.push_back(std::move(term));
  }
  if (auto s = validateSelectorTerms(terms, f.path()); !s) f.failWithMessage(s.error().message);
  return terms;
}

RoleRule parseRole(const YamlField& f) {
  f.expectKeys({"label", "taint", "nodeSelectorTerms"});
  RoleRule rule;
  if (auto label = f.get("label")) {
    rule.label = label->asString();
    if (!isValidLabelKey(*rule.label))
      label->fail("\"" + *rule.label + "\" is not a valid label key");
  }
  if (auto taint = f.get("taint")) {
    taint->expectKeys({"key", "effect", "value"});
    RoleTaint t;
    if (auto k = taint->get("key")) t.key = k->asString();
    if (auto e = taint->get("effect"))
      t.effect = e->asEnum({"NoSchedule", "PreferNoSchedule", "NoExecute"});
    rule.taint = t;
  }
  if (auto terms = f.get("nodeSelectorTerms")) {
    if (rule.label) f.fail("give either label or nodeSelectorTerms, not both");
    rule.nodeSelectorTerms = parseTerms(*terms);
  }
  return rule;
}

RolesConfig parseRoles(const YamlField& f) {
  f.expectKeys({"profile", "taints", "roles"});
  RolesConfig c;
  if (auto p = f.get("profile"))
    c.profile = p->asEnum({"default", "hardened"}) == "hardened" ? RoleProfile::Hardened
                                                                 : RoleProfile::Default;
  if (auto t = f.get("taints")) c.taints = t->asBool();
  if (auto roles = f.get("roles")) {
    for (const auto& [name, rf] : roles->entries()) {
      bool known = false;
      for (const auto& r : roleNames()) known = known || r == name;
      if (!known)
        rf.fail(
            "unknown role (expected one of: controlPlane, compute, network, storage, containers, "
            "provisioning)");
      c.roles[name] = parseRole(rf);
    }
  }
  return c;
}

KubernetesConfig parseKubernetes(const YamlField& f) {
  f.expectKeys({"kubeconfig", "context", "watchTimeoutSeconds", "backoff", "failingAfterSeconds"});
  KubernetesConfig c;
  if (auto v = f.get("kubeconfig")) c.kubeconfig = v->asString();
  if (auto v = f.get("context")) c.context = v->asString();
  if (auto w = f.get("watchTimeoutSeconds")) {
    w->expectKeys({"min", "max"});
    if (auto v = w->get("min")) c.watchTimeoutMin = std::chrono::seconds(v->asInt(1, 3600));
    if (auto v = w->get("max")) c.watchTimeoutMax = std::chrono::seconds(v->asInt(1, 3600));
    if (c.watchTimeoutMax < c.watchTimeoutMin) w->fail("max must be >= min");
  }
  if (auto b = f.get("backoff")) {
    b->expectKeys({"initialMs", "maxMs"});
    if (auto v = b->get("initialMs"))
      c.backoff.initial = std::chrono::milliseconds(v->asInt(10, 600000));
    if (auto v = b->get("maxMs")) c.backoff.max = std::chrono::milliseconds(v->asInt(10, 3600000));
    if (c.backoff.max < c.backoff.initial) b->fail("maxMs must be >= initialMs");
  }
  if (auto v = f.get("failingAfterSeconds"))
    c.failingAfter = std::chrono::seconds(v->asInt(1, 3600));
  return c;
}

core::LogConfig parseLogging(const YamlField& f) {
  f.expectKeys({"format", "level", "components"});
  core::LogConfig c;
  static const std::initializer_list<const char*> levels{"trace", "debug",    "info", "warn",
                                                         "error", "critical", "off"};
  if (auto v = f.get("format")) c.format = v->asEnum({"text", "json"});
  if (auto v = f.get("level")) c.level = v->asEnum(levels);
  if (auto comps = f.get("components"))
    for (const auto& [name, lf] : comps->entries()) c.components[name] = lf.asEnum(levels);
  return c;
}

// A listen address as given; `optional`: the empty string (the listener is off) is allowed.
std::string parseListen(const YamlField& f, const std::string& key, bool optional) {
  std::string value = f.asString();
  if (optional && value.empty()) return value;
  if (auto parsed = parseListenAddress(value, key); !parsed) f.fail(parsed.error().message);
  return value;
}

HealthConfig parseHealth(const YamlField& f) {
  f.expectKeys({"listen", "adminListen", "maxConnections"});
  HealthConfig c;
  if (auto v = f.get("listen")) c.listen = parseListen(*v, "listen", false);
  if (auto v = f.get("adminListen")) c.adminListen = parseListen(*v, "adminListen", true);
  if (auto v = f.get("maxConnections"))
    c.maxConnections = static_cast<std::size_t>(v->asInt(1, 4096));
  if (auto s = checkHealthListeners(c); !s) f.failWithMessage(s.error().message);
  return c;
}

AgentConfig parseRoot(const YamlField& root) {
  AgentConfig c;
  if (!root.path().empty()) root.fail("internal: not a root");
  root.expectKeys({"nodeName", "kubernetes", "nodeRoles", "health", "logging", "placement", "ovs",
                   "metadata", "departure"});
  if (auto v = root.get("nodeName")) c.nodeName = v->asString();
  if (auto v = root.get("kubernetes")) c.kubernetes = parseKubernetes(*v);
  if (auto v = root.get("nodeRoles")) c.nodeRoles = parseRoles(*v);
  if (auto v = root.get("health")) c.health = parseHealth(*v);
  if (auto v = root.get("logging")) c.logging = parseLogging(*v);
  if (auto v = root.get("placement")) c.placement = placement::parsePlacementConfig(*v);
  // The profile that keeps a node's kubelet from granting roles also keeps it from granting traits.
  c.placement.trustedTraitsOnly = c.nodeRoles.profile == RoleProfile::Hardened;
  if (auto v = root.get("ovs")) c.ovs = ovsdb::parseOvsConfig(*v);
  if (auto v = root.get("metadata")) c.metadata = metadata::parseMetadataConfig(*v);
  if (auto v = root.get("departure")) c.departure = parseDepartureConfig(*v);
  return c;
}

}  // namespace

core::Result<std::pair<std::string, unsigned short>> parseListenAddress(const std::string& value,
                                                                        const std::string& what) {
  const auto colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return core::makeError(what + " \"" + value + "\": expected host:port");
  std::string host = value.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  // A name would need a resolver at start, and which address it gives could change.
  in6_addr scratch{};
  if (::inet_pton(AF_INET, host.c_str(), &scratch) != 1 &&
      ::inet_pton(AF_INET6, host.c_str(), &scratch) != 1)
    return core::makeError(what + " \"" + value + "\": the host must be an IP address");
  const std::string port = value.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535)
    return core::makeError(what + " \"" + value + "\": port must be 0-65535");
  return std::make_pair(host, static_cast<unsigned short>(p));
}

core::Status checkHealthListeners(const HealthConfig& health) {
  auto probes = parseListenAddress(health.listen, "health.listen (--health-listen)");
  if (!probes) return probes.error();
  if (health.adminListen.empty()) return {};
  auto admin = parseListenAddress(health.adminListen, "health.adminListen (--admin-listen)");
  if (!admin) return admin.error();
  // Port 0 asks the kernel for a free port: two of those never collide.
  if (admin->second != 0 && admin->second == probes->second)
    return core::makeError("health.adminListen (--admin-listen) \"" + health.adminListen +
                           "\": the same port as health.listen (\"" + health.listen +
                           "\"); /metrics and /debug/plan need a port of their own");
  return {};
}

core::Result<AgentConfig> parseConfig(const std::string& yamlText, const std::string& fileName) {
  return core::catchConfigErrors([&] {
    YAML::Node doc;
    try {
      doc = YAML::Load(yamlText);
    } catch (const YAML::Exception& e) {
      throw core::ConfigError(fileName + ": invalid YAML: " + e.what());
    }
    if (!doc || doc.IsNull()) return AgentConfig{};
    return parseRoot(YamlField::root(doc, fileName));
  });
}

core::Result<AgentConfig> loadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::makeError(path + ": cannot be read", errno);
  std::stringstream ss;
  ss << in.rdbuf();
  return parseConfig(ss.str(), path);
}

}  // namespace okna::agent
