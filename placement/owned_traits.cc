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
  joinedZone_.reset();
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
  if (auto z = j.find("zoneAggregate");
      z != j.end() && z->is_object() && z->contains("name") && (*z)["name"].is_string())
    joinedZone_ = JoinedZone{(*z)["name"].get<std::string>(), z->value("uuid", std::string())};
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
  return save();
}

core::Status OwnedTraitsStore::setJoinedZone(const std::optional<JoinedZone>& zone) {
  if (joinedZone_ == zone) return {};
  joinedZone_ = zone;
  return save();
}

core::Status OwnedTraitsStore::save() const {
  if (path_.empty()) return {};
  json doc{{"version", 1}, {"ownedTraits", json::object()}};
  for (const auto& [uuid, set] : owned_) doc["ownedTraits"][uuid] = set;
  if (joinedZone_)
    doc["zoneAggregate"] = {{"name", joinedZone_->name}, {"uuid", joinedZone_->uuid}};
  // A few hundred bytes on a local disk: written synchronously, only when something changes.
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
