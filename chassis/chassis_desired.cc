#include "chassis/chassis_desired.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace okna::ovsdb {

namespace {

bool isLabelValueChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// Physnet names are free text in Neutron; only what would break ovn-bridge-mappings' own syntax
// (and whitespace, which ovn-controller does not trim) is refused.
bool isValidPhysnet(const std::string& name) {
  if (name.empty()) return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == ':' || c == ',' || c == '=' || c == ' ' || c == '\t' || c == '\n' || c == '"';
  });
}

// ovn-cms-options "availability-zones=az1:az2" lists zones with ':' and items with ','; '='
// and quotes would break Neutron's parsing too.
bool isValidAzName(const std::string& zone) {
  if (zone.empty() || zone.size() > 255) return false;
  return std::none_of(zone.begin(), zone.end(), [](char c) {
    return c == ',' || c == ':' || c == '=' || c == '"' || c == ' ' || c == '\t' || c == '\n';
  });
}

void addBridge(std::vector<DesiredBridge>& bridges, const std::string& name) {
  for (const auto& b : bridges)
    if (b.name == name) return;
  bridges.push_back({name, {}});
}

const std::string* find(const k8s::StringMap& map, const std::string& key) {
  const auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

// The mappings from the annotation (native syntax, wins) or the label (encoded). A malformed
// value applies none of it (not the valid half: a half-wired physnet is worse than an unwired
// one) and keeps what is applied now (`invalid`: the last good value stays); the warning tells
// the administrator what to fix.
std::vector<BridgeMapping> planMappings(const k8s::NodeInfo& node,
                                        std::vector<ChassisWarning>& warnings, bool& invalid) {
  const std::string key = kBridgeMappingsKey;
  const std::string* annotation = find(node.annotations, key);
  const std::string* label = find(node.labels, key);
  const auto bad = [&](const std::string& where, const std::string& value, const std::string& why) {
    invalid = true;
    warnings.push_back(
        {"InvalidBridgeMappings", where + " " + key + "=\"" + value + "\" is invalid (" + why +
                                      "); the mappings applied now stay until it is fixed"});
  };
  if (annotation) {
    auto parsed = parseBridgeMappings(*annotation);
    if (!parsed) {
      bad("annotation", *annotation, parsed.error().message);
      return {};
    }
    if (label) {
      auto fromLabel = decodeMappingsLabel(*label);
      if (!fromLabel || *fromLabel != *annotation)
        warnings.push_back({"BridgeMappingsLabelIgnored",
                            "label " + key + "=\"" + *label + "\" is ignored: the annotation " +
                                key + "=\"" + *annotation + "\" takes precedence"});
    }
    return std::move(*parsed);
  }
  if (!label) return {};
  auto native = decodeMappingsLabel(*label);
  if (!native) {
    bad("label", *label, native.error().message);
    return {};
  }
  auto parsed = parseBridgeMappings(*native);
  if (!parsed) {
    bad("label", *label, parsed.error().message + ", decoded as \"" + *native + "\"");
    return {};
  }
  return std::move(*parsed);
}

}  // namespace

std::vector<std::string> DesiredChassis::cmsItems() const {
  return gateway ? gatewayCmsItems : std::vector<std::string>{};
}

core::Result<std::vector<BridgeMapping>> parseBridgeMappings(const std::string& text) {
  std::vector<BridgeMapping> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? text.npos : comma - start);
    const size_t colon = item.find(':');
    if (item.empty()) return core::makeError("empty item");
    if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos)
      return core::makeError("\"" + item + "\" is not PHYSNET:BRIDGE");
    BridgeMapping m{item.substr(0, colon), item.substr(colon + 1)};
    if (!isValidPhysnet(m.physnet))
      return core::makeError("physical network \"" + m.physnet + "\" is empty or has a character " +
                             "among : , = \" or whitespace");
    if (!isValidOvsIfaceName(m.bridge))
      return core::makeError("bridge \"" + m.bridge +
                             "\" is not 1-15 characters of A-Z a-z 0-9 . - _");
    for (const auto& seen : out) {
      if (seen.physnet == m.physnet)
        return core::makeError("physical network \"" + m.physnet + "\" is mapped twice");
      // neutron_lib's parse_mappings(unique_values=True), as the OVN and OVS agents call it.
      if (seen.bridge == m.bridge)
        return core::makeError("bridge \"" + m.bridge + "\" is not unique (physical networks \"" +
                               seen.physnet + "\" and \"" + m.physnet + "\")");
    }
    out.push_back(std::move(m));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

core::Result<std::string> decodeMappingsLabel(const std::string& label) {
  std::string out;
  for (size_t i = 0; i < label.size(); ++i) {
    const char c = label[i];
    if (!isLabelValueChar(c))
      return core::makeError(std::string("'") + c + "' cannot appear in a label value; put the " +
                             "native syntax in the annotation of the same key");
    if (c != '_') {
      out += c;
      continue;
    }
    const char next = i + 1 < label.size() ? label[i + 1] : '\0';
    switch (next) {
      case 'c':
        out += ':';
        break;
      case 's':
        out += ',';
        break;
      case '_':
        out += '_';
        break;
      default:
        return core::makeError("'_' at offset " + std::to_string(i) +
                               " must be followed by c (for ':'), s (for ',') or _ (for '_')");
    }
    ++i;
  }
  return out;
}

std::string encodeMappingsLabel(const std::string& native) {
  std::string out;
  for (char c : native) {
    if (c == ':') {
      out += "_c";
    } else if (c == ',') {
      out += "_s";
    } else if (c == '_') {
      out += "__";
    } else {
      out += c;
    }
  }
  return out;
}

