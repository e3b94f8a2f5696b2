#include "chassis/ownership_state_file.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace okna::ovsdb {

using nlohmann::json;

OwnershipCopy OwnershipStateFile::load() const {
  OwnershipCopy copy;
  copy.where = "state file " + path_;
  if (path_.empty()) return copy;
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) return copy;  // first start on this host, or removed
    copy.state = OwnershipCopy::State::Unreadable;
    copy.error = "cannot be opened";
    return copy;
  }
  std::stringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  copy.state = OwnershipCopy::State::Unreadable;
  if (!doc.is_object() || doc.value("v", 0) != 1 || !doc.contains("record")) {
    copy.error = "not an ownership state file ({\"v\":1,\"record\":...})";
    return copy;
  }
  if (doc["record"].is_null()) {
    copy.state = OwnershipCopy::State::Known;
    return copy;
  }
  auto record = parseOwnership(doc["record"].dump());
  if (!record) {
    copy.error = "record: " + record.error().message;
    return copy;
  }
  copy.state = OwnershipCopy::State::Known;
  copy.record = std::move(*record);
  return copy;
}

core::Status OwnershipStateFile::save(const OwnershipRecord& record) const {
  if (path_.empty()) return {};
  const json doc{{"v", 1},
                 {"record", record.empty() ? json(nullptr) : json::parse(formatOwnership(record))}};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return core::makeError(tmp + ": cannot be written", errno);
    out << doc.dump() << "\n";
    if (!out.flush()) return core::makeError(tmp + ": write failed", errno);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    return core::makeError(path_ + ": rename failed", errno);
  return {};
}

}  // namespace okna::ovsdb
