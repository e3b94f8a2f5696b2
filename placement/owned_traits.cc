#include "placement/owned_traits.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace okna::placement {

using nlohmann::json;

core::Status OwnedTraitsStore::load() {
  owned_.clear();
  if (path_.empty()) return {};
  std::ifstream in(path_);
  if (!in) return {};  // first start on this host
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || !j.contains("ownedTraits") || !j["ownedTraits"].is_object())
    return core::makeError(path_ +
                           ": not an agent state file ({\"ownedTraits\": {...}}); starting empty");
  for (const auto& [uuid, list] : j["ownedTraits"].items()) {
    if (!list.is_array()) continue;
    for (const auto& t : list)
      if (t.is_string()) owned_[uuid].insert(t.get<std::string>());
  }
  return {};
}

Traits OwnedTraitsStore::owned(const std::string& providerUuid) const {
  auto it = owned_.find(providerUuid);
  return it == owned_.end() ? Traits{} : it->second;
}

core::Status OwnedTraitsStore::set(const std::string& providerUuid, const Traits& traits) {
  if (owned(providerUuid) == traits) return {};
  if (traits.empty()) {
    owned_.erase(providerUuid);
  } else {
    owned_[providerUuid] = traits;
  }
  if (path_.empty()) return {};
  json doc{{"version", 1}, {"ownedTraits", json::object()}};
  for (const auto& [uuid, set] : owned_) doc["ownedTraits"][uuid] = set;
  // A few hundred bytes on a local disk: written synchronously, only when the set changes.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return core::makeError(tmp + ": cannot be written", errno);
    out << doc.dump(2) << "\n";
    if (!out.flush()) return core::makeError(tmp + ": write failed", errno);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    return core::makeError(path_ + ": rename failed", errno);
  return {};
}

}  // namespace okna::placement
