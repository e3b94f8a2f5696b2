#pragma once
// external_ids, other_config and options columns are string maps: a key's value, "" if absent.

#include <map>
#include <string>

namespace okna::ovsdb {

inline std::string valueIn(const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace okna::ovsdb
