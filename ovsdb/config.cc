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
                "stateFile"});
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
  if (auto d = f.get("drainTimeoutSeconds"))
    c.drainTimeout = std::chrono::seconds(d->asInt(0, 86400));
  if (auto v = f.get("stateFile")) c.stateFile = v->asString();
  if (auto b = f.get("defaultExternalBridge")) {
    c.defaultExternalBridge = b->asString();
    if (!isValidOvsIfaceName(c.defaultExternalBridge))
      b->fail("\"" + c.defaultExternalBridge +
              "\" is not a valid bridge name (1-15 characters of A-Z a-z 0-9 . - _)");
  }
  return c;
}

}  // namespace okna::ovsdb
