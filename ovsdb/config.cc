#include "ovsdb/config.h"

#include "core/yaml_field.h"

namespace okna::ovsdb {

namespace {

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The stream syntaxes libopenvswitch accepts for a client; anything else would only fail later,
// in the IDL thread's reconnect loop, where the operator would have to dig for it.
bool isOvsdbRemote(const std::string& remote) {
  for (const char* prefix : {"unix:", "tcp:", "ssl:"})
    if (startsWith(remote, prefix) && remote.size() > std::string(prefix).size()) return true;
  return false;
}

// All three files: libopenvswitch's SSL client needs a key and certificate (ovsdb-server asks
// for the client's) and a CA to verify the server (no bootstrap: trust on first use is not
// a production setting).
OvsSslConfig parseSsl(const core::YamlField& f) {
  f.expectKeys({"privateKeyFile", "certificateFile", "caCertFile"});
  OvsSslConfig ssl;
  for (auto [key, into] : {std::pair{"privateKeyFile", &ssl.privateKeyFile},
                           std::pair{"certificateFile", &ssl.certificateFile},
                           std::pair{"caCertFile", &ssl.caCertFile}}) {
    const auto v = f.get(key);
    if (!v) f.fail(std::string(key) + " is required (a PEM file)");
    *into = v->asString();
    if (into->empty() || into->front() != '/') v->fail("must be an absolute path of a PEM file");
  }
  return ssl;
}

}  // namespace

bool isValidOvsIfaceName(const std::string& name) {
  if (name.empty() || name.size() > 15) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return name != "." && name != "..";
}

OvsConfig parseOvsConfig(const core::YamlField& f) {
  f.expectKeys({"enabled", "remote", "sbRemote", "drainTimeoutSeconds", "defaultExternalBridge",
                "stateFile", "ssl", "vswitchdRunDir", "livenessDelayMaxSeconds"});
  OvsConfig c;
  c.enabled = true;
  if (auto e = f.get("enabled")) c.enabled = e->asBool();
  if (auto r = f.get("remote")) {
    c.remote = r->asString();
    if (!isOvsdbRemote(c.remote))
      r->fail("\"" + c.remote +
              "\" is not an OVSDB remote (unix:PATH, tcp:IP:PORT or ssl:IP:PORT)");
  }
  if (auto r = f.get("sbRemote")) {
    c.sbRemote = r->asString();
    // Several comma-separated remotes (a RAFT cluster) are allowed, as in ovn-remote.
    size_t start = 0;
    while (!c.sbRemote.empty()) {
      const auto comma = c.sbRemote.find(',', start);
      const std::string one =
          c.sbRemote.substr(start, comma == std::string::npos ? comma : comma - start);
      if (!isOvsdbRemote(one))
        r->fail("\"" + one + "\" is not an OVSDB remote (unix:PATH, tcp:IP:PORT or ssl:IP:PORT)");
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (auto s = f.get("ssl")) c.ssl = parseSsl(*s);
  const char* needsSsl =
      "an ssl: remote needs ovs.ssl (privateKeyFile, certificateFile, caCertFile)";
  if (auto r = f.get("remote"); r && startsWith(c.remote, "ssl:") && !c.ssl.configured())
    r->fail(needsSsl);
  if (auto r = f.get("sbRemote");
      r && (startsWith(c.sbRemote, "ssl:") || c.sbRemote.find(",ssl:") != std::string::npos) &&
      !c.ssl.configured())
    r->fail(needsSsl);
  if (auto d = f.get("drainTimeoutSeconds"))
    c.drainTimeout = std::chrono::seconds(d->asInt(0, 86400));
  // Neutron's own bound is 3 to 10 s; past agent_down_time (75 s) Neutron would call it dead.
  if (auto d = f.get("livenessDelayMaxSeconds"))
    c.livenessDelayMax = std::chrono::milliseconds(d->asInt(0, 30) * 1000);
  if (auto v = f.get("stateFile")) c.stateFile = v->asString();
  if (auto v = f.get("vswitchdRunDir")) {
    c.vswitchdRunDir = v->asString();
    if (!c.vswitchdRunDir->empty() && c.vswitchdRunDir->front() != '/')
      v->fail("must be an absolute path (or \"\": no check)");
  }
  if (auto b = f.get("defaultExternalBridge")) {
    c.defaultExternalBridge = b->asString();
    if (!isValidOvsIfaceName(c.defaultExternalBridge))
      b->fail("\"" + c.defaultExternalBridge +
              "\" is not a valid bridge name (1-15 characters of A-Z a-z 0-9 . - _)");
  }
  return c;
}

std::string runDirOfRemote(const std::string& remote) {
  if (remote.rfind("unix:", 0) != 0) return "";
  const std::string path = remote.substr(5);
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string resolveVswitchdRunDir(const OvsConfig& config) {
  return config.vswitchdRunDir ? *config.vswitchdRunDir : runDirOfRemote(config.remote);
}

}  // namespace okna::ovsdb