DesiredChassis planChassis(const OvsConfig& config, const k8s::NodeInfo& node,
                           const std::set<std::string>& roles) {
  DesiredChassis d;
  d.gateway = roles.count(kNetworkRole) > 0;
  d.gatewayCmsItems.push_back(kGatewayItem);
  if (const std::string* zone = find(node.labels, kZoneLabel); zone && !zone->empty()) {
    if (isValidAzName(*zone)) {
      d.gatewayCmsItems.push_back("availability-zones=" + *zone);
    } else {
      d.keepOwnedZone = true;
      d.warnings.push_back(
          {"InvalidZone", "label " + std::string(kZoneLabel) + "=\"" + *zone +
                              "\" is not a valid availability zone name (1-255 characters, " +
                              "none of , : = \" or whitespace); the zone applied now stays " +
                              "until it is fixed"});
    }
  }

  if (const std::string* adopt = find(node.annotations, kAdoptOwnershipKey)) {
    if (*adopt == "true") {
      d.adoptOwnership = AdoptOwnership::Adopt;
    } else if (*adopt == "none") {
      d.adoptOwnership = AdoptOwnership::Disown;
    } else {
      d.warnings.push_back({"InvalidAdoptOwnership",
                            "annotation " + std::string(kAdoptOwnershipKey) + "=\"" + *adopt +
                                "\" is neither \"true\" (adopt) nor \"none\"; ignored"});
    }
  }

  d.bridgeMappings = planMappings(node, d.warnings, d.keepOwnedMappings);
  for (const auto& m : d.bridgeMappings) addBridge(d.bridges, m.bridge);

  if (const std::string* nic = find(node.labels, kExternalNicKey)) {
    const std::string bridge =
        d.bridgeMappings.empty() ? config.defaultExternalBridge : d.bridgeMappings.front().bridge;
    if (!isValidOvsIfaceName(*nic) || *nic == bridge) {
      d.keepOwnedPorts = true;
      d.warnings.push_back({"InvalidExternalNic",
                            "label " + std::string(kExternalNicKey) + "=\"" + *nic +
                                "\" is not a usable interface name (1-15 characters of A-Z a-z " +
                                "0-9 . - _, not the bridge itself); the NIC plugged now stays " +
                                "until it is fixed"});
    } else {
      addBridge(d.bridges, bridge);
      for (auto& b : d.bridges)
        if (b.name == bridge) b.ports.push_back(*nic);
    }
  }
  return d;
}

void guardExternalNic(DesiredChassis& desired, const k8s::NodeInfo& node, const NicFacts& facts) {
  const std::string* nic = find(node.labels, kExternalNicKey);
  if (!nic) return;
  DesiredBridge* bridge = nullptr;
  for (auto& b : desired.bridges)
    if (std::find(b.ports.begin(), b.ports.end(), *nic) != b.ports.end()) bridge = &b;
  if (!bridge) return;  // not planned (an invalid name: already warned)
  if (const std::string* moves = find(node.annotations, kExternalNicAddressMovesKey);
      moves && *moves == "true")
    return;
  std::vector<std::string> why;
  if (facts.carriesDefaultRoute) why.push_back("the host's default route");
  for (const auto& ip : node.internalIps)
    if (std::find(facts.addresses.begin(), facts.addresses.end(), ip) != facts.addresses.end())
      why.push_back("the node's InternalIP " + ip);
  if (why.empty()) return;
  std::string reasons;
  for (const auto& w : why) reasons += (reasons.empty() ? "" : " and ") + w;
  desired.warnings.push_back(
      {"UnsafeExternalNic",
       "label " + std::string(kExternalNicKey) + "=\"" + *nic + "\": " + *nic + " carries " +
           reasons + "; plugging it into " + bridge->name +
           " would cut the node off (from the API server too), so it is not plugged. Move the "
           "address and route to " +
           bridge->name + " yourself and annotate the node " + kExternalNicAddressMovesKey +
           "=true, or pick another NIC"});
  desired.keepOwnedPorts = true;
  bridge->ports.erase(std::find(bridge->ports.begin(), bridge->ports.end(), *nic));
  // A bridge that was only there for this NIC (no mapping names it) goes with it.
  const bool mapped = std::any_of(desired.bridgeMappings.begin(), desired.bridgeMappings.end(),
                                  [&](const BridgeMapping& m) { return m.bridge == bridge->name; });
  if (!mapped && bridge->ports.empty()) {
    const std::string name = bridge->name;
    desired.bridges.erase(std::remove_if(desired.bridges.begin(), desired.bridges.end(),
                                         [&](const DesiredBridge& b) { return b.name == name; }),
                          desired.bridges.end());
  }
}

nlohmann::json toDryRunJson(const DesiredChassis& desired) {
  nlohmann::json ids = nlohmann::json::object();
  std::string cms;
  for (const auto& item : desired.cmsItems()) cms += (cms.empty() ? "" : ",") + item;
  if (!cms.empty()) ids[kCmsOptions] = cms;
  std::string mappings;
  for (const auto& m : desired.bridgeMappings) mappings += (mappings.empty() ? "" : ",") + m.item();
  if (!mappings.empty()) ids[kBridgeMappings] = mappings;
  nlohmann::json bridges = nlohmann::json::array();
  for (const auto& b : desired.bridges) bridges.push_back({{"name", b.name}, {"ports", b.ports}});
  return {{"external_ids", ids}, {"bridges", bridges}};
}

}  // namespace okna::ovsdb
