#include "metadata/metadata_ports.h"

#include <openssl/sha.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <string_view>
#include <unordered_set>

#include "ovsdb/string_map.h"

namespace okna::ovsdb {

namespace {

std::string markedIds(const std::string& ifaceId) {
  return "iface-id=" + ifaceId + "," + kMetadataPortMarkKey + "=" + kMetadataPortMarkValue;
}

}  // namespace

bool marksTheAgentsPort(const std::map<std::string, std::string>& ids) {
  return valueIn(ids, kMetadataPortMarkKey) == kMetadataPortMarkValue;
}

std::set<std::string> vmIfaceIdsOf(const ObservedBridgeIfaceIds& ids) {
  std::set<std::string> out;
  for (const auto& [port, kv] : ids) {
    const std::string ifaceId = valueIn(kv, "iface-id");
    if (!ifaceId.empty() && !valueIn(kv, "attached-mac").empty() && !marksTheAgentsPort(kv))
      out.insert(ifaceId);
  }
  return out;
}

std::vector<OvsOp> diffMetadataPorts(const DesiredMetadataOvs& desired, const ObservedOvs& observed,
                                     const ObservedBridgeIfaceIds& ifaceIds) {
  std::vector<OvsOp> ops;
  const auto bridge = observed.bridges.find(desired.bridge);
  if (!desired.enabled || bridge == observed.bridges.end()) return ops;
  // A set, not a scan of the list per port: with 1,000 networks the bridge has 2,000 ports and
  // this diff runs on every change of the OVS database (it was 40% of a cold start's CPU).
  const std::unordered_set<std::string_view> present(bridge->second.ports.begin(),
                                                     bridge->second.ports.end());
  const auto isPresent = [&](const std::string& port) { return present.count(port) > 0; };
  static const std::map<std::string, std::string> kNone;
  for (const auto& [port, ifaceId] : desired.ports) {
    if (!isPresent(port)) {
      ops.push_back({OvsOp::Kind::AddIfacePort, desired.bridge, port, markedIds(ifaceId)});
      continue;
    }
    const auto it = ifaceIds.find(port);
    const auto& ids = it == ifaceIds.end() ? kNone : it->second;
    if (valueIn(ids, "iface-id") != ifaceId ||
        valueIn(ids, kMetadataPortMarkKey) != kMetadataPortMarkValue)
      ops.push_back({OvsOp::Kind::SetIfaceExternalIds, desired.bridge, port, markedIds(ifaceId)});
  }
  if (desired.prune) {
    for (const auto& [port, ids] : ifaceIds) {
      if (desired.ports.count(port) || !isPresent(port)) continue;
      if (marksTheAgentsPort(ids))
        ops.push_back({OvsOp::Kind::DeletePort, desired.bridge, port, ""});
    }
  }
  return ops;
}

std::string parseUuid(const std::string& text) {
  std::string s = text;
  if (s.rfind("urn:uuid:", 0) == 0) s = s.substr(9);
  if (s.size() >= 2 && s.front() == '{' && s.back() == '}') s = s.substr(1, s.size() - 2);
  std::string hex;
  for (const char c : s) {
    if (c == '-') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (hex.size() != 32) return "";
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

std::string uuid5(const std::string& namespaceUuid, const std::string& name) {
  const std::string ns = parseUuid(namespaceUuid);
  std::string bytes;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] == '-') continue;
    bytes += static_cast<char>(std::stoi(ns.substr(i, 2), nullptr, 16));
    ++i;
  }
  bytes += name;
  std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
  SHA1(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0F) | 0x50);
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3F) | 0x80);
  std::string hex;
  char buf[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[static_cast<std::size_t>(i)]);
    hex += buf;
  }
  return parseUuid(hex);
}

std::string neutronMetadataAgentId(const std::string& chassisName) {
  std::string chassisId = parseUuid(chassisName);
  if (chassisId.empty()) chassisId = uuid5("d34bf9f6-da32-4871-9af8-15a4626b41ab", chassisName);
  return uuid5(chassisId, "metadata_agent");
}

}  // namespace okna::ovsdb
