#include "chassis/ownership.h"

#include <nlohmann/json.hpp>

namespace okna::ovsdb {

using nlohmann::json;

std::string formatOwnership(const OwnershipRecord& r) {
  // Keys in a fixed order and empty lists left out: the value is compared as a string to decide
  // whether the record needs a write.
  json out = json::object();
  out["v"] = 1;
  if (!r.cmsItems.empty()) out["cms"] = r.cmsItems;
  if (!r.mappings.empty()) out["mappings"] = r.mappings;
  if (!r.createdKeys.empty()) out["keys"] = r.createdKeys;
  if (!r.bridges.empty()) out["bridges"] = r.bridges;
  if (!r.ports.empty()) {
    json ports = json::array();
    for (const auto& [bridge, port] : r.ports) ports.push_back({bridge, port});
    out["ports"] = ports;
  }
  if (r.drainSince != 0) out["drain"] = r.drainSince;
  if (r.lost) out["lost"] = true;
  return out.dump();
}

core::Result<OwnershipRecord> parseOwnership(const std::string& text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return core::makeError("not a JSON object");
  if (!doc.contains("v") || doc["v"] != 1) return core::makeError("unknown version (want \"v\":1)");
  OwnershipRecord r;
  const auto strings = [&](const char* key, std::vector<std::string>& into) -> core::Status {
    if (!doc.contains(key)) return {};
    if (!doc[key].is_array()) return core::makeError(std::string(key) + ": expected an array");
    for (const auto& s : doc[key]) {
      if (!s.is_string()) return core::makeError(std::string(key) + ": expected strings");
      into.push_back(s.get<std::string>());
    }
    return {};
  };
  for (auto [key, into] : {std::pair{"cms", &r.cmsItems}, std::pair{"mappings", &r.mappings},
                           std::pair{"keys", &r.createdKeys}, std::pair{"bridges", &r.bridges}})
    if (auto s = strings(key, *into); !s) return s.error();
  if (doc.contains("ports")) {
    if (!doc["ports"].is_array()) return core::makeError("ports: expected an array");
    for (const auto& p : doc["ports"]) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string())
        return core::makeError("ports: expected [bridge, port] pairs");
      r.ports.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
    }
  }
  if (doc.contains("drain")) {
    if (!doc["drain"].is_number_integer() || doc["drain"].get<std::int64_t>() <= 0)
      return core::makeError("drain: expected a positive integer (unix seconds)");
    r.drainSince = doc["drain"].get<std::int64_t>();
  }
  if (doc.contains("lost")) {
    if (doc["lost"] != true) return core::makeError("lost: expected true");
    r.lost = true;
  }
  return r;
}

}  // namespace okna::ovsdb
