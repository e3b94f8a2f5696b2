#pragma once
// The ownership record's copy across agent restarts: a small JSON file in the agent's hostPath
// state directory (next to Placement's owned-traits file), rewritten atomically (temp file +
// rename) whenever what the agent owns changes. OVSDB's external_ids:openkeel-node-agent stays the
// source of truth; this file is read only when that record is deleted or garbled.
//
//   {"v":1,"record":{"v":1,"cms":["enable-chassis-as-gw"],...}}   (record null: owns nothing)

#include <string>

#include "chassis/ownership.h"
#include "core/result.h"

namespace okna::ovsdb {

class OwnershipStateFile {
 public:
  /** `path` empty: no file (load() says None, save() does nothing). */
  explicit OwnershipStateFile(std::string path) : path_(std::move(path)) {}

  /** Missing file: None; a file that is not this format: Unreadable (with why). */
  OwnershipCopy load() const;
  /** Writes `record` (which may be empty: the agent owns nothing). */
  core::Status save(const OwnershipRecord& record) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace okna::ovsdb
